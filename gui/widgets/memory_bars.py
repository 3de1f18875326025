"""Stacked memory bars (per GPU: weights, gradients, optimizer, activations…) against the
GPU's capacity, built once and updated in place."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from PySide6.QtCore import QEvent, QPointF, Qt, QTimer
from PySide6.QtGui import (
    QColor,
    QResizeEvent,
    QTransform,
)
from PySide6.QtWidgets import (
    QGraphicsItem,
    QGraphicsSimpleTextItem,
    QToolTip,
    QVBoxLayout,
    QWidget,
)

import pyqtgraph as pg  # isort: skip  (after PySide6)

from llm_planner.core.primitives import units
from llm_planner.gui import colors
from llm_planner.gui.formatting import bytes_tooltip
from llm_planner.gui.widgets.plot_base import (
    Bars,
    ThemedPlot,
    chart_caption,
    legend_row,
    nice_ceiling,
)

STILL_SHARE = 0.25
"""Display rule: a bar chart keeps its x range while its longest bar (and label) needs at
least this share of it; below, the range shrinks to the bars. A still axis lets the eye
compare bars while flipping between values (micro-batch 1 ↔ 4, sequence 2k ↔ 8k: 2-4×), and
spares the whole-plot repaint a new range costs."""


class BarLabel(QGraphicsSimpleTextItem):
    """A bar's total, plain text at a data point drawn in pixels, left-aligned and centred
    on the bar: pyqtgraph's ``TextItem`` lays out an HTML document on every ``setText``
    (about 0.2 ms each, four per change on the ZeRO chart)."""

    def __init__(self) -> None:
        super().__init__()
        self.setFlag(QGraphicsItem.GraphicsItemFlag.ItemIgnoresTransformations, True)
        self.setZValue(12)

    def set_label(self, text: str, color: str) -> None:
        self.setText(text)
        self.setBrush(QColor(color))
        self.setTransform(QTransform.fromTranslate(4.0, -self.boundingRect().height() / 2))


@dataclass
class BarRow:
    """One stacked bar: bytes per component, the total to print, hover explanations."""

    label: str
    parts: dict[str, float]
    total: float | None = None
    explain: dict[str, str] = field(default_factory=dict)


class MemoryBars(QWidget):
    """Horizontal stacked bars of memory by component, with the capacity line.

    One ``BarGraphItem`` per component holds that component's segment of every row; an
    update calls ``setOpts`` on them (no items are added or removed). The part of a bar
    beyond capacity is outlined and shaded red.
    """

    def __init__(
        self, title: str, components: Sequence[str] | None = None, parent: QWidget | None = None
    ):
        super().__init__(parent)
        self.components = list(components or [key for key, _, _ in colors.COMPONENTS])
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(2)
        self.plot = ThemedPlot()
        self.title = chart_caption(title, title=True)
        self.x_label = chart_caption("GB per GPU (10⁹ bytes)")
        plot = self.plot.getPlotItem()
        # no grid: pyqtgraph paints grid lines as part of the axis picture, replayed over the
        # whole view on every bar update (milliseconds per change); the capacity line is the
        # reference that matters
        plot.getViewBox().invertY(True)
        self.items: dict[str, pg.BarGraphItem] = {}
        empty = np.zeros(0)
        for key in self.components:
            colour = QColor(colors.COMPONENT_COLOR[key])
            item = Bars(
                x0=empty,
                width=empty,
                y0=empty,
                height=empty,
                brush=colour,
                pen=pg.mkPen(colour.darker(130), width=1),
            )
            item.setZValue(10)  # above the grid lines
            plot.addItem(item)
            self.items[key] = item
        overflow = QColor(colors.BAD)
        overflow.setAlpha(70)
        self.overflow = Bars(
            x0=empty,
            width=empty,
            y0=empty,
            height=empty,
            brush=overflow,
            pen=pg.mkPen(colors.BAD, width=2),
        )
        self.overflow.setZValue(11)
        plot.addItem(self.overflow)
        self.capacity_line = pg.InfiniteLine(
            angle=90,
            movable=False,
            pen=pg.mkPen(colors.CAPACITY, width=2, style=Qt.PenStyle.DashLine),
        )
        self.capacity_line.label = pg.InfLineLabel(
            self.capacity_line, text="", position=0.04, anchor=(0, 0), color=colors.CAPACITY
        )
        plot.addItem(self.capacity_line)
        # one capacity mark per row when the rows are on GPUs of different memory (Compare)
        self.row_capacity = Bars(
            x0=empty,
            width=empty,
            y0=empty,
            height=empty,
            brush=QColor(colors.CAPACITY),
            pen=pg.mkPen(colors.CAPACITY, width=1),
        )
        self.row_capacity.setZValue(12)
        plot.addItem(self.row_capacity)
        self.labels: list[BarLabel] = []
        layout.addWidget(self.title)
        layout.addWidget(self.plot, 1)
        layout.addWidget(self.x_label)
        entries = [(colors.COMPONENT_LABEL[k], colors.COMPONENT_COLOR[k]) for k in self.components]
        layout.addWidget(legend_row(entries))
        self.rows: list[BarRow] = []
        self.capacity: float = 0.0
        self.capacities: list[float] | None = None
        self._last: dict[str, object] = {}
        self._label_state: dict[int, tuple[str, str]] = {}
        self._label_pos: dict[int, tuple[float, float]] = {}
        self._resize_timer = QTimer(self)
        self._resize_timer.setSingleShot(True)
        self._resize_timer.setInterval(0)
        self._resize_timer.timeout.connect(self._redo_layout)
        self.plot.scene().sigMouseMoved.connect(self._hover)
        self.plot.setMinimumHeight(80)  # under the 1024×640 inference bars sit the fit buttons

    def set_rows(
        self,
        rows: Sequence[BarRow],
        capacity_bytes: float,
        capacities: Sequence[float] | None = None,
    ) -> None:
        """Redraw in place: ``rows`` top to bottom, capacity line at ``capacity_bytes``;
        ``capacities`` (one per row) when the rows' GPUs differ: a capacity mark on each
        row instead of the one line, and each row's overflow against its own capacity."""
        self.rows = list(rows)
        self.capacity = capacity_bytes
        self.capacities = list(capacities) if capacities is not None else None
        n = len(self.rows)
        own = np.array(
            list(capacities) if capacities is not None and len(capacities) == n else [],
            dtype=float,
        )
        per_row = own.size > 0 and float(own.max() - own.min()) > 0
        y0 = np.arange(n, dtype=float) - 0.32
        height = np.full(n, 0.64)
        left = np.zeros(n)
        for key in self.components:
            width = np.array([max(row.parts.get(key, 0.0), 0.0) for row in self.rows]) / units.GB
            self._set_bars(self.items[key], x0=left.copy(), width=width, y0=y0, height=height)
            left += width
        totals = (
            np.array(
                [
                    row.total if row.total is not None else sum(row.parts.values())
                    for row in self.rows
                ]
            )
            / units.GB
        )
        capacity_gb = capacity_bytes / units.GB
        row_gb = own / units.GB if per_row else np.full(n, capacity_gb)
        over = np.where(totals > row_gb)[0]
        self._set_bars(
            self.overflow,
            x0=row_gb[over],
            width=totals[over] - row_gb[over],
            y0=y0[over] - 0.04,
            height=height[over] + 0.08,
        )
        mark = max(float(row_gb.max()) if n else capacity_gb, 1.0) * 0.006
        shown = row_gb if per_row else np.zeros(0)
        self._set_bars(
            self.row_capacity,
            x0=shown - mark / 2,
            width=np.full(shown.size, mark),
            y0=y0[: shown.size] - 0.16,
            height=np.full(shown.size, 0.96),
        )
        self.capacity_line.setVisible(not per_row)
        if self._last.get("capacity") != capacity_bytes:
            self._last["capacity"] = capacity_bytes
            self._last.pop("capacity_label", None)
            self.capacity_line.setValue(capacity_gb)
            self.capacity_line.label.setText(f"capacity {units.format_gb(capacity_bytes)}")
        self._draw_labels(left, totals, row_gb)
        self._fit_axes(left, totals, float(row_gb.max()) if n else capacity_gb)

    def _draw_labels(self, left: np.ndarray, totals: np.ndarray, capacity_gb: np.ndarray) -> None:
        """Each bar's total right of it; a text or position is set only when it changed
        (``setText`` re-lays out the text)."""
        n = len(self.rows)
        while len(self.labels) < n:
            bar_label = BarLabel()
            self.plot.getPlotItem().getViewBox().addItem(bar_label, ignoreBounds=True)
            self.labels.append(bar_label)
        foreground = self.plot.foreground.name()
        # a narrow chart prints "65.0 GB" (GiB in the tooltip) rather than a cut "65.0 GB (6"
        view_px = self.plot.getPlotItem().getViewBox().width()
        longest = max((self.total_text(i) for i in range(n)), key=len, default="")
        short = 0 < view_px < 2.2 * self.fontMetrics().horizontalAdvance(longest)
        for index, label in enumerate(self.labels):
            if index >= n:
                wanted: tuple[str, str] = ("", foreground)
            else:
                over_capacity = totals[index] > capacity_gb[index]
                text = self.total_text(index, short=short)
                wanted = (text, colors.BAD if over_capacity else foreground)
                at = (max(float(left[index]), float(totals[index])), float(index))
                if self._label_pos.get(index) != at:
                    self._label_pos[index] = at
                    label.setPos(*at)
            if self._label_state.get(index) != wanted:
                self._label_state[index] = wanted
                label.set_label(*wanted)

    def _fit_axes(self, left: np.ndarray, totals: np.ndarray, capacity_gb: float) -> None:
        """Row names on the left axis and a still x range (a nice ceiling with room for the
        labels), each set only when it changed."""
        n = len(self.rows)
        plot = self.plot.getPlotItem()
        names = tuple(row.label for row in self.rows)
        if self._last.get("names") != names:
            self._last["names"] = names
            left_axis = plot.getAxis("left")
            left_axis.setTicks([list(enumerate(names))])
            widest = max((self.fontMetrics().horizontalAdvance(name) for name in names), default=0)
            left_axis.setWidth(widest + 16)
        top = max([capacity_gb, *left.tolist(), *totals.tolist()]) if n else capacity_gb
        # leave room right of the longest bar for its "61.2 GB (57.0 GiB)" label
        label_px = max(
            (self.fontMetrics().horizontalAdvance(t) for t, _ in self._label_state.values()),
            default=0,
        )
        view_px = max(plot.getViewBox().width(), 1.0)
        share = min(label_px / view_px + 0.04, 0.6) if view_px > 50 else 0.3
        needed = top / (1 - share) if top > 0 else 1.0
        kept = self._last.get("range")
        # the axis stays put while the bars still fit and fill at least a quarter of it: an edit
        # that moves a bar then repaints the bar, not the axis and the whole plot
        still = (
            isinstance(kept, tuple) and kept[2] == n and STILL_SHARE * kept[1] <= needed <= kept[1]
        )
        x_range = kept if still else (0.0, nice_ceiling(needed), n)
        if kept != x_range and isinstance(x_range, tuple):
            self._last["range"] = x_range
            # a band above the first bar keeps the capacity label off the bars and unclipped
            plot.getViewBox().setRange(
                xRange=(x_range[0], x_range[1]), yRange=(-1.05, max(n - 0.4, 0.6)), padding=0
            )
        self._place_capacity_label(capacity_gb, view_px)

    def _place_capacity_label(self, capacity_gb: float, view_px: float) -> None:
        """The capacity label right of its line, else left of it, else only the size: never
        run off the plot ("capacity 8")."""
        kept = self._last.get("range")
        if not isinstance(kept, tuple) or kept[1] <= 0 or view_px <= 50:
            return
        full = f"capacity {units.format_gb(self.capacity)}"
        metrics = self.fontMetrics()
        right_px = (kept[1] - capacity_gb) / kept[1] * view_px
        left_px = capacity_gb / kept[1] * view_px
        text, anchor = full, (0.0, 0.0)
        needed = metrics.horizontalAdvance(full) + 8
        if right_px < needed:
            if left_px >= needed:
                anchor = (1.0, 0.0)
            else:
                text = units.format_gb(self.capacity)
                short = metrics.horizontalAdvance(text) + 8
                anchor = (0.0, 0.0) if right_px >= short or right_px >= left_px else (1.0, 0.0)
        # 14 px below the top edge: the label (centred on its point) stays inside the plot
        view_height = self.plot.getPlotItem().getViewBox().height()
        position = min(0.45, 14.0 / view_height) if view_height > 0 else 0.04
        wanted = (text, anchor, round(position, 3))
        if self._last.get("capacity_label") != wanted:
            self._last["capacity_label"] = wanted
            self.capacity_line.label.setText(text)
            self.capacity_line.label.setAnchor(anchor)
            self.capacity_line.label.setPosition(position)

    @staticmethod
    def _set_bars(item: pg.BarGraphItem, **arrays: np.ndarray) -> None:
        """``setOpts`` re-renders the item's picture and repaints it: only when a value moved
        (a micro-batch edit moves the activations and what is right of them, not the weights)."""
        opts = item.opts
        if all(
            name in opts
            and opts[name] is not None
            and np.shape(opts[name]) == value.shape
            and np.array_equal(opts[name], value)
            for name, value in arrays.items()
        ):
            return
        item.setOpts(**arrays)

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802 (Qt API)
        super().resizeEvent(event)
        if self.rows:  # the room the labels need depends on the width
            self._resize_timer.start()

    def _redo_layout(self) -> None:
        if self.rows:
            self.set_rows(self.rows, self.capacity, self.capacities)

    def changeEvent(self, event: QEvent) -> None:  # noqa: N802 (Qt API)
        super().changeEvent(event)
        if event.type() == QEvent.Type.PaletteChange and self.rows:
            self._label_state.clear()
            self.set_rows(self.rows, self.capacity, self.capacities)

    def total_text(self, index: int, short: bool = False) -> str:
        total = self.rows[index].total
        if total is None:
            return ""
        if short:
            return f"{total / units.GB:,.1f} GB"
        return f"{total / units.GB:,.1f} GB ({total / units.GiB:,.1f} GiB)"

    def segment_at(self, x_gb: float, y: float) -> tuple[int, str] | None:
        """(row, component) under data coordinates, or None."""
        row = round(y)
        if not 0 <= row < len(self.rows) or abs(y - row) > 0.32:
            return None
        left = 0.0
        for key in self.components:
            width = max(self.rows[row].parts.get(key, 0.0), 0.0) / units.GB
            if left <= x_gb < left + width:
                return row, key
            left += width
        return None

    def tooltip_for(self, row: int, key: str) -> str:
        bar = self.rows[row]
        return bytes_tooltip(
            f"{bar.label}: {colors.COMPONENT_LABEL[key]}",
            bar.parts.get(key, 0.0),
            bar.explain.get(key, ""),
        )

    def _hover(self, pos: QPointF) -> None:
        view = self.plot.getPlotItem().getViewBox()
        point = view.mapSceneToView(pos)
        hit = self.segment_at(point.x(), point.y())
        if hit is None:
            QToolTip.hideText()
            return
        global_pos = self.plot.mapToGlobal(self.plot.mapFromScene(pos))
        QToolTip.showText(global_pos, self.tooltip_for(*hit), self.plot)
