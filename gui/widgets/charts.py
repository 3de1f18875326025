"""pyqtgraph charts, built once and updated in place.

Import PySide6 before pyqtgraph so pyqtgraph binds to it. Backgrounds and axis colours
follow the application palette (light or dark).
"""

from __future__ import annotations

import html
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
from PySide6.QtCore import QEvent, QPointF, QRectF, Qt, QTimer
from PySide6.QtGui import (
    QBrush,
    QColor,
    QFont,
    QFontMetrics,
    QPainterPath,
    QPalette,
    QPen,
    QResizeEvent,
    QTransform,
)
from PySide6.QtWidgets import (
    QApplication,
    QGraphicsItem,
    QGraphicsPathItem,
    QGraphicsSimpleTextItem,
    QLabel,
    QToolTip,
    QVBoxLayout,
    QWidget,
)

# pyqtgraph loads QtOpenGL and QtOpenGLWidgets through importlib at import time; plain
# imports let bundlers (PyInstaller) see that the window needs them
from PySide6 import QtOpenGL, QtOpenGLWidgets  # noqa: F401  # isort: skip

import pyqtgraph as pg  # isort: skip  (after PySide6)
from pyqtgraph.graphicsItems.ScatterPlotItem import Symbols  # isort: skip

from llm_planner.core.primitives import units
from llm_planner.gui import colors
from llm_planner.gui.formatting import bytes_tooltip

pg.setConfigOptions(antialias=False, useNumba=False)


def palette_colors() -> tuple[QColor, QColor, QColor]:
    """(background, foreground, grid) from the application palette."""
    palette = QApplication.palette()
    background = palette.color(QPalette.ColorRole.Base)
    foreground = palette.color(QPalette.ColorRole.Text)
    grid = QColor(foreground)
    grid.setAlpha(50)
    return background, foreground, grid


class FormattedAxis(pg.AxisItem):
    """An axis whose tick labels come from a formatter (e.g. dollars)."""

    def __init__(self, formatter: Callable[[float], str], **kwargs: object):
        super().__init__(**kwargs)
        self.formatter = formatter
        self.enableAutoSIPrefix(False)

    def tickStrings(self, values: list[float], scale: float, spacing: float) -> list[str]:  # noqa: N802 (pyqtgraph API)
        del spacing
        return [self.formatter(v * scale) for v in values]


class ThemedPlot(pg.PlotWidget):
    """A PlotWidget whose colours follow the palette, with mouse panning off by default."""

    def __init__(
        self,
        parent: QWidget | None = None,
        interactive: bool = False,
        y_format: Callable[[float], str] | None = None,
    ):
        axes = {"left": FormattedAxis(y_format, orientation="left")} if y_format else None
        super().__init__(parent, axisItems=axes)
        self.setMenuEnabled(False)
        self.getPlotItem().hideButtons()
        if not interactive:
            self.setMouseEnabled(x=False, y=False)
        # low enough that at 1024×640 a tab's charts, titles and legends all fit their pane:
        # a layout below its minimum draws its rows over each other (an x-axis name over the
        # tick labels)
        self.setMinimumHeight(100)
        # a chart draws no focus frame and takes no keys: Tab passes it by, so the focus is
        # always on something that shows it
        self.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        self.apply_palette()

    def apply_palette(self) -> None:
        background, foreground, _grid = palette_colors()
        self.foreground = foreground
        self.setBackground(background)
        plot = self.getPlotItem()
        for name in ("left", "bottom", "right", "top"):
            axis = plot.getAxis(name)
            axis.setPen(pg.mkPen(foreground))
            axis.setTextPen(pg.mkPen(foreground))
        plot.titleLabel.setAttr("color", foreground.name())
        self.foreground = foreground

    def changeEvent(self, event: QEvent) -> None:  # noqa: N802 (Qt API)
        if event.type() == QEvent.Type.PaletteChange and self.getPlotItem() is not None:
            self.apply_palette()
        super().changeEvent(event)


def _power_of_two(value: float) -> bool:
    whole = round(value)
    return whole == value and whole > 0 and whole & (whole - 1) == 0


