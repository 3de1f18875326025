"""The search proposes the stack's FP8 recipe beside a 16-bit plan where the GPU runs FP8
(issue 27): a line under the ranked layouts, and a button that applies it with its layout."""

from __future__ import annotations

from typing import Any

from llm_planner.core.inputs.scenario import with_changes
from llm_planner.core.primitives.gpus import get_gpu
from llm_planner.gui.main_window import MainWindow

from .test_as_user import action, click


def test_fp8_is_proposed_on_h100_and_applies_with_its_layout(
    qtbot: Any, window: MainWindow
) -> None:
    # the default plan: mixed bf16 on H100s with Megatron, whose FP8 is Transformer Engine's
    assert window.state.scenario.training.precision == "mixed_bf16"
    action(window, "tab3").trigger()
    tab = window.page(3)
    window.flush()
    assert tab.search.low_precision.isVisible()
    assert "--precision fp8_current" in tab.search.low_precision.text()
    assert tab.result is not None
    proposed = tab.result.low_precision
    assert proposed is not None
    assert proposed.row is not None
    click(tab.search.apply_low_precision)
    applied = window.state.scenario
    assert applied.training.precision == "fp8_current"
    assert (applied.parallelism.tp, applied.parallelism.pp, applied.training.micro_batch) == (
        proposed.row.tp,
        proposed.row.pp,
        proposed.row.micro_batch,
    )
    # an FP8 plan is not offered FP8 again
    window.flush()
    assert not tab.search.low_precision.isVisible()


def test_fp8_is_not_proposed_on_a100(qtbot: Any, window: MainWindow) -> None:
    a100 = with_changes(window.state.scenario, {"gpu": get_gpu("a100-sxm4-80gb")})
    window.state.replace(a100, "A100")
    action(window, "tab3").trigger()
    tab = window.page(3)
    window.flush()
    assert tab.result is not None
    assert tab.result.low_precision is None
    assert not tab.search.low_precision.isVisible()
