"""Inference memory: weights, KV cache, runtime overhead, fit, and speed bounds.

Memory of one serving replica split over ``num_gpus`` GPUs by tensor parallelism:
weights (bits per weight from :mod:`llm_planner.core.quantities.quantization`, or the
bytes a GGUF / safetensors file stores), the KV cache (2 · layers · kv_heads · head_dim ·
bytes · tokens · batch, aware of GQA/MQA, MLA and sliding windows), the constant-size
recurrent state of state-space layers (Mamba, Mamba-2, RWKV: per sequence, independent of
the context) and runtime overhead as explicit, adjustable items. Speed bounds are
rooflines: decode is limited by reading the weights and the cache once per step from HBM,
prefill by the GPUs' peak FLOP/s. SI units throughout (bytes, seconds, FLOP).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import cache
from typing import NamedTuple

from pydantic import BaseModel, ConfigDict, Field

from llm_planner.core.inputs.inference import (
    InferenceInputs,
)
from llm_planner.core.primitives.architecture import Architecture, count_parameters
from llm_planner.core.primitives.dtypes import bytes_per_element
from llm_planner.core.primitives.figures import Figure, Unit
from llm_planner.core.primitives.gpus import GPU
from llm_planner.core.primitives.kept import kept
from llm_planner.core.primitives.layer_matrices import layers_differ
from llm_planner.core.quantities.comm import sms_of
from llm_planner.core.quantities.engines import get_engine
from llm_planner.core.quantities.flops import attention_forward_flops_per_token
from llm_planner.core.quantities.quantization import WeightFormat
from llm_planner.core.sections.serving import (
    Deployment,
    ServingReport,
    estimate_serving,
    gpu_class,
)

GiB = 2.0**30

DECODE_SOURCE = "roofline: time per step ≥ bytes read ÷ HBM bandwidth (Williams et al. 2009)"
KV_SOURCE = "2·L·kv_heads·head_dim·bytes·tokens·batch (Shazeer 2019 MQA; Ainslie et al. 2023 GQA)"
MLA_SOURCE = "DeepSeek-V2 (arXiv:2405.04434) sec. 2.1: (d_c + d_rope)·L cached per token"
STATE_SOURCE = (
    "Mamba: d_inner·(N + d_conv) per layer (Gu & Dao 2023 sec. 3.4; mamba_ssm "
    "allocate_inference_cache); Mamba-2: H·P·N + (d_inner + 2GN)·d_conv (Dao & Gu 2024 "
    "sec. 7); RWKV-4: 2h + 3 fp32 a (Peng et al. 2023 sec. 3; transformers modeling_rwkv.py)"
)


# ------------------------------------------------------------------ memory items


def weights_bytes(params_total: float, fmt: WeightFormat) -> float:
    """Weight memory: P × bits per weight / 8 (every parameter in the same format).

    Seed check: 70e9 parameters are 280e9 bytes in fp32 and 70e9 bytes at 8 bits.
    Real checkpoints often keep embeddings and norms in 16 bits; the GGUF mixes' averages
    already include that.
    """
    return params_total * fmt.bits_per_weight / 8.0


def kv_elements_per_token_per_layer(arch: Architecture, index: int | None = None) -> int:
    """Cached elements per token per layer (``index``: that layer's own shapes).

    Standard, GQA, MQA: 2·kv_heads·head_dim (a key and a value per KV head; Shazeer 2019,
    Ainslie et al. 2023), with a global layer's own KV heads and head width where they
    differ (Gemma 4; a layer whose values are its keys still caches both, as transformers'
    cache does). MLA: kv_lora_rank + qk_rope_head_dim: only the compressed latent and the
    shared rotary key are cached (DeepSeek-V2, arXiv:2405.04434, sec. 2.1).
    """
    if arch.mla is not None:
        return arch.mla.kv_lora_rank + arch.mla.qk_rope_head_dim
    kv_heads, head_dim = arch.attention_geometry(index)
    return 2 * kv_heads * head_dim


def kv_cache_bytes(arch: Architecture, context: int, batch: int, kv_dtype: str) -> float:
    """KV cache of ``batch`` sequences of ``context`` tokens, bytes.

    Σ_layers elements/token/layer × bytes(kv_dtype) × cached tokens × batch, where a
    sliding-window layer caches at most ``sliding_window`` tokens (Mistral 7B: every
    layer; Gemma 2: every other layer). Llama-2-7B, 4096 tokens, bf16:
    2·32·32·128·2·4096 = 2 GiB. Only attention layers cache (a hybrid's recurrent layers
    keep a fixed state, :func:`recurrent_state_bytes`), and a layer that reuses an earlier
    layer's keys and values caches none (Gemma 4's last ``num_kv_shared_layers``;
    transformers 5.24.0 ``modeling_gemma4.py``, ``Gemma4TextAttention.is_kv_shared_layer``).
    """
    windowed, full = _kv_elements_per_token(arch)
    width = bytes_per_element(kv_dtype)
    return _kv_bytes(windowed, full, arch.sliding_window, width=width, context=context, batch=batch)


def _kv_bytes(
    windowed: int, full: int, window: int | None, *, width: float, context: int, batch: int
) -> float:
    """:func:`kv_cache_bytes` from the cached elements per token of the windowed layers and
    the others, the window and the bytes per element."""
    window_tokens = min(context, window) if window else context
    return (windowed * window_tokens + full * context) * width * batch


@kept()
def _kv_elements_per_token(arch: Architecture) -> tuple[int, int]:
    """(windowed layers', other layers') cached elements per token, summed over the layers
    that cache (:func:`kv_cache_bytes`), once per (frozen) shapes: the layer counts times
    one layer's where every attention layer caches alike (:func:`.layer_matrices.
    layers_differ` false: no global layer of its own width, no KV-sharing layer, no hybrid),
    else layer by layer."""
    if not layers_differ(arch):
        per = kv_elements_per_token_per_layer(arch)
        windowed_layers = arch.windowed_attention_layers
        return windowed_layers * per, (arch.attention_layers - windowed_layers) * per
    windowed = full = 0
    for i in range(arch.layers):
        if not arch.is_attention_layer(i) or (arch.kv_shared_layers and arch.shares_kv(i)):
            continue
        if arch.is_windowed_layer(i):
            windowed += kv_elements_per_token_per_layer(arch, i)
        else:
            full += kv_elements_per_token_per_layer(arch, i)
    return windowed, full


def recurrent_state_bytes_per_layer(arch: Architecture, state_dtype: str) -> float:
    """One sequence's recurrent state in one recurrent layer, bytes (0 without one).

    Mamba: the SSM state d_inner·N plus the conv window d_inner·d_conv (Gu & Dao 2023,
    section 3.4: constant-time, constant-memory decoding; ``mamba_ssm`` ``Mamba.
    allocate_inference_cache`` and transformers ``MambaCache`` keep d_conv inputs).
    Mamba-2: H·P·N + (d_inner + 2·G·N)·d_conv (Dao & Gu 2024, section 7; ``Mamba2.
    allocate_inference_cache``). Gated DeltaNet (Yang et al. 2024, arXiv:2412.06464,
    section 2; transformers 5.24.0 ``modeling_qwen3_5.py``): the same shapes, one key-by-
    value matrix N·P per value head and the conv window over q, k and v. All in
    ``state_dtype``. RWKV-4: the previous token of the
    time-mix and of the channel-mix (2·h, in ``state_dtype``) and the WKV numerator,
    denominator and running maximum (3·a, fp32 as transformers ``modeling_rwkv.py`` keeps
    them; Peng et al. 2023, section 3).
    """
    r = arch.recurrent
    if r is None:
        return 0.0
    width = bytes_per_element(state_dtype)
    if r.kind == "rwkv":
        return 2 * arch.hidden_size * width + 3 * r.inner_size * bytes_per_element("fp32")
    if r.kind == "mamba":
        return r.inner_size * (r.state_size + r.conv_kernel) * width
    conv_dim = r.inner_size + 2 * r.groups * r.state_size  # Mamba-2, Gated DeltaNet
    return (r.heads * r.head_dim * r.state_size + conv_dim * r.conv_kernel) * width


def recurrent_state_bytes(arch: Architecture, batch: int, state_dtype: str) -> float:
    """The recurrent state of ``batch`` sequences over every recurrent layer, bytes: the
    same at any context length (it replaces the KV cache of those layers)."""
    return arch.recurrent_layers * recurrent_state_bytes_per_layer(arch, state_dtype) * batch


def kv_fraction_per_gpu(arch: Architecture, num_gpus: int) -> float:
    """Share of the KV cache one of ``num_gpus`` tensor-parallel GPUs holds.

    KV heads are split across GPUs: ⌈kv_heads / N⌉ / kv_heads. With more GPUs than KV
    heads each head is replicated, so a GPU still holds one whole head (1/kv_heads).
    MLA's latent is shared by all heads and is replicated on every GPU (fraction 1).
    """
    if arch.mla is not None:
        return 1.0
    return max(1, math.ceil(arch.kv_heads / num_gpus)) / arch.kv_heads


def activation_bytes(
    arch: Architecture, step_tokens: int, num_gpus: int, activation_dtype: str
) -> float:
    """Peak transient activations of the largest forward step on one GPU, bytes.

    step_tokens × (2·h + max(FFN intermediate, QKV width) / N) × bytes: the layer's input
    and output hidden states (not split by tensor parallelism) plus the widest
    intermediate (gate and up outputs of a gated FFN, 2·f; the routed and shared experts'
    for MoE; the q, k, v projections), split over N GPUs. Assumes FlashAttention (no
    s × s score matrix) and that a layer's inputs are freed once it ends, as in inference.
    """
    return step_tokens * _activation_width(arch, num_gpus) * bytes_per_element(activation_dtype)


def _activation_width(arch: Architecture, num_gpus: int) -> float:
    """2·h + the widest intermediate ÷ N (:func:`activation_bytes`)."""
    multiplier = 2 if arch.gated else 1
    widths = [multiplier * arch.ffn_size, arch.q_size + 2 * arch.kv_size]
    if arch.recurrent is not None:  # in_proj output: x and z (Mamba), + B, C, dt (Mamba-2)
        r = arch.recurrent
        widths.append(2 * r.inner_size + 2 * r.groups * r.state_size + r.heads)
    if arch.moe is not None:
        moe = arch.moe
        widths.append(
            multiplier * moe.expert_ffn_size * (moe.experts_per_token + moe.num_shared_experts)
        )
    widest = max(widths) / num_gpus
    return 2 * arch.hidden_size + widest


def logits_bytes(arch: Architecture, batch: int, logits_dtype: str) -> float:
    """Logits of one step: batch × vocabulary × bytes (one row per sequence: the decode
    token, or the last prompt token at prefill, as serving engines compute them)."""
    return batch * arch.vocab_size * bytes_per_element(logits_dtype)


class MemoryPerGPU(NamedTuple):
    """Memory of one GPU of the replica, bytes, by item."""

    weights: float
    kv_cache: float
    cuda_context: float
    activations: float
    logits: float
    state: float = 0.0

    @property
    def overhead(self) -> float:
        return self.cuda_context + self.activations + self.logits

    @property
    def total(self) -> float:
        return self.weights + self.kv_cache + self.state + self.overhead


def memory_per_gpu(
    arch: Architecture, params_total: float, inputs: InferenceInputs, batch: int, context: int
) -> MemoryPerGPU:
    """Per-GPU memory at ``batch`` × ``context`` under ``inputs`` (TP over num_gpus)."""
    return memory_model(arch, params_total, inputs)(batch, context)


@kept(maxsize=16)  # by the (frozen) inputs: the section, its largest batch and context and
# the serving replica ask for the same one
def memory_model(
    arch: Architecture, params_total: float, inputs: InferenceInputs
) -> Callable[[int, int], MemoryPerGPU]:
    """(batch, context) → :func:`memory_per_gpu`: the weights, the cache's elements per token
    and every width and share worked out once (the largest batch and context evaluate a
    dozen pairs), each item the same operations on the same floats: the weights ÷ N, the
    KV cache (:func:`kv_cache_bytes`) × this GPU's share (:func:`kv_fraction_per_gpu`),
    the runtime context, the activations of the step (:func:`activation_bytes`), the
    logits (:func:`logits_bytes`) and the recurrent state ÷ N."""
    n = inputs.num_gpus
    weights = replica_weights_bytes(params_total, inputs) / n
    windowed, full = _kv_elements_per_token(arch)
    window, kv_width = arch.sliding_window, bytes_per_element(inputs.kv_dtype)
    share = kv_fraction_per_gpu(arch, n)
    chunk, context_bytes = inputs.prefill_chunk_tokens, inputs.cuda_context_bytes
    width, activation_width = _activation_width(arch, n), bytes_per_element(inputs.activation_dtype)
    logits_dtype, kv_dtype = inputs.logits_dtype, inputs.kv_dtype

    def at(batch: int, context: int) -> MemoryPerGPU:
        return MemoryPerGPU(
            weights=weights,
            kv_cache=_kv_bytes(windowed, full, window, width=kv_width, context=context, batch=batch)
            * share,
            cuda_context=context_bytes,
            activations=min(batch * context, chunk) * width * activation_width,
            logits=logits_bytes(arch, batch, logits_dtype),
            # tensor parallelism splits the recurrent channels / heads (d_inner) over the GPUs
            state=recurrent_state_bytes(arch, batch, kv_dtype) / n,
        )

    return at


def replica_weights_bytes(params_total: float, inputs: InferenceInputs) -> float:
    """The replica's weight bytes: the model file's own sum when imported for this format
    (:class:`StoredWeights`), else :func:`weights_bytes`."""
    stored = inputs.stored_weights_bytes()
    return stored if stored is not None else weights_bytes(params_total, inputs.weight_format)


def _largest(fits: Callable[[int], bool], upper: int) -> int:
    """Largest x in [0, upper] with fits(x), for fits true up to a point then false."""
    return _bisect(fits, 0, upper)


def _bisect(fits: Callable[[int], bool], low: int, high: int) -> int:
    """Largest x in [low, high] with fits(x), given fits(low) and fits true up to a point."""
    while low < high:
        middle = (low + high + 1) // 2
        if fits(middle):
            low = middle
        else:
            high = middle - 1
    return low


def _largest_under(total: Callable[[int], float], capacity: float, upper: int, knee: int) -> int:
    """Largest x in [0, upper] with x = 0 or total(x) ≤ capacity, for total non-decreasing:
    the same x as :func:`_largest`'s bisection, found in a few evaluations.

    Memory is affine in the batch (and in the context, without sliding windows) beyond
    ``knee``, where the prefill chunk stops growing the activations: the line through
    total(knee) and total(2·knee) (secant; Press et al., Numerical Recipes 3rd ed.,
    section 9.2) guesses x, and a doubling search from the guess (Bentley and Yao 1976,
    "An almost optimal algorithm for unbounded searching") brackets the true x, which the
    bisection then pins down. The guess only saves evaluations: whatever it is, the
    bracket and the bisection find the one x where fits turns false."""

    def fits(x: int) -> bool:
        return x == 0 or total(x) <= capacity

    x1 = min(max(knee, 1), upper)
    x2 = min(2 * x1, upper)
    if x2 <= x1:
        return _largest(fits, upper)
    t1, t2 = total(x1), total(x2)
    if not t2 > t1:
        guess = upper if t2 <= capacity else x1
    else:
        guess = x1 + math.floor((capacity - t1) * (x2 - x1) / (t2 - t1))
    guess = min(max(guess, 0), upper)
    step = 1
    if fits(guess):
        low, high = guess, upper
        while low + step <= upper:
            if not fits(low + step):
                high = low + step - 1
                break
            low += step
            step *= 2
    else:
        low, high = 0, guess - 1
        while high - step >= 1:
            if fits(high - step + 1):
                low = high - step + 1
                break
            high -= step
            step *= 2
    return _bisect(fits, low, high)


MAX_BATCH_SEARCHED = 1 << 24


def max_batch(
    arch: Architecture, params_total: float, gpu: GPU, inputs: InferenceInputs, context: int
) -> int:
    """Largest batch whose per-GPU memory at ``context`` fits the GPU; 0 if none does.
    Memory grows monotonically with the batch (:func:`_largest_under`)."""
    memory = memory_model(arch, params_total, inputs)
    return _largest_under(
        lambda b: memory(b, context).total,
        gpu.memory_bytes,
        MAX_BATCH_SEARCHED,
        knee=-(-inputs.prefill_chunk_tokens // max(context, 1)),
    )


def max_context(
    arch: Architecture, params_total: float, gpu: GPU, inputs: InferenceInputs, batch: int
) -> int:
    """Largest context (up to the model's ``max_context``) that fits at ``batch``; 0 if
    none does. With sliding windows on every layer the cache stops growing, so the
    model's limit is often the answer."""
    memory = memory_model(arch, params_total, inputs)
    return _largest_under(
        lambda c: memory(batch, c).total,
        gpu.memory_bytes,
        arch.max_context,
        knee=-(-inputs.prefill_chunk_tokens // max(batch, 1)),
    )


# ------------------------------------------------------------------ speed bounds


def weights_read_fraction(arch: Architecture, batch: int) -> float:
    """Share of the stored weights one decode step reads from memory.

    All but the input embedding tables (only ``batch`` rows are read: the token embedding
    unless the head shares it, and Gemma 4's per-layer embedding table) and, for MoE, the
    routed experts no token of the batch was sent to: with uniform, independent routing
    of top-k among E experts, an expert is touched with probability 1 − (1 − k/E)^batch.
    """
    return _read_fraction_of(arch)(batch)


def _read_fraction_of(arch: Architecture) -> Callable[[int], float]:
    """batch → :func:`weights_read_fraction`, the counts read once (a serving curve asks at
    a dozen batches)."""
    counts = count_parameters(arch)
    untouched = float(counts.positions + (0 if arch.tied_embeddings else counts.embedding))
    untouched += counts.per_layer_table
    moe = arch.moe if arch.moe is not None and counts.experts else None

    def fraction(batch: int) -> float:
        rest = untouched
        if moe is not None:
            k, experts = moe.experts_per_token, moe.num_experts
            touched = 1.0 - (1.0 - k / experts) ** batch
            rest += counts.experts * (1.0 - touched)
        return max(0.0, (counts.total - rest) / counts.total)

    return fraction


def prefill_flops(arch: Architecture, params_active: float, context: int, batch: int) -> float:
    """Forward FLOPs of prefilling ``batch`` prompts of ``context`` tokens:
    tokens × (2·P_active + causal attention forward per token) (Kaplan et al. 2020,
    Table 1, forward = 2N + attention; causal average over positions)."""
    per_token = 2.0 * params_active + attention_forward_flops_per_token(arch, context, causal=True)
    return batch * context * per_token


def serving_deployment(
    arch: Architecture,
    params_total: float,
    params_active: float,
    gpu: GPU,
    inputs: InferenceInputs,
) -> Deployment:
    """The replica the serving model prices (:class:`~llm_planner.core.sections.serving.
    Deployment`), from this section's own bytes.

    Compute dtype: the weight format's (fp8 weights run fp8 GEMMs); block-quantized
    formats (GGUF, int4 groups) run at the engine's ``quantized_compute_dtype``. The KV
    pool on one GPU is the engine's share of the memory left after this GPU's weights,
    runtime context, activations of the largest step and logits (:func:`memory_per_gpu`
    at batch 1, its cache left out); each GPU holds :func:`kv_fraction_per_gpu` of a
    sequence's cache (1/N of the layers when layers are split).
    """
    engine = get_engine(inputs.engine)
    n = inputs.num_gpus
    fmt = inputs.weight_format
    quantized = fmt.id not in ("fp32", "tf32", "fp16", "bf16", "fp8", "int8")
    memory = memory_per_gpu(arch, params_total, inputs, 1, 1)
    used = memory.total - memory.kv_cache - memory.state
    free = max(0.0, gpu.memory_bytes - used)
    return Deployment(
        arch=arch,
        params_active=params_active,
        gpu=gpu,
        num_gpus=n,
        engine=engine,
        weights_bytes=replica_weights_bytes(params_total, inputs),
        kv_bytes_per_token=kv_cache_bytes(arch, 1, 1, inputs.kv_dtype),
        kv_share_per_gpu=kv_fraction_per_gpu(arch, n) if engine.tensor_parallel else 1.0 / n,
        compute_dtype=engine.quantized_compute_dtype if quantized else fmt.compute_dtype,
        quantized=quantized,
        gpu_class=gpu_class(gpu),
        kv_capacity_bytes=free * engine.kv_memory_fraction,
        sms=sms_of(gpu.id),
        weights_read_fraction=cache(_read_fraction_of(arch)),
    )


# ------------------------------------------------------------------ the report section


class InferenceReport(BaseModel):
    """The inference-memory section (bytes, seconds, tokens/s). Totals are for the whole
    replica (all ``num_gpus`` GPUs); ``per_gpu_*`` are for one GPU."""

    model_config = ConfigDict(frozen=True)

    weights_format: str
    bits_per_weight: float
    kv_dtype: str
    batch: int
    context: int
    num_gpus: int
    weights_bytes: float
    kv_cache_bytes: float
    kv_cache_bytes_per_token: float = Field(description="per sequence token, all layers")
    state_bytes: float = Field(
        default=0.0, description="recurrent state of the batch (constant in the context)"
    )
    per_gpu_state_bytes: float = 0.0
    has_recurrent_state: bool = Field(
        default=False, description="the model has state-space / recurrent layers"
    )
    weights_from_file: bool = Field(
        default=False, description="weights are the model file's own byte sum"
    )
    overhead_bytes: float = Field(description="runtime overhead summed over the GPUs")
    total_bytes: float
    per_gpu_weights_bytes: float
    per_gpu_kv_cache_bytes: float
    cuda_context_bytes: float
    activation_bytes: float
    logits_bytes: float
    per_gpu_overhead_bytes: float
    per_gpu_total_bytes: float
    gpu_memory_bytes: float
    memory_fraction_used: float
    fits: bool
    max_batch: int
    max_context: int
    decode_bytes_per_step: float = Field(description="per GPU, at the full context")
    decode_step_seconds_bound: float
    decode_tokens_per_s_bound: float = Field(description="batch ÷ step time, all sequences")
    prefill_flops: float
    peak_flops_per_gpu: float | None
    prefill_seconds_bound: float | None
    prefill_tokens_per_s_bound: float | None
    serving: ServingReport | None = Field(
        default=None, description="throughput and latency under the serving workload"
    )

    def figures(self) -> list[Figure]:
        """Every figure with its formula and source, in display order."""
        rows: list[tuple[str, str, Unit, str, str]] = [
            ("weights_format", "Weights format", "text", "", ""),
            (
                "bits_per_weight",
                "Bits per weight",
                "ratio",
                "bits + scale bits / group",
                "core.quantization",
            ),
            ("weights_bytes", "Weights", "bytes", "P × bits per weight / 8", "core.quantization"),
            ("kv_cache_bytes", "KV cache", "bytes", "2·L·kv_heads·d·bytes·tokens·batch", KV_SOURCE),
            (
                "kv_cache_bytes_per_token",
                "KV cache per token",
                "bytes",
                "Σ_layers 2·kv_heads·d·bytes (MLA: d_c + d_rope)",
                f"{KV_SOURCE}; {MLA_SOURCE}",
            ),
            (
                "cuda_context_bytes",
                "CUDA context + workspaces (per GPU)",
                "bytes",
                "assumption, adjustable",
                "",
            ),
            (
                "activation_bytes",
                "Activations of largest step (per GPU)",
                "bytes",
                "tokens·(2h + widest intermediate/N)·bytes",
                "FlashAttention assumed",
            ),
            ("logits_bytes", "Logits (per GPU)", "bytes", "batch × vocab × 4 B", ""),
            ("overhead_bytes", "Runtime overhead", "bytes", "N × (context + act. + logits)", ""),
            ("total_bytes", "Total (replica)", "bytes", "weights + KV + overhead", ""),
            (
                "per_gpu_total_bytes",
                "Per GPU",
                "bytes",
                "weights/N + KV share + overhead",
                "tensor-parallel split",
            ),
            ("gpu_memory_bytes", "GPU memory", "bytes", "catalog", "GPU datasheet"),
            ("memory_fraction_used", "Memory used", "percent", "per GPU ÷ capacity", ""),
            ("fits", "Fits", "bool", "per GPU ≤ capacity", ""),
            (
                "max_batch",
                "Largest batch of full-context sequences",
                "count",
                "bisection on memory, every sequence holding the whole context's KV cache",
                "",
            ),
            ("max_context", "Largest context at this batch", "tokens", "≤ model max", ""),
            (
                "decode_tokens_per_s_bound",
                "Decode tokens/s (bandwidth bound)",
                "tokens/s",
                "batch × bandwidth ÷ bytes read per step",
                DECODE_SOURCE,
            ),
            (
                "prefill_seconds_bound",
                "Prefill time (compute bound)",
                "seconds",
                "prefill FLOPs ÷ (N × peak)",
                "Kaplan et al. 2020, Table 1",
            ),
            (
                "prefill_tokens_per_s_bound",
                "Prefill tokens/s (compute bound)",
                "tokens/s",
                "N × peak ÷ FLOPs per token",
                "Kaplan et al. 2020, Table 1",
            ),
        ]
        replaced: dict[str, tuple[str, str, Unit, str, str]] = {}
        if self.weights_from_file:
            replaced["weights_bytes"] = (
                "weights_bytes",
                "Weights",
                "bytes",
                "Σ tensor bytes of the model file",
                "the file's own tensor infos / safetensors headers",
            )
        if self.has_recurrent_state:
            replaced["total_bytes"] = (
                "total_bytes",
                "Total (replica)",
                "bytes",
                "weights + KV + state + overhead",
                "",
            )
        rows = [replaced.get(row[0], row) for row in rows]
        if self.has_recurrent_state:
            at = [row[0] for row in rows].index("cuda_context_bytes")
            rows.insert(
                at,
                (
                    "state_bytes",
                    "Recurrent state (constant in context)",
                    "bytes",
                    "L_recurrent · state per layer · batch",
                    STATE_SOURCE,
                ),
            )
        figures = [
            Figure(key=key, label=label, value=getattr(self, key), unit=unit, formula=f, source=s)
            for key, label, unit, f, s in rows
        ]
        return figures + (self.serving.figures() if self.serving is not None else [])


class MemoryPoint(NamedTuple):
    """One point of :func:`memory_vs_context`: per-GPU bytes at a context length."""

    context: int
    weights: float
    kv_cache: float
    overhead: float
    total: float
    state: float = 0.0


def memory_vs_context(
    arch: Architecture, params_total: float, inputs: InferenceInputs, contexts: list[int]
) -> list[MemoryPoint]:
    """Per-GPU memory at each context length (batch from ``inputs``): the GUI's chart."""
    points = []
    for context in contexts:
        if context < 1:
            continue
        memory = memory_per_gpu(arch, params_total, inputs, inputs.batch, context)
        points.append(
            MemoryPoint(
                context,
                memory.weights,
                memory.kv_cache,
                memory.overhead,
                memory.total,
                memory.state,
            )
        )
    return points


def estimate_inference(
    arch: Architecture,
    params_total: float,
    params_active: float,
    gpu: GPU,
    inputs: InferenceInputs,
    *,
    price_usd_per_gpu_hour: float = 0.0,
) -> InferenceReport:
    """The inference-memory section for one replica on ``inputs.num_gpus`` GPUs.

    ``params_total`` sizes the weights (exactly the user's P when overridden); ``arch``
    supplies the shapes of the KV cache and activations; ``params_active`` sets the
    prefill FLOPs. ``price_usd_per_gpu_hour`` prices the serving section's tokens.
    """
    fmt = inputs.weight_format
    n, batch, context = inputs.num_gpus, inputs.batch, inputs.context
    per_gpu = memory_per_gpu(arch, params_total, inputs, batch, context)
    weights = replica_weights_bytes(params_total, inputs)
    kv = kv_cache_bytes(arch, context, batch, inputs.kv_dtype)
    state = recurrent_state_bytes(arch, batch, inputs.kv_dtype)
    per_token = kv_cache_bytes(arch, 1, 1, inputs.kv_dtype)
    overhead = per_gpu.overhead * n
    capacity = gpu.memory_bytes

    # a decode step reads the weights, the KV cache and the recurrent state (which it also
    # writes back: Gu & Dao 2023 sec. 3.3.2 keep it in SRAM only within one step)
    read = per_gpu.weights * weights_read_fraction(arch, batch) + per_gpu.kv_cache + per_gpu.state
    step = read / gpu.memory_bandwidth_bytes_per_s
    flops = prefill_flops(arch, params_active, context, batch)
    peak = gpu.peak_flops.for_dtype(fmt.compute_dtype) or gpu.peak_flops.for_dtype("bf16")
    prefill_seconds = flops / (n * peak) if peak else None
    return InferenceReport(
        weights_format=fmt.id,
        bits_per_weight=fmt.bits_per_weight,
        kv_dtype=inputs.kv_dtype,
        batch=batch,
        context=context,
        num_gpus=n,
        weights_bytes=weights,
        kv_cache_bytes=kv,
        kv_cache_bytes_per_token=per_token,
        state_bytes=state,
        per_gpu_state_bytes=per_gpu.state,
        has_recurrent_state=arch.recurrent_layers > 0,
        weights_from_file=inputs.stored_weights_bytes() is not None,
        overhead_bytes=overhead,
        total_bytes=weights + kv + state + overhead,
        per_gpu_weights_bytes=per_gpu.weights,
        per_gpu_kv_cache_bytes=per_gpu.kv_cache,
        cuda_context_bytes=per_gpu.cuda_context,
        activation_bytes=per_gpu.activations,
        logits_bytes=per_gpu.logits,
        per_gpu_overhead_bytes=per_gpu.overhead,
        per_gpu_total_bytes=per_gpu.total,
        gpu_memory_bytes=capacity,
        memory_fraction_used=per_gpu.total / capacity,
        fits=per_gpu.total <= capacity,
        max_batch=max_batch(arch, params_total, gpu, inputs, context),
        max_context=max_context(arch, params_total, gpu, inputs, batch),
        decode_bytes_per_step=read,
        decode_step_seconds_bound=step,
        decode_tokens_per_s_bound=batch / step if step > 0 else 0.0,
        prefill_flops=flops,
        peak_flops_per_gpu=peak,
        prefill_seconds_bound=prefill_seconds,
        prefill_tokens_per_s_bound=(batch * context / prefill_seconds if prefill_seconds else None),
        serving=estimate_serving(
            serving_deployment(arch, params_total, params_active, gpu, inputs),
            inputs.prompt_tokens,
            inputs.output_tokens,
            None if inputs.batch_max else batch,
            price_usd_per_gpu_hour,
        ),
    )
