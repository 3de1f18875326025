"""Inference memory: weight formats, KV cache, overhead, fit, largest batch/context, bounds.

Every expected value is a published figure (source next to it) or a hand computation
written out in the test.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llm_planner.core.composition.estimate import estimate
from llm_planner.core.composition.scenario import default_scenario
from llm_planner.core.primitives.architecture import count_parameters
from llm_planner.core.primitives.gpus import GPU, PeakFlops
from llm_planner.core.primitives.presets import get_preset, model_presets
from llm_planner.core.quantities.quantization import get_weight_format, weight_formats
from llm_planner.core.sections.inference import (
    InferenceInputs,
    estimate_inference,
    kv_cache_bytes,
    kv_fraction_per_gpu,
    max_batch,
    max_context,
    memory_per_gpu,
    memory_vs_context,
    weights_bytes,
    weights_read_fraction,
)

GiB = 2**30

ROUND_GPU = GPU(
    id="round",
    name="Round-number GPU",
    memory_bytes=80e9,
    memory_bandwidth_bytes_per_s=3e12,
    peak_flops=PeakFlops(bf16=1e15, fp16=1e15, fp8=2e15),
    link_bandwidth_bytes_per_s=450e9,
)

LLAMA2_7B = get_preset("llama-2-7b").architecture
LLAMA2_70B = get_preset("llama-2-70b").architecture


# ------------------------------------------------------------------ weights


@pytest.mark.parametrize(
    ("fmt", "expected"),
    [
        # Transformer Math 101 seed: 70e9 parameters are 280 GB in fp32, 70 GB at 8 bits
        ("fp32", 280e9),
        ("bf16", 140e9),
        ("fp16", 140e9),
        ("fp8", 70e9),
        ("int8", 70e9),
        ("int4", 35e9),
    ],
)
def test_seed_weight_sizes(fmt: str, expected: float) -> None:
    assert weights_bytes(70e9, get_weight_format(fmt)) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("fmt", "bits"),
    [
        ("int4_g128", 4 + 16 / 128),  # 4-bit + one fp16 scale per 128 weights = 4.125
        ("awq_int4_g128", 4 + (16 + 4) / 128),  # + a packed 4-bit zero point per group
        ("nf4", 4 + 8 / 64 + 32 / (64 * 256)),  # QLoRA (arXiv:2305.14314) sec. 3: 4.127
        ("mxfp4", 4 + 8 / 32),  # OCP MX v1.0: E8M0 scale per 32 E2M1 elements
        ("q8_0", 34 * 8 / 32),  # llama.cpp block_q8_0: fp16 d + 32 int8 = 34 B per 32
        ("q4_0", 18 * 8 / 32),  # block_q4_0: fp16 d + 16 B nibbles = 18 B per 32
        ("q4_k", 144 * 8 / 256),  # block_q4_K: 2 + 2 + 12 + 128 = 144 B per 256
        ("q6_k", 210 * 8 / 256),  # block_q6_K: 128 + 64 + 16 + 2 = 210 B per 256
        ("q4_k_m", 4.84),  # llama.cpp tools/quantize/README.md, Llama 2 7B BPW table
        ("Q5_K_M", 5.68),  # same table; ids are case-insensitive
    ],
)
def test_quantized_bits_per_weight(fmt: str, bits: float) -> None:
    assert get_weight_format(fmt).bits_per_weight == pytest.approx(bits)


def test_unknown_format_names_the_known_ones() -> None:
    with pytest.raises(ValueError, match="q4_k_m"):
        get_weight_format("q9")
    with pytest.raises(ValueError, match="weights_format"):
        InferenceInputs(weights_format="q9")
    assert InferenceInputs(weights_format="Q4-K-M").weights_format == "q4_k_m"


def test_every_format_has_a_source() -> None:
    for fmt in weight_formats().values():
        assert fmt.source
        assert 1 <= fmt.bits_per_weight <= 32


# ------------------------------------------------------------------ KV cache


def test_llama2_7b_kv_cache_is_2_gib() -> None:
    # 2 (K and V) × 32 layers × 32 KV heads × 128 head dim × 2 bytes × 4096 tokens
    by_hand = 2 * 32 * 32 * 128 * 2 * 4096
    assert by_hand == 2 * GiB
    assert kv_cache_bytes(LLAMA2_7B, 4096, 1, "bf16") == by_hand


def test_llama2_70b_kv_cache_with_8_kv_heads() -> None:
    # GQA: 8 KV heads instead of 64 (Llama 2 paper, arXiv:2307.09288, sec. 2.2 / Table 1)
    # 2 × 80 layers × 8 × 128 × 2 bytes × 4096 tokens = 1,342,177,280 B = 1.25 GiB
    by_hand = 2 * 80 * 8 * 128 * 2 * 4096
    assert by_hand == 1.25 * GiB
    assert kv_cache_bytes(LLAMA2_70B, 4096, 1, "bf16") == by_hand
    # batch and dtype scale it linearly
    assert kv_cache_bytes(LLAMA2_70B, 4096, 8, "fp8") == 2 * 80 * 8 * 128 * 1 * 4096 * 8


def test_mla_caches_the_latent() -> None:
    deepseek = get_preset("deepseek-v3").architecture
    # DeepSeek-V2 sec. 2.1: (d_c + d_h^R) · l elements per token; V3: d_c = 512, d_R = 64,
    # 61 layers
    assert kv_cache_bytes(deepseek, 1000, 2, "bf16") == (512 + 64) * 61 * 2 * 1000 * 2
    # the latent is shared by all heads: replicated on every tensor-parallel GPU
    assert kv_fraction_per_gpu(deepseek, 8) == 1.0


def test_sliding_windows_cap_the_cache() -> None:
    mistral = get_preset("mistral-7b").architecture  # window 4096 on all 32 layers
    assert kv_cache_bytes(mistral, 32768, 1, "bf16") == 2 * 32 * 8 * 128 * 2 * 4096
    gemma = get_preset("gemma-2-27b").architecture  # window 4096 on 23 of 46 layers
    assert kv_cache_bytes(gemma, 8192, 1, "bf16") == 2 * 16 * 128 * 2 * (23 * 4096 + 23 * 8192)


def test_tensor_parallel_kv_split() -> None:
    assert kv_fraction_per_gpu(LLAMA2_70B, 1) == 1.0
    assert kv_fraction_per_gpu(LLAMA2_70B, 4) == 2 / 8
    assert kv_fraction_per_gpu(LLAMA2_70B, 8) == 1 / 8
    # 16 GPUs, 8 KV heads: each head lives on two GPUs, a GPU still holds a whole head
    assert kv_fraction_per_gpu(LLAMA2_70B, 16) == 1 / 8


# ------------------------------------------------------------------ fit, batch, context


def test_memory_items_by_hand() -> None:
    inputs = InferenceInputs(context=4096, batch=4, cuda_context_bytes=0.5 * GiB)
    memory = memory_per_gpu(LLAMA2_7B, 6.74e9, inputs, 4, 4096)
    assert memory.weights == pytest.approx(6.74e9 * 2)
    assert memory.kv_cache == 4 * 2 * GiB
    # largest step: min(4 × 4096, 8192) tokens × (2·4096 + 2·11008 gate/up) × 2 bytes
    assert memory.activations == 8192 * (2 * 4096 + 2 * 11008) * 2
    assert memory.logits == 4 * 32000 * 4  # batch × vocab × fp32
    assert memory.total == pytest.approx(
        6.74e9 * 2 + 8 * GiB + 0.5 * GiB + 8192 * (2 * 4096 + 2 * 11008) * 2 + 4 * 32000 * 4
    )


def test_max_batch_by_hand() -> None:
    inputs = InferenceInputs(context=4096, cuda_context_bytes=0.0)
    params = 6.74e9
    fixed = params * 2 + 8192 * (2 * 4096 + 2 * 11008) * 2  # weights + activations (b ≥ 2)
    per_sequence = 2 * GiB + 32000 * 4  # KV at 4096 tokens + one logits row
    expected = math.floor((80e9 - fixed) / per_sequence)
    assert max_batch(LLAMA2_7B, params, ROUND_GPU, inputs, 4096) == expected
    assert expected == 30


def test_max_context_and_nothing_fits() -> None:
    inputs = InferenceInputs(cuda_context_bytes=0.0)
    # the whole 4096-token context fits easily at batch 1
    assert max_context(LLAMA2_7B, 6.74e9, ROUND_GPU, inputs, 1) == 4096
    # 405B in bf16 (810 GB) does not fit one 80 GB GPU at any batch or context
    big = get_preset("llama-3.1-405b").architecture
    assert max_batch(big, 405e9, ROUND_GPU, inputs, 1) == 0
    assert max_context(big, 405e9, ROUND_GPU, inputs, 1) == 0


def test_tensor_parallel_fit() -> None:
    arch = get_preset("llama-3.1-70b").architecture
    params = count_parameters(arch).total
    one = estimate_inference(arch, params, params, ROUND_GPU, InferenceInputs())
    assert not one.fits  # 141 GB of bf16 weights on one 80 GB GPU
    four = estimate_inference(arch, params, params, ROUND_GPU, InferenceInputs(num_gpus=4))
    assert four.fits
    assert four.per_gpu_weights_bytes == pytest.approx(params * 2 / 4)
    assert four.weights_bytes == pytest.approx(params * 2)


# ------------------------------------------------------------------ speed bounds


def test_decode_bound_by_hand() -> None:
    counts = count_parameters(LLAMA2_7B)
    inputs = InferenceInputs(context=4096)
    report = estimate_inference(LLAMA2_7B, counts.total, counts.total, ROUND_GPU, inputs)
    # one step reads every weight but the input embedding table, and the 2 GiB cache
    read = (counts.total - counts.embedding) * 2 + 2 * GiB
    assert report.decode_bytes_per_step == pytest.approx(read)
    assert report.decode_tokens_per_s_bound == pytest.approx(3e12 / read)


def test_moe_decode_reads_only_touched_experts() -> None:
    mixtral = get_preset("mixtral-8x7b").architecture
    counts = count_parameters(mixtral)
    # batch 1: top-2 of 8 experts touched: the other 6/8 of the expert weights stay unread
    expected = (counts.total - counts.embedding - counts.experts * 6 / 8) / counts.total
    assert weights_read_fraction(mixtral, 1) == pytest.approx(expected)
    # a large batch touches every expert: 1 − (6/8)^64 ≈ 1
    assert weights_read_fraction(mixtral, 64) == pytest.approx(
        (counts.total - counts.embedding) / counts.total, rel=1e-6
    )


def test_prefill_bound_by_hand() -> None:
    inputs = InferenceInputs(context=2048, batch=2)
    report = estimate_inference(LLAMA2_7B, 6.74e9, 6.74e9, ROUND_GPU, inputs)
    # 2 × 2048 tokens × (2·P + causal attention: 32 layers × 4·4096 × 2048/2)
    flops = 2 * 2048 * (2 * 6.74e9 + 32 * 4 * 4096 * 1024)
    assert report.prefill_flops == pytest.approx(flops)
    assert report.prefill_seconds_bound == pytest.approx(flops / 1e15)


def test_fp8_weights_use_the_fp8_peak() -> None:
    report = estimate_inference(
        LLAMA2_7B, 6.74e9, 6.74e9, ROUND_GPU, InferenceInputs(weights_format="fp8")
    )
    assert report.peak_flops_per_gpu == 2e15


# ------------------------------------------------------------------ report and series


def test_default_report_has_the_contract_fields() -> None:
    report = estimate(default_scenario()).inference
    assert report is not None
    for key in (
        "weights_bytes",
        "kv_cache_bytes",
        "overhead_bytes",
        "total_bytes",
        "fits",
        "max_batch",
        "decode_tokens_per_s_bound",
    ):
        assert key in report.model_dump()
    assert report.total_bytes == pytest.approx(
        report.weights_bytes + report.kv_cache_bytes + report.overhead_bytes
    )
    assert {f.key for f in report.figures()} >= {"weights_bytes", "kv_cache_bytes", "fits"}


def test_memory_vs_context_series() -> None:
    inputs = InferenceInputs(batch=2)
    points = memory_vs_context(LLAMA2_7B, 6.74e9, inputs, [1024, 2048, 4096])
    assert [p.context for p in points] == [1024, 2048, 4096]
    assert [p.kv_cache for p in points] == [2 * GiB / 2, 2 * GiB, 4 * GiB]
    assert all(p.total == pytest.approx(p.weights + p.kv_cache + p.overhead) for p in points)


# ------------------------------------------------------------------ properties

preset_ids = st.sampled_from(sorted(model_presets()))
formats = st.sampled_from(sorted(weight_formats()))
kv_dtypes = st.sampled_from(["fp32", "fp16", "bf16", "fp8", "int8", "int4"])


def _numbers(value: object) -> list[float]:
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return []
    if isinstance(value, int | float):
        return [float(value)]
    if isinstance(value, dict):
        return [n for v in value.values() for n in _numbers(v)]
    return []


@settings(max_examples=60, deadline=None)
@given(
    preset=preset_ids,
    fmt=formats,
    kv=kv_dtypes,
    batch=st.integers(1, 4096),
    context=st.integers(1, 1_000_000),
    gpus=st.integers(1, 64),
)
def test_no_nan_inf_or_negative(
    *, preset: str, fmt: str, kv: str, batch: int, context: int, gpus: int
) -> None:
    arch = get_preset(preset).architecture
    counts = count_parameters(arch)
    inputs = InferenceInputs(
        weights_format=fmt, kv_dtype=kv, batch=batch, context=context, num_gpus=gpus
    )
    report = estimate_inference(arch, counts.total, counts.active, ROUND_GPU, inputs)
    for number in _numbers(report.model_dump()):
        assert math.isfinite(number)
        assert number >= 0


@settings(max_examples=100, deadline=None)
@given(
    preset=preset_ids,
    kv=kv_dtypes,
    batch=st.integers(1, 512),
    context=st.integers(1, 500_000),
    extra=st.integers(1, 500_000),
)
def test_longer_context_never_shrinks_kv_cache(
    *, preset: str, kv: str, batch: int, context: int, extra: int
) -> None:
    arch = get_preset(preset).architecture
    assert kv_cache_bytes(arch, context + extra, batch, kv) >= kv_cache_bytes(
        arch, context, batch, kv
    )
