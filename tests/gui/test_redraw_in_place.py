"""Redrawn in place: the charts hold their data in view, move only what changed, and the
layout stays still while the user types (what keeps a keystroke's redraw in milliseconds)."""

from __future__ import annotations

import math
from typing import Any

import pytest
from PySide6.QtWidgets import QApplication

from llm_planner.gui.main_window import MainWindow

from .helpers import type_into

pytestmark = pytest.mark.gui


def _view_contains(chart: Any, key: str) -> bool:
    """Every point of line or markers ``key`` lies inside the chart's view (log axes in
    log10, as pyqtgraph's view coordinates are)."""
    (x_low, x_high), (y_low, y_high) = chart.plot.getPlotItem().getViewBox().viewRange()
    xs, ys = chart.data(key)
    for x, y in zip(xs, ys, strict=True):
        vx = math.log10(x) if chart.log_x else x
        vy = math.log10(y) if chart.log_y else y
        if not (x_low <= vx <= x_high and y_low <= vy <= y_high):
            return False
    return True


def test_series_chart_keeps_every_point_in_view_and_a_still_range(qtbot: Any) -> None:
    from llm_planner.gui.widgets.charts import SeriesChart

    chart = SeriesChart("t", "GPUs", "days", log_x=True, log_y=True)
    qtbot.addWidget(chart)
    chart.add_line("line", "line", "#1f77b4")
    chart.add_markers("here", "here", "#d62728", symbol="star")
    chart.set_line("line", [1, 8, 64, 512], [1000, 125, 15.6, 1.95])
    chart.set_markers("here", [64], [20])
    assert _view_contains(chart, "line")
    assert _view_contains(chart, "here")
    before = chart.plot.getPlotItem().getViewBox().viewRange()
    chart.set_markers("here", [100], [30])  # inside the 1-2-5 range: the axes stay put
    assert chart.plot.getPlotItem().getViewBox().viewRange() == before
    assert chart.data("here") == ([100.0], [30.0])
    chart.set_markers("here", [10_000], [5_000])  # beyond it: the range grows to hold it
    assert _view_contains(chart, "here")
    assert chart.plot.getPlotItem().getViewBox().viewRange() != before
    chart.set_markers("here", [], [])
    assert not any(item.isVisible() for item in chart.markers["here"])


def test_a_reference_line_keeps_room_for_its_label(qtbot: Any) -> None:
    from llm_planner.gui.widgets.charts import SeriesChart

    chart = SeriesChart("t", "context", "GB", log_x=True)
    qtbot.addWidget(chart)
    chart.add_line("total", "total", "#1f77b4")
    chart.add_hline("capacity", "#d62728", "capacity")
    chart.set_line("total", [512, 8192, 131072], [17.0, 18.7, 34.0])
    chart.set_hline("capacity", 80.0, "capacity 80.0 GB")
    _x, (y_low, y_high) = chart.plot.getPlotItem().getViewBox().viewRange()
    assert y_low <= 0.0
    assert y_high >= 80.0 * 1.12  # the line and the label above it
    assert chart.hlines["capacity"].label.toPlainText() == "capacity 80.0 GB"


def test_not_fitting_any_more_leaves_the_bars_their_size(qtbot: Any, window: MainWindow) -> None:
    """At 1366 × 768 the suggestions sit in a fixed column beside the bars: the bars keep
    their size (no whole-chart repaint) when a run stops fitting and suggestions arrive."""
    window.tabs.setCurrentIndex(2)
    tab = window.page(2)
    window.flush()
    QApplication.processEvents()
    assert tab.fit_panel.beside
    size = tab.bars.plot.size()
    type_into(qtbot, window, tab.micro_batch, "16")
    QApplication.processEvents()
    assert not window.state.report.training.fits
    assert tab.fit_panel.offered()
    assert tab.bars.plot.size() == size
    type_into(qtbot, window, tab.micro_batch, "1")
    QApplication.processEvents()
    assert window.state.report.training.fits
    assert not tab.fit_panel.offered()
    assert tab.bars.plot.size() == size


def test_a_narrow_window_puts_the_suggestions_under_the_bars(
    qtbot: Any, window: MainWindow
) -> None:
    window.resize(1024, 640)
    window.tabs.setCurrentIndex(2)
    tab = window.page(2)
    window.flush()
    QApplication.processEvents()
    assert not tab.fit_panel.beside
    assert not tab.fit_panel.isVisible()  # fits: nothing to offer, no room taken
    type_into(qtbot, window, tab.micro_batch, "16")
    QApplication.processEvents()
    assert tab.fit_panel.isVisible()
    assert tab.fit_panel.offered()
    window.resize(1366, 768)
    QApplication.processEvents()
    assert tab.fit_panel.beside


def test_a_keystroke_re_shows_only_the_fields_it_changed(qtbot: Any, window: MainWindow) -> None:
    """The binder leaves a field alone when its value did not change (an edit re-shows one or
    two fields, not sixty), yet a change made elsewhere (undo) still reaches every field."""
    window.tabs.setCurrentIndex(2)
    tab = window.page(2)
    seq_before = tab.seq_len.text()
    type_into(qtbot, window, tab.micro_batch, "2")
    assert tab.seq_len.text() == seq_before
    type_into(qtbot, window, tab.seq_len, "8k")
    assert window.state.scenario.training.seq_len == 8192
    window.state.undo_stack.undo()
    window.flush()
    assert window.state.scenario.training.seq_len == int(seq_before)
    assert tab.seq_len.text() == seq_before
    assert tab.micro_batch.text() == "2"


def test_a_figure_that_comes_and_goes_blanks_a_row_until_typing_pauses(
    qtbot: Any, window: MainWindow
) -> None:
    """Micro-batch 2 at tp 4 (a plan that fits: dp 128 × 2 = 256 sequences per micro-batch
    step): a global batch of 1,000 is not a multiple of 256 and adds a problem line; 1,024
    removes it. The table keeps its rows while the user types (its last row blank) and drops
    the blank row once typing pauses."""
    from llm_planner.gui.widgets.figure_table import TRIM_DELAY_MS

    window.tabs.setCurrentIndex(2)
    type_into(qtbot, window, window.page(2).micro_batch, "2")
    window.tabs.setCurrentIndex(3)
    tab = window.page(3)
    table = tab.figures
    type_into(qtbot, window, tab.tp, "4")
    type_into(qtbot, window, tab.global_batch, "1000")
    with_problem = len(table.figures)
    assert any(f.key == "problem" for f in table.figures)
    # typed without a flush: a flush waits for the search, and on a loaded machine that is
    # longer than the pause after which the blank row goes (the table redraws on the key)
    tab.global_batch.setFocus()
    tab.global_batch.selectAll()
    qtbot.keyClicks(tab.global_batch, "1024")
    assert not any(f.key == "problem" for f in table.figures)
    assert len(table.figures) == with_problem - 1
    assert table.rowCount() == with_problem  # no re-layout on the keystroke
    assert table.item(with_problem - 1, 0).text() == ""
    qtbot.wait(TRIM_DELAY_MS + 100)
    assert table.rowCount() == len(table.figures)
    type_into(qtbot, window, tab.global_batch, "1000")
    assert table.rowCount() == with_problem
    assert table.value_text("problem") is not None
