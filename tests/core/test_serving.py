"""Serving: decode steps, prefill, tensor-parallel all-reduces, MoE reads, KV admission,
batching, cost and the report (issue 30; the command line in tests/cli/test_serving_cli.py).

Each expected value is a hand computation written out in the test from published figures
(parameter counts from the model cards, GPU datasheets) and the model's named constants
(``DECODE_BANDWIDTH_FRACTION`` ...: the assumptions whose fit docs/ACCURACY.md shows).
"""

from __future__ import annotations

import itertools
import json
import math
from dataclasses import replace

import pytest

from llm_planner.core.composition.estimate import estimate, report_json
from llm_planner.core.composition.scenario import default_scenario
from llm_planner.core.primitives.architecture import count_parameters
from llm_planner.core.primitives.gpus import get_gpu
from llm_planner.core.primitives.presets import get_preset
from llm_planner.core.quantities.engines import engine_profiles, get_engine
from llm_planner.core.sections import serving
from llm_planner.core.sections.inference import InferenceInputs, serving_deployment
from llm_planner.core.sections.serving import (
    DECODE_BANDWIDTH_FRACTION,
    KV_BANDWIDTH_FRACTION,
    PREFILL_COMPUTE_FRACTION,
    Deployment,
    decode_step,
    kv_capacity_sequences,
    operate,
    pipeline_speedup,
    prefill_time,
    tensor_parallel_seconds,
    usd_per_million_tokens,
)

LLAMA3_8B_PARAMS = 8_030_261_248
"""meta-llama/Llama-3.1-8B: 8,030,261,248 parameters (model card / safetensors index)."""
LLAMA3_8B_EMBEDDING = 128_256 * 4_096
"""Input embedding table, vocabulary × hidden = 525,336,576 (not tied to the head)."""
H100_BANDWIDTH = 3.35e12
"""H100 SXM5 HBM3, bytes/s (NVIDIA H100 datasheet)."""
H100_BF16 = 989.4e12
"""H100 SXM5 dense BF16 tensor FLOP/s (NVIDIA H100 datasheet: 1,979 with sparsity)."""


def _llama8b(engine: str = "tensorrt-llm", num_gpus: int = 1, **kw: object) -> Deployment:
    arch = get_preset("llama-3.1-8b").architecture
    counts = count_parameters(arch)
    inputs = InferenceInputs(engine=engine, num_gpus=num_gpus, **kw)  # type: ignore[arg-type]
    return serving_deployment(arch, counts.total, counts.active, get_gpu("h100-sxm"), inputs)


