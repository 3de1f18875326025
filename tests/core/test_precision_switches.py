"""Megatron-LM's two precision switches on the stored dtypes (training.low_precision_params:
--fp8-param-gather / --fp4-param-gather; training.grad_reduce_16bit: --grad-reduce-in-bf16;
NVIDIA/Megatron-LM@d98e8a64 megatron/training/arguments.py), which every Megatron-Bridge
performance recipe sets (NVIDIA-NeMo/Megatron-Bridge@067f987d).

Hand computations use Llama 3.1 8B (Meta's config.json): 32 layers, hidden 4096, 32 query
heads and 8 K/V heads of 128, MLP 14,336 (gated), vocabulary 128,256: 8,030,261,248
parameters, 6,979,321,856 of them in the layers' matrices.
"""

from __future__ import annotations

import pytest

from llm_planner.core.composition.estimate import estimate
from llm_planner.core.composition.scenario import default_scenario
from llm_planner.core.inputs.scenario import Scenario
from llm_planner.core.primitives.gpus import get_gpu
from llm_planner.core.primitives.presets import get_preset
from llm_planner.core.quantities.optimizers import launched_precision
from llm_planner.core.sections.parallelism.workload import workload_of

LAYER_MATRIX_PARAMS = 32 * (2 * 4096 * 4096 + 2 * 4096 * 1024 + 3 * 4096 * 14336)
"""q and o 4096², k and v 4096×1024, gate, up and down 4096×14,336 in each of 32 layers."""

PARAMS = 8_030_261_248
"""Llama 3.1 8B's parameters (the layers' matrices, norms, embedding and output layer)."""


def _scenario(precision: str, **training: object) -> Scenario:
    """Llama 3.1 8B on one H100, s 4096, micro and global batch 1, Megatron, ZeRO 0."""
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
                    "seq_len": 4096,
                    "micro_batch": 1,
                    "recompute": "none",
                    "stack": "megatron",
                    "precision": precision,
                    **training,
                }
            ),
            "parallelism": sc.parallelism.model_copy(
                update={"zero_stage": 0, "global_batch": 1, "sequence_parallel": False}
            ),
        }
    )


def test_fp8_params_drop_the_16bit_copy_of_the_layer_matrices() -> None:
    """FP8 tensor-wise: 16-bit weights + 2 bytes of FP8 copies (row- and column-wise) per
    layer-matrix parameter; kept in FP8 (--fp8-param-gather) the 2 bytes of the 16-bit
    matrices go: 2 × 6,979,321,856 = 13,958,643,712 bytes fewer."""
    off = estimate(_scenario("fp8_current"), suggest=False).training
    on = estimate(_scenario("fp8_current", low_precision_params=True), suggest=False).training
    assert off.weights_bytes - on.weights_bytes == pytest.approx(2 * LAYER_MATRIX_PARAMS)
    assert off.weights_bytes == pytest.approx(2 * PARAMS + 2 * LAYER_MATRIX_PARAMS)


def test_a_16bit_recipe_has_no_low_precision_params() -> None:
    """mixed bf16 has no quantized copies: the switch changes nothing."""
    off = estimate(_scenario("mixed_bf16"), suggest=False).training
    on = estimate(_scenario("mixed_bf16", low_precision_params=True), suggest=False).training
    assert on.weights_bytes == off.weights_bytes


def test_16bit_gradient_reduce_halves_the_main_gradients() -> None:
    """Megatron keeps fp32 main gradients under --bf16 (4 bytes per parameter) and under the
    FP8 recipes; --grad-reduce-in-bf16 keeps them in bf16: 2 × 8,030,261,248 bytes fewer."""
    for precision in ("mixed_bf16", "fp8_current", "mxfp8", "nvfp4"):
        off = estimate(_scenario(precision), suggest=False).training
        on = estimate(_scenario(precision, grad_reduce_16bit=True), suggest=False).training
        assert off.gradients_bytes == pytest.approx(4 * PARAMS), precision
        assert on.gradients_bytes == pytest.approx(2 * PARAMS), precision


