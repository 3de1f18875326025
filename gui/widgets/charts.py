"""pyqtgraph charts, built once and updated in place: one import for the tabs.

The charts live in ``plot_base`` (the themed plot, axis, captions), ``memory_bars``,
``series_chart`` and ``timeline_chart``; this module names them in one place.
"""

from __future__ import annotations

from llm_planner.gui.widgets.memory_bars import STILL_SHARE, BarLabel, BarRow, MemoryBars
from llm_planner.gui.widgets.plot_base import (
    Bars,
    FormattedAxis,
    ThemedPlot,
    binary_count,
    chart_caption,
    legend_row,
    nice_ceiling,
    palette_colors,
)
from llm_planner.gui.widgets.series_chart import SeriesChart
from llm_planner.gui.widgets.timeline_chart import TIMELINE_COLORS, Block, TimelineChart

__all__ = [
    "STILL_SHARE",
    "TIMELINE_COLORS",
    "BarLabel",
    "BarRow",
    "Bars",
    "Block",
    "FormattedAxis",
    "MemoryBars",
    "SeriesChart",
    "ThemedPlot",
    "TimelineChart",
    "binary_count",
    "chart_caption",
    "legend_row",
    "nice_ceiling",
    "palette_colors",
]
