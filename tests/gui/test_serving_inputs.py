"""The serving workload's inputs on the inference tab (issue 30): engine, prompt and output
tokens and "as many as fit", typed, pressed and clicked as a user does, reaching the
scenario through the same described inputs as ``--engine``, ``--prompt-tokens``,
``--output-tokens`` and ``--batch max``, and the serving chart's line following them."""

from __future__ import annotations

from typing import Any

import pytest
from PySide6.QtCore import Qt

from llm_planner.gui.main_window import MainWindow

from .helpers import type_into

pytestmark = pytest.mark.gui


def _inference_tab(window: MainWindow) -> Any:
    window.tabs.setCurrentIndex(1)
    window.flush()
    return window.page(1)


def test_prompt_and_output_tokens_read_k_as_1024(qtbot: Any, window: MainWindow) -> None:
    """Lengths read k = 1024, as --prompt-tokens does: 2k → 2,048, 1k → 1,024; the serving
    chart's line names the workload it priced."""
    tab = _inference_tab(window)
    type_into(qtbot, window, tab.prompt_tokens, "2k")
    type_into(qtbot, window, tab.output_tokens, "1k")
    inputs = window.state.scenario.inference
    assert (inputs.prompt_tokens, inputs.output_tokens) == (2048, 1024)
    assert "requests of 2,048 + 1,024 tokens" in tab.serving_chart.info.text()


def test_zero_prompt_tokens_is_refused_and_the_last_figures_stay(
    qtbot: Any, window: MainWindow
) -> None:
    """0 tokens is below the range (1 to 32M tokens): the field is marked and the scenario
    keeps its 1,024."""
    tab = _inference_tab(window)
    type_into(qtbot, window, tab.prompt_tokens, "0")
    assert tab.prompt_tokens in window.binder.errors
    assert "Prompt tokens" in window.binder.errors[tab.prompt_tokens]
    assert window.state.scenario.inference.prompt_tokens == 1024


def test_engine_picked_with_the_keyboard(qtbot: Any, window: MainWindow) -> None:
    """The picker lists vLLM, SGLang, TensorRT-LLM, llama.cpp, LMDeploy in that order:
    from vLLM, two presses of ↓ choose TensorRT-LLM."""
    tab = _inference_tab(window)
    assert window.state.scenario.inference.engine == "vllm"
    tab.engine.setFocus()
    qtbot.keyClick(tab.engine, Qt.Key.Key_Down)
    qtbot.keyClick(tab.engine, Qt.Key.Key_Down)
    window.flush()
    assert window.state.scenario.inference.engine == "tensorrt-llm"
    assert tab.serving_chart.info.text().startswith("TensorRT-LLM:")


def test_as_many_as_fit_serves_the_largest_concurrency(qtbot: Any, window: MainWindow) -> None:
    """Checked, the replica serves as many requests as fit (the chart's "N requests" is its
    "largest concurrency N"); the memory bars keep Batch (3), so its field stays enabled;
    unchecked, the chart serves Batch's 3 again."""
    tab = _inference_tab(window)
    type_into(qtbot, window, tab.batch, "3")
    qtbot.mouseClick(tab.batch_max, Qt.MouseButton.LeftButton)
    window.flush()
    assert window.state.scenario.inference.batch_max is True
    assert tab.batch.isEnabled()
    assert window.state.scenario.inference.batch == 3
    serving = window.state.report.inference.serving
    assert serving.concurrency == serving.max_concurrency > 3
    text = tab.serving_chart.info.text()
    assert f": {serving.max_concurrency:,} requests of" in text
    assert f"largest concurrency {serving.max_concurrency:,}" in text
    qtbot.mouseClick(tab.batch_max, Qt.MouseButton.LeftButton)
    window.flush()
    assert window.state.scenario.inference.batch_max is False
    assert ": 3 requests of" in tab.serving_chart.info.text()
