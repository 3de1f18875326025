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
from PySide6.QtCore import QEvent, QPointF, Qt, QTimer
from PySide6.QtGui import QColor, QFont, QPalette, QResizeEvent
from PySide6.QtWidgets import QApplication, QLabel, QToolTip, QVBoxLayout, QWidget

# pyqtgraph loads QtOpenGL and QtOpenGLWidgets through importlib at import time; plain
# imports let bundlers (PyInstaller) see that the window needs them
from PySide6 import QtOpenGL, QtOpenGLWidgets  # noqa: F401  # isort: skip

import pyqtgraph as pg  # isort: skip  (after PySide6)

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
        self.setMinimumHeight(150)
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


def nice_ceiling(value: float) -> float:
    """``value`` rounded up to 1, 2 or 5 × 10^k: the axis stays still while bars move."""
    exponent = math.floor(math.log10(value))
    for step in (1.0, 1.2, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0):
        candidate = step * 10.0**exponent
        if candidate >= value:
            return candidate
    return 10.0 ** (exponent + 1)


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
        self.plot.setTitle(title)
        plot = self.plot.getPlotItem()
        plot.setLabel("bottom", "GB per GPU (10⁹ bytes)")
        # no grid: pyqtgraph paints grid lines as part of the axis picture, replayed over the
        # whole view on every bar update (milliseconds per change); the capacity line is the
        # reference that matters
        plot.getViewBox().invertY(True)
        self.items: dict[str, pg.BarGraphItem] = {}
        empty = np.zeros(0)
        for key in self.components:
            colour = QColor(colors.COMPONENT_COLOR[key])
            item = pg.BarGraphItem(
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
        self.overflow = pg.BarGraphItem(
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
        self.labels: list[pg.TextItem] = []
        layout.addWidget(self.plot, 1)
        entries = [(colors.COMPONENT_LABEL[k], colors.COMPONENT_COLOR[k]) for k in self.components]
        layout.addWidget(legend_row(entries))
        self.rows: list[BarRow] = []
        self.capacity: float = 0.0
        self._last: dict[str, object] = {}
        self._label_state: dict[int, tuple[str, str]] = {}
        self._resize_timer = QTimer(self)
        self._resize_timer.setSingleShot(True)
        self._resize_timer.setInterval(0)
        self._resize_timer.timeout.connect(self._redo_layout)
        self.plot.scene().sigMouseMoved.connect(self._hover)
        self.plot.setMinimumHeight(130)

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
            self.items[key].setOpts(x0=left.copy(), width=width, y0=y0, height=height)
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
        self.overflow.setOpts(
            x0=np.full(over.size, capacity_gb),
            width=totals[over] - capacity_gb,
            y0=y0[over] - 0.04,
            height=height[over] + 0.08,
        )
        if self._last.get("capacity") != capacity_bytes:
            self._last["capacity"] = capacity_bytes
            self.capacity_line.setValue(capacity_gb)
            self.capacity_line.label.setText(f"capacity {units.format_gb(capacity_bytes)}")
        while len(self.labels) < n:
            text = pg.TextItem(anchor=(0, 0.5))
            text.setZValue(12)
            self.plot.addItem(text)
            self.labels.append(text)
        foreground = self.plot.foreground.name()
        for index, label in enumerate(self.labels):
            if index >= n:
                wanted: tuple[str, str] = ("", foreground)
            else:
                over_capacity = totals[index] > capacity_gb
                wanted = (self.total_text(index), colors.BAD if over_capacity else foreground)
                label.setPos(max(float(left[index]), float(totals[index])), float(index))
            if self._label_state.get(index) != wanted:  # setText re-lays out HTML: only on change
                self._label_state[index] = wanted
                label.setText(wanted[0], color=wanted[1])
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
        x_range = (0.0, nice_ceiling(top / (1 - share)) if top > 0 else 1.0, n)
        if self._last.get("range") != x_range:
            self._last["range"] = x_range
            plot.setXRange(x_range[0], x_range[1], padding=0)
            # a band above the first bar keeps the capacity label off the bars and unclipped
            plot.setYRange(-1.05, max(n - 0.4, 0.6), padding=0)

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

    def total_text(self, index: int) -> str:
        total = self.rows[index].total
        if total is None:
            return ""
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


class SeriesChart(QWidget):
    """Lines (``PlotDataItem``), markers and horizontal reference lines, updated in place."""

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
        self.plot.setTitle(title)
        item = self.plot.getPlotItem()
        item.setLabel("bottom", x_label)
        item.setLabel("left", y_label)
        item.setLogMode(x=log_x, y=log_y)
        for axis in ("left", "bottom"):
            item.getAxis(axis).enableAutoSIPrefix(False)
        item.showGrid(x=False, y=False)
        # the legend is a row under the plot, never over the data it explains
        self.legend_entries: list[tuple[str, str, str]] = []
        self.legend = QLabel()
        self.legend.setObjectName("legend")
        self.legend.setWordWrap(True)
        self.legend.setTextFormat(Qt.TextFormat.RichText)
        self.legend.setContentsMargins(6, 0, 6, 0)
        self.headroom: dict[str, pg.PlotDataItem] = {}
        self.log_x, self.log_y = log_x, log_y
        self.lines: dict[str, pg.PlotDataItem] = {}
        self.markers: dict[str, pg.PlotDataItem] = {}
        self.hlines: dict[str, pg.InfiniteLine] = {}
        self.vlines: dict[str, pg.InfiniteLine] = {}
        self.info = QLabel()
        self.info.setWordWrap(True)
        self.info.setAlignment(Qt.AlignmentFlag.AlignHCenter)
        self.info.hide()
        layout.addWidget(self.plot)
        layout.addWidget(self.legend)
        layout.addWidget(self.info)
        self.right_axis: pg.ViewBox | None = None

    def _legend(self, label: str, colour: str, glyph: str) -> None:
        if not label:
            return
        self.legend_entries.append((label, colour, glyph))
        self.legend.setText(
            " &nbsp;&nbsp; ".join(
                f'<span style="color:{c}; font-size: large;">{g}</span>&nbsp;{html.escape(t)}'
                for t, c, g in self.legend_entries
            )
        )

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
        self._legend(label, colour, "&#8211;&#8211;" if dashed else "&#9472;&#9472;")

    def add_markers(
        self, key: str, label: str, colour: str, symbol: str = "o", size: int = 10
    ) -> None:
        """Markers as a pen-less ``PlotDataItem`` (so log axes transform them too)."""
        edge = QColor(colour).darker(140)
        self.markers[key] = self.plot.plot(
            [],
            [],
            pen=None,
            name=label,
            symbol=symbol,
            symbolBrush=colour,
            symbolPen=pg.mkPen(edge),
            symbolSize=size,
        )
        glyph = {"star": "&#9733;", "d": "&#9670;", "s": "&#9632;"}.get(symbol, "&#9679;")
        self._legend(label, colour, glyph)

    def add_hline(self, key: str, colour: str, label: str = "") -> None:
        line = pg.InfiniteLine(
            angle=0, movable=False, pen=pg.mkPen(colour, width=2, style=Qt.PenStyle.DashLine)
        )
        line.label = pg.InfLineLabel(line, text=label, position=0.12, anchor=(0, 1), color=colour)
        self.plot.addItem(line)
        self.hlines[key] = line
        # an invisible point above the line: the view's auto-range keeps room for its label
        self.headroom[key] = self.plot.plot([], [], pen=None, symbol=None)

    def add_vline(self, key: str, colour: str, label: str = "") -> None:
        line = pg.InfiniteLine(
            angle=90, movable=False, pen=pg.mkPen(colour, width=1.5, style=Qt.PenStyle.DotLine)
        )
        line.label = pg.InfLineLabel(line, text=label, position=0.55, anchor=(0, 0), color=colour)
        self.plot.addItem(line)
        self.vlines[key] = line

    def set_line(self, key: str, xs: Sequence[float], ys: Sequence[float]) -> None:
        self.lines[key].setData(np.asarray(xs, dtype=float), np.asarray(ys, dtype=float))
        self._log_ticks()

    def _log_ticks(self) -> None:
        """Readable log-axis labels: the x points themselves (GPU counts, contexts: powers of
        two) thinned to a few, and 1-2-5 steps on y. pyqtgraph's own minor labels overlap."""
        xs: list[float] = []
        ys: list[float] = []
        for item in self.lines.values():
            x, y = item.getOriginalDataset()
            if x is not None and len(x):
                xs.extend(float(v) for v in x if v > 0)
                ys.extend(float(v) for v in y if v > 0)
        plot = self.plot.getPlotItem()
        if self.log_x and xs:
            values = sorted(set(xs))
            if all(_power_of_two(v) for v in values):  # GPU counts, contexts: 1k = 1024
                stride = max(1, math.ceil(len(values) / 7))
                ticks = [(math.log10(v), binary_count(v)) for v in values[::stride]]
            else:  # parameters, tokens: decades, 100M 1B 10B, never 268M 1.21B 5.5B
                low = math.floor(math.log10(min(values)))
                high = math.ceil(math.log10(max(values)))
                step = max(1, math.ceil((high - low) / 7))
                ticks = [
                    (float(e), units.format_count(10.0**e)) for e in range(low, high + 1, step)
                ]
            plot.getAxis("bottom").setTicks([ticks])
        if self.log_y and ys:
            low, high = math.floor(math.log10(min(ys))), math.ceil(math.log10(max(ys)))
            steps = (1.0,) if high - low > 3 else (1.0, 2.0, 5.0)
            ticks = [
                (math.log10(m * 10.0**e), units.format_count(m * 10.0**e))
                for e in range(low, high + 1)
                for m in steps
            ]
            plot.getAxis("left").setTicks([ticks])

    def set_markers(self, key: str, xs: Sequence[float], ys: Sequence[float]) -> None:
        self.markers[key].setData(np.asarray(xs, dtype=float), np.asarray(ys, dtype=float))

    def data(self, key: str) -> tuple[list[float], list[float]]:
        """The (x, y) given to line or markers ``key``, before any log transform."""
        item = self.lines.get(key) or self.markers[key]
        xs, ys = item.getOriginalDataset()
        return (
            [] if xs is None else list(map(float, xs)),
            [] if ys is None else list(map(float, ys)),
        )

    def set_hline(self, key: str, y: float | None, label: str | None = None) -> None:
        line = self.hlines[key]
        if y is None:
            line.hide()
            self.headroom[key].setData([], [])
            return
        line.show()
        line.setValue(np.log10(y) if self.log_y and y > 0 else y)
        if label is not None:
            line.label.setText(label)
        xs = [
            float(data[0])
            for data in (item.getOriginalDataset()[0] for item in self.lines.values())
            if data is not None and len(data)
        ]
        x = xs[0] if xs else 1.0
        room = y * (1.6 if self.log_y else 1.12)
        self.headroom[key].setData([x], [room])

    def set_vline(self, key: str, x: float | None, label: str | None = None) -> None:
        line = self.vlines[key]
        if x is None:
            line.hide()
            return
        line.show()
        line.setValue(np.log10(x) if self.log_x and x > 0 else x)
        if label is not None:
            line.label.setText(label)


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
        self.plot.setTitle(title)
        item = self.plot.getPlotItem()
        item.setLabel("bottom", "time (forward passes of one micro-batch)")
        item.getViewBox().invertY(True)
        self.items: dict[str, pg.BarGraphItem] = {}
        empty = np.zeros(0)
        for kind, colour in TIMELINE_COLORS.items():
            pen = pg.mkPen(QColor(colour).darker(150), width=1)
            bar = pg.BarGraphItem(
                x0=empty, width=empty, y0=empty, height=empty, brush=colour, pen=pen
            )
            bar.setZValue(-1 if kind == "bubble" else 1)
            item.addItem(bar)
            self.items[kind] = bar
        self.texts: list[pg.TextItem] = []
        self.info = QLabel()
        self.info.setWordWrap(True)
        self.info.setAlignment(Qt.AlignmentFlag.AlignHCenter)
        layout.addWidget(self.info)
        layout.addWidget(self.plot, 1)
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
        labelled = [b for b in self.blocks if b.label][: self.max_labels]
        while len(self.texts) < len(labelled):
            text = pg.TextItem(anchor=(0.5, 0.5))
            font = QFont()
            font.setPointSizeF(max(font.pointSizeF() - 2, 6))
            text.setFont(font)
            text.setZValue(5)
            self.plot.addItem(text)
            self.texts.append(text)
        for index, text in enumerate(self.texts):
            if index < len(labelled):
                block = labelled[index]
                text.setText(
                    block.label, color="#FFFFFF" if block.kind == "backward" else "#000000"
                )
                text.setPos(block.start + block.duration / 2, block.stage)
                text.show()
            else:
                text.hide()
        item = self.plot.getPlotItem()
        item.getAxis("left").setTicks([[(s, f"stage {s}") for s in range(stages)]])
        end = max((b.start + b.duration for b in self.blocks), default=1.0)
        item.setXRange(0, end, padding=0.01)
        item.setYRange(-0.6, max(stages - 0.4, 0.6), padding=0)