def binary_count(value: float) -> str:
    """A GPU count or context as engineers write it: 8192 → "8k", 131072 → "128k", 512."""
    whole = round(value)
    if whole >= 1024**2 and whole % 1024**2 == 0:
        return f"{whole // 1024**2}M"
    if whole >= 1024 and whole % 1024 == 0:
        return f"{whole // 1024}k"
    return f"{whole:,}"


def legend_row(entries: Sequence[tuple[str, str]]) -> QLabel:
    """Coloured squares and names as one rich-text label: crisp, and it wraps when narrow."""
    parts = [
        f'<span style="color:{colour}; font-size: large;">&#9632;</span>&nbsp;{label}'
        for label, colour in entries
    ]
    label = QLabel(" &nbsp;&nbsp; ".join(parts))
    label.setWordWrap(True)
    label.setTextFormat(Qt.TextFormat.RichText)
    label.setContentsMargins(4, 0, 4, 0)
    return label


def chart_caption(text: str, *, title: bool = False) -> QLabel:
    """A chart's title (above) or x-axis name (below) as a label that wraps when the chart is
    narrow: pyqtgraph draws both centred on one line and cuts them at the plot's edges
    ("…(peak) ur" at 1366 px with a pipeline chart beside it)."""
    label = QLabel(text)
    label.setWordWrap(True)
    label.setAlignment(Qt.AlignmentFlag.AlignHCenter)
    label.setContentsMargins(4, 2, 4, 0)
    label.setObjectName("chart_title" if title else "x_label")
    if title:
        font = label.font()
        font.setPointSizeF(font.pointSizeF() * 1.25)
        label.setFont(font)
    return label


def nice_ceiling(value: float) -> float:
    """``value`` rounded up to 1, 2 or 5 × 10^k: the axis stays still while bars move."""
    exponent = math.floor(math.log10(value))
    for step in (1.0, 1.2, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0):
        candidate = step * 10.0**exponent
        if candidate >= value:
            return candidate
    return 10.0 ** (exponent + 1)


STILL_SHARE = 0.25
"""Display rule: a bar chart keeps its x range while its longest bar (and label) needs at
least this share of it; below, the range shrinks to the bars. A still axis lets the eye
compare bars while flipping between values (micro-batch 1 ↔ 4, sequence 2k ↔ 8k: 2-4×), and
spares the whole-plot repaint a new range costs."""


class Bars(pg.BarGraphItem):
    """A ``BarGraphItem`` whose bounding rectangle is worked out once per data and view
    transform: pyqtgraph's recomputes the pen's pixel padding in Python on each of the
    dozens of calls Qt makes per repaint."""

    def __init__(self, **opts: object):
        self._bounds: QRectF | None = None
        super().__init__(**opts)

    def setOpts(self, **opts: object) -> None:  # noqa: N802 (pyqtgraph API)
        self._bounds = None
        super().setOpts(**opts)

    def viewTransformChanged(self) -> None:  # noqa: N802 (pyqtgraph API)
        self._bounds = None
        super().viewTransformChanged()

    def boundingRect(self) -> QRectF:  # noqa: N802 (Qt API)
        if self._bounds is None:
            self._bounds = QRectF(super().boundingRect())
        return QRectF(self._bounds)


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
        self.labels: list[BarLabel] = []
        layout.addWidget(self.title)
        layout.addWidget(self.plot, 1)
        layout.addWidget(self.x_label)
        entries = [(colors.COMPONENT_LABEL[k], colors.COMPONENT_COLOR[k]) for k in self.components]
        layout.addWidget(legend_row(entries))
        self.rows: list[BarRow] = []
        self.capacity: float = 0.0
        self._last: dict[str, object] = {}
        self._label_state: dict[int, tuple[str, str]] = {}
        self._label_pos: dict[int, tuple[float, float]] = {}
        self._resize_timer = QTimer(self)
        self._resize_timer.setSingleShot(True)
        self._resize_timer.setInterval(0)
        self._resize_timer.timeout.connect(self._redo_layout)
        self.plot.scene().sigMouseMoved.connect(self._hover)
        self.plot.setMinimumHeight(80)  # under the 1024×640 inference bars sit the fit buttons

    def set_rows(self, rows: Sequence[BarRow], capacity_bytes: float) -> None:
        """Redraw in place: ``rows`` top to bottom, capacity line at ``capacity_bytes``."""
        self.rows = list(rows)
        self.capacity = capacity_bytes
        n = len(self.rows)
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
        over = np.where(totals > capacity_gb)[0]
        self._set_bars(
            self.overflow,
            x0=np.full(over.size, capacity_gb),
            width=totals[over] - capacity_gb,
            y0=y0[over] - 0.04,
            height=height[over] + 0.08,
        )
        if self._last.get("capacity") != capacity_bytes:
            self._last["capacity"] = capacity_bytes
            self._last.pop("capacity_label", None)
            self.capacity_line.setValue(capacity_gb)
            self.capacity_line.label.setText(f"capacity {units.format_gb(capacity_bytes)}")
        self._draw_labels(left, totals, capacity_gb)
        self._fit_axes(left, totals, capacity_gb)

    def _draw_labels(self, left: np.ndarray, totals: np.ndarray, capacity_gb: float) -> None:
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
                over_capacity = totals[index] > capacity_gb
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
            self.set_rows(self.rows, self.capacity)

    def changeEvent(self, event: QEvent) -> None:  # noqa: N802 (Qt API)
        super().changeEvent(event)
        if event.type() == QEvent.Type.PaletteChange and self.rows:
            self._label_state.clear()
            self.set_rows(self.rows, self.capacity)

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