def test_llama3_8b_decode_step_at_batch_1_and_64_on_one_h100() -> None:
    """Llama 3.1 8B, bf16 weights and KV cache, one H100 SXM, caches of 2,048 tokens.

    Weights read per step: every parameter but the input embedding (only b rows of it are
    read): (8,030,261,248 − 525,336,576) × 2 B = 15,009,849,344 B.
    KV per token: 32 layers × 2 (K, V) × 8 KV heads × 128 × 2 B = 131,072 B;
    × 2,048 tokens = 268,435,456 B per sequence.
    GEMM FLOPs per token: 2 × 8,030,261,248 = 16.06 GFLOP.

    Batch 1: weights 15.01 GB ÷ (3.35 TB/s × 0.75) = 5.97 ms ≫ 16.06 GFLOP ÷ (989.4 TFLOP/s
    × 0.70) = 0.023 ms: memory bound; KV 0.27 GB ÷ (3.35 TB/s × 0.70) = 0.11 ms.
    Batch 64: GEMMs 64 × 16.06 = 1,028 GFLOP → 1.48 ms, still under the 5.97 ms of the
    weights: memory bound; KV 64 × 0.27 GB = 17.18 GB → 7.33 ms.
    Batch 1,024: GEMMs 16.4 TFLOP → 23.7 ms at the achieved rate, and wave quantisation
    on 132 SMs with 128 × 256 tiles: QKV (N = 6,144) 8 · 24 = 192 tiles in 2 waves of 132
    (72.7% full), gate‖up (N = 28,672) 896 tiles in 7 waves (97.0%), the two N = 4,096
    GEMMs 128 tiles (under one wave: no loss counted). FLOP shares by N·K: QKV 25.2M, O
    16.8M, gate‖up 117.4M, down 58.7M of 218.1M → 1 + 0.1154·(1/0.7273 − 1) + 0.5385·
    (1/0.9697 − 1) = 1.060 → 25.2 ms > 5.97 ms: compute bound.
    """
    d = _llama8b()
    weights = (LLAMA3_8B_PARAMS - LLAMA3_8B_EMBEDDING) * 2
    assert weights == 15_009_849_344
    kv_per_sequence = 32 * 2 * 8 * 128 * 2 * 2048
    assert kv_per_sequence == 268_435_456
    weight_bw = H100_BANDWIDTH * DECODE_BANDWIDTH_FRACTION
    kv_bw = H100_BANDWIDTH * KV_BANDWIDTH_FRACTION
    compute = H100_BF16 * PREFILL_COMPUTE_FRACTION

    one = decode_step(d, 1, 2048)
    assert one.weights == pytest.approx(weights / weight_bw, rel=1e-9)
    assert one.weights == pytest.approx(5.974e-3, rel=1e-3)
    assert one.kv == pytest.approx(kv_per_sequence / kv_bw, rel=1e-9)
    assert one.gemm == pytest.approx(2 * LLAMA3_8B_PARAMS / compute, rel=1e-9)
    assert one.bound == "memory"

    sixty_four = decode_step(d, 64, 2048)
    assert sixty_four.weights == pytest.approx(one.weights, rel=1e-9)  # same weights read
    assert sixty_four.gemm == pytest.approx(64 * 2 * LLAMA3_8B_PARAMS / compute, rel=1e-9)
    assert sixty_four.gemm == pytest.approx(1.484e-3, rel=1e-3)
    assert sixty_four.kv == pytest.approx(64 * kv_per_sequence / kv_bw, rel=1e-9)
    assert sixty_four.bound == "memory"
    # attention FLOPs: 64 × 32 layers × 2 × 2,048 × (4,096 + 4,096) = 68.7 GFLOP
    assert sixty_four.attention == pytest.approx(64 * 32 * 2 * 2048 * 8192 / compute, rel=1e-9)
    overhead = get_engine("tensorrt-llm").step_overhead_seconds
    expected = max(one.weights, sixty_four.gemm) + sixty_four.kv + overhead
    assert sixty_four.seconds == pytest.approx(expected, rel=1e-9)

    large = decode_step(d, 1024, 2048)
    shares = [6144 * 4096, 4096 * 4096, 28672 * 4096, 4096 * 14336]
    waves = [192 / 264, 1.0, 896 / 924, 1.0]
    slowdown = sum(s / w for s, w in zip(shares, waves, strict=True)) / sum(shares)
    assert slowdown == pytest.approx(1.060, abs=1e-3)
    assert large.gemm == pytest.approx(1024 * 2 * LLAMA3_8B_PARAMS / compute * slowdown, rel=1e-9)
    assert large.bound == "compute"


def test_tensor_parallel_all_reduces_of_a_decode_step() -> None:
    """Llama 3.1 8B on 2 H100s (NVLink 4: 450e9 B/s per direction), 64 tokens in the step.

    Each all-reduce: 64 × 4,096 × 2 B = 524,288 B; a ring over 2 ranks sends 2·(1/2)·S =
    524,288 B at 450e9 × 0.80 = 360e9 B/s → 1.456 µs, plus NCCL's latency 8.4 µs + 2·(2−1)
    ring steps × 3.4 µs = 15.2 µs. Two per layer, 32 layers: 64 × 16.656 µs = 1.066 ms.
    """
    d = _llama8b(num_gpus=2)
    per = 524_288 / 360e9 + 8.4e-6 + 2 * 3.4e-6
    assert tensor_parallel_seconds(d, 64) == pytest.approx(64 * per, rel=1e-9)
    assert tensor_parallel_seconds(d, 64) == pytest.approx(1.066e-3, rel=1e-3)
    assert tensor_parallel_seconds(_llama8b(num_gpus=1), 64) == 0.0


