"""What the main window exports of the report besides files: the visible tab's charts as
PNG or SVG with a caption, the figures copied as text, the formulas and sources shown."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt, QUrl
from PySide6.QtGui import QDesktopServices, QPainter
from PySide6.QtWidgets import QApplication, QFileDialog, QMessageBox, QVBoxLayout, QWidget

from llm_planner.core.primitives import units
from llm_planner.gui.formatting import figure_text
from llm_planner.gui.window_base import WindowBase
from llm_planner.gui.window_files import safe_name

CHART_NAMES = (
    "bars",
    "time_chart",
    "cost_chart",
    "chinchilla_chart",
    "context_chart",
    "zero_bars",
    "timeline",
)
"""Chart attributes of the tabs, in the order File ▸ Export chart writes them."""
SECTION_TITLES = {
    "model": "Model",
    "compute": "Compute budget",
    "inference": "Inference memory",
    "training": "Training memory (per GPU)",
    "parallelism": "Parallelism",
}


class WindowExport(WindowBase):
    """Chart export, copy figures, formulas and about (a part of :class:`.MainWindow`)."""

    def charts(self) -> list[tuple[str, QWidget]]:
        """(name, widget) of every chart of the visible tab (hidden ones left out)."""
        page = self.page(self.tabs.currentIndex())
        page.ensure_charts()
        found: list[tuple[str, QWidget]] = []
        for name in CHART_NAMES:  # the tabs' chart attributes: each tab has some of them
            chart = getattr(page, name, None)
            if isinstance(chart, QWidget) and not chart.isHidden():
                found.append((name, chart))
        return found

    def current_chart(self) -> QWidget | None:
        """The first chart of the visible tab."""
        charts = self.charts()
        return charts[0][1] if charts else None

    def caption(self) -> str:
        """What an exported chart says about itself: scenario, model, GPUs, layout, version."""
        from datetime import datetime

        from llm_planner import __version__

        scenario, report = self.state.scenario, self.state.report
        layout = report.parallelism.layout_label
        return (
            f"{scenario.name} · {scenario.model.architecture.name} · "
            f"{scenario.num_gpus:,} × {scenario.gpu.name}"
            + (f" · {layout}" if layout else "")
            + f" · LLM Planner {__version__} · {datetime.now().astimezone():%Y-%m-%d %H:%M}"
        )

    def export_chart_dialog(self, kind: str) -> None:
        """Ask for a file (and for PNG a scale); write every chart of the tab to it."""
        scale = 2.0
        if kind == "png":
            from PySide6.QtWidgets import QInputDialog

            value, ok = QInputDialog.getDouble(
                self, "Export charts as PNG", "Scale (× screen size):", 2.0, 1.0, 4.0, 1
            )
            if not ok:
                return
            scale = value
        title = self.tabs.tabText(self.tabs.currentIndex())
        suggested = str(
            Path(self._folder()) / f"{safe_name(self.state.scenario.name)} - {title}.{kind}"
        )
        path, _ = QFileDialog.getSaveFileName(self, "Export charts", suggested, f"*.{kind}")
        if path:
            self.export_chart(path, kind, scale)

    def export_chart(self, path: str, kind: str, scale: float = 2.0) -> bool:
        """Every chart of the visible tab, stacked, with the caption underneath, as one PNG
        (``scale`` × screen size) or SVG. Says where it wrote it in the status bar."""
        from PySide6.QtCore import QRect, QSize
        from PySide6.QtGui import QImage, QPainter
        from PySide6.QtSvg import QSvgGenerator

        charts = [chart for _name, chart in self.charts()]
        if not charts:
            return False
        width = max(chart.width() for chart in charts)
        caption_height = 2 * self.fontMetrics().height()
        height = sum(chart.height() for chart in charts) + caption_height
        if kind == "svg":
            generator = QSvgGenerator()
            generator.setFileName(path)
            generator.setSize(QSize(width, height))
            generator.setViewBox(QRect(0, 0, width, height))
            generator.setTitle(self.state.scenario.name)
            generator.setDescription(self.caption())
            painter = QPainter(generator)
            try:
                self._paint_charts(painter, charts, width, caption_height)
            finally:
                painter.end()
            written = Path(path).is_file()
        else:
            image = QImage(round(width * scale), round(height * scale), QImage.Format.Format_ARGB32)
            image.fill(self.palette().color(self.backgroundRole()))
            painter = QPainter(image)
            try:
                painter.scale(scale, scale)
                self._paint_charts(painter, charts, width, caption_height)
            finally:
                painter.end()
            # the stubs type the format as bytes; this binding refuses bytes and takes a str
            written = image.save(path, "PNG")  # type: ignore[call-overload]
        if written:
            self._remember_folder(path)
            self.statusBar().showMessage(
                f"Exported {units.count_of(len(charts), 'chart')} to {path}", 10000
            )
        else:
            self.show_message(f"Could not write {path}")
        return bool(written)

    def _paint_charts(
        self, painter: QPainter, charts: list[QWidget], width: int, caption_height: int
    ) -> None:
        from PySide6.QtCore import QPoint, QRect

        height = sum(chart.height() for chart in charts) + caption_height
        painter.fillRect(QRect(0, 0, width, height), self.palette().color(self.backgroundRole()))
        y = 0
        for chart in charts:
            chart.render(painter, QPoint(0, y))
            y += chart.height()
        painter.setPen(self.palette().color(self.foregroundRole()))
        painter.setFont(self.font())
        painter.drawText(
            QRect(6, y, width - 12, caption_height),
            int(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter),
            self.caption(),
        )

    def copy_figures(self) -> str:
        lines = []
        for name, section in self.state.report.sections().items():
            lines.append(SECTION_TITLES.get(name, name))
            lines += [f"{f.label}\t{figure_text(f)}" for f in section.figures()]
            lines.append("")
        text = "\n".join(lines)
        QApplication.clipboard().setText(text)
        self.statusBar().showMessage("Figures copied", 3000)
        return text

    # ------------------------------------------------------------ help
    def show_about(self) -> None:
        from llm_planner import __version__

        QMessageBox.about(
            self,
            "About LLM Planner",
            f"<b>LLM Planner {__version__}</b><p>Plan a large-model training or inference run "
            "offline: compute, time, cost, memory and parallel layout.</p>"
            "<p>Every figure has a tooltip with its formula and source.</p>",
        )

    def formulas_html(self) -> str:
        import html

        parts = ["<h2>Formulas and sources</h2>"]
        for name, section in self.state.report.sections().items():
            parts.append(f"<h3>{SECTION_TITLES.get(name, name)}</h3><ul>")
            for f in section.figures():
                parts.append(
                    f"<li><b>{html.escape(f.label)}</b> = {html.escape(figure_text(f))}"
                    + (f"<br><i>{html.escape(f.formula)}</i>" if f.formula else "")
                    + (f"<br><small>{html.escape(f.source)}</small>" if f.source else "")
                    + "</li>"
                )
            parts.append("</ul>")
        return "".join(parts)

    def show_formulas(self) -> None:
        from PySide6.QtWidgets import QDialog, QDialogButtonBox, QTextBrowser

        dialog = QDialog(self)
        dialog.setWindowTitle("Formulas and sources")
        layout = QVBoxLayout(dialog)
        browser = QTextBrowser()
        browser.setHtml(self.formulas_html())
        browser.setOpenLinks(False)
        browser.anchorClicked.connect(lambda url: QDesktopServices.openUrl(QUrl(url)))
        layout.addWidget(browser)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(dialog.reject)
        layout.addWidget(buttons)
        dialog.resize(720, 640)
        dialog.open()
