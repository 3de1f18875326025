"""The pipeline schedule drawn as blocks per stage: forward, backward, bubbles."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import (
    QColor,
    QFont,
    QFontMetrics,
    QResizeEvent,
)
from PySide6.QtWidgets import (
    QLabel,
    QVBoxLayout,
    QWidget,
)

import pyqtgraph as pg  # isort: skip  (after PySide6)


from llm_planner.gui.widgets.plot_base import (
    Bars,
    ThemedPlot,
    chart_caption,
    legend_row,
)


@dataclass
class Block:
    """One block of the pipeline timeline."""

    stage: int
    start: float
    duration: float
    kind: str  # "forward", "backward", "bubble", ...
    label: str = ""


TIMELINE_COLORS = {
    "forward": "#56B4E9",
    "backward": "#0072B2",
    "bubble": "#D9D9D9",
    "optimizer": "#009E73",
    "comm": "#E69F00",
}


class TimelineChart(QWidget):
    """The pipeline schedule: a row per stage, a block per micro-batch pass; gaps are bubbles."""

    def __init__(self, title: str, parent: QWidget | None = None):
        super().__init__(parent)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(2)
        self.plot = ThemedPlot()
        self.title = chart_caption(title, title=True)
        self.x_label = chart_caption("time (forward passes of one micro-batch)")
        item = self.plot.getPlotItem()
        item.getViewBox().invertY(True)
        self.items: dict[str, pg.BarGraphItem] = {}
        empty = np.zeros(0)
        for kind, colour in TIMELINE_COLORS.items():
            pen = pg.mkPen(QColor(colour).darker(150), width=1)
            bar = Bars(x0=empty, width=empty, y0=empty, height=empty, brush=colour, pen=pen)
            bar.setZValue(-1 if kind == "bubble" else 1)
            item.addItem(bar)
            self.items[kind] = bar
        self.texts: list[pg.TextItem] = []
        self.info = QLabel()
        self.info.setWordWrap(True)
        self.info.setAlignment(Qt.AlignmentFlag.AlignHCenter)
        layout.addWidget(self.title)
        layout.addWidget(self.info)
        layout.addWidget(self.plot, 1)
        layout.addWidget(self.x_label)
        layout.addWidget(
            legend_row(
                [
                    (k.capitalize(), c)
                    for k, c in TIMELINE_COLORS.items()
                    if k in ("forward", "backward", "bubble")
                ]
            )
        )
        self.blocks: list[Block] = []
        self.max_labels = 200
        self._end = 1.0
        self._label_font = QFont()
        self._label_font.setPointSizeF(max(self._label_font.pointSizeF() - 2, 6))
        self._label_timer = QTimer(self)  # after a resize the view box has its new width
        self._label_timer.setSingleShot(True)
        self._label_timer.setInterval(0)
        self._label_timer.timeout.connect(self._place_labels)

    def set_blocks(self, blocks: Sequence[Block], stages: int) -> None:
        self.blocks = list(blocks)
        for kind, bar in self.items.items():
            chosen = [b for b in self.blocks if b.kind == kind]
            bar.setOpts(
                x0=np.array([b.start for b in chosen], dtype=float),
                width=np.array([b.duration for b in chosen], dtype=float),
                y0=np.array([b.stage - 0.4 for b in chosen], dtype=float),
                height=np.full(len(chosen), 0.8),
            )
        item = self.plot.getPlotItem()
        item.getAxis("left").setTicks([[(s, f"stage {s}") for s in range(stages)]])
        end = max((b.start + b.duration for b in self.blocks), default=1.0)
        item.setXRange(0, end, padding=0.01)
        item.setYRange(-0.6, max(stages - 0.4, 0.6), padding=0)
        self._end = end
        self._place_labels()

    def _place_labels(self) -> None:
        """Number a block only where its number fits inside it: narrow blocks side by side
        otherwise print their digits over each other ("2222…")."""
        labelled = [b for b in self.blocks if b.label][: self.max_labels]
        while len(self.texts) < len(labelled):
            text = pg.TextItem(anchor=(0.5, 0.5))
            text.setFont(self._label_font)
            text.setZValue(5)
            self.plot.addItem(text)
            self.texts.append(text)
        view_px = self.plot.getPlotItem().getViewBox().width()
        px_per_unit = view_px / (1.02 * self._end) if self._end > 0 else 0.0
        metrics = QFontMetrics(self._label_font)
        for index, text in enumerate(self.texts):
            block = labelled[index] if index < len(labelled) else None
            if block is None or block.duration * px_per_unit < (
                metrics.horizontalAdvance(block.label) + 4
            ):
                text.hide()
                continue
            text.setText(block.label, color="#FFFFFF" if block.kind == "backward" else "#000000")
            text.setPos(block.start + block.duration / 2, block.stage)
            text.show()

    def shown_labels(self) -> list[str]:
        """The block numbers drawn now (tests)."""
        return [t.toPlainText() for t in self.texts if t.isVisible()]

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802 (Qt API)
        super().resizeEvent(event)
        self._label_timer.start()