def test_moe_decode_reads_only_the_experts_the_batch_touches() -> None:
    """Mixtral 8x7B, top-2 of 8 experts: one token touches 2 of 8 experts per layer, so a
    batch-1 step reads the non-expert weights plus a quarter of the experts; at batch 64
    the chance an expert is untouched is (6/8)^64 ≈ 1e-8, so nearly every expert is read."""
    arch = get_preset("mixtral-8x7b").architecture
    counts = count_parameters(arch)
    inputs = InferenceInputs(engine="vllm", weights_format="bf16")
    d = serving_deployment(arch, counts.total, counts.active, get_gpu("h200"), inputs)
    dense = counts.total - counts.experts - counts.embedding
    one = decode_step(d, 1, 1)
    bw = get_gpu("h200").memory_bandwidth_bytes_per_s * DECODE_BANDWIDTH_FRACTION
    assert one.weights * bw == pytest.approx((dense + 0.25 * counts.experts) * 2, rel=1e-9)
    many = decode_step(d, 64, 1)
    touched = 1 - 0.75**64
    assert many.weights * bw == pytest.approx((dense + touched * counts.experts) * 2, rel=1e-9)


def test_prefill_is_compute_bound_gemms_plus_causal_attention() -> None:
    """One 2,048-token prompt of Llama 3.1 8B on one H100 (TensorRT-LLM, one chunk):
    GEMMs 2,048 × 16.06 GFLOP = 32.9 TFLOP → 47.5 ms at 989.4 × 0.70 TFLOP/s; causal
    attention averages 1,024 keys per query: 2,048 × 32 × 2 × 1,024 × 8,192 = 1.10 TFLOP
    → 1.59 ms; the weights are read once (5.97 ms), under the GEMMs' time."""
    d = _llama8b()
    p = prefill_time(d, 1, 2048)
    compute = H100_BF16 * PREFILL_COMPUTE_FRACTION
    assert p.gemm == pytest.approx(2048 * 2 * LLAMA3_8B_PARAMS / compute, rel=1e-9)
    assert p.gemm == pytest.approx(47.5e-3, rel=2e-3)
    assert p.attention == pytest.approx(2048 * 32 * 2 * 1024 * 8192 / compute, rel=1e-9)
    assert p.bound == "compute"


def test_layer_split_pipelines_prompt_micro_batches() -> None:
    """GPipe's fill and drain: m micro-batches over p stages take m + p − 1 slots of 1/p of
    the work, so the speed-up is m·p/(m + p − 1): 4 over 4 GPUs → 16/7 = 2.29."""
    assert pipeline_speedup(4, 4) == pytest.approx(16 / 7)
    assert pipeline_speedup(2, 4) == pytest.approx(8 / 5)
    assert pipeline_speedup(8, 1) == 1.0
    assert pipeline_speedup(1, 4) == 1.0


def test_kv_admission_rounds_to_whole_blocks() -> None:
    """TensorRT-LLM reserves prompt + output in blocks of 64 tokens: 100 tokens take 128.
    With a pool of exactly 10 such sequences of Llama 3.1 8B (bf16 KV: 131,072 B/token ×
    128 tokens = 16 MiB each), 10 fit and an 11th does not."""
    d = _llama8b()
    per_sequence = 131_072 * 128
    pool = replace(d, kv_capacity_bytes=10 * per_sequence)
    assert kv_capacity_sequences(pool, 100) == 10
    assert kv_capacity_sequences(pool, 129) == 6  # 192 tokens → 24 MiB each: 160/24 = 6.7
    sglang = replace(pool, engine=get_engine("sglang"))  # one-token pages: 100 take 100
    assert kv_capacity_sequences(sglang, 100) == 12  # 10 × 128 ÷ 100 = 12.8


def test_static_batches_wait_for_whole_waves() -> None:
    """A static engine holding 4 sequences serves 10 requests in waves of 4, 4 and 2; the
    mean request starts (0·4 + 1·4 + 2·2)/10 = 0.8 waves late."""
    d = _llama8b(engine="lmdeploy")
    op = operate(d, 10, 128, 128, capacity=4)
    prefill = prefill_time(d, 4, 128).seconds
    step = decode_step(d, 4, 128 + 64).seconds
    wave = prefill + 128 * step
    assert op.ttft == pytest.approx(0.8 * wave + prefill + step, rel=1e-9)
    assert op.tpot == pytest.approx(step, rel=1e-9)
    assert op.output_tokens_per_s == pytest.approx(10 * 128 / (3 * wave), rel=1e-9)


