"""Line and marker charts (time and cost against GPUs, Chinchilla, memory against context,
serving curves) with reference lines, built once and updated in place."""

from __future__ import annotations

import html
import math
from collections.abc import Callable, Sequence

import numpy as np
from PySide6.QtCore import Qt
from PySide6.QtGui import (
    QBrush,
    QColor,
    QPainterPath,
    QPen,
    QResizeEvent,
    QTransform,
)
from PySide6.QtWidgets import (
    QGraphicsItem,
    QGraphicsPathItem,
    QLabel,
    QVBoxLayout,
    QWidget,
)

import pyqtgraph as pg  # isort: skip  (after PySide6)
from pyqtgraph.graphicsItems.ScatterPlotItem import Symbols  # isort: skip

from llm_planner.core.primitives import units
from llm_planner.gui.widgets.plot_base import (
    ThemedPlot,
    _power_of_two,
    binary_count,
    chart_caption,
    nice_ceiling,
)


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
    def _pair(
        xs: Sequence[float], ys: Sequence[float]
    ) -> tuple[tuple[float, ...], tuple[float, ...]]:
        return tuple(map(float, xs)), tuple(map(float, ys))

    def set_line(self, key: str, xs: Sequence[float], ys: Sequence[float]) -> None:
        data = self._pair(xs, ys)
        if self._data[key] == data:
            return
        self._data[key] = data
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
        self._data[key] = data
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
