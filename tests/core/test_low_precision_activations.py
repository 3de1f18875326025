"""Activations a low-precision recipe saves (issue 27): Transformer Engine's linear layers
save their inputs for the weight-gradient GEMM as one quantized copy with its scales
(NVIDIA/TransformerEngine@d0067d0d transformer_engine/pytorch/module/linear.py,
``inputmat.update_usage(rowwise_usage=False, columnwise_usage=True)``; layernorm_linear.py,
the norm output written quantized and only that copy saved); torchao's Float8Linear saves
the 16-bit input (pytorch/ao@36027d82 torchao/float8/float8_linear.py), so torchtitan's
activations do not change.

Hand computations: Llama 3.1 8B (hidden h = 4096, MLP f = 14,336, 32 query heads of 128),
s = 4096, b = 1, tp = 1, flash attention, Megatron's ledger. The saved inputs of the four
linear layers are the QKV input (s·h), the out-projection input (s·h: flash keeps O in bf16
for its own backward, so the quantized copy is extra), the fc1 input (s·h) and the fc2
input (s·f). Under BF16 the QKV, fc1 and fc2 inputs take 2 bytes each and the out-projection
input is the kernel's O. Under a recipe with c bytes per saved element:

    change = (c − 2)·s·(h + h + f) + c·s·h
"""

from __future__ import annotations

import pytest

from llm_planner.core.composition.estimate import estimate
from llm_planner.core.composition.scenario import default_scenario
from llm_planner.core.inputs.scenario import Scenario
from llm_planner.core.primitives.gpus import get_gpu
from llm_planner.core.primitives.presets import get_preset

S, H, F = 4096, 4096, 14336


def _scenario(precision: str, stack: str = "megatron") -> Scenario:
    sc = default_scenario()
    return sc.model_copy(
        update={
            "model": sc.model.model_copy(
                update={
                    "preset_id": "llama-3.1-8b",
                    "architecture": get_preset("llama-3.1-8b").architecture,
                }
            ),
            "gpu": get_gpu("h100-sxm"),
            "num_gpus": 1,
            "training": sc.training.model_validate(
                {
                    **sc.training.model_dump(),
                    "seq_len": S,
                    "micro_batch": 1,
                    "recompute": "none",
                    "stack": stack,
                    "precision": precision,
                    "flash_attention": True,
                }
            ),
            "parallelism": sc.parallelism.model_copy(
                update={"zero_stage": 0, "global_batch": 1, "sequence_parallel": False}
            ),
        }
    )


def _per_layer(precision: str, stack: str = "megatron") -> float:
    return estimate(_scenario(precision, stack), suggest=False).training.activations_per_layer_bytes


@pytest.mark.parametrize(
    ("precision", "saved_bytes"),
    [
        ("fp8_delayed", 1.0),  # E4M3, one fp32 scale per tensor (negligible)
        ("fp8_current", 1.0),
        ("mxfp8", 1.0 + 1.0 / 32.0),  # one E8M0 byte per 32 values
        ("fp8_blockwise", 1.0 + 4.0 / 128.0),  # one fp32 per 1 × 128 block
        ("nvfp4", 0.5 + 1.0 / 16.0),  # E2M1 nibbles, one E4M3 byte per 16 values
    ],
)
def test_megatron_saves_linear_inputs_at_the_recipes_width(
    precision: str, saved_bytes: float
) -> None:
    bf16 = _per_layer("mixed_bf16")
    change = (saved_bytes - 2.0) * S * (H + H + F) + saved_bytes * S * H
    assert _per_layer(precision) == pytest.approx(bf16 + change, rel=1e-12)


def test_fp8_current_by_hand_in_mib() -> None:
    # s·h = 16 Mi values, s·f = 56 Mi: QKV input 16 MiB less, fc1 input 16 MiB less, fc2
    # input 56 MiB less, the out-projection's fp8 copy 16 MiB more: 72 MiB less per layer
    mib = 2.0**20
    assert (_per_layer("mixed_bf16") - _per_layer("fp8_current")) / mib == pytest.approx(72.0)


def test_the_ledger_names_the_quantized_copies() -> None:
    ledger = estimate(_scenario("fp8_current"), suggest=False).training.ledger
    quantized = {e.name: e.bytes for e in ledger if e.dtype.startswith("fp8")}
    assert quantized == {
        "QKV projection input (norm output)": S * H,
        "out-projection input (O, quantized copy)": S * H,
        "fc1 input (norm output)": S * H,
        "fc2 input (activation output)": S * F,
    }
    flash_o = next(e for e in ledger if e.name == "flash output O")
    assert (flash_o.dtype, flash_o.bytes) == ("bf16", 2 * S * H)


def test_torchtitan_float8_keeps_bf16_activations() -> None:
    assert _per_layer("fp8_current", "torchtitan") == _per_layer("mixed_bf16", "torchtitan")


def test_quantized_activations_lower_the_training_peak() -> None:
    bf16 = estimate(_scenario("mixed_bf16"), suggest=False).training
    fp8 = estimate(_scenario("fp8_current"), suggest=False).training
    assert fp8.activations_bytes < bf16.activations_bytes