def test_continuous_batching_folds_prompts_into_decode_steps() -> None:
    """In-flight batching at b = 256, 1,024-token prompts, 256 outputs: the replica's time
    per cycle is GEMMs max(256 steps × weights, 256 steps × GEMM FLOPs + the prompts'
    GEMM FLOPs) + attention + all-reduces and host time per step; tokens/s = b × 256 ÷ that."""
    d = _llama8b(engine="vllm")
    op = operate(d, 256, 1024, 256, capacity=1000)
    step = decode_step(d, 256, 1024 + 128)
    prompts = prefill_time(d, 256, 1024)
    gemms = max(256 * step.weights, 256 * step.gemm + prompts.gemm, prompts.weights)
    attention = 256 * max(step.kv, step.attention) + max(prompts.kv, prompts.attention)
    total = gemms + attention + 256 * (step.communication + step.overhead)
    assert op.output_tokens_per_s == pytest.approx(256 * 256 / total, rel=1e-9)
    assert op.tpot == pytest.approx(total / 256, rel=1e-9)


def test_usd_per_million_output_tokens() -> None:
    """$2 per GPU-hour, 4 GPUs, 1,000 tokens/s: 8 $/h ÷ 3.6e6 tokens/h × 1e6 = $2.222."""
    assert usd_per_million_tokens(1000.0, 4, 2.0) == pytest.approx(8 / 3.6, rel=1e-12)
    assert usd_per_million_tokens(1000.0, 4, 0.0) is None


def test_engines_are_cited_profiles() -> None:
    for engine in engine_profiles().values():
        assert engine.source
        assert 0 < engine.kv_memory_fraction <= 1
    assert get_engine("llama.cpp").tensor_parallel is False
    with pytest.raises(ValueError, match="known: vllm"):
        get_engine("nope")


def test_report_serving_figures_hang_together() -> None:
    """The JSON under ``inference.serving``: per GPU = replica ÷ GPUs, per user = 1 ÷ TPOT,
    concurrency ≤ the largest, curve from one request up to the largest."""
    scenario = default_scenario()
    scenario = scenario.model_copy(
        update={
            "inference": scenario.inference.model_copy(
                update={"num_gpus": 2, "batch": 32, "engine": "sglang"}
            )
        }
    )
    data = report_json(estimate(scenario))
    s = data["inference"]["serving"]
    for key in (
        "ttft_seconds",
        "tpot_seconds",
        "output_tokens_per_s",
        "max_concurrency",
        "usd_per_million_output_tokens",
        "curve",
    ):
        assert key in s
    assert s["engine"] == "sglang"
    assert s["concurrency"] == 32
    assert s["output_tokens_per_s_per_gpu"] == pytest.approx(s["output_tokens_per_s"] / 2)
    assert s["output_tokens_per_s_per_user"] == pytest.approx(1 / s["tpot_seconds"])
    curve = s["curve"]
    assert curve[0]["concurrency"] == 1
    assert curve[-1]["concurrency"] == s["max_concurrency"]
    per_gpu = [p["output_tokens_per_s_per_gpu"] for p in curve]
    per_user = [p["output_tokens_per_s_per_user"] for p in curve]
    assert per_gpu == sorted(per_gpu)  # more requests: more tokens per GPU ...
    assert per_user == sorted(per_user, reverse=True)  # ... and fewer per user
    json.dumps(data)


def test_batch_max_serves_as_many_as_fit() -> None:
    scenario = default_scenario()
    inference = scenario.inference.model_copy(update={"batch_max": True})
    report = estimate(scenario.model_copy(update={"inference": inference}))
    s = report.inference.serving
    assert s is not None
    assert s.concurrency == s.max_concurrency
    assert s.max_concurrency == min(s.kv_capacity_sequences, 256)  # vLLM's max_num_seqs


