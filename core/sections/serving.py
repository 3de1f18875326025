"""Serving: throughput and latency of one replica under a workload, by engine.

A replica is ``num_gpus`` GPUs holding one copy of the model (tensor parallel, or layers
split across GPUs for llama.cpp); a workload is prompt tokens, output tokens and the
requests served at once (or as many as KV memory and the engine allow). From the plan
alone, no hardware needed:

* **prefill**: the prompt's GEMMs and attention over the prompt at the achieved compute
  rate, never faster than one read of the weights per forward step;
* **a decode step** at batch b: two kernel classes whose times add, each bound by the
  larger of its bytes ÷ achieved bandwidth and its FLOPs ÷ achieved compute: the GEMMs
  (the weights the batch touches, MoE: only the experts its tokens were routed to,
  :func:`~llm_planner.core.sections.inference.weights_read_fraction`, against b × 2·P_active
  FLOPs) and attention (the batch's KV cache against its FLOPs over the context); then the
  tensor-parallel all-reduces of the step and the engine's host time;
* **batching**: continuous (in-flight) engines keep b requests decoding and fold the next
  requests' prompt chunks into the decode steps; static engines prefill a batch, decode it
  to the end, then start the next. b is at most the engine's limit and the sequences the
  KV pool holds.

Outputs: time to first token (TTFT), time per output token (TPOT), output tokens/s for the
replica, per GPU and per user, the largest concurrency, $ per million output tokens, and
the curve of tokens/s per GPU against tokens/s per user as concurrency grows.

Weights and KV bytes come from :mod:`llm_planner.core.sections.inference`, peak FLOP/s
and bandwidth from the GPU catalog, all-reduce bytes and latency from
:mod:`llm_planner.core.quantities.comm`; the few efficiencies below are fitted on
serving-calibration.json (scripts/fit_serving.py; docs/ACCURACY.md, "Serving") and say
so. SI units throughout.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import NamedTuple

from pydantic import BaseModel, ConfigDict, Field

from llm_planner.core.primitives.architecture import Architecture
from llm_planner.core.primitives.figures import Figure, Unit
from llm_planner.core.primitives.gpus import GPU
from llm_planner.core.quantities.comm import (
    GEMM_TILE_M,
    GEMM_TILE_N,
    INTRA_NODE_ACHIEVED_FRACTION,
    collective_latency_seconds,
    gemm_efficiency,
    gemm_efficiency_one,
    ring_all_reduce_bytes,
)
from llm_planner.core.quantities.engines import EngineProfile
from llm_planner.core.quantities.flops import attention_forward_flops_per_token
from llm_planner.core.sections.parallelism.workload import gemm_shapes_of

SECONDS_PER_HOUR = 3600.0

DECODE_BANDWIDTH_FRACTION = 0.75
"""Share of the catalog's memory bandwidth a decode step's weight reads achieve (GEMV-like
kernels streaming the weights once per step). Fitted
(scripts/fit_serving.py; docs/ACCURACY.md, "Serving": its data and residual);
STREAM-like copies reach ~0.9 on HBM3."""

KV_BANDWIDTH_FRACTION = 0.70
"""Share of the catalog's memory bandwidth the decode attention kernels achieve reading the
KV cache (paged blocks gathered per sequence, short rows per head: less than a weight
stream). Fitted (scripts/fit_serving.py; docs/ACCURACY.md, "Serving")."""

PREFILL_COMPUTE_FRACTION = 0.70
"""Share of the dense peak of the compute dtype the serving GEMMs and attention achieve
(prefill and large-batch decode). Fitted (scripts/fit_serving.py; docs/ACCURACY.md, "Serving")."""

UNFUSED_ATTENTION_PASSES = 4.0
"""Memory passes over the fp32 score matrix of unfused attention: write Q·Kᵀ, read and
write the softmax, read it for the product with V (the ggml graph of llama.cpp without
flash attention: ``ggml_mul_mat`` kq, ``ggml_soft_max_ext``, ``ggml_mul_mat`` kqv)."""

SCORE_BYTES = 4.0
"""Bytes per attention score without fused attention (fp32 scores, as ggml keeps them)."""

LAYER_HOP_SECONDS = 0.1e-3
"""Time a token spends crossing from one GPU to the next with layers split across GPUs
(a copy of one hidden state over PCIe plus a synchronisation). An assumption of the order
of one PCIe round trip plus a kernel launch; llama.cpp's tg rows on 1-8 GPUs lose
0.3-0.8 ms per token to the split, consistent with it."""

CURVE_CONCURRENCIES = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096)
"""Concurrencies the curve is priced at (those up to the largest allowed, plus that one)."""


@dataclass(frozen=True)
class Deployment:
    """What the formulas need of a replica: model shapes, bytes, GPU and engine."""

    arch: Architecture
    params_active: float
    gpu: GPU
    num_gpus: int
    engine: EngineProfile
    weights_bytes: float
    """The replica's weight bytes (all GPUs), from the inference section."""
    kv_bytes_per_token: float
    """KV cache of one token of one sequence, all layers, bytes."""
    kv_share_per_gpu: float
    """Share of a sequence's KV cache one GPU holds."""
    compute_dtype: str
    quantized: bool
    """Block-quantized weights (GGUF k-quants, int4 groups): the engine's quantized kernels."""
    gpu_class: str
    """consumer, professional, datacenter or apple (:func:`gpu_class`): selects an engine's
    kernel efficiency where it differs by class."""
    kv_capacity_bytes: float
    """Bytes the KV pool holds on one GPU."""
    sms: int
    """Streaming multiprocessors of one GPU (:func:`~llm_planner.core.quantities.comm.
    sms_of`): the tiles of one GEMM wave."""
    weights_read_fraction: Callable[[int], float]
    """Share of the weights a decode step at a batch reads (MoE: the experts it touches;
    :func:`llm_planner.core.sections.inference.weights_read_fraction`)."""

    def attention_flops_per_token(self, context: float, causal: bool = False) -> float:
        """:func:`~llm_planner.core.quantities.flops.attention_forward_flops_per_token` of
        the replica's model, each (context, causal) computed once (a curve's levels share
        the mean decode context and the prompt)."""
        known: dict[tuple[float, bool], float] = self.__dict__.setdefault("_attention", {})
        key = (context, causal)
        if key not in known:
            known[key] = attention_forward_flops_per_token(self.arch, context, causal=causal)
        return known[key]

    @property
    def split(self) -> int:
        """GPUs a step's bytes and FLOPs are divided over (1 with layers split: the GPUs
        work one after another on a token)."""
        return self.num_gpus if self.engine.tensor_parallel else 1

    @cached_property
    def peak_flops(self) -> float:
        """Dense peak of one GPU in the compute dtype (fp16, then bf16, then fp32 when the
        GPU has no unit for it)."""
        peaks = self.gpu.peak_flops
        for dtype in (self.compute_dtype, "fp16", "bf16", "fp32"):
            value = peaks.for_dtype(dtype)
            if value:
                return value
        return 1.0

    @cached_property
    def bandwidth(self) -> float:
        """Achieved bandwidth of one GPU streaming the weights, bytes/s."""
        factor = self.engine.quantized_bandwidth_factor if self.quantized else 1.0
        fraction = self.engine.decode_bandwidth_fraction.get(
            self.gpu_class, DECODE_BANDWIDTH_FRACTION
        )
        return self.gpu.memory_bandwidth_bytes_per_s * fraction * factor

    @cached_property
    def kv_bandwidth(self) -> float:
        """Achieved bandwidth of one GPU reading the KV cache, bytes/s."""
        return self.gpu.memory_bandwidth_bytes_per_s * KV_BANDWIDTH_FRACTION

    @cached_property
    def compute(self) -> float:
        """Achieved compute of one GPU, FLOP/s: peak × the engine's fraction for this GPU
        class (else :data:`PREFILL_COMPUTE_FRACTION`) × the share of its datasheet the GPU
        sustains (:attr:`.gpus.GPU.tensor_rate_fraction`, 1 but for GB200), at most board
        power × the engine's FLOP per joule for this generation where it states one, × its
        quantized-kernel factor."""
        fraction = self.engine.prefill_compute_fraction.get(
            self.gpu_class, PREFILL_COMPUTE_FRACTION
        )
        factor = self.engine.quantized_prefill_factor if self.quantized else 1.0
        rate = self.peak_flops * fraction * self.gpu.tensor_rate_fraction
        per_joule = self.engine.prefill_flops_per_joule.get(gpu_generation(self.gpu))
        if per_joule is not None and self.gpu.tdp_watts is not None:
            rate = min(rate, self.gpu.tdp_watts * per_joule)
        return rate * factor


