"""Training memory tab: after-load and peak bars, ledger and pickers equal core's report."""

from __future__ import annotations

from typing import Any

import pytest

from llm_planner.core.composition.estimate import estimate
from llm_planner.gui.main_window import MainWindow

from .helpers import bar_widths_gb, choose, type_into

pytestmark = pytest.mark.gui


def test_bars_and_ledger_follow_micro_batch(qtbot: Any, window: MainWindow) -> None:
    window.tabs.setCurrentIndex(2)
    tab = window.page(2)
    type_into(qtbot, window, tab.micro_batch, "2")
    assert window.state.scenario.training.micro_batch == 2
    section = estimate(window.state.scenario).training
    rows = tab.bars.rows
    assert [r.label for r in rows] == ["after load", "peak"]
    assert rows[0].total == section.after_load_bytes
    assert rows[1].total == section.peak_bytes
    assert bar_widths_gb(tab.bars, "activations")[1] == pytest.approx(
        section.activations_bytes / 1e9
    )
    assert (
        bar_widths_gb(tab.bars, "optimizer") == [pytest.approx(section.optimizer_bytes / 1e9)] * 2
    )
    assert tab.ledger.rowCount() == len(section.ledger) + len(section.outside_ledger)
    assert tab.ledger.item(0, 0).text() == section.ledger[0].name
    assert tab.figures.value_text("peak_bytes") is not None
    memory = window.summary.labels["memory"].text()
    assert memory.startswith(f"training peak {section.peak_bytes / 1e9:.1f}/")


def test_recompute_and_optimizer_pickers(qtbot: Any, window: MainWindow) -> None:
    window.tabs.setCurrentIndex(2)
    tab = window.page(2)
    before = estimate(window.state.scenario).training.activations_bytes
    choose(window, tab.recompute, "full")
    assert window.state.scenario.training.recompute == "full"
    after = estimate(window.state.scenario).training.activations_bytes
    assert after < before  # full recomputation keeps only layer inputs (Korthikanti 2022)
    assert tab.bars.rows[1].parts["activations"] == after
    offered = [tab.optimizer.itemData(i) for i in range(tab.optimizer.count())]
    assert len(offered) > 1
    choose(window, tab.optimizer, offered[-1])
    assert window.state.scenario.training.optimizer == offered[-1]
    assert tab.bars.rows[0].parts["optimizer"] == (
        estimate(window.state.scenario).training.optimizer_bytes
    )


def test_cuda_graphs_are_chosen_in_the_window_as_on_the_command_line(
    qtbot: Any, window: MainWindow
) -> None:
    """--cuda-graphs has its row on the training tab, offering Megatron-Core's scopes
    (core.quantities.cuda_graphs.CUDA_GRAPHS); the choice is one undo step. Capturing
    whole layers removes their kernel launches from the host floor, so the modeled step
    cannot get longer."""
    from PySide6.QtCore import Qt
    from PySide6.QtTest import QTest
    from PySide6.QtWidgets import QComboBox

    combo = window.findChild(QComboBox, "training.cuda_graphs")
    assert combo is not None
    assert [combo.itemData(i) for i in range(combo.count())] == [
        "none",
        "attn",
        "mlp",
        "moe_router",
        "attn_moe_router",
        "layer",
        "full_iteration",
    ]
    window.tabs.setCurrentIndex(2)
    window.flush()
    eager = window.state.report.parallelism.step_seconds
    choose(window, combo, "layer")
    assert window.state.scenario.training.cuda_graphs == "layer"
    assert window.state.report.parallelism.step_seconds <= eager
    QTest.keyClick(window, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)
    window.flush()
    assert window.state.scenario.training.cuda_graphs == "none"


def test_mtp_depths_typed_in_the_window_reach_the_estimate(qtbot: Any, window: MainWindow) -> None:
    """Typing 1 in the MTP row states one depth, as ``--mtp-layers 1`` does: the budget's
    FLOPs per token grow by the depth's count (core/quantities/flops.py) and the peak does
    not fall (its layer and saved softmax sit on the last stage)."""
    from llm_planner.core.quantities.flops import mtp_flops_per_token

    window.tabs.setCurrentIndex(2)
    tab = window.page(2)
    before = estimate(window.state.scenario)
    type_into(qtbot, window, tab.mtp_layers, "1")
    scenario = window.state.scenario
    assert scenario.training.mtp_layers == 1
    after = estimate(scenario)
    grown = after.compute.mfu_flops_per_token - before.compute.mfu_flops_per_token
    per_token = mtp_flops_per_token(
        scenario.model.architecture,
        scenario.training.seq_len,
        1,
        include_attention=scenario.compute.include_attention_flops,
    )
    assert grown == pytest.approx(per_token, rel=1e-9)
    assert after.training.peak_bytes >= before.training.peak_bytes
    assert tab.bars.rows[1].total == after.training.peak_bytes
