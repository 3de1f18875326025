"""Fit suggestions as a user sees them (issue 25 item 5): the obvious fixes are offered,
each with its peak and time, the button text is never clipped, and a click applies one."""

from __future__ import annotations

from typing import Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication, QPushButton
from scenario_helpers import llama_7b_full_fine_tune_on_4090, llama_70b_tp1_on_512_h100

from llm_planner.core.composition.estimate import estimate
from llm_planner.gui.main_window import MainWindow

pytestmark = pytest.mark.gui


def _offered(qtbot: Any, window: MainWindow, scenario: Any) -> list[QPushButton]:
    window.tabs.setCurrentIndex(2)
    tab = window.page(2)
    window.state.load(scenario, None)
    window.flush()
    qtbot.waitUntil(lambda: bool(tab.fit_panel.offered()), timeout=5000)
    QApplication.processEvents()
    return list(tab.fit_panel.offered())


def _unclipped(button: QPushButton) -> None:
    metrics = button.fontMetrics()
    room = button.contentsRect().width()
    for line in button.text().split("\n"):
        assert metrics.horizontalAdvance(line) <= room, (line, room)
    assert metrics.lineSpacing() * len(button.text().split("\n")) <= button.height()


@pytest.mark.parametrize("size", [(1366, 768), (1024, 640)])
def test_lora_for_a_7b_fine_tune_on_a_4090_unclipped(
    qtbot: Any, window: MainWindow, size: tuple[int, int]
) -> None:
    window.resize(*size)
    buttons = _offered(qtbot, window, llama_7b_full_fine_tune_on_4090())
    texts = [b.text() for b in buttons]
    assert any(t.startswith("LoRA r16 +\nfull recompute") for t in texts), texts
    for button in buttons:
        _unclipped(button)
        assert "\u00a0days" in button.text()  # what it costs in time, kept on one line
    lora = next(b for b in buttons if b.text().startswith("LoRA"))
    qtbot.mouseClick(lora, Qt.MouseButton.LeftButton)
    window.flush()
    assert window.state.scenario.training.lora_rank == 16
    assert window.state.scenario.training.recompute == "full"
    assert estimate(window.state.scenario).training.fits


def test_tp_8_for_70b_on_h100(qtbot: Any, window: MainWindow) -> None:
    buttons = _offered(qtbot, window, llama_70b_tp1_on_512_h100())
    tp = next(b for b in buttons if b.text().startswith("TP 1 → 8"))
    _unclipped(tp)
    qtbot.mouseClick(tp, Qt.MouseButton.LeftButton)
    window.flush()
    assert window.state.scenario.parallelism.tp == 8
    assert window.state.report.compute.wall_seconds is not None


def test_zero3_cpu_offload_for_70b_on_one_node_of_h100(qtbot: Any, window: MainWindow) -> None:
    """70B at ZeRO-1 on 8 H100: 2 + 2 bytes per parameter of weights and gradients alone are
    282 GB per GPU, and no layout of 8 GPUs shards them below 80 GB without offload; ZeRO-3
    with DeepSpeed's CPU optimizer offload is offered with its time, and a click applies it."""
    from scenario_helpers import preset_scenario

    scenario = preset_scenario(
        "llama-3.1-70b",
        "h100-sxm",
        8,
        **{
            "training.stack": "deepspeed",
            "parallelism.zero_stage": 1,
            "parallelism.global_batch": 128,
            "compute.tokens": 1e11,
        },
    )
    buttons = _offered(qtbot, window, scenario)
    texts = [b.text().replace("\n", " ") for b in buttons]
    offload = [b for b, t in zip(buttons, texts, strict=True) if "CPU optimizer offload" in t]
    assert offload, texts
    button = offload[0]
    _unclipped(button)
    assert "\u00a0days" in button.text()
    qtbot.mouseClick(button, Qt.MouseButton.LeftButton)
    window.flush()
    applied = window.state.scenario
    assert applied.parallelism.zero_stage == 3
    assert applied.training.offload_optimizer == "cpu"
    report = estimate(applied)
    assert report.training.fits
    assert report.training.offload is not None
    assert report.training.offload.host_bytes > 0
    assert report.parallelism.time_breakdown_seconds["offload"] > 0
    assert window.state.report.compute.wall_seconds is not None
