"""Parallelism tab: ZeRO 0-3 bars, pipeline timeline, ranked search applied on double-click."""

from __future__ import annotations

from typing import Any

import pytest

from llm_planner.core.composition.estimate import estimate
from llm_planner.core.sections.parallelism import zero_stage_comparison
from llm_planner.gui.main_window import MainWindow

from .helpers import choose, type_into

pytestmark = pytest.mark.gui


def test_zero_bars_match_core(qtbot: Any, window: MainWindow) -> None:
    window.tabs.setCurrentIndex(3)
    tab = window.page(3)
    choose(window, tab.zero, 2)
    s = window.state.scenario
    expected = zero_stage_comparison(
        s.model.architecture, s.training, s.gpu, s.parallelism, s.num_gpus
    )
    assert [r.total for r in tab.zero_bars.rows] == [row["peak_bytes"] for row in expected]
    assert tab.zero_bars.rows[2].label.startswith("ZeRO 2")
    # ZeRO sharding never raises per-GPU state (Rajbhandari et al. 2019, Figure 1)
    totals = [r.total for r in tab.zero_bars.rows]
    assert totals == sorted(totals, reverse=True)


def test_pipeline_timeline_draws_every_stage(qtbot: Any, window: MainWindow) -> None:
    window.tabs.setCurrentIndex(3)
    tab = window.page(3)
    type_into(qtbot, window, tab.pp, "4")
    assert window.state.scenario.parallelism.pp == 4
    stages = {b.stage for b in tab.timeline.blocks if b.kind == "forward"}
    assert stages == {0, 1, 2, 3}
    bubbles = [b for b in tab.timeline.blocks if b.kind == "bubble"]
    assert len(bubbles) == 4


def test_the_empty_network_field_says_what_it_stands_for(qtbot: Any, window: MainWindow) -> None:
    """Left empty, the network per node is one NIC per GPU: 8 × 400 Gb/s = 400 GB/s on an
    H100 node; a GB200 tray of 4 GPUs with one 400 Gb/s ConnectX-7 each gets 200 GB/s."""
    window.tabs.setCurrentIndex(3)
    window.flush()
    tab = window.page(3)
    assert tab.inter_bw.text() == ""
    assert tab.inter_bw.placeholderText() == "400.0 GB/s (8 × 50.00 GB/s per GPU)"
    choose(window, window.bar.gpu, "gb200")
    type_into(qtbot, window, tab.per_node, "4")
    assert tab.inter_bw.placeholderText() == "200.0 GB/s (4 × 50.00 GB/s per GPU)"


def test_stated_first_and_last_stage_reach_the_estimate(qtbot: Any, window: MainWindow) -> None:
    """Llama 3.1 8B (32 layers) over pp 4, first stage 2, last 6 (Megatron-Core's uneven
    split): the middle stages hold (32 − 8)/2 = 12 layers, more than the equal split's
    ⌈32/4⌉ = 8, so the memory's fullest stage holds 12 layers."""
    window.tabs.setCurrentIndex(3)
    tab = window.page(3)
    type_into(qtbot, window, tab.pp, "4")
    type_into(qtbot, window, tab.first_stage_layers, "2")
    type_into(qtbot, window, tab.last_stage_layers, "6")
    scenario = window.state.scenario
    assert (scenario.training.first_stage_layers, scenario.training.last_stage_layers) == (2, 6)
    assert estimate(scenario).training.layers_on_stage == 12


def test_stage_layer_rows_need_a_pipeline(qtbot: Any, window: MainWindow) -> None:
    """At pp 1 there is no first or last stage to state (Megatron refuses the flags), so the
    rows are greyed; typing pp 4 enables them. With a stated first stage, typing pp 1 is
    refused in place, naming the stage field, and the plan keeps pp 4; clearing the stage
    lets pp 1 through and greys the rows again."""
    window.tabs.setCurrentIndex(3)
    tab = window.page(3)
    type_into(qtbot, window, tab.pp, "1")
    assert not tab.first_stage_layers.isEnabled()
    assert not tab.last_stage_layers.isEnabled()
    type_into(qtbot, window, tab.pp, "4")
    assert tab.first_stage_layers.isEnabled()
    assert tab.last_stage_layers.isEnabled()
    type_into(qtbot, window, tab.first_stage_layers, "2")
    type_into(qtbot, window, tab.pp, "1")
    assert window.state.scenario.parallelism.pp == 4
    assert "first_stage_layers" in tab.pp.toolTip()
    type_into(qtbot, window, tab.first_stage_layers, "")
    type_into(qtbot, window, tab.pp, "1")
    assert window.state.scenario.training.first_stage_layers is None
    assert window.state.scenario.parallelism.pp == 1
    assert not tab.first_stage_layers.isEnabled()
