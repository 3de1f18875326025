"""A plan that does not fit (issue 25 item 2), as a user sees it: the compute tab, the
header and the Compare table read "—" with why, and the nearest plan that fits is one
click away with its own figures (one undo step)."""

from __future__ import annotations

from typing import Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QApplication

from llm_planner.core.composition.estimate import estimate
from llm_planner.gui.main_window import MainWindow

from .helpers import choose

pytestmark = pytest.mark.gui


def _seventy_b_at_tp1(qtbot: Any, window: MainWindow) -> Any:
    """Llama-3.1-70B chosen in the model picker: the default layout is tp 1, pp 1 on
    512 H100, whose training peak (bf16 weights and gradients alone: 4 × 70.55e9 = 282 GB)
    is over the 80 GB."""
    window.tabs.setCurrentIndex(0)
    choose(window, window.bar.model, "llama-3.1-70b")
    assert window.state.scenario.parallelism.tp == 1
    tab = window.page(0)
    qtbot.waitUntil(tab.not_priced.apply.isVisible, timeout=5000)
    return tab


def test_compute_tab_and_header_read_dash_with_why(qtbot: Any, window: MainWindow) -> None:
    tab = _seventy_b_at_tp1(qtbot, window)
    for key in ("wall_seconds", "cost_usd", "mfu"):
        assert tab.figures.value_text(key) == "—", key
    assert "needs " in tab.figures.value_text("throughput_source")
    reason = tab.not_priced.reason.text()
    assert "Does not fit" in reason
    assert "per GPU of 80.0 GB" in reason
    assert window.summary.labels["days"].text() == "time — (does not fit)"
    assert window.summary.labels["cost"].text() == "cost —"
    assert "needs " in window.summary.labels["days"].toolTip()
    assert window.summary.labels["memory"].text().startswith("training peak ")


def test_the_nearest_plan_that_fits_is_one_click_and_one_undo(
    qtbot: Any, window: MainWindow
) -> None:
    tab = _seventy_b_at_tp1(qtbot, window)
    before = window.state.scenario
    suggestion = tab.not_priced.suggestion
    assert suggestion is not None
    assert suggestion.wall_seconds is not None
    assert suggestion.label in tab.not_priced.nearest.text()
    qtbot.mouseClick(tab.not_priced.apply, Qt.MouseButton.LeftButton)
    window.flush()
    QApplication.processEvents()
    report = estimate(window.state.scenario)
    assert report.training.fits
    assert report.compute.wall_seconds == suggestion.wall_seconds
    assert not tab.not_priced.isVisible()
    assert tab.figures.value_text("wall_seconds") != "—"
    undo = next(a for a in window.findChildren(QAction) if a.text().startswith("&Undo"))
    undo.trigger()
    window.flush()
    assert window.state.scenario == before


def test_the_empty_charts_say_why(qtbot: Any, window: MainWindow) -> None:
    tab = _seventy_b_at_tp1(qtbot, window)
    assert tab.time_chart.plot.getPlotItem().titleLabel.text == "Time: not priced"
    assert tab.cost_chart.plot.getPlotItem().titleLabel.text == "Cost: not priced"
    qtbot.mouseClick(tab.not_priced.apply, Qt.MouseButton.LeftButton)
    window.flush()
    assert tab.time_chart.plot.getPlotItem().titleLabel.text == "Time to train against GPUs"


def test_the_parallelism_tab_prices_nothing_that_does_not_fit(
    qtbot: Any, window: MainWindow
) -> None:
    """The same plan on the Parallelism tab: step time, throughput, MFU, HFU and the
    bottleneck read "—" and a line gives the peak it needs; the fitting plan's figures come
    back once the nearest plan is applied."""
    compute = _seventy_b_at_tp1(qtbot, window)
    window.tabs.setCurrentIndex(3)
    window.flush()
    tab = window.page(3)
    assert tab.title == "Parallelism"
    for key in ("step_seconds", "tokens_per_s", "mfu", "hfu", "bottleneck"):
        assert tab.figures.value_text(key) == "—", key
    assert "it does not fit" in tab.figures.value_text("not_priced")
    window.tabs.setCurrentIndex(0)
    qtbot.mouseClick(compute.not_priced.apply, Qt.MouseButton.LeftButton)
    window.flush()
    window.tabs.setCurrentIndex(3)
    window.flush()
    assert tab.figures.value_text("mfu").endswith("%")
    assert tab.figures.value_text("not_priced") is None  # the row is gone