def test_old_inference_inputs_load_with_serving_defaults() -> None:
    """A file written before issue 30 has no serving fields: it loads with the defaults."""
    old = {"weights_format": "bf16", "kv_dtype": "bf16", "batch": 4, "context": 4096}
    inputs = InferenceInputs.model_validate(old)
    assert (inputs.engine, inputs.prompt_tokens, inputs.output_tokens) == ("vllm", 1024, 256)
    assert inputs.batch_max is False
    with pytest.raises(ValueError, match="unknown serving engine"):
        InferenceInputs.model_validate({**old, "engine": "tgi"})


def test_price_reaches_the_cost_per_token() -> None:
    """Doubling the price doubles $ per million tokens and changes nothing else."""
    scenario = default_scenario()
    cheap = estimate(scenario).inference.serving
    dear_compute = scenario.compute.model_copy(
        update={"price_usd_per_gpu_hour": 2 * scenario.compute.price_usd_per_gpu_hour}
    )
    dear = estimate(scenario.model_copy(update={"compute": dear_compute})).inference.serving
    assert cheap is not None
    assert dear is not None
    assert cheap.usd_per_million_output_tokens is not None
    assert dear.usd_per_million_output_tokens == pytest.approx(
        2 * cheap.usd_per_million_output_tokens
    )
    assert math.isclose(dear.output_tokens_per_s, cheap.output_tokens_per_s)


def test_decode_wave_quantisation_of_tensor_parallel_gemms() -> None:
    """Llama 3.1 70B on 8 H100s (132 SMs), batch 1,000: per GPU the QKV GEMM has N = 10,240
    ÷ 8 = 1,280: 8 · 5 = 40 tiles, under one wave (no loss counted); O (N = 8,192, K split)
    8 · 32 = 256 tiles in 2 waves of 132 (97.0% full); gate‖up N = 57,344 ÷ 8 = 7,168: 224
    tiles (84.8%); down N = 8,192: 256 tiles (97.0%). FLOP shares by N·K: 0.0980, 0.0784,
    0.5490, 0.2745 → 0.0980 + 0.0784/0.9697 + 0.5490/0.8485 + 0.2745/0.9697 = 1.109."""
    arch = get_preset("llama-3.1-70b").architecture
    counts = count_parameters(arch)
    inputs = InferenceInputs(engine="tensorrt-llm", num_gpus=8, weights_format="fp8")
    d = serving_deployment(arch, counts.total, counts.active, get_gpu("h100-sxm"), inputs)
    expected = 0.0980 + 0.0784 / (256 / 264) + 0.5490 / (224 / 264) + 0.2745 / (256 / 264)
    assert serving.decode_wave_slowdown(d, 1000) == pytest.approx(expected, rel=1e-3)
    assert serving.decode_wave_slowdown(d, 64) == 1.0  # every GEMM under one wave


def test_rl_rollouts_are_priced_by_the_serving_model() -> None:
    """The RL what-if's rollout engine: b = the largest concurrency the serving model allows
    at prompt + response tokens on the scenario's engine, and a wave of b sequences takes
    b × response ÷ the serving model's output tokens/s at b."""
    from llm_planner.core.composition.whatif.rl import plan_rl
    from llm_planner.core.inputs.whatif import RLInputs
    from llm_planner.core.sections.serving import max_concurrency

    scenario = default_scenario()
    report = estimate(scenario)
    rl = RLInputs(num_gpus=64, engine_gpus=2, prompt_tokens=512, response_tokens=1024)
    plan = plan_rl(scenario, report, rl)
    assert plan is not None
    arch = scenario.model.architecture
    inputs = scenario.inference.model_copy(update={"num_gpus": 2, "context": 1536, "batch": 1})
    d = serving_deployment(
        arch, report.model.params_total, report.model.params_active, scenario.gpu, inputs
    )
    b, _ = max_concurrency(d, 512, 1024)
    assert plan.engine.max_batch == b
    op = operate(d, b, 512, 1024, b)
    assert plan.engine.wave_seconds == pytest.approx(b * 1024 / op.output_tokens_per_s)
    trt = scenario.model_copy(
        update={"inference": scenario.inference.model_copy(update={"engine": "tensorrt-llm"})}
    )
    other = plan_rl(trt, estimate(trt), rl)
    assert other is not None
    assert other.engine.wave_seconds != pytest.approx(plan.engine.wave_seconds)