def test_the_switches_as_recipes() -> None:
    """fp32 training keeps fp32 gradients (no 16-bit weights to reduce in); pure bf16, which
    Megatron launches with fp32 main gradients, goes back to bf16 ones."""
    assert launched_precision("fp32", "megatron", grad_reduce_16bit=True).gradients_bytes == 4
    assert launched_precision("pure_bf16", "megatron").gradients_bytes == 4
    assert launched_precision("pure_bf16", "megatron", grad_reduce_16bit=True).gradients_bytes == 2
    fp4 = launched_precision("nvfp4", "megatron", low_precision_params=True)
    assert fp4.quantized_params
    assert not launched_precision(
        "mixed_bf16", "megatron", low_precision_params=True
    ).quantized_params


def test_parameters_are_gathered_in_their_low_precision_dtype() -> None:
    """The data-parallel parameter all-gather: 2 bytes per element, 1 with FP8 parameters
    (tensor-wise: one byte, one fp32 scale per tensor), 1 + 1/32 with MXFP8 (an E8M0 scale
    per 32 values), 0.5 + 1/16 with NVFP4 (an E4M3 scale per 16)."""
    arch = get_preset("llama-3.1-8b").architecture

    def gather(precision: str, on: bool) -> float:
        ti = _scenario(precision, low_precision_params=on).training
        return workload_of(arch, 4096, 1, training_inputs=ti).param_gather_bytes

    assert gather("fp8_current", False) == 2.0
    assert gather("fp8_current", True) == 1.0
    assert gather("mxfp8", True) == pytest.approx(1 + 1 / 32)
    assert gather("nvfp4", True) == pytest.approx(0.5 + 1 / 16)


def test_megatron_export_and_import_carry_the_switches() -> None:
    """The Megatron-LM export writes --grad-reduce-in-bf16 (instead of
    --accumulate-allreduce-grads-in-fp32) and --fp8-param-gather; reading it back gives the
    same switches."""
    from llm_planner.core.files.stack_configs import megatron
    from llm_planner.core.files.stack_configs.plan import launch_plan

    sc = _scenario("fp8_current", low_precision_params=True, grad_reduce_16bit=True)
    text = megatron.export(launch_plan(sc)).text
    assert "--grad-reduce-in-bf16" in text
    assert "--fp8-param-gather" in text
    assert "--accumulate-allreduce-grads-in-fp32" not in text
    fields = megatron.parse(text, "exported").fields
    assert fields["training.low_precision_params"] is True
    assert fields["training.grad_reduce_16bit"] is True
    assert fields["training.precision"] == "fp8_current"
    plain = megatron.export(launch_plan(_scenario("fp8_current"))).text
    assert "--fp8-param-gather" not in plain
    assert "--accumulate-allreduce-grads-in-fp32" in plain


def test_bf16_adam_moments_halve_the_moments() -> None:
    """Megatron's precision-aware optimizer with bf16 m and v: fp32 master 4 + 2 × 2 bytes
    per parameter instead of 4 + 2 × 4 (Llama 3.1 8B: 8 × 8,030,261,248 instead of 12 ×);
    exported as --use-precision-aware-optimizer --exp-avg-dtype bf16 --exp-avg-sq-dtype
    bf16 and read back."""
    from llm_planner.core.files.stack_configs import megatron
    from llm_planner.core.files.stack_configs.plan import launch_plan

    adam = estimate(_scenario("mixed_bf16"), suggest=False).training
    sc = _scenario("mixed_bf16", optimizer="adamw_bf16_moments")
    bf16 = estimate(sc, suggest=False).training
    assert adam.optimizer_bytes == pytest.approx(12 * PARAMS)
    assert bf16.optimizer_bytes == pytest.approx(8 * PARAMS)
    text = megatron.export(launch_plan(sc)).text
    assert "--exp-avg-sq-dtype bf16" in text
    assert megatron.parse(text, "exported").fields["training.optimizer"] == "adamw_bf16_moments"