def decode_wave_slowdown(d: Deployment, batch: int) -> float:
    """How much longer a decode step's weight GEMMs take than their FLOPs at the achieved
    rate, from wave quantisation alone: the FLOP-weighted mean of 1 ÷ wave efficiency over
    one layer's GEMMs (:func:`~llm_planner.core.sections.parallelism.workload.
    gemm_shapes_of`, N split over tensor-parallel GPUs as Megatron splits it), each from
    :func:`~llm_planner.core.quantities.comm.gemm_efficiency` with M = the batch and this
    GPU's SMs (no size ramp: it matters only where the weights' read bounds the step).

    Llama 3 70B on 8 GPUs at batch 1,000: the QKV GEMM's N = 10,240 ÷ 8 = 1,280 gives
    ⌈1000/128⌉ · ⌈1280/256⌉ = 40 tiles: under one wave of 132 SMs, where cuBLAS picks
    smaller tiles or splits K instead, so no loss is counted; its MLP's N = 57,344 ÷ 8 =
    7,168: 8 · 28 = 224 tiles, two waves, the second 70% full: 224 / 264 = 0.85.
    Decode only: a prompt chunk of thousands of rows fills its waves."""
    if d.sms <= 0 or batch <= 0:
        return 1.0
    tp = d.num_gpus if d.engine.tensor_parallel else 1
    total = 0.0
    for n_dim, k_dim, share, n_split, k_split, expert in gemm_shapes_of(d.arch):
        rows = float(batch)
        if expert and d.arch.moe is not None:
            rows *= d.arch.moe.experts_per_token / d.arch.moe.num_experts
        n = n_dim / tp if n_split else n_dim
        if math.ceil(rows / GEMM_TILE_M) * math.ceil(n / GEMM_TILE_N) < d.sms:
            total += share  # under one wave of large tiles: smaller tiles or split-K fill it
            continue
        k = k_dim / tp if k_split else k_dim
        # one GEMM: gemm_efficiency's own float path, without its arrays (None: theirs)
        one = gemm_efficiency_one(
            float(rows),
            float(n),
            float(k),
            1.0,
            sms=d.sms,
            large_efficiency=1.0,
            peak_flops=d.compute,
            ramp_seconds=0.0,
            memory_bytes_per_s=math.inf,
        )
        efficiency = (
            one
            if one is not None
            else gemm_efficiency(
                rows, n, k, sms=d.sms, large_efficiency=1.0, peak_flops=d.compute, ramp_seconds=0.0
            )
        )
        total += share / max(float(efficiency), 1e-9)
    return max(1.0, total)


