"""The main window: summary strip, model/GPU bar, four live tabs, library panel, menus."""

from __future__ import annotations

import base64
import contextlib
import gc
import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QByteArray, Qt, QTimer, QUrl
from PySide6.QtGui import (
    QAction,
    QCloseEvent,
    QDesktopServices,
    QDragEnterEvent,
    QDropEvent,
    QGuiApplication,
    QKeySequence,
    QPaintEvent,
    QResizeEvent,
    QScreen,
    QShortcut,
    QShowEvent,
)
from PySide6.QtWidgets import (
    QApplication,
    QDockWidget,
    QFileDialog,
    QLabel,
    QMainWindow,
    QMessageBox,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from llm_planner.core.composition.estimate import Report
from llm_planner.core.composition.scenario import Scenario, default_scenario
from llm_planner.core.primitives import units
from llm_planner.core.primitives.reading import FileReadError, check_regular
from llm_planner.gui import export_config, settings
from llm_planner.gui.binding import Binder, ScenarioState, guard_wheel, validation_message
from llm_planner.gui.compare import open_choose_window
from llm_planner.gui.formatting import figure_text
from llm_planner.gui.widgets.measurements import LOG_SUFFIXES, drop_log
from llm_planner.gui.widgets.scenario_bar import ScenarioBar
from llm_planner.gui.widgets.summary import SummaryStrip

if TYPE_CHECKING:
    from llm_planner.gui.widgets.library_panel import LibraryPanel

log = logging.getLogger(__name__)
SUFFIX = ".llmplan.json"
AUTOSAVE_DELAY_MS = 2000
"""Unsaved edits are copied to the recovery folder this long after the last change."""
FILE_FILTER = "LLM Planner scenarios (*.llmplan.json);;JSON (*.json);;All files (*)"
DEFAULT_SIZE = (1366, 820)
"""Preferred size; never more than the screen's available area (a 1366×768 laptop)."""
MIN_WIDTH, MIN_HEIGHT = 1024, 640
LIBRARY_WIDTH = 290
"""The library's starting width: name, model, GPUs and date readable at 1366 px."""
NARROW_WIDTH, NARROW_LIBRARY_WIDTH = 1200, 170
"""Below this window width the library narrows to this (names elide; tooltips have them):
at 1024 px the tabs' charts and tables need the room."""
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
TAB_CLASSES = (
    ("llm_planner.gui.tabs.compute", "ComputeTab", "Compute budget"),
    ("llm_planner.gui.tabs.inference", "InferenceTab", "Inference memory"),
    ("llm_planner.gui.tabs.training", "TrainingTab", "Training memory"),
    ("llm_planner.gui.tabs.parallelism", "ParallelismTab", "Parallelism"),
    ("llm_planner.gui.tabs.whatif", "WhatIfTab", "What if"),
)
SECTION_TITLES = {
    "model": "Model",
    "compute": "Compute budget",
    "inference": "Inference memory",
    "training": "Training memory (per GPU)",
    "parallelism": "Parallelism",
}


class MainWindow(QMainWindow):
    """Every view is a function of ``self.state.scenario``."""

    def __init__(
        self, scenario: Scenario | None = None, path: str | None = None, restore: bool = True
    ):
        super().__init__()
        self._starting = True  # the first page defers its charts until after the first paint
        self._painted = False
        self._narrow = False
        self.setAcceptDrops(True)
        self.state = ScenarioState(scenario or default_scenario(), self)
        self.state.path = path
        self.binder = Binder(self.state, self)
        self.settings: dict[str, Any] = settings.load() if restore else {}
        self.ask_before_discard = True

        self.setCentralWidget(self._build_central())
        self.library: LibraryPanel | None = None
        self._build_library()
        self._build_menus()
        self.statusBar()
        guard_wheel(self)

        self.binder.error_changed.connect(self._show_input_error)
        self.binder.echoed.connect(lambda text: self.statusBar().showMessage(text, 6000))
        self.state.changed.connect(self._changed)
        self.state.estimate_failed.connect(self._estimate_failed)
        self.state.undo_stack.cleanChanged.connect(self._clean_changed)
        self.tabs.currentChanged.connect(self._tab_shown)
        self._slow_timer = QTimer(self)
        self._slow_timer.setSingleShot(True)
        self._slow_timer.setInterval(30)
        self._slow_timer.timeout.connect(self._redraw_slow)
        self._stale: set[int] = set()
        self._session_key = f"session-{os.getpid()}"
        self._autosave_timer = QTimer(self)
        self._autosave_timer.setSingleShot(True)
        self._autosave_timer.setInterval(AUTOSAVE_DELAY_MS)
        self._autosave_timer.timeout.connect(self.autosave)

        self.setMinimumSize(MIN_WIDTH, MIN_HEIGHT)
        self._fit_screen()
        if restore:
            self._restore()
            self._fit_screen(only_if_larger=True)
        self._tab_shown(self.tabs.currentIndex())
        self._starting = False
        self.summary.update_from(self.state.scenario, self.state.report)
        self._update_title()

    def _fit_screen(self, only_if_larger: bool = False) -> None:
        """Size the window within the screen's available geometry (taskbars excluded)."""
        # Qt returns no screen while none is attached, whatever the stubs say
        screen: QScreen | None = self.screen() or QGuiApplication.primaryScreen()
        if screen is None:
            if not only_if_larger:
                self.resize(*DEFAULT_SIZE)
            return
        area = screen.availableGeometry()
        frame = 32  # title bar and borders the window manager adds around the client area
        width = min(DEFAULT_SIZE[0], area.width())
        height = min(DEFAULT_SIZE[1], area.height() - frame)
        if only_if_larger:
            if self.width() <= area.width() and self.height() <= area.height() - frame:
                return
            width, height = min(self.width(), width), min(self.height(), height)
        self.resize(max(width, MIN_WIDTH), max(height, MIN_HEIGHT))
        if not only_if_larger:
            self.move(area.topLeft())

    def _build_central(self) -> QWidget:
        central = QWidget()
        layout = QVBoxLayout(central)
        layout.setContentsMargins(6, 6, 6, 2)
        layout.setSpacing(4)
        self.summary = SummaryStrip()
        layout.addWidget(self.summary)
        self.bar = ScenarioBar(self.state, self.binder)
        self.bar.import_failed.connect(self.show_message)
        layout.addWidget(self.bar)
        self.tabs = QTabWidget()
        self.tabs.setDocumentMode(True)
        self.pages: list[Any] = [None] * len(TAB_CLASSES)
        for _module, _cls, title in TAB_CLASSES:
            holder = QWidget()
            QVBoxLayout(holder).setContentsMargins(0, 0, 0, 0)
            self.tabs.addTab(holder, title)
        layout.addWidget(self.tabs, 1)
        self.error_label = QLabel()
        self.error_label.setObjectName("input_error")
        self.error_label.setStyleSheet("color: #D62728;")
        self.error_label.setWordWrap(True)
        self.error_label.hide()
        layout.addWidget(self.error_label)
        return central

    # ------------------------------------------------------------ tabs
    def page(self, index: int) -> Any:
        """Tab ``index``'s page, built on first use (keeps the first paint cheap)."""
        if self.pages[index] is None:
            tab = _tab_class(index)(self.state, self.binder, defer_charts=self._starting)
            tab.setObjectName(tab.section)
            holder = self.tabs.widget(index)
            layout = holder.layout() if holder is not None else None
            assert layout is not None, "every tab holder is built with a layout"
            layout.addWidget(tab)
            guard_wheel(tab)
            self.pages[index] = tab
            self._chain_focus()
        return self.pages[index]

    def _chain_focus(self) -> None:
        """Tab order: the header's fields, the tab bar, then the inputs of the page shown
        (hidden pages are skipped), then the library. A page is built on first use, so its
        fields would otherwise come last, after the library and its notes."""
        anchor: QWidget = self.bar.num_gpus
        QWidget.setTabOrder(anchor, self.tabs.tabBar())
        anchor = self.tabs.tabBar()
        for page in self.pages:
            if page is None:
                continue
            for widget in _focus_chain(page):
                QWidget.setTabOrder(anchor, widget)
                anchor = widget

    def build_all_tabs(self) -> list[Any]:
        pages = [self.page(i) for i in range(len(TAB_CLASSES))]
        for page in pages:
            page.ensure_charts()
        return pages

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802 (Qt API)
        super().resizeEvent(event)
        narrow = event.size().width() < NARROW_WIDTH
        if narrow != self._narrow:  # on crossing only: a width the user dragged stays
            self._narrow = narrow
            if narrow and self.library_dock.width() > NARROW_LIBRARY_WIDTH:
                self.resizeDocks(
                    [self.library_dock], [NARROW_LIBRARY_WIDTH], Qt.Orientation.Horizontal
                )
            elif not narrow and self.library_dock.width() < LIBRARY_WIDTH:
                self.resizeDocks([self.library_dock], [LIBRARY_WIDTH], Qt.Orientation.Horizontal)

    def paintEvent(self, event: QPaintEvent) -> None:  # noqa: N802 (Qt API)
        super().paintEvent(event)
        if not self._painted:  # the first paint is on screen: now the charts
            QTimer.singleShot(0, self._after_first_paint)

    def showEvent(self, event: QShowEvent) -> None:  # noqa: N802 (Qt API)
        super().showEvent(event)
        if not self._painted and not self.settings.get("geometry"):  # the docks exist now
            width = NARROW_LIBRARY_WIDTH if self._narrow else LIBRARY_WIDTH
            self.resizeDocks([self.library_dock], [width], Qt.Orientation.Horizontal)
        if not self._painted:  # in case the frame itself gets no paint event
            QTimer.singleShot(100, self._after_first_paint)

    def _after_first_paint(self) -> None:
        if self._painted:
            return
        self._painted = True
        # what exists now (modules, catalogs, widgets) lives as long as the app: keep it out
        # of the cyclic collector's full passes, which otherwise cost milliseconds per edit
        gc.freeze()
        page = self.pages[self.tabs.currentIndex()]
        if page is not None:
            page.ensure_charts()
        self._slow_timer.start()
        if self.library is not None:
            self.library.reload()

    def _tab_shown(self, index: int) -> None:
        if index < 0:
            return
        fresh = self.pages[index] is None
        page = self.page(index)
        if index in self._stale and not fresh:
            page.update_view(self.state.scenario, self.state.report)
        self._stale.discard(index)
        self._slow_timer.start()

    def _changed(self, scenario: Scenario, report: Report) -> None:
        """Redraw what is visible now; the rest when shown. Slow curves shortly after."""
        self.summary.update_from(scenario, report)
        current = self.tabs.currentIndex()
        for index, page in enumerate(self.pages):
            if page is None:
                continue
            if index == current:
                page.update_view(scenario, report)
            else:
                self._stale.add(index)
        self._update_title()
        self._slow_timer.start()
        self._autosave_timer.start()

    def _redraw_slow(self) -> None:
        page = self.pages[self.tabs.currentIndex()]
        if page is not None:
            page.update_slow(self.state.scenario, self.state.report)

    def flush(self) -> None:
        """Run pending deferred redraws now (tests, screenshots, smoke test)."""
        self.state.fit_worker.wait()
        self._slow_timer.stop()
        page = self.pages[self.tabs.currentIndex()]
        if page is not None:
            page.ensure_charts()
            self._redraw_slow()
            page.flush()

    def _show_input_error(self, message: str) -> None:
        self.error_label.setText(message)
        self.error_label.setVisible(bool(message))

    def show_message(self, message: str) -> None:
        self.statusBar().showMessage(message, 10000)
        QMessageBox.warning(self, "LLM Planner", message)

    def _estimate_failed(self, message: str) -> None:
        self.statusBar().showMessage(f"Estimate failed: {message}", 8000)

    def _clean_changed(self, _clean: bool) -> None:
        self._update_title()

    def _update_title(self) -> None:
        scenario = self.state.scenario
        name = scenario.name
        self.setWindowTitle(
            f"LLM Planner — {name}[*] ({scenario.model.architecture.name} on "
            f"{scenario.num_gpus:,} × {scenario.gpu.name})"
        )
        self.setWindowModified(not self.state.undo_stack.isClean())

    # ------------------------------------------------------------ autosave and recovery
    def autosave(self) -> Path | None:
        """Copy unsaved edits to the library's recovery folder (survives a crash)."""
        if self.library is None or self.state.undo_stack.isClean():
            return None
        try:
            return Path(self.library.library.write_recovery(self.state.scenario, self._session_key))
        except (OSError, ValueError) as error:
            log.warning("autosave failed: %s", error)
            return None

    def discard_recovery(self) -> None:
        self._autosave_timer.stop()
        if self.library is not None:
            with contextlib.suppress(OSError, ValueError):
                self.library.library.discard_recovery(self._session_key)

    def offer_recovery(self, ask: bool = True) -> bool:
        """At start: reopen the newest unsaved work a crashed session left behind."""
        if self.library is None:
            return False
        try:
            pending = self.library.library.pending_recoveries()
        except (OSError, ValueError):
            return False
        if not pending:
            return False
        newest = pending[0]
        if ask:
            answer = QMessageBox.question(
                self,
                "Recover unsaved changes",
                f"“{newest.scenario.name}” ({newest.scenario.model.architecture.name} on "
                f"{newest.scenario.num_gpus:,} × {newest.scenario.gpu.name}) has unsaved "
                "changes from "
                f"{newest.saved.astimezone():%Y-%m-%d %H:%M}. Recover them?",
            )
            if answer != QMessageBox.StandardButton.Yes:
                for recovery in pending:
                    with contextlib.suppress(OSError, ValueError):
                        self.library.library.discard_recovery(recovery.key)
                return False
        self.state.load(newest.scenario, None)
        self.state.undo_stack.resetClean()  # recovered work is unsaved work
        self._update_title()
        for recovery in pending:
            with contextlib.suppress(OSError, ValueError):
                self.library.library.discard_recovery(recovery.key)
        self.autosave()
        return True

    # ------------------------------------------------------------ library
    def _build_library(self) -> None:
        from llm_planner.gui.widgets.library_panel import LibraryPanel

        self.library = LibraryPanel(self)
        dock = QDockWidget("Scenarios", self)
        dock.setObjectName("library_dock")
        dock.setWidget(self.library)
        dock.setFeatures(
            QDockWidget.DockWidgetFeature.DockWidgetMovable
            | QDockWidget.DockWidgetFeature.DockWidgetClosable
        )
        self.addDockWidget(Qt.DockWidgetArea.LeftDockWidgetArea, dock)
        self.resizeDocks([dock], [LIBRARY_WIDTH], Qt.Orientation.Horizontal)
        self.library_dock = dock

    # ------------------------------------------------------------ menus
    def _action(
        self, menu: Any, text: str, slot: Any, shortcut: Any = None, name: str = ""
    ) -> QAction:
        action = QAction(text, self)
        if shortcut is not None:
            action.setShortcut(QKeySequence(shortcut))
        action.triggered.connect(slot)
        action.setObjectName(name or text)
        menu.addAction(action)
        return action

    def _build_menus(self) -> None:
        bar = self.menuBar()
        file = bar.addMenu("&File")
        S = QKeySequence.StandardKey  # noqa: N806
        self._action(file, "&New", self.new_scenario, S.New, "new")
        self._action(file, "&Open…", self.open_dialog, S.Open, "open")
        self.recent_menu = file.addMenu("Open &Recent")
        self.recent_menu.aboutToShow.connect(self._fill_recent)
        file.addSeparator()
        self._action(file, "&Save", self.save, S.Save, "save")
        self._action(file, "Save &As…", self.save_as, S.SaveAs, "save_as")
        file.addSeparator()
        self._action(file, "&Import scenario into library…", self.import_dialog, None, "import")
        self._action(
            file, "&Export scenario…", self.export_scenario_dialog, None, "export_scenario"
        )
        report = file.addMenu("Export &report")
        self._action(
            report, "as &Markdown…", lambda: self.export_report_dialog("md"), None, "export_md"
        )
        self._action(
            report, "as &CSV…", lambda: self.export_report_dialog("csv"), None, "export_csv"
        )
        chart = file.addMenu("Export &chart")
        self._action(chart, "as &PNG…", lambda: self.export_chart_dialog("png"), None, "export_png")
        self._action(chart, "as &SVG…", lambda: self.export_chart_dialog("svg"), None, "export_svg")
        file.addSeparator()
        self._action(file, "&Quit", self.close, S.Quit, "quit")

        edit = bar.addMenu("&Edit")
        undo = self.state.undo_stack.createUndoAction(self, "&Undo")
        undo.setShortcut(QKeySequence(S.Undo))
        redo = self.state.undo_stack.createRedoAction(self, "&Redo")
        redo.setShortcuts([QKeySequence(S.Redo), QKeySequence("Ctrl+Y")])
        edit.addAction(undo)
        edit.addAction(redo)
        edit.addSeparator()
        self._action(edit, "&Copy figures", self.copy_figures, "Ctrl+Shift+C", "copy_figures")

        view = bar.addMenu("&View")
        for index, (_m, _c, title) in enumerate(TAB_CLASSES):
            self._action(
                view,
                title,
                lambda _=False, i=index: self.tabs.setCurrentIndex(i),
                f"Ctrl+{index + 1}",
                f"tab{index}",
            )
        view.addSeparator()
        view.addAction(self.library_dock.toggleViewAction())
        choose = lambda _=False: self.compare_and_choose()  # noqa: E731 (one menu entry)
        self._action(view, "Compare and &choose…", choose, "Ctrl+Shift+K", "compare")

        help_menu = bar.addMenu("&Help")
        self._action(
            help_menu, "&Formulas and sources", self.show_formulas, S.HelpContents, "formulas"
        )
        self._action(help_menu, "&About LLM Planner", self.show_about, None, "about")

    def compare_and_choose(self) -> Any:
        """Open (or raise) Compare and choose; Esc closes it, as it does a dialog."""
        window = open_choose_window(self)
        if window.findChild(QShortcut, "close_on_escape") is None:
            shortcut = QShortcut(QKeySequence(Qt.Key.Key_Escape), window)
            shortcut.setObjectName("close_on_escape")
            shortcut.activated.connect(window.close)
        return window

    # ------------------------------------------------------------ file actions
    def confirm_discard(self) -> bool:
        """True when there is nothing unsaved, or the user saved or chose to discard."""
        if self.state.undo_stack.isClean() or not self.ask_before_discard:
            return True
        answer = QMessageBox.question(
            self,
            "Unsaved changes",
            f"Save the changes to “{self.state.scenario.name}” first?",
            QMessageBox.StandardButton.Save
            | QMessageBox.StandardButton.Discard
            | QMessageBox.StandardButton.Cancel,
            QMessageBox.StandardButton.Save,
        )
        if answer == QMessageBox.StandardButton.Save:
            return self.save()
        return answer == QMessageBox.StandardButton.Discard

    def new_scenario(self) -> None:
        if self.confirm_discard():
            self.state.load(default_scenario(), None)

    def open_dialog(self) -> None:
        if not self.confirm_discard():
            return
        path, _ = QFileDialog.getOpenFileName(self, "Open scenario", self._folder(), FILE_FILTER)
        if path:
            self.open_file(path, confirm=False)

    def open_file(self, path: str | Path, confirm: bool = True) -> bool:
        """Open a scenario file; a bad file gets a message naming the field, nothing changes."""
        if confirm and not self.confirm_discard():
            return False
        from llm_planner.core.files import store

        try:
            scenario = store.load_scenario_file(Path(path))
        except (store.ScenarioFileError, OSError, ValueError) as error:
            self.show_message(str(error))
            return False
        self.state.load(scenario, str(path))
        self._remember(str(path))
        self.statusBar().showMessage(f"Opened {path}", 5000)
        return True

    def save(self) -> bool:
        if not self.state.path:
            return self.save_as()
        return self.save_to(self.state.path)

    def save_as(self) -> bool:
        suggested = str(Path(self._folder()) / f"{_safe_name(self.state.scenario.name)}{SUFFIX}")
        path, _ = QFileDialog.getSaveFileName(self, "Save scenario", suggested, FILE_FILTER)
        if not path:
            return False
        if not path.endswith(".json"):
            path += SUFFIX
        return self.save_to(path)

    def save_to(self, path: str) -> bool:
        from llm_planner.core.files import store

        try:
            written = store.save_scenario_file(self.state.scenario, Path(path))
        except OSError as error:
            self.show_message(f"Could not save {path}: {error.strerror or error}")
            return False
        self.state.scenario = written  # stamped: modified time and app version; same inputs
        self.state.path = path
        self.state.undo_stack.setClean()
        self.discard_recovery()
        self._remember(path)
        if self.library is not None:
            self.library.reload()
        self._update_title()
        self.statusBar().showMessage(f"Saved {path}", 5000)
        return True

    def import_dialog(self) -> None:
        paths, _ = QFileDialog.getOpenFileNames(
            self, "Import scenarios into the library", self._folder(), FILE_FILTER
        )
        if paths and self.library is not None:
            self.library.import_files([Path(p) for p in paths])
            for p in paths:
                self._remember(p)

    def export_scenario_dialog(self) -> None:
        suggested = str(Path(self._folder()) / f"{_safe_name(self.state.scenario.name)}{SUFFIX}")
        path, _ = QFileDialog.getSaveFileName(self, "Export scenario", suggested, FILE_FILTER)
        if path:
            from llm_planner.core.files import store

            try:
                store.save_scenario_file(self.state.scenario, Path(path))
            except OSError as error:
                self.show_message(f"Could not export {path}: {error.strerror or error}")
                return
            self._remember(path)
            self.statusBar().showMessage(f"Exported {path}", 10000)

    def report_text(self, kind: str) -> str:
        """The report as Markdown or CSV, exactly as ``core.report_export`` writes it."""
        from llm_planner.core.files.report_export import render_report

        return render_report(
            self.state.report, "markdown" if kind == "md" else "csv", self.state.scenario
        )

    def export_report_dialog(self, kind: str) -> None:
        suffix = ".md" if kind == "md" else ".csv"
        suggested = str(Path(self._folder()) / f"{_safe_name(self.state.scenario.name)}{suffix}")
        path, _ = QFileDialog.getSaveFileName(self, "Export report", suggested, f"*{suffix}")
        if path:
            self.export_report(path, kind)

    def export_report(self, path: str, kind: str) -> None:
        from llm_planner.core.files import store

        try:
            store.atomic_write_bytes(Path(path), self.report_text(kind).encode("utf-8"))
        except OSError as error:
            self.show_message(f"Could not export {path}: {error.strerror or error}")
            return
        self._remember_folder(path)
        self.statusBar().showMessage(f"Exported {path}", 10000)

    def charts(self) -> list[tuple[str, Any]]:
        """(name, widget) of every chart of the visible tab (hidden ones left out)."""
        page = self.page(self.tabs.currentIndex())
        page.ensure_charts()
        found = []
        for name in CHART_NAMES:
            chart = getattr(page, name, None)
            if chart is not None and not chart.isHidden():
                found.append((name, chart))
        return found

    def current_chart(self) -> Any:
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
            Path(self._folder()) / f"{_safe_name(self.state.scenario.name)} - {title}.{kind}"
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
        self, painter: Any, charts: list[Any], width: int, caption_height: int
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

    def _fill_recent(self) -> None:
        self.recent_menu.clear()
        recent = [p for p in self.settings.get("recent", []) if isinstance(p, str)]
        for path in recent:
            action = self.recent_menu.addAction(path)
            action.triggered.connect(lambda _=False, p=path: self.open_file(p))
        if not recent:
            self.recent_menu.addAction("(none)").setEnabled(False)

    def _remember(self, path: str) -> None:
        """A scenario file opened, saved, imported or exported: Open Recent lists it. A
        library entry opened from the panel is the library's business, not a recent file."""
        if self._in_library(path):
            return
        settings.add_recent(self.settings, str(Path(path).resolve()))
        self._remember_folder(path)

    def _remember_folder(self, path: str) -> None:
        if self._in_library(path):
            return
        self.settings["last_folder"] = str(Path(path).resolve().parent)
        settings.save(self.settings)

    def _in_library(self, path: str | Path) -> bool:
        """Whether ``path`` lies in the library's own data folder."""
        if self.library is None:
            return False
        try:
            return Path(path).resolve().parent == self.library.library.folder.resolve()
        except OSError:
            return False

    def _folder(self) -> str:
        """Where file dialogs start: the last folder used, else the documents folder (never
        the library's own data folder)."""
        last = self.settings.get("last_folder")
        if isinstance(last, str) and Path(last).is_dir() and not self._in_library(Path(last) / "x"):
            return last
        from PySide6.QtCore import QStandardPaths

        documents = QStandardPaths.writableLocation(
            QStandardPaths.StandardLocation.DocumentsLocation
        )
        return documents if documents and Path(documents).is_dir() else str(Path.home())

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

    # ------------------------------------------------------------ drag and drop
    def dragEnterEvent(self, event: QDragEnterEvent) -> None:  # noqa: N802 (Qt API)
        urls = event.mimeData().urls()
        if urls and all(u.isLocalFile() and _droppable(u.toLocalFile()) for u in urls):
            event.acceptProposedAction()

    def dropEvent(self, event: QDropEvent) -> None:  # noqa: N802 (Qt API)
        for url in event.mimeData().urls():
            self.open_dropped(url.toLocalFile())
        event.acceptProposedAction()

    def import_and_open(self, path: str) -> bool:
        """A scenario file from elsewhere (a drop): copied into the library (as the library's
        hint says) and the copy opened, so saving never writes back to the sender's file."""
        if self.library is None:
            return self.open_file(path)
        if not self.confirm_discard():
            return False
        try:
            result = self.library.library.import_files([Path(path)])
        except (ValueError, OSError) as error:
            self.show_message(str(error))
            return False
        if result.failed:
            self.show_message("\n".join(message for _path, message in result.failed))
            return False
        saved = result.imported[0][1]
        self.library.reload()
        self.library.select_key(saved.key)
        if not self.open_file(saved.path, confirm=False):
            return False
        self.statusBar().showMessage(
            f"Imported {Path(path).name} into the library as “{saved.scenario.name}”", 8000
        )
        return True

    def open_dropped(self, path: str) -> bool:
        """A dropped ``.llmplan.json`` is imported into the library and opened; a
        ``config.json`` or a model folder (one with a ``config.json``) imports a model."""
        if Path(path).is_dir():
            return self.bar.import_config(Path(path))
        try:  # a FIFO or a device named *.log would block or flood the reader
            check_regular(path)
        except FileReadError as error:
            self.show_message(str(error))
            return False
        if path.endswith(SUFFIX):
            return self.import_and_open(path)
        if path.endswith(LOG_SUFFIXES):  # a training log: a measured run (calibration)
            return drop_log(self, self.state, Path(path))
        if export_config.is_stack_config(path):  # a training stack's launch config
            return export_config.import_dropped(self, path)
        return self.bar.import_config(Path(path))

    # ------------------------------------------------------------ window state
    def _restore(self) -> None:
        geometry = self.settings.get("geometry")
        if isinstance(geometry, str):
            with contextlib.suppress(ValueError):
                self.restoreGeometry(QByteArray(base64.b64decode(geometry)))
        tab = self.settings.get("tab")
        if isinstance(tab, int) and 0 <= tab < self.tabs.count():
            self.tabs.setCurrentIndex(tab)

    def save_window_state(self) -> None:
        self.settings["geometry"] = base64.b64encode(bytes(self.saveGeometry().data())).decode(
            "ascii"
        )
        self.settings["tab"] = self.tabs.currentIndex()
        settings.save(self.settings)

    def closeEvent(self, event: QCloseEvent) -> None:  # noqa: N802 (Qt API)
        if not self.confirm_discard():
            event.ignore()
            return
        self.save_window_state()
        self.discard_recovery()
        event.accept()


def _tab_class(index: int) -> Any:
    """Tab ``index``'s class, imported on first use (plain imports: bundlers see them)."""
    if index == 0:
        from llm_planner.gui.tabs.compute import ComputeTab

        return ComputeTab
    if index == 1:
        from llm_planner.gui.tabs.inference import InferenceTab

        return InferenceTab
    if index == 2:
        from llm_planner.gui.tabs.training import TrainingTab

        return TrainingTab
    if index == 3:
        from llm_planner.gui.tabs.parallelism import ParallelismTab

        return ParallelismTab
    from llm_planner.gui.tabs.whatif import WhatIfTab

    return WhatIfTab


def _focus_chain(root: QWidget) -> list[QWidget]:
    """The widgets under ``root`` that take focus by Tab, in their present focus order."""
    found: list[QWidget] = []
    widget: QWidget | None = root.nextInFocusChain()
    seen = 0
    while widget is not None and widget is not root and seen < 5000:
        seen += 1
        if root.isAncestorOf(widget) and widget.focusPolicy() & Qt.FocusPolicy.TabFocus:
            found.append(widget)
        widget = widget.nextInFocusChain()
    return found


def _droppable(path: str) -> bool:
    """What the window accepts from a drop: JSON files, training logs, stack configs and
    model folders."""
    target = Path(path)
    if path.endswith((".json", ".gguf", *LOG_SUFFIXES, *export_config.STACK_CONFIG_SUFFIXES)):
        return True
    return target.is_dir() and (target / "config.json").is_file()


def _safe_name(name: str) -> str:
    keep = "".join(c if c.isalnum() or c in " -_." else "_" for c in name).strip()
    return keep or "scenario"


__all__ = ["MainWindow", "validation_message"]