@pytest.mark.parametrize("engine", sorted(engine_profiles()))
def test_every_preset_serves_with_finite_figures(engine: str) -> None:
    """Every preset (dense, MoE, MLA, sliding windows, recurrent) on every engine, one GPU
    and eight: positive, finite TTFT, TPOT and tokens/s, a curve from one request up to the
    largest concurrency, and per-user speed falling as requests are added (within 1%: wave
    quantisation can make a step with a few more rows fill its last wave better)."""
    from llm_planner.core.primitives.presets import model_presets
    from llm_planner.core.sections.serving import estimate_serving

    for preset in model_presets().values():
        counts = count_parameters(preset.architecture)
        for gpus in (1, 8):
            inputs = InferenceInputs(engine=engine, num_gpus=gpus, weights_format="fp8")
            d = serving_deployment(
                preset.architecture, counts.total, counts.active, get_gpu("h200"), inputs
            )
            report = estimate_serving(d, 1024, 256, None, 2.0)
            for value in (report.ttft_seconds, report.tpot_seconds, report.output_tokens_per_s):
                assert math.isfinite(value)
                assert value > 0, (preset.id, engine, gpus)
            assert report.curve[0].concurrency == 1
            assert report.curve[-1].concurrency == max(1, report.max_concurrency)
            per_user = [p.output_tokens_per_s_per_user for p in report.curve]
            for fewer, more in itertools.pairwise(per_user):
                assert more <= fewer * 1.01, (preset.id, engine, gpus)


def test_cheapest_replica_serving_users_within_a_latency_target() -> None:
    """1,000 users at TPOT ≤ 50 ms on H100s at an overridden $3/GPU-hour: each replica size
    serves the most requests c with TPOT ≤ 50 ms (c + 1 would exceed it, or c is the most
    its KV memory and vLLM's 256 allow), ⌈1000 ÷ c⌉ replicas, cost replicas × GPUs × $3."""
    from llm_planner.core.composition.serving_plan import plan_serving
    from llm_planner.core.sections.serving import max_concurrency

    scenario = default_scenario().model_copy(update={"price_overrides": {"h100-sxm": 3.0}})
    h100 = get_gpu("h100-sxm")
    plan = plan_serving(scenario, 1000, 0.050, gpus=[h100])
    assert [o.gpus_per_replica for o in plan.options if o.status == "ok"]
    for option in plan.options:
        if option.status != "ok":
            continue
        counts = count_parameters(scenario.model.architecture)
        inputs = scenario.inference.model_copy(update={"num_gpus": option.gpus_per_replica})
        d = serving_deployment(
            scenario.model.architecture, counts.total, counts.active, h100, inputs
        )
        largest, _ = max_concurrency(d, 1024, 256)
        c = option.concurrency_per_replica
        assert operate(d, c, 1024, 256, largest).tpot <= 0.050
        assert c == largest or operate(d, c + 1, 1024, 256, largest).tpot > 0.050
        assert option.replicas == math.ceil(1000 / c)
        assert option.usd_per_hour == pytest.approx(option.replicas * option.gpus_per_replica * 3.0)
    assert plan.best == plan.options[0]
    costs = [o.usd_per_hour for o in plan.options if o.status == "ok"]
    assert costs == sorted(costs)
    strict = plan_serving(scenario, 1000, 1e-4, gpus=[h100])  # 0.1 ms per token: no GPU can
    assert strict.best is None
    assert {o.status for o in strict.options} == {"misses latency"}


def test_the_two_largest_batch_figures_say_what_each_counts() -> None:
    """The inference section's largest batch holds sequences of the whole context; the
    serving section's largest concurrency holds requests of prompt + output tokens under the
    engine's limit (vLLM's max_num_seqs = 256). Side by side they differ (58 vs 256 for 8B
    on one H100), so each label names what it counts."""
    report = estimate(default_scenario())
    inference = {f.key: f for f in report.inference.figures()}
    sc = default_scenario()
    prompt, output = sc.inference.prompt_tokens, sc.inference.output_tokens
    assert "full-context" in inference["max_batch"].label
    assert f"{prompt:,} + {output:,}-token requests" in inference["max_concurrency"].label