def gpu_generation(gpu: GPU) -> str:
    """The architecture generation of an NVIDIA GPU from its name ('hopper', 'ada',
    'ampere-ga100', 'ampere-ga10x'), else 'other': the key of an engine's per-generation
    energy figure."""
    name = gpu.name.lower()
    if any(key in name for key in ("h100", "h200", "gh200", "h800")):
        return "hopper"
    if "a100" in name or "a800" in name:
        return "ampere-ga100"
    if any(key in name for key in (" ada", "rtx 40", "l40", " l4")):
        return "ada"
    if any(key in name for key in ("rtx 30", "a40", "a6000", "a10")):
        return "ampere-ga10x"
    return "other"


HBM_GPUS = ("v100", "a100", "a800", "h100", "h800", "h200", "gh200", "b200", "mi2", "mi3")
"""Name fragments of the GPUs with HBM (the 'datacenter' class of :func:`gpu_class`)."""


def gpu_class(gpu: GPU) -> str:
    """'apple' (vendor Apple), 'consumer' (a GeForce card), 'datacenter' (an HBM GPU:
    :data:`HBM_GPUS`) or 'professional' (every other: workstation and GDDR data-centre
    cards): the classes whose kernels an engine may run at different efficiencies."""
    name = gpu.name.lower()
    if gpu.vendor.lower() == "apple":
        return "apple"
    if "geforce" in name:
        return "consumer"
    if any(key in name for key in HBM_GPUS):
        return "datacenter"
    return "professional"


