"""Compute budget tab: typed inputs reach core, and the widgets show core's numbers."""

from __future__ import annotations

from typing import Any

import pytest

from llm_planner.core.composition.estimate import estimate
from llm_planner.core.primitives import units
from llm_planner.gui.formatting import figure_text
from llm_planner.gui.main_window import MainWindow

from .helpers import choose, type_into

pytestmark = pytest.mark.gui


def _figure_text(window: MainWindow, section: str, key: str) -> str:
    report = estimate(window.state.scenario)
    figure = next(f for f in getattr(report, section).figures() if f.key == key)
    return figure_text(figure)


def test_tokens_typed_as_human_quantity_reestimate_everything(
    qtbot: Any, window: MainWindow
) -> None:
    tab = window.page(0)
    type_into(qtbot, window, tab.tokens, "1.4T")
    assert window.state.scenario.compute.tokens == 1.4e12
    table = tab.figures
    for key in ("flops_total", "wall_seconds", "cost_usd", "gpu_hours"):
        assert table.value_text(key) == _figure_text(window, "compute", key)
    # 6·P·D with D = 1.4e12 (Transformer Math 101): the table shows what core computes
    report = estimate(window.state.scenario)
    assert report.compute.tokens == 1.4e12
    summary = window.summary.labels["flops"].text()
    assert summary == units.format_flop(report.compute.flops_total)


def test_current_point_on_time_and_cost_charts(qtbot: Any, window: MainWindow) -> None:
    tab = window.page(0)
    type_into(qtbot, window, window.bar.num_gpus, "1024")
    report = estimate(window.state.scenario)
    xs, ys = tab.time_chart.data("current")
    assert list(xs) == [1024.0]
    assert ys[0] == pytest.approx(report.compute.wall_seconds / units.SECONDS_PER_DAY)
    line_x, _ = tab.time_chart.data("time")
    assert 1024.0 in list(line_x)


def test_measured_mode_starts_from_the_estimate(qtbot: Any, window: MainWindow) -> None:
    tab = window.page(0)
    before = estimate(window.state.scenario).compute.flops_per_gpu_per_s
    choose(window, tab.mode, "tflops")
    assert window.state.scenario.compute.throughput_mode == "tflops"
    assert window.state.scenario.compute.achieved_flops_per_gpu == before
    assert tab.tflops.isEnabled()
    assert not tab.mfu.isEnabled()
    type_into(qtbot, window, tab.tflops, "300")
    assert window.state.scenario.compute.achieved_flops_per_gpu == 300e12


def test_measured_scaling_points_are_drawn(qtbot: Any, window: MainWindow) -> None:
    tab = window.page(0)
    type_into(qtbot, window, tab.measured, "64: 1M, 256: 3.5M")
    assert window.state.scenario.parallelism.measured_points == [(64, 1e6), (256, 3.5e6)]
    xs, _ys = tab.time_chart.data("measured")
    assert sorted(xs) == [64.0, 256.0]