def _step_floor(value: float) -> float:
    """The largest 1, 2 or 5 × 10^k at or below ``value`` (> 0): a log axis's lower end."""
    exponent = math.floor(math.log10(value))
    for step in (5.0, 2.0, 1.0):
        candidate = step * 10.0**exponent
        if candidate <= value * (1 + 1e-12):
            return candidate
    return 10.0**exponent


def _step_ceiling(value: float) -> float:
    """The smallest 1, 2 or 5 × 10^k at or above ``value`` (> 0): a log axis's upper end."""
    exponent = math.floor(math.log10(value))
    for step in (1.0, 2.0, 5.0, 10.0):
        candidate = step * 10.0**exponent
        if candidate >= value * (1 - 1e-12):
            return candidate
    return 10.0 ** (exponent + 1)


def _axis_range(
    values: Sequence[float], log: bool, snug: bool = False
) -> tuple[float, float] | None:
    """A still view range (view coordinates) holding ``values``: log axes snap to 1-2-5 steps,
    linear ones start at 0 (or a nice floor below it) and end at a nice ceiling, each with a
    small margin so markers at the ends are not cut. A moving marker changes the range only
    when it crosses a step, so most edits repaint the marker alone. ``snug``: a linear axis
    ends at the largest value (plus the margin) instead, for an x axis whose values are the
    sweep's own points (they move only when the sweep is recomputed)."""
    if log:
        positive = [v for v in values if v > 0 and math.isfinite(v)]
        if not positive:
            return None
        low, high = math.log10(_step_floor(min(positive))), math.log10(_step_ceiling(max(positive)))
        if high - low < 1e-9:
            low, high = low - 0.5, high + 0.5
        margin = 0.03 * (high - low)
        return low - margin, high + margin
    finite = [v for v in values if math.isfinite(v)]
    if not finite:
        return None
    top = max(finite)
    bottom = min(finite)
    high = (top if snug else nice_ceiling(top)) if top > 0 else 0.0
    low = -nice_ceiling(-bottom) if bottom < 0 else 0.0
    if high - low <= 0:
        high = low + 1.0
    margin = 0.02 * (high - low)
    return low - (margin if low < 0 or snug else 0.0), high + margin


def _set_label(line: pg.InfiniteLine, text: str) -> None:
    """A reference line's label, re-laid out only when it changes. The label re-renders its
    ``format`` whenever the line moves, so the format is the (brace-escaped) text itself."""
    label = line.label
    escaped = text.replace("{", "{{").replace("}", "}}")
    if label.format != escaped:
        label.format = escaped
        label.setText(text)