class StepTime(NamedTuple):
    """One forward step on one GPU, seconds by kernel class; bytes and FLOPs per GPU.

    The GEMMs (weights) and attention (KV cache) are separate kernels, each bound by its
    own larger side (roofline per kernel, Williams et al. 2009): their times add."""

    weights: float
    """Weight bytes read ÷ achieved bandwidth."""
    gemm: float
    """GEMM FLOPs ÷ achieved compute."""
    kv: float
    """KV-cache (and unfused score-matrix) bytes ÷ achieved attention bandwidth."""
    attention: float
    """Attention FLOPs ÷ achieved compute."""
    communication: float
    overhead: float
    bytes_per_gpu: float
    flops_per_gpu: float

    @property
    def seconds(self) -> float:
        return (
            max(self.weights, self.gemm)
            + max(self.kv, self.attention)
            + self.communication
            + self.overhead
        )

    @property
    def bound(self) -> str:
        """Which side bounds the GEMMs, the bulk of a step: 'memory' or 'compute'."""
        return "memory" if self.weights >= self.gemm else "compute"


def tensor_parallel_seconds(d: Deployment, tokens: float) -> float:
    """Tensor-parallel communication of one forward step over ``tokens`` tokens, seconds.

    Two all-reduces per layer of the tokens' hidden states, 2 bytes per element
    (Shoeybi et al. 2019, arXiv:1909.08053 sec. 3: after attention and after the MLP),
    each ring all-reduce 2·(n−1)/n · tokens·h·2 bytes over the GPU's link at the achieved
    intra-node fraction, plus NCCL's latency (base + 2(n−1) steps,
    :func:`~llm_planner.core.quantities.comm.collective_latency_seconds`). 0 on one GPU
    or with layers split. Assumes the replica fits in one node.
    """
    n = d.num_gpus
    if n <= 1 or not d.engine.tensor_parallel:
        return 0.0
    message = tokens * d.arch.hidden_size * 2.0
    per = float(ring_all_reduce_bytes(n, message)) / (
        d.gpu.link_bandwidth_bytes_per_s * INTRA_NODE_ACHIEVED_FRACTION
    ) + float(collective_latency_seconds("all_reduce", n, 1))
    return 2.0 * d.arch.layers * per


def layer_hop_seconds(d: Deployment) -> float:
    """Per-step cost of layers split across GPUs: (n − 1) × :data:`LAYER_HOP_SECONDS`."""
    if d.engine.tensor_parallel:
        return 0.0
    return (d.num_gpus - 1) * LAYER_HOP_SECONDS


