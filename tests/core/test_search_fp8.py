"""The layout search proposes the stack's FP8 recipe where the GPU and the stack run FP8
(issue 27): Megatron-Core through Transformer Engine and torchtitan through torchao on GPUs
with FP8 tensor cores (H100, B200, GB200; not A100, whose catalog entry has no FP8 peak);
never for DeepSpeed, nanotron or the Hugging Face Trainer, nor a plan already in FP8."""

from __future__ import annotations

import pytest

from llm_planner.core.composition.scenario import default_scenario
from llm_planner.core.composition.search import fp8_recipe_for, search, search_scenario
from llm_planner.core.inputs.scenario import Scenario, with_changes
from llm_planner.core.primitives.gpus import get_gpu
from llm_planner.core.primitives.presets import get_preset


@pytest.mark.parametrize(
    ("gpu", "stack", "precision", "expected"),
    [
        ("h100-sxm", "megatron", "mixed_bf16", "fp8_current"),
        ("b200", "megatron", "mixed_bf16", "fp8_current"),
        ("gb200", "torchtitan", "mixed_bf16", "fp8_current"),
        ("a100-sxm4-80gb", "megatron", "mixed_bf16", None),  # no FP8 tensor cores
        ("h100-sxm", "deepspeed", "mixed_bf16", None),  # no FP8 recipe of its own
        ("h100-sxm", "nanotron", "mixed_bf16", None),
        ("h100-sxm", "hf", "mixed_bf16", None),
        ("h100-sxm", "megatron", "mxfp8", None),  # already low precision
        ("h100-sxm", "megatron", "fp32", None),
    ],
)
def test_where_fp8_is_proposed(gpu: str, stack: str, precision: str, expected: str | None) -> None:
    training = default_scenario().training.model_validate(
        {**default_scenario().training.model_dump(), "stack": stack, "precision": precision}
    )
    assert fp8_recipe_for(training, get_gpu(gpu), "bf16") == expected


def test_not_at_an_fp8_compute_dtype() -> None:
    training = default_scenario().training
    assert fp8_recipe_for(training, get_gpu("h100-sxm"), "fp8") is None


def _llama_70b_on_64_h100() -> Scenario:
    sc = default_scenario()
    model = sc.model.model_copy(
        update={
            "preset_id": "llama-3.1-70b",
            "architecture": get_preset("llama-3.1-70b").architecture,
        }
    )
    return with_changes(
        sc.model_copy(update={"model": model}),
        {
            "num_gpus": 64,
            "parallelism.global_batch": 128,
            "training.seq_len": 4096,
        },
    )


def test_the_proposal_is_the_fp8_searchs_best_row() -> None:
    """The proposal's row is the first row of the same search run with the FP8 recipe, and
    its speed-up is that row's tokens/s over the 16-bit search's best."""
    sc = _llama_70b_on_64_h100()
    result = search_scenario(sc, top=3)
    alt = result.low_precision
    assert alt is not None
    assert alt.precision == "fp8_current"
    fp8 = with_changes(sc, {"training.precision": "fp8_current"})
    again = search(
        fp8.model.architecture, fp8.gpu, fp8.num_gpus, fp8.parallelism, fp8.training, top=1
    )
    assert alt.row == again.rows[0]
    assert alt.speedup == pytest.approx(again.rows[0].tokens_per_s / result.rows[0].tokens_per_s)
    # FP8 GEMMs at twice the BF16 peak: faster, but never twice as fast (attention, the
    # memory-bound work and communication stay)
    assert alt.speedup is not None
    assert 1.0 < alt.speedup < 2.0
    assert "--precision fp8_current" in alt.describe()


def test_an_a100_plan_gets_no_proposal() -> None:
    sc = with_changes(_llama_70b_on_64_h100(), {"gpu": get_gpu("a100-sxm4-80gb")})
    assert search_scenario(sc, top=1).low_precision is None
