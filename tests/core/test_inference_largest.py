"""The largest batch and context found from a secant guess are the bisection's.

``max_batch`` and ``max_context`` once bisected over [0, upper] (~24 memory evaluations);
they now guess from two evaluations and bracket the answer (:func:`_largest_under`). Each
case below is compared with the plain bisection (:func:`_largest`) on the same memory
function: no figure is copied from the code's output."""

from __future__ import annotations

import pytest

from llm_planner.core.inputs.inference import InferenceInputs
from llm_planner.core.primitives.architecture import count_parameters
from llm_planner.core.primitives.gpus import get_gpu
from llm_planner.core.primitives.presets import get_preset
from llm_planner.core.sections.inference import (
    MAX_BATCH_SEARCHED,
    _largest,
    _largest_under,
    max_batch,
    max_context,
    memory_per_gpu,
)

MODELS = [
    "llama-2-7b",
    "llama-3.1-405b",
    "mistral-7b",
    "gemma-2-27b",
    "mixtral-8x7b",
    "deepseek-v3",
    "jamba-v0.1",
    "mamba-130m",
    "gpt-3-175b",
]
CASES = [
    ("h100-sxm", {}),
    ("a100-40gb", {"weights_format": "int4", "num_gpus": 2}),
    ("h100-sxm", {"num_gpus": 8, "kv_dtype": "fp8", "prefill_chunk_tokens": 8192}),
    ("a100-80gb", {"prefill_chunk_tokens": 1, "num_gpus": 4}),
]


def _bisected_batch(arch, total, gpu, inputs, context):  # the code before the change
    return _largest(
        lambda b: (
            b == 0 or memory_per_gpu(arch, total, inputs, b, context).total <= gpu.memory_bytes
        ),
        MAX_BATCH_SEARCHED,
    )


def _bisected_context(arch, total, gpu, inputs, batch):
    return _largest(
        lambda c: c == 0 or memory_per_gpu(arch, total, inputs, batch, c).total <= gpu.memory_bytes,
        arch.max_context,
    )


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize(("gpu_id", "change"), CASES)
def test_max_batch_and_context_are_the_bisections(model, gpu_id, change):
    arch = get_preset(model).architecture
    total = float(count_parameters(arch).total)
    gpu = get_gpu(gpu_id)
    inputs = InferenceInputs(**change)
    for context in (1, 7, 512, 4096, 32_768, arch.max_context):
        assert max_batch(arch, total, gpu, inputs, context) == _bisected_batch(
            arch, total, gpu, inputs, context
        )
    for batch in (1, 3, 64, 1000):
        assert max_context(arch, total, gpu, inputs, batch) == _bisected_context(
            arch, total, gpu, inputs, batch
        )


@pytest.mark.parametrize("limit", [0, 1, 2, 3, 17, 1000, 1023, 1024])
@pytest.mark.parametrize("knee", [1, 5, 600])
def test_largest_under_on_hand_made_steps(limit, knee):
    """A flat start then a line, a kink, and a step: the answer is where it turns false."""
    for total in (
        lambda x: 10.0 + 3.0 * max(x, knee),
        lambda x: float(x * x),
        lambda x: 0.0 if x <= limit else 1e9,
    ):
        capacity = total(limit) if total(limit) < 1e9 else 0.0
        want = _largest(lambda x, t=total, c=capacity: x == 0 or t(x) <= c, 1024)
        assert _largest_under(total, capacity, 1024, knee) == want
