"""The editable constants behind each tab accept human quantities and reach the scenario."""

from __future__ import annotations

from typing import Any

import pytest

from llm_planner.gui.main_window import MainWindow

from .helpers import choose, type_into

pytestmark = pytest.mark.gui


def test_network_bandwidth_and_efficiencies(qtbot: Any, window: MainWindow) -> None:
    tab = window.page(3)
    type_into(qtbot, window, tab.inter_bw, "200 GB/s")
    assert window.state.scenario.parallelism.inter_node_bandwidth_bytes_per_s == 200e9
    type_into(qtbot, window, tab.kernel_eff, "55%")
    assert window.state.scenario.parallelism.kernel_efficiency == pytest.approx(0.55)
    type_into(qtbot, window, tab.intra_bw, "")
    assert window.state.scenario.parallelism.intra_node_bandwidth_bytes_per_s is None


def test_fsdp_picker_round_trips_none(window: MainWindow) -> None:
    tab = window.page(3)
    count = tab.fsdp.count()
    choose(window, tab.fsdp, "FULL_SHARD")
    assert window.state.scenario.parallelism.fsdp_strategy == "FULL_SHARD"
    window.state.undo_stack.undo()
    assert window.state.scenario.parallelism.fsdp_strategy is None
    assert tab.fsdp.count() == count
    assert tab.fsdp.currentIndex() == 0


def test_overhead_allowances(qtbot: Any, window: MainWindow) -> None:
    inference, training = window.page(1), window.page(2)
    type_into(qtbot, window, inference.cuda_context, "1 GiB")
    assert window.state.scenario.inference.cuda_context_bytes == 2**30
    type_into(qtbot, window, training.fragmentation, "10%")
    assert window.state.scenario.training.fragmentation_fraction == pytest.approx(0.10)
    compute = window.page(0)
    type_into(qtbot, window, compute.budget_flops, "1e24")
    assert window.state.scenario.compute.budget_flops == 1e24


def test_gpu_memory_edit_makes_a_custom_gpu_and_picking_resets(
    qtbot: Any, window: MainWindow
) -> None:
    type_into(qtbot, window, window.bar.gpu_memory, "96 GiB")
    gpu = window.state.scenario.gpu
    assert gpu.memory_bytes == 96 * 2**30
    assert gpu.custom
    assert "(custom)" in window.bar.gpu.currentText()
    choose(window, window.bar.gpu, "h100-sxm")
    assert not window.state.scenario.gpu.custom
    assert window.state.scenario.gpu.memory_bytes == 80e9


def test_find_a_model_by_typing_into_the_search(qtbot: Any, window: MainWindow) -> None:
    from PySide6.QtCore import Qt, QTimer
    from PySide6.QtTest import QTest
    from PySide6.QtWidgets import QApplication

    from llm_planner.gui.widgets.scenario_bar import FIND

    seen: list[int] = []

    def answer() -> None:
        finder = QApplication.activeModalWidget()
        assert finder is not None
        QTest.keyClicks(finder.search, "moe")  # the kind column matches too
        seen.append(finder.proxy.rowCount())
        finder.search.clear()
        QTest.keyClicks(finder.search, "mixtral")
        QTest.keyClick(finder.search, Qt.Key.Key_Return)

    QTimer.singleShot(0, answer)
    combo = window.bar.model
    combo.setCurrentIndex(combo.findData(FIND))
    window.flush()
    assert seen
    assert seen[0] >= 3  # Mixtral, DeepSeek-V3, Qwen3-30B-A3B, …
    assert window.state.scenario.model.preset == "mixtral-8x7b"
    assert "Mixtral" in combo.currentText()
