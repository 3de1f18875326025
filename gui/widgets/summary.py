"""The summary strip, always visible: model, parameters, tokens, FLOP, days, cost, memory."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QSize, Qt
from PySide6.QtGui import QColor, QPalette, QResizeEvent
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QSizePolicy, QWidget

from llm_planner.core.composition.estimate import Report
from llm_planner.core.composition.scenario import Scenario
from llm_planner.core.primitives import units
from llm_planner.core.primitives.figures import Figure
from llm_planner.gui import colors
from llm_planner.gui.formatting import figure_tooltip

AMBER_SHARE = 0.9
"""Display rule: peak memory above this share of capacity shows amber (tight), not a formula."""


SOURCE_WORDS = {
    "modeled": "modeled",
    "assumed_mfu": "assumed MFU",
    "measured_tflops": "measured",
    "measured_tokens_per_s": "measured",
}
"""How the headline names the throughput its time and cost come from."""


_FIGURES: dict[int, tuple[Any, dict[str, Figure]]] = {}
"""The last section seen per section type and its figures by key (``figures()`` builds
dozens of figures: once per section and change, not once per label)."""


def _figure(section: Any, key: str) -> Figure | None:
    if section is None:
        return None
    kept = _FIGURES.get(id(type(section)))
    if kept is None or kept[0] is not section:
        kept = (section, {figure.key: figure for figure in section.figures()})
        _FIGURES[id(type(section))] = kept
    return kept[1].get(key)


class ElidedLabel(QLabel):
    """Plain text that shrinks with an ellipsis where space ends (full text in the tooltip)."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Preferred)
        self.full_text = ""

    def set_full_text(self, text: str) -> None:
        self.full_text = text
        self.updateGeometry()
        self._elide()

    def minimumSizeHint(self) -> QSize:  # noqa: N802 (Qt API)
        # a short stem ("Llama…") is enough: the figures beside it must not be cut at 1024 px
        width = min(self.fontMetrics().horizontalAdvance(self.full_text) + 4, 56)
        return QSize(width, super().minimumSizeHint().height())

    def sizeHint(self) -> QSize:  # noqa: N802 (Qt API)
        hint = super().sizeHint()
        return QSize(self.fontMetrics().horizontalAdvance(self.full_text) + 4, hint.height())

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802 (Qt API)
        super().resizeEvent(event)
        self._elide()

    def _elide(self) -> None:
        shown = self.fontMetrics().elidedText(
            self.full_text, Qt.TextElideMode.ElideRight, max(self.width(), 20)
        )
        if shown != self.text():
            self.setText(shown)


class SummaryStrip(QFrame):
    """One line of the headline figures; each has its tooltip."""

    KEYS = ("model", "params", "tokens", "flops", "days", "cost", "memory")

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("summary")
        self.setFrameShape(QFrame.Shape.StyledPanel)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(10, 6, 10, 6)
        layout.setSpacing(4)
        self.labels: dict[str, QLabel] = {}
        for index, key in enumerate(self.KEYS):
            if index:
                sep = QLabel("·")
                sep.setEnabled(False)
                layout.addWidget(sep)
            label = ElidedLabel() if key == "model" else QLabel()
            label.setObjectName(f"summary_{key}")
            label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
            if key == "model":
                bold = label.font()
                bold.setBold(True)
                label.setFont(bold)
                label.setTextFormat(Qt.TextFormat.PlainText)
            self.labels[key] = label
            layout.addWidget(label)
        self.dot = QLabel("●")
        self.dot.setObjectName("summary_dot")
        dot_font = self.dot.font()
        dot_font.setPixelSize(16)
        self.dot.setFont(dot_font)
        layout.addWidget(self.dot)
        layout.addStretch(1)
        font = self.font()
        font.setPointSizeF(font.pointSizeF() * 1.05)
        self.setFont(font)
        self.status = "ok"
        self._shown: dict[str, tuple[str, Figure | None, str]] = {}

    def _set(self, key: str, text: str, figure: Figure | None, fallback_tip: str = "") -> None:
        label = self.labels[key]
        wanted = (text, figure, fallback_tip)
        if self._shown.get(key) == wanted:
            return  # the same text and tooltip: no relayout, no repaint
        self._shown[key] = wanted
        if isinstance(label, ElidedLabel):
            label.set_full_text(text)
            fallback_tip = f"{text}<br>{fallback_tip}" if fallback_tip else text
        else:
            label.setText(text)
        label.setToolTip(figure_tooltip(figure) if figure else fallback_tip)
        label.setVisible(bool(text))

    def update_from(self, scenario: Scenario, report: Report) -> None:
        model = report.model
        self._set(
            "model",
            f"{model.name} on {scenario.num_gpus:,} × {scenario.gpu.name}",
            None,
            scenario.gpu.source,
        )
        self._set(
            "params",
            f"{units.format_count(model.params_total)} params",
            _figure(model, "params_total"),
        )
        compute = report.compute
        tokens_figure = _figure(compute, "tokens")
        self._set(
            "tokens",
            f"{units.format_count(scenario.compute.tokens)} tokens",
            tokens_figure,
            "training tokens D (input)",
        )
        flops = compute.flops_total
        self._set(
            "flops", units.format_flop(flops) if flops else "", _figure(compute, "flops_total")
        )
        wall = compute.wall_seconds
        source = SOURCE_WORDS.get(compute.throughput_source, compute.throughput_source)
        cost = compute.cost_usd
        if wall is None:
            # not priced: "—" with why (the label names it: does not fit, a rate above peak)
            why = "does not fit" if not report.training.fits else "not priced"
            tip = f"Not priced: {compute.throughput_label}"
            self._set("days", f"time — ({why})", None, tip)
            self._set("cost", "cost —", None, tip)
        else:
            self._set(
                "days",
                f"{units.format_duration(wall)} ({source})",
                _figure(compute, "wall_seconds"),
            )
            self._set(  # no cost with a time: a free price (0 $/GPU-hour)
                "cost",
                units.format_usd(cost) if cost is not None else "",
                _figure(compute, "cost_usd"),
            )
        training = report.training
        peak = training.peak_bytes
        capacity = training.capacity_bytes or scenario.gpu.memory_bytes
        over = not training.fits or peak > capacity
        self.status = "bad" if over else ("warn" if peak > AMBER_SHARE * capacity else "ok")
        colour = {"ok": colors.OK, "warn": colors.WARN, "bad": colors.BAD}[self.status]
        text = f"training peak {peak / units.GB:.1f}/{capacity / units.GB:.0f} GB"
        self._set("memory", text, _figure(training, "peak_bytes"))
        self.dot.setVisible(True)
        # the colour through the palette: a style sheet would re-polish the label (and its
        # strip) each time the run starts or stops fitting
        palette = self.dot.palette()
        if palette.color(QPalette.ColorRole.WindowText) != QColor(colour):
            palette.setColor(QPalette.ColorRole.WindowText, QColor(colour))
            self.dot.setPalette(palette)
        state = {"ok": "fits", "warn": "fits, but tight", "bad": "does not fit"}[self.status]
        self.dot.setToolTip(
            f"Peak training memory per GPU {state}: "
            f"{units.format_bytes(peak)} of {units.format_bytes(capacity)}"
        )