def unfused_attention_bytes(arch: Architecture, query_tokens: float, context: float) -> float:
    """Score-matrix traffic of attention without a fused kernel, bytes (0 with one).

    heads × query tokens × context × 4 B × passes, per attention layer: the fp32 score
    matrix is written, read and written by the softmax, and read by the product with V
    (:data:`UNFUSED_ATTENTION_PASSES`). ``context`` is the mean number of keys a query
    sees (half the prompt for a causal prompt)."""
    return (
        arch.heads
        * query_tokens
        * context
        * SCORE_BYTES
        * UNFUSED_ATTENTION_PASSES
        * arch.attention_layers
    )


def decode_step(d: Deployment, batch: int, context: float) -> StepTime:
    """One decode step of ``batch`` sequences whose caches hold ``context`` tokens.

    GEMMs: the weights the batch touches ÷ split (MoE: the routed experts of its tokens
    only) against batch × 2·P_active FLOPs ÷ split (Kaplan et al. 2020, Table 1).
    Attention: the batch's KV cache share (and, unfused, its score matrix) against
    batch × the attention FLOPs over the context. Each kernel class takes the larger of
    its bytes ÷ achieved bandwidth and FLOPs ÷ achieved compute (roofline, Williams et al.
    2009); then the tensor-parallel all-reduces of ``batch`` tokens, the engine's host
    time per step and, with layers split, the hops between GPUs.
    """
    n = d.split
    weights = d.weights_bytes / n * d.weights_read_fraction(batch)
    share = d.kv_share_per_gpu if d.engine.tensor_parallel else 1.0
    kv = d.kv_bytes_per_token * context * batch * share
    if not d.engine.fused_attention:
        kv += unfused_attention_bytes(d.arch, batch, context) / n
    gemm_flops = batch * 2.0 * d.params_active / n
    attention_flops = batch * d.attention_flops_per_token(context) / n
    return StepTime(
        weights=weights / d.bandwidth,
        gemm=gemm_flops / d.compute * decode_wave_slowdown(d, batch),
        kv=kv / d.kv_bandwidth,
        attention=attention_flops / d.compute,
        communication=tensor_parallel_seconds(d, batch) + layer_hop_seconds(d),
        overhead=d.engine.step_overhead_seconds,
        bytes_per_gpu=weights + kv,
        flops_per_gpu=gemm_flops + attention_flops,
    )


def pipeline_speedup(stages: int, microbatches: int) -> float:
    """Speed-up of prompt processing over ``stages`` layer-split GPUs with
    ``microbatches`` micro-batches in flight: m·p ÷ (m + p − 1) (the pipeline's fill and
    drain, GPipe: Huang et al. 2019, arXiv:1811.06965 sec. 2.2); 1 with one stage or one
    micro-batch."""
    if stages <= 1 or microbatches <= 1:
        return 1.0
    return microbatches * stages / (microbatches + stages - 1)


def prefill_time(d: Deployment, batch: int, prompt: int) -> StepTime:
    """Prefill of ``batch`` prompts of ``prompt`` tokens, seconds by kernel class.

    GEMMs: tokens × 2·P_active FLOPs ÷ split (Kaplan et al. 2020, Table 1), never faster
    than reading the weights once per forward step (the engine takes at most
    ``prefill_chunk_tokens`` per step). Attention: tokens × the causal attention FLOPs over
    the prompt (:func:`attention_forward_flops_per_token`), and without a fused kernel the
    score matrix's traffic (:func:`unfused_attention_bytes`). Layer-split GPUs pipeline the
    micro-batches of one logical batch (:func:`pipeline_speedup`, at most
    ``pipeline_microbatches`` in flight); tensor-parallel GPUs all-reduce every token.
    """
    n = d.split
    tokens = float(batch * prompt)
    steps = max(1, math.ceil(tokens / d.engine.prefill_chunk_tokens))
    gemm_flops = tokens * 2.0 * d.params_active / n
    attention_flops = tokens * d.attention_flops_per_token(prompt, causal=True) / n
    weights = steps * d.weights_bytes / n
    scores = 0.0
    if not d.engine.fused_attention:
        scores = unfused_attention_bytes(d.arch, tokens, prompt / 2.0) / n
    speedup = 1.0
    if not d.engine.tensor_parallel:
        speedup = pipeline_speedup(d.num_gpus, min(d.engine.pipeline_microbatches, steps))
    return StepTime(
        weights=weights / d.bandwidth / speedup,
        gemm=gemm_flops / d.compute / speedup,
        kv=scores / d.kv_bandwidth / speedup,
        attention=attention_flops / d.compute / speedup,
        communication=tensor_parallel_seconds(d, tokens) + steps * layer_hop_seconds(d),
        overhead=steps * d.engine.step_overhead_seconds,
        bytes_per_gpu=weights + scores,
        flops_per_gpu=gemm_flops + attention_flops,
    )