class SeriesChart(QWidget):
    """Lines (``PlotDataItem``), markers and reference lines, updated in place.

    The view range is set here, not by pyqtgraph's auto-range (which re-measures every item
    on every paint and repaints the chart twice when a marker moves): :func:`_axis_range`
    over all data, set only when it changes. A setter given the data already drawn does
    nothing, so an edit repaints only the charts whose data moved.
    """

    def __init__(
        self,
        title: str,
        x_label: str,
        y_label: str,
        *,
        y_format: Callable[[float], str] | None = None,
        log_x: bool = False,
        log_y: bool = False,
        parent: QWidget | None = None,
    ):
        super().__init__(parent)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        self.plot = ThemedPlot(y_format=y_format)
        self.title = chart_caption(title, title=True)
        self.x_label = chart_caption(x_label)
        item = self.plot.getPlotItem()
        item.setLabel("left", y_label)
        item.setLogMode(x=log_x, y=log_y)
        for axis in ("left", "bottom"):
            item.getAxis(axis).enableAutoSIPrefix(False)
        item.showGrid(x=False, y=False)
        item.getViewBox().disableAutoRange()
        # the legend is a row under the plot, never over the data it explains
        self.legend_entries: list[tuple[str, str, str, str]] = []
        self.legend = QLabel()
        self.legend.setObjectName("legend")
        self.legend.setWordWrap(True)
        self.legend.setTextFormat(Qt.TextFormat.RichText)
        self.legend.setContentsMargins(6, 0, 6, 0)
        self.log_x, self.log_y = log_x, log_y
        self.lines: dict[str, pg.PlotDataItem] = {}
        self.markers: dict[str, list[QGraphicsPathItem]] = {}
        self._marker_style: dict[str, tuple[QPainterPath, QPen, QBrush]] = {}
        self.hlines: dict[str, pg.InfiniteLine] = {}
        self.vlines: dict[str, pg.InfiniteLine] = {}
        self._data: dict[str, tuple[tuple[float, ...], tuple[float, ...]]] = {}
        """(x, y) as given, per line or marker key (before any log transform)."""
        self._levels: dict[str, float | None] = {}
        """Each reference line's value as given (None: hidden)."""
        self._range: tuple[object, ...] | None = None
        self._ticks: dict[str, object] = {}
        self.info = QLabel()
        self.info.setWordWrap(True)
        self.info.setAlignment(Qt.AlignmentFlag.AlignHCenter)
        self.info.hide()
        layout.addWidget(self.title)
        layout.addWidget(self.plot)
        layout.addWidget(self.x_label)
        layout.addWidget(self.legend)
        layout.addWidget(self.info)
        self.right_axis: pg.ViewBox | None = None

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802 (Qt API)
        super().resizeEvent(event)
        if self.log_x and event.size().width() != event.oldSize().width():
            self._log_ticks()  # how many labels fit depends on the width

    def _legend(self, key: str, label: str, colour: str, glyph: str) -> None:
        if label:
            self.legend_entries.append((key, label, colour, glyph))

    def _update_legend(self) -> None:
        """Name only what is drawn: a line whose values are all infinite (a rollout that
        cannot run) or empty has no entry."""
        text = " &nbsp;&nbsp; ".join(
            f'<span style="color:{c}; font-size: large;">{g}</span>&nbsp;{html.escape(t)}'
            for key, t, c, g in self.legend_entries
            if self._drawn(key)
        )
        if self.legend.text() != text:
            self.legend.setText(text)

    def _drawn(self, key: str) -> bool:
        xs, ys = self._data.get(key, ((), ()))
        return any(
            math.isfinite(self._view(x, self.log_x)) and math.isfinite(self._view(y, self.log_y))
            for x, y in zip(xs, ys, strict=False)
        )

    def legend_labels(self) -> list[str]:
        """The names the legend shows now."""
        return [t for key, t, _c, _g in self.legend_entries if self._drawn(key)]

    def add_line(
        self, key: str, label: str, colour: str, dashed: bool = False, symbol: str | None = None
    ) -> None:
        pen = pg.mkPen(
            colour, width=2, style=Qt.PenStyle.DashLine if dashed else Qt.PenStyle.SolidLine
        )
        line = self.plot.plot(
            [],
            [],
            antialias=True,
            pen=pen,
            name=label,
            symbol=symbol,
            symbolBrush=colour,
            symbolPen=None,
            symbolSize=6,
        )
        self.lines[key] = line
        self._data[key] = ((), ())
        self._legend(key, label, colour, "&#8211;&#8211;" if dashed else "&#9472;&#9472;")

    def add_markers(
        self, key: str, label: str, colour: str, symbol: str = "o", size: int = 10
    ) -> None:
        """Markers as plain ``QGraphicsPathItem`` symbols of ``size`` pixels, placed in view
        coordinates (the log transform is done here) and moved by ``setPos``: Qt's own item,
        drawn and bounded without a Python call, so a moving marker repaints its two small
        rectangles and nothing else."""
        edge = QColor(colour).darker(140)
        path = QTransform.fromScale(size, size).map(Symbols.get(symbol, Symbols["o"]))
        self._marker_style[key] = (path, pg.mkPen(edge), pg.mkBrush(colour))
        self.markers[key] = []
        self._data[key] = ((), ())
        glyph = {"star": "&#9733;", "d": "&#9670;", "s": "&#9632;"}.get(symbol, "&#9679;")
        self._legend(key, label, colour, glyph)

    def add_hline(self, key: str, colour: str, label: str = "") -> None:
        line = pg.InfiniteLine(
            angle=0, movable=False, pen=pg.mkPen(colour, width=2, style=Qt.PenStyle.DashLine)
        )
        line.label = pg.InfLineLabel(line, text=label, position=0.12, anchor=(0, 1), color=colour)
        self.plot.addItem(line)
        line.hide()
        self.hlines[key] = line
        self._levels[key] = None

    def add_vline(self, key: str, colour: str, label: str = "") -> None:
        line = pg.InfiniteLine(
            angle=90, movable=False, pen=pg.mkPen(colour, width=1.5, style=Qt.PenStyle.DotLine)
        )
        line.label = pg.InfLineLabel(line, text=label, position=0.55, anchor=(0, 0), color=colour)
        self.plot.addItem(line)
        line.hide()
        self.vlines[key] = line
        self._levels[f"v:{key}"] = None

    @staticmethod
    def _pair(xs: Sequence[float], ys: Sequence[float]) -> tuple[tuple[float, ...], ...]:
        return tuple(map(float, xs)), tuple(map(float, ys))

    def set_line(self, key: str, xs: Sequence[float], ys: Sequence[float]) -> None:
        data = self._pair(xs, ys)
        if self._data[key] == data:
            return
        self._data[key] = data  # type: ignore[assignment]
        self.lines[key].setData(np.asarray(data[0], dtype=float), np.asarray(data[1], dtype=float))
        self._log_ticks()
        self._fit_view()
        self._update_legend()

    def _view(self, value: float, log: bool) -> float:
        if not log:
            return value
        return math.log10(value) if value > 0 else math.nan

    def set_markers(self, key: str, xs: Sequence[float], ys: Sequence[float]) -> None:
        data = self._pair(xs, ys)
        if self._data[key] == data:
            return
        self._data[key] = data  # type: ignore[assignment]
        viewed = (
            (self._view(x, self.log_x), self._view(y, self.log_y))
            for x, y in zip(*data, strict=False)
        )
        points = [(vx, vy) for vx, vy in viewed if math.isfinite(vx) and math.isfinite(vy)]
        items = self.markers[key]
        path, pen, brush = self._marker_style[key]
        while len(items) < len(points):
            item = QGraphicsPathItem(path)
            item.setPen(pen)
            item.setBrush(brush)
            item.setFlag(QGraphicsItem.GraphicsItemFlag.ItemIgnoresTransformations)
            item.setZValue(20)
            self.plot.getPlotItem().addItem(item, ignoreBounds=True)
            items.append(item)
        for index, item in enumerate(items):
            if index < len(points):
                item.setPos(*points[index])
                item.show()
            else:
                item.hide()
        self._fit_view()
        self._update_legend()

    def data(self, key: str) -> tuple[list[float], list[float]]:
        """The (x, y) given to line or markers ``key``, before any log transform."""
        xs, ys = self._data[key]
        return list(xs), list(ys)

    def set_hline(self, key: str, y: float | None, label: str | None = None) -> None:
        line = self.hlines[key]
        if label is not None:
            _set_label(line, label)
        if self._levels[key] == y:
            return
        self._levels[key] = y
        if y is None:
            line.hide()
        else:
            line.setValue(self._view(y, self.log_y) if y > 0 or not self.log_y else 0.0)
            line.show()
        self._fit_view()

    def set_vline(self, key: str, x: float | None, label: str | None = None) -> None:
        line = self.vlines[key]
        if label is not None:
            _set_label(line, label)
        if self._levels[f"v:{key}"] == x:
            return
        self._levels[f"v:{key}"] = x
        if x is None:
            line.hide()
        else:
            line.setValue(self._view(x, self.log_x) if x > 0 or not self.log_x else 0.0)
            line.show()
        self._fit_view()

    def _fit_view(self) -> None:
        """Set the view range to :func:`_axis_range` of everything drawn, if it moved. A
        horizontal line's label sits above it: the range keeps room for it."""
        xs = [x for x_values, _ in self._data.values() for x in x_values]
        ys = [y for _, y_values in self._data.values() for y in y_values]
        xs += [v for k, v in self._levels.items() if k.startswith("v:") and v is not None]
        for key in self.hlines:
            level = self._levels[key]
            if level is not None:
                ys += [level, level * (1.6 if self.log_y else 1.12)]
        x_range = _axis_range(xs, self.log_x, snug=True)
        y_range = _axis_range(ys, self.log_y)
        wanted = (x_range, y_range)
        if wanted == self._range:
            return
        self._range = wanted
        if x_range is None and y_range is None:
            return  # nothing drawn: the view stays where it was
        view = self.plot.getPlotItem().getViewBox()
        view.setRange(xRange=x_range, yRange=y_range, padding=0, update=True)

    def _log_ticks(self) -> None:
        """Readable log-axis labels: the x points themselves (GPU counts, contexts: powers of
        two) thinned to a few, and 1-2-5 steps on y. pyqtgraph's own minor labels overlap."""
        xs: list[float] = []
        ys: list[float] = []
        for key in self.lines:
            x_values, y_values = self._data[key]
            xs.extend(v for v in x_values if v > 0)
            ys.extend(v for v in y_values if v > 0)
        if self.log_x and xs:
            values = sorted(set(xs))
            if all(_power_of_two(v) for v in values):  # GPU counts, contexts: 1k = 1024
                # at most 7 labels, fewer when the chart is narrow ("32 128512 2k" ran together)
                label_px = self.fontMetrics().horizontalAdvance("128k") + 16
                room = max(2, int((self.plot.width() - 60) / label_px))
                stride = max(1, math.ceil(len(values) / min(7, room)))
                ticks = [(math.log10(v), binary_count(v)) for v in values[::stride]]
            else:  # parameters, tokens: decades, 100M 1B 10B, never 268M 1.21B 5.5B
                low = math.floor(math.log10(min(values)))
                high = math.ceil(math.log10(max(values)))
                step = max(1, math.ceil((high - low) / 7))
                ticks = [
                    (float(e), units.format_count(10.0**e)) for e in range(low, high + 1, step)
                ]
            self._set_ticks("bottom", ticks)
        if self.log_y and ys:
            low, high = math.floor(math.log10(min(ys))), math.ceil(math.log10(max(ys)))
            steps = (1.0,) if high - low > 3 else (1.0, 2.0, 5.0)
            ticks = [
                (math.log10(m * 10.0**e), units.format_count(m * 10.0**e))
                for e in range(low, high + 1)
                for m in steps
            ]
            self._set_ticks("left", ticks)

    def _set_ticks(self, axis: str, ticks: list[tuple[float, str]]) -> None:
        """``setTicks`` redraws the axis picture: only when the ticks differ."""
        if self._ticks.get(axis) != ticks:
            self._ticks[axis] = ticks
            self.plot.getPlotItem().getAxis(axis).setTicks([ticks])


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
