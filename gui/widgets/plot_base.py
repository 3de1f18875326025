"""What every chart shares: the themed plot, its axis, captions, legends, nice numbers.

Import PySide6 before pyqtgraph so pyqtgraph binds to it. Backgrounds and axis colours
follow the application palette (light or dark).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from PySide6.QtCore import QEvent, QRectF, Qt
from PySide6.QtGui import (
    QColor,
    QPalette,
)
from PySide6.QtWidgets import (
    QApplication,
    QLabel,
    QWidget,
)

# pyqtgraph loads QtOpenGL and QtOpenGLWidgets through importlib at import time; plain
# imports let bundlers (PyInstaller) see that the window needs them
from PySide6 import QtOpenGL, QtOpenGLWidgets  # noqa: F401  # isort: skip

import pyqtgraph as pg  # isort: skip  (after PySide6)


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