def kv_capacity_sequences(d: Deployment, tokens_per_sequence: int) -> int:
    """Sequences of ``tokens_per_sequence`` tokens the KV pool holds.

    Each sequence takes whole blocks of ``kv_block_tokens`` (PagedAttention, Kwon et al.
    2023, arXiv:2309.06180 sec. 4.2); the pool is the engine's share of one GPU's memory
    left after weights and runtime overhead, and each GPU holds its share of every
    sequence's cache."""
    block = d.engine.kv_block_tokens
    tokens = math.ceil(tokens_per_sequence / block) * block
    share = d.kv_share_per_gpu
    per_sequence = d.kv_bytes_per_token * tokens * share
    if per_sequence <= 0:
        return d.engine.max_concurrent_requests
    return max(0, int(d.kv_capacity_bytes // per_sequence))


class Operating(NamedTuple):
    """The replica at one concurrency: latencies, throughput and the decode bound."""

    concurrency: int
    ttft: float
    tpot: float
    output_tokens_per_s: float
    decode: StepTime


def operate(
    d: Deployment,
    concurrency: int,
    prompt: int,
    output: int,
    capacity: int,
    *,
    single_prefill: StepTime | None = None,
) -> Operating:
    """The replica serving ``concurrency`` requests of ``prompt`` + ``output`` tokens.

    Continuous batching (vLLM, SGLang, TensorRT-LLM, llama.cpp): b = min(concurrency,
    capacity) requests decode together; the next requests' prompts ride along in the same
    steps (chunked prefill, Agrawal et al. 2024 Sarathi-Serve, arXiv:2403.02369), so a
    request's share of the replica's time is max(memory, compute) over its decode steps
    with its prompt's FLOPs added to the compute side. TPOT is that time ÷ output tokens;
    TTFT is one request's prefill plus the step it waits for.

    Static batching (LMDeploy's benchmark): b prompts are prefilled together, decoded to
    the end, and requests beyond the KV capacity wait for a whole wave; TTFT is the mean
    over requests of the wave's start plus its prefill.

    Decode steps are priced at the mean context, prompt + output ÷ 2. ``single_prefill``:
    ``prefill_time(d, 1, prompt)`` when the caller already has it (a curve's levels share it).
    """
    b = max(1, min(concurrency, capacity))
    context = prompt + output / 2.0
    step = decode_step(d, b, context)
    prefill = prefill_time(d, b, prompt)
    if d.engine.continuous_batching:
        # a request's prompt rides in the decode steps: its GEMM FLOPs join the steps'
        gemms = max(output * step.weights, output * step.gemm + prefill.gemm, prefill.weights)
        attention = output * max(step.kv, step.attention) + max(prefill.kv, prefill.attention)
        fixed = output * (step.communication + step.overhead) + prefill.communication
        total = gemms + attention + fixed
        one = prefill_time(d, 1, prompt) if single_prefill is None else single_prefill
        ttft = one.seconds + step.seconds
        return Operating(b, ttft, total / output, b * output / total, step)
    wave = prefill.seconds + output * step.seconds
    waves = max(1, math.ceil(concurrency / b))
    # requests in wave k (0-based) start k waves late; the last wave may be partial
    starts = sum(k * min(b, concurrency - k * b) for k in range(waves)) / max(concurrency, 1)
    ttft = starts * wave + prefill.seconds + step.seconds
    return Operating(b, ttft, step.seconds, concurrency * output / (waves * wave), step)


# ------------------------------------------------------------------ the report section


class CurvePoint(BaseModel):
    """One concurrency of the serving curve."""

    model_config = ConfigDict(frozen=True)

    concurrency: int
    output_tokens_per_s_per_gpu: float
    output_tokens_per_s_per_user: float
    ttft_seconds: float
    tpot_seconds: float


class ServingReport(BaseModel):
    """Throughput and latency of one replica (``num_gpus`` GPUs) under the workload."""

    model_config = ConfigDict(frozen=True)

    engine: str
    engine_name: str
    prompt_tokens: int
    output_tokens: int
    concurrency: int = Field(description="requests decoding at once (after the limits)")
    max_concurrency: int = Field(description="min(engine limit, sequences the KV pool holds)")
    kv_capacity_sequences: int
    num_gpus: int
    ttft_seconds: float
    tpot_seconds: float
    output_tokens_per_s: float = Field(description="the replica's output tokens/s")
    output_tokens_per_s_per_gpu: float
    output_tokens_per_s_per_user: float
    usd_per_million_output_tokens: float | None
    decode_bound: str = Field(description="memory or compute: the larger side of a step")
    decode_step_seconds: float
    decode_bytes_per_gpu: float
    decode_flops_per_gpu: float
    prefill_seconds: float
    curve: list[CurvePoint]

    def figures(self) -> list[Figure]:
        """Every serving figure with its formula and source, in display order."""
        src = "core.sections.serving (fitted efficiencies: docs/ACCURACY.md, Serving)"
        rows: list[tuple[str, str, Unit, str, str]] = [
            ("engine_name", "Serving engine", "text", "", "core.quantities.engines"),
            ("concurrency", "Concurrent requests", "count", "min(asked, KV, engine)", src),
            (
                "max_concurrency",
                f"Largest concurrency ({self.prompt_tokens:,} + {self.output_tokens:,}-token "
                "requests)",
                "count",
                "min(engine limit, KV pool ÷ blocks per request): a paged request holds only "
                "its own tokens' KV, so more fit than full-context sequences",
                "PagedAttention (Kwon et al. 2023) sec. 4.2",
            ),
            ("ttft_seconds", "Time to first token", "seconds", "prefill + one step", src),
            (
                "tpot_seconds",
                "Time per output token",
                "seconds",
                "max(bytes/BW, FLOPs/compute) + all-reduces + host",
                src,
            ),
            ("output_tokens_per_s", "Output tokens/s (replica)", "tokens/s", "b·out ÷ T", src),
            (
                "output_tokens_per_s_per_gpu",
                "Output tokens/s per GPU",
                "tokens/s",
                "replica ÷ GPUs",
                src,
            ),
            (
                "output_tokens_per_s_per_user",
                "Output tokens/s per user",
                "tokens/s",
                "1 ÷ TPOT",
                src,
            ),
            (
                "usd_per_million_output_tokens",
                "$ per million output tokens",
                "usd",
                "GPUs × price/h ÷ 3600 ÷ tokens/s × 1e6",
                "scenario price",
            ),
            ("decode_bound", "Decode step bound", "text", "larger of memory and compute", src),
        ]
        return [
            Figure(key=key, label=label, value=getattr(self, key), unit=unit, formula=f, source=s)
            for key, label, unit, f, s in rows
        ]


def max_concurrency(d: Deployment, prompt: int, output: int) -> tuple[int, int]:
    """(largest concurrency, sequences the KV pool holds): sequences of prompt + output
    tokens when the engine reserves whole sequences, else of prompt + output ÷ 2 (blocks
    taken as tokens arrive: the mean a running sequence holds, vLLM's PagedAttention
    scheduling, Kwon et al. 2023 sec. 4.5)."""
    held = output if d.engine.reserves_whole_sequence else math.ceil(output / 2)
    capacity = kv_capacity_sequences(d, prompt + held)
    return min(capacity, d.engine.max_concurrent_requests), capacity


def serving_curve(d: Deployment, prompt: int, output: int, largest: int) -> list[CurvePoint]:
    """Tokens/s per GPU and per user at each of :data:`CURVE_CONCURRENCIES` up to
    ``largest`` (and at ``largest``): the curve a deployment is chosen on."""
    return _curve_points(
        d, _curve_operations(d, prompt, output, largest, prefill_time(d, 1, prompt))
    )


def _curve_operations(
    d: Deployment, prompt: int, output: int, largest: int, single_prefill: StepTime
) -> list[Operating]:
    """:func:`operate` at each level of :func:`serving_curve`, the last one at ``largest``."""
    levels = [c for c in CURVE_CONCURRENCIES if c < largest] + [max(1, largest)]
    return [
        operate(d, c, prompt, output, max(1, largest), single_prefill=single_prefill)
        for c in levels
    ]


def _curve_points(d: Deployment, ops: list[Operating]) -> list[CurvePoint]:
    return [
        CurvePoint(
            concurrency=op.concurrency,
            output_tokens_per_s_per_gpu=op.output_tokens_per_s / d.num_gpus,
            output_tokens_per_s_per_user=1.0 / op.tpot,
            ttft_seconds=op.ttft,
            tpot_seconds=op.tpot,
        )
        for op in ops
    ]


def usd_per_million_tokens(
    tokens_per_s: float, num_gpus: int, price_usd_per_gpu_hour: float
) -> float | None:
    """$ per million output tokens: GPUs × price per GPU-hour ÷ 3600 ÷ tokens/s × 1e6;
    None when free (price 0) or when nothing is produced."""
    if price_usd_per_gpu_hour <= 0 or tokens_per_s <= 0:
        return None
    return num_gpus * price_usd_per_gpu_hour / SECONDS_PER_HOUR / tokens_per_s * 1e6


def estimate_serving(
    d: Deployment,
    prompt: int,
    output: int,
    concurrency: int | None,
    price_usd_per_gpu_hour: float,
) -> ServingReport:
    """The serving section: ``concurrency`` requests (None: as many as fit) of ``prompt``
    + ``output`` tokens on the replica ``d``."""
    largest, capacity = max_concurrency(d, prompt, output)
    asked = largest if concurrency is None else concurrency
    prefill = prefill_time(d, 1, prompt)
    # the curve's last level is the largest concurrency, what is asked by default
    ops = _curve_operations(d, prompt, output, largest, prefill)
    op = (
        ops[-1]
        if max(1, asked) == max(1, largest)
        else operate(d, max(1, asked), prompt, output, max(1, largest), single_prefill=prefill)
    )
    return ServingReport(
        engine=d.engine.id,
        engine_name=d.engine.name,
        prompt_tokens=prompt,
        output_tokens=output,
        concurrency=op.concurrency,
        max_concurrency=largest,
        kv_capacity_sequences=capacity,
        num_gpus=d.num_gpus,
        ttft_seconds=op.ttft,
        tpot_seconds=op.tpot,
        output_tokens_per_s=op.output_tokens_per_s,
        output_tokens_per_s_per_gpu=op.output_tokens_per_s / d.num_gpus,
        output_tokens_per_s_per_user=1.0 / op.tpot,
        usd_per_million_output_tokens=usd_per_million_tokens(
            op.output_tokens_per_s, d.num_gpus, price_usd_per_gpu_hour
        ),
        decode_bound=op.decode.bound,
        decode_step_seconds=op.decode.seconds,
        decode_bytes_per_gpu=op.decode.bytes_per_gpu,
        decode_flops_per_gpu=op.decode.flops_per_gpu,
        prefill_seconds=prefill.seconds,
        curve=_curve_points(d, ops),
    )
