"""Low-precision training recipes as precision choices (issue 27 step 3): Transformer
Engine's FP8 (delayed and current tensor-wise scaling), MXFP8, block-wise FP8 and NVFP4
(NVIDIA/TransformerEngine@d0067d0d transformer_engine/common/recipe/__init__.py).

Hand computations use Llama 3.1 8B (Meta's config.json): 32 layers, hidden 4096, 32 query
heads and 8 K/V heads of 128, MLP 14,336 (gated), vocabulary 128,256.
"""

from __future__ import annotations

import pytest

from llm_planner.core.composition.estimate import estimate
from llm_planner.core.composition.scenario import default_scenario
from llm_planner.core.inputs.scenario import Scenario
from llm_planner.core.primitives.gpus import get_gpu
from llm_planner.core.primitives.presets import get_preset
from llm_planner.core.quantities.optimizers import get_precision
from llm_planner.core.sections.parallelism.workload import cluster_of

LAYER_MATRIX_PARAMS = 32 * (2 * 4096 * 4096 + 2 * 4096 * 1024 + 3 * 4096 * 14336)
"""q and o 4096², k and v 4096×1024, gate, up and down 4096×14,336: 218,103,808 per layer,
6,979,321,856 in the 32 layers."""

QUANTIZED_PER_TOKEN = 32 * ((6144 + 4096) + (4096 + 4096) + (28672 + 4096) + (4096 + 14336))
"""Values each token's GEMM inputs (K) and output gradients (N) hold per layer: fused qkv
(N 6,144, K 4,096), o (4,096, 4,096), fused gate-up (28,672, 4,096), down (4,096, 14,336):
69,632 per layer, 2,228,224 in the 32 layers."""


def _scenario(precision: str, gpu: str = "h100-sxm", compute_dtype: str = "bf16") -> Scenario:
    """Llama 3.1 8B on one GPU, s 4096, micro and global batch 1, Megatron, ZeRO 0."""
    sc = default_scenario()
    return sc.model_copy(
        update={
            "model": sc.model.model_copy(
                update={
                    "preset_id": "llama-3.1-8b",
                    "architecture": get_preset("llama-3.1-8b").architecture,
                }
            ),
            "gpu": get_gpu(gpu),
            "num_gpus": 1,
            "compute": sc.compute.model_copy(update={"compute_dtype": compute_dtype}),
            "training": sc.training.model_copy(
                update={
                    "seq_len": 4096,
                    "micro_batch": 1,
                    "recompute": "none",
                    "stack": "megatron",
                    "precision": precision,
                }
            ),
            "parallelism": sc.parallelism.model_copy(
                update={"zero_stage": 0, "global_batch": 1, "sequence_parallel": False}
            ),
        }
    )


def test_the_layer_matrices_by_hand() -> None:
    assert LAYER_MATRIX_PARAMS == 6_979_321_856
    assert QUANTIZED_PER_TOKEN == 2_228_224


@pytest.mark.parametrize(
    ("precision", "copy_bytes"),
    [
        # tensor-wise FP8: a 1-byte copy and its 1-byte transpose
        ("fp8_delayed", 2.0),
        ("fp8_current", 2.0),
        # MXFP8: both copies with an E8M0 byte per 32 values
        ("mxfp8", 2.0 + 2.0 / 32.0),
        # NVFP4: two half-byte copies with an E4M3 byte per 16 values
        ("nvfp4", 2.0 * (0.5 + 1.0 / 16.0)),
    ],
)
def test_quantized_weight_copies_add_to_the_weights(precision: str, copy_bytes: float) -> None:
    """The recipes keep Megatron's 16-bit weights and add the quantized copies of the
    layers' matrices only (embedding and output layer stay 16-bit)."""
    base = estimate(_scenario("mixed_bf16"), suggest=False).training
    low = estimate(_scenario(precision), suggest=False).training
    extra = low.weights_bytes - base.weights_bytes
    assert extra == pytest.approx(LAYER_MATRIX_PARAMS * copy_bytes, rel=1e-9)
    # gradients and optimizer: bf16 weights, fp32 main gradients, fp32 master and moments
    assert low.gradients_bytes == pytest.approx(base.gradients_bytes, rel=1e-12)
    assert low.optimizer_bytes == pytest.approx(base.optimizer_bytes, rel=1e-12)


def test_current_scaling_reads_each_tensor_once_more_than_delayed() -> None:
    """fp8_current moves 6 bytes per quantized value, fp8_delayed 4 (the amax read): on 4,096
    tokens the step differs by 4096 · 2,228,224 · 2 bytes ÷ the HBM rate the step time uses,
    and by nothing else (to 1e-4: the layers' 6·P FLOPs the count starts from include the
    norms' 2 · 4,096 weights per layer, 3.8e-5 of the matrices)."""
    delayed = estimate(_scenario("fp8_delayed"), suggest=False).parallelism
    current = estimate(_scenario("fp8_current"), suggest=False).parallelism
    sc = _scenario("fp8_current")
    hbm = cluster_of(sc.gpu, sc.parallelism, "bf16").memory_bytes_per_s
    expected = 4096 * QUANTIZED_PER_TOKEN * 2.0 / hbm
    assert current.step_seconds - delayed.step_seconds == pytest.approx(expected, rel=1e-4)


def test_fp8_recipe_is_faster_than_bf16_but_slower_than_everything_at_the_fp8_peak() -> None:
    """The layers' GEMMs run at the FP8 peak (H100: 1,979 vs 989 TFLOP/s), so the recipe beats
    BF16; attention, the output layer and the quantize kernels stay at BF16 rates, so it
    stays under the old statement of FP8 (compute_dtype fp8: every FLOP at the FP8 peak)."""
    bf16 = estimate(_scenario("mixed_bf16"), suggest=False).parallelism.tokens_per_s
    recipe = estimate(_scenario("fp8_current"), suggest=False).parallelism.tokens_per_s
    everything = estimate(
        _scenario("mixed_bf16", compute_dtype="fp8"), suggest=False
    ).parallelism.tokens_per_s
    assert bf16 < recipe < everything


def test_nvfp4_uses_the_fp4_peak_where_the_gpu_has_one() -> None:
    """B200: FP4 9 PFLOP/s dense against FP8 4.5 (catalog); H100 has no FP4, so NVFP4 keeps
    the compute dtype's (BF16) rate there, below FP8's."""
    assert get_precision("nvfp4").gemm_dtype == "fp4"
    fp4 = estimate(_scenario("nvfp4", "b200"), suggest=False).parallelism.tokens_per_s
    fp8 = estimate(_scenario("mxfp8", "b200"), suggest=False).parallelism.tokens_per_s
    assert fp4 > fp8
    h100_fp4 = estimate(_scenario("nvfp4"), suggest=False).parallelism.tokens_per_s
    h100_fp8 = estimate(_scenario("fp8_current"), suggest=False).parallelism.tokens_per_s
    assert h100_fp4 < h100_fp8


def test_a_recipe_the_gpu_cannot_run_is_named_a_problem() -> None:
    """The H100 has FP8 but no FP4 tensor cores (catalog: fp4 None): NVFP4 there is reported,
    not silently priced; FP8 on an H100 is not a problem."""
    nvfp4 = estimate(_scenario("nvfp4"), suggest=False).parallelism.problems
    assert any("no fp4 tensor cores" in p for p in nvfp4)
    fp8 = estimate(_scenario("fp8_current"), suggest=False).parallelism.problems
    assert not any("tensor cores" in p for p in fp8)
