"""Parallel layout, per-GPU memory under ZeRO, communication, step time and MFU.

A *layout* is dp × tp × pp (= GPUs) with a ZeRO stage, sequence parallelism, expert
parallelism (MoE), a micro-batch, a pipeline schedule and a recomputation policy. This
module prices layouts with numpy arrays (:func:`evaluate_layouts`), so the report's one
layout and the search's millions go through the same arithmetic. Per-GPU memory of the
reported layout comes from the training-memory estimator (:mod:`.training`), the one
source of truth for it; the vectorised memory screen of the search mirrors it and every
row the search returns is re-checked with it.

Every tunable constant lives in :mod:`.comm` (named, documented, editable) and is also a
field of :class:`ParallelInputs`, so a scenario can override it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import cache
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, ConfigDict, Field

from llm_planner.core import comm
from llm_planner.core.activations import LedgerEntry, logits_working_bytes
from llm_planner.core.architecture import Architecture
from llm_planner.core.architecture import count_parameters as _count_parameters
from llm_planner.core.compute import attention_forward_flops_per_token
from llm_planner.core.figures import Figure, Unit
from llm_planner.core.gpus import GPU
from llm_planner.core.optimizers import get_precision
from llm_planner.core.training import (
    DDP_BUCKET_BYTES,
    LayerTemporaries,
    StageParams,
    StateBytes,
    TrainingInputs,
    TrainingReport,
    estimate_training,
    hardware_flops_factor,
    largest_local_layer,
    layer_activations_for,
    layer_kinds,
    layer_temporaries,
    outside_ledger_for,
    routed_expert_params,
    stage_params,
    state_bytes,
)

FloatArray = npt.NDArray[np.float64]

Schedule = Literal["gpipe", "1f1b", "interleaved"]
FSDPStrategy = Literal["NO_SHARD", "SHARD_GRAD_OP", "FULL_SHARD", "HYBRID_SHARD"]

FSDP_TO_ZERO: dict[str, int] = {
    "NO_SHARD": 0,
    "SHARD_GRAD_OP": 2,
    "FULL_SHARD": 3,
    "HYBRID_SHARD": 3,
}
"""PyTorch FSDP sharding strategies as ZeRO stages (PyTorch FSDP docs, ShardingStrategy):
NO_SHARD is DDP, SHARD_GRAD_OP shards gradients and optimizer states (ZeRO-2), FULL_SHARD
also parameters (ZeRO-3), HYBRID_SHARD is FULL_SHARD inside a node and replication
(all-reduce) across nodes (Zhao et al. 2023, arXiv:2304.11277 section 3.2.2)."""

RECOMPUTE_CODES: tuple[str, ...] = ("none", "selective", "full")
"""Recomputation policies the search enumerates, by integer code (index)."""


class ParallelInputs(BaseModel):
    """Inputs of the parallelism tab: cluster shape, network, layout and schedule."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    gpus_per_node: int = Field(default=8, ge=1)
    tp: int = Field(default=1, ge=1, description="tensor-parallel degree")
    pp: int = Field(default=1, ge=1, description="pipeline-parallel degree")
    dp: int | None = Field(
        default=None, ge=1, description="data-parallel degree; None: GPUs/(tp·pp)"
    )
    zero_stage: Literal[0, 1, 2, 3] = 1
    sequence_parallel: bool = False
    global_batch: int = Field(default=1024, ge=1, description="sequences per optimizer step")
    schedule: Schedule = "1f1b"
    interleave_chunks: int = Field(default=1, ge=1, description="virtual stages v (interleaved)")
    # --- added by issue 5
    fsdp_strategy: FSDPStrategy | None = Field(
        default=None, description="FSDP name; when set it overrides zero_stage (see FSDP_TO_ZERO)"
    )
    expert_parallel: int = Field(
        default=1, ge=1, description="expert-parallel degree ep (MoE; divides dp)"
    )
    intra_node_bandwidth_bytes_per_s: float | None = Field(
        default=None, gt=0, description="GPU-to-GPU link per GPU, one direction; None: the GPU's"
    )
    inter_node_bandwidth_bytes_per_s: float = Field(
        default=comm.INTER_NODE_BANDWIDTH_BYTES_PER_S_PER_NODE,
        gt=0,
        description="network per node, one direction (8 × 400 Gb/s InfiniBand = 400e9 B/s)",
    )
    intra_node_efficiency: float = Field(
        default=comm.INTRA_NODE_ACHIEVED_FRACTION, gt=0, le=1, description="achieved fraction"
    )
    inter_node_efficiency: float = Field(
        default=comm.INTER_NODE_ACHIEVED_FRACTION, gt=0, le=1, description="achieved fraction"
    )
    kernel_efficiency: float = Field(
        default=comm.KERNEL_EFFICIENCY, gt=0, le=1, description="achieved share of peak FLOP/s"
    )
    dp_overlap: float = Field(
        default=comm.DP_OVERLAP_FRACTION, ge=0, le=1, description="backward share hiding DP comm"
    )
    tp_overlap: float = Field(
        default=comm.TP_OVERLAP_FRACTION, ge=0, le=1, description="share of TP comm hidden"
    )
    measured_points: list[tuple[int, float]] = Field(
        default_factory=list, description="user measurements: (GPUs, tokens/s)"
    )


# --------------------------------------------------------------------- the workload


def model_flops_per_token(arch: Architecture, seq_len: int, params_matmul: float) -> float:
    """Model FLOPs per trained token (forward + backward, no recomputation).

    6·N + 12·L·H·Q·T (Chowdhery et al. 2022, PaLM, arXiv:2204.02311 Appendix B): N the
    parameters that multiply (active, embedding lookup excluded), L layers, H heads, Q head
    dimension, T the sequence length (attention scores and weighted sum, not halved for the
    causal mask, as in Narayanan et al. 2021's count). The attention term is 3 × the
    compute section's forward count (:func:`.compute.attention_forward_flops_per_token`:
    sliding windows cap T, MLA uses its own query-key and value widths), the same the
    recomputation factor (:func:`.training.training_flops`) uses.
    """
    return 6.0 * params_matmul + 3.0 * attention_forward_flops_per_token(arch, seq_len)


@dataclass(frozen=True)
class Workload:
    """The scalars of a model × training setup that layout pricing needs."""

    layers: int
    hidden: int
    seq_len: int
    global_batch: int
    params_total: float
    params_expert: float
    """Routed-expert parameters (divided by expert parallelism)."""
    moe_layers: int
    top_k: int
    model_flops_per_token: float
    hw_flops_factor: tuple[float, float, float]
    """Hardware/model FLOPs for recompute none, selective, full."""
    elementwise_bytes: tuple[ElementwiseBytes, ElementwiseBytes, ElementwiseBytes] = (
        (0.0, 0.0, 0.0),
        (0.0, 0.0, 0.0),
        (0.0, 0.0, 0.0),
    )
    """HBM bytes the non-GEMM kernels move per token per layer (forward + backward), for
    recompute none, selective, full; each split by how tp divides it (:func:`elementwise_bytes_of`).
    Zeros: no memory-bound term."""
    optimizer_step_bytes_per_param: float = 0.0
    """HBM bytes the optimizer step reads and writes per parameter it updates
    (:func:`optimizer_step_bytes_per_param`)."""


ElementwiseBytes = tuple[float, float, float]
"""(÷ tp always, ÷ tp only with sequence parallelism, never ÷ tp) bytes per token per layer."""

NON_GEMM_TENSORS: tuple[str, ...] = (
    "norm output",
    "rotary",
    "softmax",
    "dropout",
    "activation output",
    "repeated to",
    "routed tokens",
    "router probabilities",
)
"""Name fragments of the ledger tensors written by a non-GEMM kernel, besides every tensor of
the ``norm`` block (a norm's input is the residual add's output; its statistics, fp32 copies
and normalised values are the norm kernel's): norm outputs (LayerNorm/RMSNorm), RoPE outputs,
softmax and dropout outputs and masks (attention when not flash, residual dropout), the
activation function's output (GeLU, SiLU·up), GQA key/value copies, the MoE dispatch copies
and the router softmax. GEMM outputs (Q, K, V, fc1 output, flash attention's output and
log-sum-exp, expert outputs) are not: their traffic is part of the GEMM's time."""


def _is_non_gemm(entry: LedgerEntry) -> bool:
    return entry.block == "norm" or any(part in entry.name for part in NON_GEMM_TENSORS)


@cache
def elementwise_bytes_of(
    arch: Architecture, training_inputs: TrainingInputs
) -> tuple[ElementwiseBytes, ElementwiseBytes, ElementwiseBytes]:
    """HBM bytes the element-wise and normalisation kernels move, per token per layer.

    Ivanov et al. 2021 ("Data Movement Is All You Need", MLSys, arXiv:2007.00072) split a
    transformer's operators into tensor contractions, statistical normalisations and
    element-wise operators and show the latter two are bound by memory bandwidth (a few FLOPs
    per byte) yet take a large share of training time. Their bytes are read off the
    activation ledger (:func:`.training.layer_activations_for`, recompute "none", b = 1):
    each tensor X a non-GEMM kernel writes (:data:`NON_GEMM_TENSORS`) costs

    - forward: read its input (≈ |X|) + write X = 2·|X| (ELEMENTWISE_PASSES_FORWARD);
    - backward: read dY, read the saved X, write dX = 3·|X| (ELEMENTWISE_PASSES_BACKWARD);
    - recomputation replays the forward, + 2·|X|: for every such tensor with full
      recomputation, for the attention core's (softmax, dropout) with selective.

    Layers are averaged over dense and MoE layers as the memory screen does. Each total is
    split by the tensor's tp sharding (``tp``, ``sp``, ``none``) so the vectorised step time
    divides it per layout. Assumptions: an input about the size of the output (masks are
    counted at their own 1 byte), fused kernels counted once per saved output, no L2 reuse.
    """
    ti = training_inputs.model_copy(update={"recompute": "none"})
    fwd, bwd = comm.ELEMENTWISE_PASSES_FORWARD, comm.ELEMENTWISE_PASSES_BACKWARD
    totals = {"none": [0.0, 0.0, 0.0], "selective": [0.0, 0.0, 0.0], "full": [0.0, 0.0, 0.0]}
    column = {"tp": 0, "sp": 1, "none": 2}
    for moe, n in layer_kinds(arch):
        la = layer_activations_for(arch, ti, 1, tp=1, sequence_parallel=False, moe_layer=moe)
        for e in la.ledger:
            if not _is_non_gemm(e):
                continue
            per_token = e.bytes / ti.seq_len * n / arch.layers
            k = column[e.shard]
            totals["none"][k] += (fwd + bwd) * per_token
            totals["selective"][k] += (fwd + bwd + fwd * e.attention_core) * per_token
            totals["full"][k] += (2.0 * fwd + bwd) * per_token
    none, sel, full = (tuple(totals[rc]) for rc in RECOMPUTE_CODES)
    return (
        (none[0], none[1], none[2]),
        (sel[0], sel[1], sel[2]),
        (full[0], full[1], full[2]),
    )


@cache
def optimizer_step_bytes_per_param(arch: Architecture, training_inputs: TrainingInputs) -> float:
    """HBM bytes the optimizer step moves per parameter of the model, once per step.

    The step reads every gradient, reads and writes every optimizer state (fp32 master
    weights and moments) and writes the updated 16-bit weights: G + 2·O + W, with W, G, O the
    training estimator's state bytes of the whole model (:func:`.training.state_bytes`) ÷
    its parameters; 2 + 2·12 + 2 = 28 bytes for mixed-precision Adam. Under LoRA only the
    adapters are written (W counts the trainable weights, approximated by G's count). ZeRO
    stages ≥ 1 shard this work over the data-parallel group (each rank steps its shard).
    """
    whole = stage_params(
        arch, training_inputs, layers_on_stage=arch.layers, first=True, last=True, pp=1, scale=1.0
    )
    w, g, o = state_bytes(whole, training_inputs)
    params = whole.layer_params + whole.outside_params
    if params <= 0:
        return 0.0
    recipe = get_precision(training_inputs.precision)
    trained_w = w if training_inputs.effective_lora_rank is None else 0.0
    if training_inputs.effective_lora_rank is not None and recipe.gradients_bytes > 0:
        trained_w = g / recipe.gradients_bytes * recipe.weights_bytes
    return float((g + 2.0 * o + trained_w) / params)


def workload_of(
    arch: Architecture,
    seq_len: int,
    global_batch: int,
    params_override: float | None = None,
    hw_factors: tuple[float, float, float] | None = None,
    *,
    training_inputs: TrainingInputs | None = None,
) -> Workload:
    """Collect the model's scalars; ``params_override`` rescales every parameter count.

    ``hw_factors`` default: :func:`hardware_flops_factors` of ``training_inputs`` (the
    training defaults at ``seq_len`` when None)."""
    counts = _count_parameters(arch)
    scale = params_override / counts.total if params_override else 1.0
    matmul = counts.active_compute * scale
    model = model_flops_per_token(arch, seq_len, matmul)
    ti = training_inputs or TrainingInputs(seq_len=seq_len)
    factors = hw_factors or hardware_flops_factors(arch, ti, model)
    ti_s = ti if ti.seq_len == seq_len else ti.model_copy(update={"seq_len": seq_len})
    return Workload(
        layers=arch.layers,
        hidden=arch.hidden_size,
        seq_len=seq_len,
        global_batch=global_batch,
        params_total=counts.total * scale,
        params_expert=counts.experts * scale,
        moe_layers=arch.moe_layers,
        top_k=arch.moe.experts_per_token if arch.moe else 0,
        model_flops_per_token=model,
        hw_flops_factor=(float(factors[0]), float(factors[1]), float(factors[2])),
        elementwise_bytes=elementwise_bytes_of(arch, ti_s),
        optimizer_step_bytes_per_param=optimizer_step_bytes_per_param(arch, ti_s),
    )


@dataclass(frozen=True)
class Cluster:
    """The GPU and the network, with every efficiency applied."""

    gpu_id: str
    memory_bytes: float
    peak_flops: float
    """Dense bf16 peak per GPU, FLOP/s."""
    gpus_per_node: int
    links: comm.Links
    kernel_efficiency: float
    dp_overlap: float
    tp_overlap: float
    memory_bytes_per_s: float = math.inf
    """Achieved HBM bandwidth for the memory-bound kernels: the GPU's × MEMORY_BANDWIDTH_
    ACHIEVED_FRACTION. Infinite: no memory-bound term."""


def cluster_of(gpu: GPU, inputs: ParallelInputs, compute_dtype: str = "bf16") -> Cluster:
    """The cluster of ``inputs`` built on ``gpu`` (intra-node link from the GPU catalog)."""
    flops = gpu.peak_flops
    peak = flops.for_dtype(compute_dtype) or flops.for_dtype("bf16") or flops.for_dtype("fp16")
    peak = peak or flops.for_dtype("fp32") or 1.0
    intra = inputs.intra_node_bandwidth_bytes_per_s or gpu.link_bandwidth_bytes_per_s
    return Cluster(
        gpu_id=gpu.id,
        memory_bytes=gpu.memory_bytes,
        peak_flops=float(peak),
        gpus_per_node=inputs.gpus_per_node,
        links=comm.Links(
            gpus_per_node=inputs.gpus_per_node,
            intra_bytes_per_s=intra * inputs.intra_node_efficiency,
            inter_bytes_per_s_per_node=inputs.inter_node_bandwidth_bytes_per_s
            * inputs.inter_node_efficiency,
        ),
        kernel_efficiency=inputs.kernel_efficiency,
        dp_overlap=inputs.dp_overlap,
        tp_overlap=inputs.tp_overlap,
        memory_bytes_per_s=gpu.memory_bandwidth_bytes_per_s
        * comm.MEMORY_BANDWIDTH_ACHIEVED_FRACTION,
    )


# --------------------------------------------------------------------- memory arithmetic


def model_state_bytes_per_gpu(
    params: npt.ArrayLike,
    zero_stage: npt.ArrayLike,
    dp: npt.ArrayLike,
    *,
    weight_bytes_per_param: float | FloatArray = 2.0,
    grad_bytes_per_param: float | FloatArray = 2.0,
    optimizer_bytes_per_param: float | FloatArray = 12.0,
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """(weights, gradients, optimizer states) bytes per GPU under ZeRO stage 0-3.

    ``params`` is the GPU's share after tensor/pipeline splitting. Stage 1 divides the
    optimizer states by the data-parallel degree N_d, stage 2 also the gradients, stage 3
    also the parameters (Rajbhandari et al. 2019, arXiv:1910.02054 section 5, Figure 1:
    (2 + 2 + K)·Ψ, 2Ψ + 2Ψ + KΨ/N_d, 2Ψ + (2 + K)Ψ/N_d, (2 + 2 + K)Ψ/N_d with K = 12 for
    mixed-precision Adam). Bytes per parameter may be arrays (one per layout).
    """
    p = np.asarray(params, dtype=np.float64)
    w_div, g_div, o_div = zero_divisors(zero_stage, dp)
    weights = p * weight_bytes_per_param / w_div
    grads = p * grad_bytes_per_param / g_div
    optim = p * optimizer_bytes_per_param / o_div
    return np.asarray(weights), np.asarray(grads), np.asarray(optim)


def zero_divisors(
    zero_stage: npt.ArrayLike, dp: npt.ArrayLike
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """What ZeRO divides weights, gradients and optimizer states by: N_d from stage 3, 2
    and 1 on respectively, else 1 (Rajbhandari et al. 2019, section 5)."""
    z = np.asarray(zero_stage)
    n = np.asarray(dp, dtype=np.float64)
    return (
        np.asarray(np.where(z >= 3, n, 1.0)),
        np.asarray(np.where(z >= 2, n, 1.0)),
        np.asarray(np.where(z >= 1, n, 1.0)),
    )


def microbatches_in_flight(
    pp: npt.ArrayLike, microbatches: npt.ArrayLike, gpipe: npt.ArrayLike, v: npt.ArrayLike
) -> FloatArray:
    """Micro-batches whose activations the first pipeline stage holds at its peak.

    GPipe: all m (every forward runs before any backward; Huang et al. 2019). 1F1B: p
    (Narayanan et al. 2021 section 2.2.1). Interleaved with v chunks: p·(1 + (p−1)/(p·v))
    stage-loads (Korthikanti et al. 2022 section 4.2.3). Never more than m.
    """
    p = np.asarray(pp, dtype=np.float64)
    m = np.asarray(microbatches, dtype=np.float64)
    v_ = np.asarray(v, dtype=np.float64)
    interleaved = np.where(v_ > 1, p * (1.0 + (p - 1.0) / (p * v_)), p)
    return np.asarray(np.where(np.asarray(gpipe, dtype=bool), m, np.minimum(interleaved, m)))


# --------------------------------------------------------------------- the training bridge


@dataclass(frozen=True)
class StageActivations:
    """Activation terms of one (micro-batch, tp, sequence parallel, recompute) choice."""

    kept_per_layer: float
    """Bytes one layer keeps per micro-batch (average over dense and MoE layers)."""
    recompute_working: float
    outside_first: float
    """Tensors saved outside the layers on the first stage, per micro-batch."""
    outside_last: float
    outside_only: float
    logits: float


@dataclass(frozen=True)
class MemoryRecipe:
    """What the vectorised memory screen needs, read off the training estimator.

    Mirrors :func:`llm_planner.core.training.estimate_training` term by term (persistent
    state of the fullest stage ÷ tp and ÷ dp per ZeRO stage, activations × micro-batches in
    flight, temporaries, overhead) so the search screens millions of layouts without
    calling it; the rows the search returns are re-checked with the estimator itself.
    Persistent state is linear in the parameters (:func:`.training.state_bytes`): a stage
    holds ``layer_state`` × its share of the layers plus its tensors outside the layers.
    """

    layer_params: float
    """All in-layer parameters of the model (scaled by any override)."""
    layer_state: StateBytes
    """Weights, gradients, optimizer bytes of all layers (before ÷ tp and ZeRO)."""
    expert_state: StateBytes
    """The routed experts' part of ``layer_state`` (÷ ep, ZeRO over dp/ep); zeros if dense."""
    outside_first: StateBytes
    """State of the embedding (and learned positions) on the first stage."""
    outside_last: StateBytes
    """State of the output head (or the tied embedding when pp > 1) and final norm."""
    outside_single: StateBytes
    """State outside the layers when one stage holds all (a tied head counted once)."""
    model_state_bytes: float
    """Weights + gradients + optimizer of the whole model (tp = pp = dp = 1)."""
    temporaries: LayerTemporaries
    """One layer's bucket, ZeRO-3 gather and QLoRA dequantised matrix at tp = 1."""
    temporaries_for_ep: Callable[[int], LayerTemporaries]
    """The same with expert parallelism ep (one layer as a GPU holding E/ep experts)."""
    cuda_context_bytes: float
    fragmentation_fraction: float
    megatron_buckets: bool
    """Megatron reduces gradients in place: no DDP bucket with ZeRO 0/1."""
    activations: Callable[[int, int, bool, str], StageActivations]


def memory_recipe(
    arch: Architecture, training_inputs: TrainingInputs, gpu: GPU, params: float
) -> MemoryRecipe:
    """The training estimator's state bytes, temporaries and activation terms for the screen.

    Every term comes from the helpers :func:`.training.estimate_training` itself uses
    (so every precision recipe, optimizer, LoRA and QLoRA setting is honoured).
    """
    del gpu  # the recipe does not depend on the GPU; the screen compares with its memory
    ti = training_inputs
    counts = _count_parameters(arch)
    scale = params / counts.total

    @cache
    def stage_acts(b: int, t: int, sp: bool, rc: str) -> StageActivations:
        ti_rc = ti.model_copy(update={"recompute": rc})
        layers = [
            (n, layer_activations_for(arch, ti_rc, b, tp=t, sequence_parallel=sp, moe_layer=moe))
            for moe, n in layer_kinds(arch)
        ]
        kept = sum(n * la.kept_bytes for n, la in layers) / arch.layers
        working = max(la.recompute_working_bytes for _, la in layers)

        def outside(first_stage: bool, last_stage: bool) -> float:
            ledger = outside_ledger_for(
                arch, ti, b, tp=t, sequence_parallel=sp, first=first_stage, last=last_stage
            )
            return float(sum(e.bytes for e in ledger))

        act_dtype = get_precision(ti.precision).activations_dtype
        logits = logits_working_bytes(arch, ti.seq_len, b, tp=t, activation_dtype=act_dtype)
        return StageActivations(
            kept_per_layer=float(kept),
            recompute_working=float(working),
            outside_first=outside(True, False),
            outside_last=outside(False, True),
            outside_only=outside(True, True),
            logits=float(logits),
        )

    def params_of(layers: int, first: bool, last: bool, pp: int, ep: int = 1) -> StageParams:
        return stage_params(
            arch, ti, layers_on_stage=layers, first=first, last=last, pp=pp, scale=scale, ep=ep
        )

    layers = params_of(arch.layers, False, False, 1)
    experts = routed_expert_params(arch, ti, layers_on_stage=arch.layers, scale=scale)
    temporaries = layer_temporaries(layers, ti, arch.layers)

    @cache
    def temporaries_for_ep(ep: int) -> LayerTemporaries:
        """As ``params_of(..., ep)`` would give, without recounting the layers: only the
        largest layer and the LoRA adapters (the bucket under LoRA) depend on ep."""
        if ep == 1:
            return temporaries
        local = {
            "one_layer_params": largest_local_layer(arch, ep) * scale,
            "lora_params": layers.lora_params - experts.lora_params * (1.0 - 1.0 / ep),
        }
        return layer_temporaries(layers.model_copy(update=local), ti, arch.layers)

    whole = params_of(arch.layers, True, True, 1)
    # any pp > 1: the first stage holds the embedding, the last the head
    return MemoryRecipe(
        layer_params=layers.layer_params,
        layer_state=state_bytes(layers, ti),
        expert_state=state_bytes(experts, ti),
        outside_first=state_bytes(params_of(0, True, False, 2), ti),
        outside_last=state_bytes(params_of(0, False, True, 2), ti),
        outside_single=state_bytes(params_of(0, True, True, 1), ti),
        model_state_bytes=sum(state_bytes(whole, ti)),
        temporaries=temporaries,
        temporaries_for_ep=temporaries_for_ep,
        cuda_context_bytes=float(ti.cuda_context_bytes),
        fragmentation_fraction=float(ti.fragmentation_fraction),
        megatron_buckets=ti.implementation == "megatron",
        activations=stage_acts,
    )


# --------------------------------------------------------------------- vectorised pricing


@dataclass(frozen=True)
class Layouts:
    """Candidate layouts as parallel numpy arrays (one entry per candidate)."""

    tp: npt.NDArray[np.int64]
    pp: npt.NDArray[np.int64]
    dp: npt.NDArray[np.int64]
    ep: npt.NDArray[np.int64]
    zero: npt.NDArray[np.int64]
    shard: npt.NDArray[np.int64]
    """ZeRO shard-group size: dp, or the in-node part of dp for HYBRID_SHARD."""
    micro_batch: npt.NDArray[np.int64]
    v: npt.NDArray[np.int64]
    gpipe: npt.NDArray[np.bool_]
    sp: npt.NDArray[np.bool_]
    recompute: npt.NDArray[np.int64]
    """Index into RECOMPUTE_CODES."""

    def __len__(self) -> int:
        return int(self.tp.shape[0])

    def as_float(self, name: str) -> FloatArray:
        """A field as float64, converted once per Layouts (the evaluator reads each often)."""
        cache: dict[str, FloatArray] = self.__dict__.setdefault("_float_cache", {})
        if name not in cache:
            cache[name] = getattr(self, name).astype(np.float64)
        return cache[name]

    def take(self, index: npt.NDArray[np.int64] | npt.NDArray[np.bool_]) -> Layouts:
        return Layouts(**{name: getattr(self, name)[index] for name in _LAYOUT_FIELDS})

    def resolved(self, i: int, microbatches: float) -> ResolvedLayout:
        """Candidate ``i`` as a :class:`ResolvedLayout`; ``microbatches`` is its m per step
        (a whole number for the layouts the search enumerates)."""
        v = int(self.v[i])
        return ResolvedLayout(
            tp=int(self.tp[i]),
            pp=int(self.pp[i]),
            dp=int(self.dp[i]),
            ep=int(self.ep[i]),
            zero_stage=int(self.zero[i]),
            shard=int(self.shard[i]),
            micro_batch=int(self.micro_batch[i]),
            v=v,
            schedule="gpipe" if self.gpipe[i] else ("interleaved" if v > 1 else "1f1b"),
            sequence_parallel=bool(self.sp[i]),
            recompute=RECOMPUTE_CODES[int(self.recompute[i])],
            gradient_accumulation_steps=round(microbatches),
            problems=(),
        )


_LAYOUT_FIELDS: tuple[str, ...] = (
    "tp",
    "pp",
    "dp",
    "ep",
    "zero",
    "shard",
    "micro_batch",
    "v",
    "gpipe",
    "sp",
    "recompute",
)

TIME_PARTS = (
    "compute",
    "bubble",
    "tensor_parallel",
    "pipeline_p2p",
    "expert_all_to_all",
    "data_parallel",
)
"""Keys of the step-time breakdown, in display order."""


def evaluate_layouts(
    work: Workload, cluster: Cluster, lay: Layouts, recipe: MemoryRecipe | None = None
) -> dict[str, FloatArray]:
    """Price every layout: step time and its breakdown, comm bytes, MFU, HFU, memory screen.

    Step-time model (all per GPU, per optimizer step):

    - one micro-batch's compute on one stage: t_c = hardware FLOPs/token · s·b ÷ (t·p) ÷
      (peak · kernel efficiency) × ⌈L/(p·v)⌉·p·v/L (the fullest stage sets the pace),
      plus the memory-bound kernels (norms, activation functions, rotary, softmax/dropout
      when not flash, residual adds): t_mem = bytes/token/layer (:func:`elementwise_bytes_of`,
      tp-sharded part ÷ t, norm/dropout region ÷ t only with SP) · s·b · L/p · imbalance ÷
      (HBM bandwidth · MEMORY_BANDWIDTH_ACHIEVED_FRACTION). They run on the same CUDA stream
      as the GEMMs, between them, so t_mem adds to t_c and is not overlapped with it (Ivanov
      et al. 2021, arXiv:2007.00072);
    - per micro-batch, exposed tensor-parallel time (1 − TP overlap) · bytes ÷ link, the
      pipeline point-to-point and the MoE all-to-all, added to t_c: t_mb;
    - pipeline: (m + (p−1)/v) · t_mb (Narayanan et al. 2021 section 2.2: bubble (p−1)/(v·m)
      of the ideal time);
    - data-parallel traffic is hidden behind DP_OVERLAP × the backward compute that runs
      while it is issued (the last micro-batch for ZeRO-0/1, every micro-batch's backward
      for ZeRO-2, every micro-batch for ZeRO-3, whose gathers prefetch during the forward);
      only the rest is exposed;
    - the optimizer step, once per step after the last backward: G + 2·O + W bytes per
      parameter this GPU steps ÷ HBM bandwidth (:func:`_optimizer_step_seconds`), counted in
      the compute time. ``time_memory_bound`` reports m·t_mem + optimizer step (part of
      ``time_compute``).

    tokens/s = global batch · s ÷ step; MFU = model FLOPs/token · tokens/s ÷ (GPUs · peak);
    HFU the same with hardware FLOPs (Korthikanti et al. 2022 section 6; Chowdhery et al.
    2022 Appendix B).
    """
    f64 = np.float64
    tp = lay.as_float("tp")
    pp = lay.as_float("pp")
    dp = lay.as_float("dp")
    ep = lay.as_float("ep")
    b = lay.as_float("micro_batch")
    v = lay.as_float("v")
    tp_pp = tp * pp
    gpus = tp_pp * dp
    g = float(cluster.gpus_per_node)
    m = work.global_batch / (dp * b)
    tokens_mb = work.seq_len * b
    hw_factor = np.asarray(work.hw_flops_factor, dtype=f64)[lay.recompute]
    peak = cluster.peak_flops
    # the slowest stage sets the pace: ceil(L/(p·v)) layers per chunk when L does not split
    imbalance = np.ceil(work.layers / (pp * v)) * pp * v / work.layers
    stage_tokens = tokens_mb * imbalance / tp_pp  # s·b ÷ (t·p) on the fullest stage
    t_c, t_mem = _compute_seconds(work, cluster, lay, stage_tokens)
    t_opt = _optimizer_step_seconds(work, lay, cluster, tp_pp)

    links = cluster.links
    layers_stage = work.layers / pp
    full = lay.recompute == 2
    tp_bytes_mb = layers_stage * comm.tensor_parallel_bytes_per_layer(
        tp, tokens_mb, work.hidden, full
    )
    t_tp = tp_bytes_mb / links.group_bandwidth(1.0, tp) * (1.0 - cluster.tp_overlap)
    pp_bytes_mb = comm.pipeline_p2p_bytes_per_microbatch(pp, tp, tokens_mb, work.hidden, v)
    pp_inside = tp * dp * pp <= g
    pp_bw = np.where(pp_inside, links.intra_bytes_per_s, links.group_bandwidth(tp * dp, 2.0, False))
    t_pp = pp_bytes_mb / pp_bw
    if work.moe_layers > 0:
        ep_bytes_mb = (work.moe_layers / pp) * comm.moe_all_to_all_bytes_per_layer(
            ep, tp, tokens_mb, work.hidden, work.top_k
        )
        t_ep = ep_bytes_mb / links.group_bandwidth(tp, ep, False)
    else:
        ep_bytes_mb = np.zeros_like(tp)
        t_ep = np.zeros_like(tp)

    dp_bytes, t_dp = _data_parallel(work, lay, links, m)
    window_share = np.select(
        [lay.zero <= 1, lay.zero == 2], [comm.BACKWARD_SHARE, comm.BACKWARD_SHARE * m], m
    )
    exposed_dp = np.maximum(0.0, t_dp - cluster.dp_overlap * window_share * t_c)

    t_mb = t_c + t_tp + t_pp + t_ep
    bubble = comm.pipeline_bubble_fraction(pp, m, v)
    slots = m + (pp - 1.0) / v
    step = slots * t_mb + exposed_dp + t_opt
    tokens_per_s = work.global_batch * work.seq_len / step
    mfu = work.model_flops_per_token * tokens_per_s / (gpus * peak)
    hfu = mfu * hw_factor

    out: dict[str, FloatArray] = {
        "microbatches": m,
        "bubble_fraction": bubble,
        "step_seconds": step,
        "tokens_per_s": tokens_per_s,
        "mfu": mfu,
        "hfu": hfu,
        "time_compute": m * t_c + t_opt,
        "time_memory_bound": m * t_mem + t_opt,
        "time_bubble": (slots - m) * t_mb,
        "time_tensor_parallel": m * t_tp,
        "time_pipeline_p2p": m * t_pp,
        "time_expert_all_to_all": m * t_ep,
        "time_data_parallel": exposed_dp,
        "time_data_parallel_total": t_dp,
        "comm_tp_bytes": m * tp_bytes_mb,
        "comm_pp_bytes": m * pp_bytes_mb,
        "comm_ep_bytes": m * ep_bytes_mb,
        "comm_dp_bytes": dp_bytes,
    }
    out["comm_bytes_per_step"] = (
        out["comm_tp_bytes"] + out["comm_pp_bytes"] + out["comm_ep_bytes"] + dp_bytes
    )
    if recipe is not None:
        out.update(_memory_screen(work, lay, recipe, m=m))
    return out


def _compute_seconds(
    work: Workload, cluster: Cluster, lay: Layouts, stage_tokens: FloatArray
) -> tuple[FloatArray, FloatArray]:
    """(t_c, t_mem) of one micro-batch on the fullest stage: GEMMs at peak · kernel efficiency
    plus the memory-bound kernels (same CUDA stream, not overlapped), and the latter alone."""
    hw = np.asarray(work.hw_flops_factor, dtype=np.float64)
    seconds_per_flop = work.model_flops_per_token / (cluster.peak_flops * cluster.kernel_efficiency)
    t_gemm = stage_tokens * np.take(hw * seconds_per_flop, lay.recompute)
    t_mem = _elementwise_seconds(work, lay, cluster, stage_tokens)
    return np.asarray(t_gemm + t_mem), t_mem


def _elementwise_seconds(
    work: Workload, lay: Layouts, cluster: Cluster, stage_tokens: FloatArray
) -> FloatArray:
    """One micro-batch's memory-bound kernel time on the fullest stage.

    bytes/token/layer (tp part ÷ t, sequence-parallel region ÷ t only with SP, the rest
    whole) · s·b · L/p ÷ bandwidth, written as s·b/(t·p) · L/bandwidth · (tp part + SP part ·
    (1 with SP, else t) + rest · t). ``stage_tokens`` = s·b·imbalance/(t·p)."""
    per_layer = np.asarray(work.elementwise_bytes, dtype=np.float64).T
    per_layer = per_layer * (work.layers / cluster.memory_bytes_per_s)
    rc = lay.recompute
    tp = lay.as_float("tp")
    coefficient = np.take(per_layer[0], rc)
    if np.any(per_layer[1]):
        coefficient = coefficient + np.take(per_layer[1], rc) * np.where(lay.sp, 1.0, tp)
    if np.any(per_layer[2]):
        coefficient = coefficient + np.take(per_layer[2], rc) * tp
    return np.asarray(stage_tokens * coefficient)


def _optimizer_step_seconds(
    work: Workload, lay: Layouts, cluster: Cluster, tp_pp: FloatArray
) -> FloatArray:
    """The optimizer step's HBM time per GPU per step: bytes/param × the parameters this GPU
    steps ÷ achieved bandwidth. Dense parameters ÷ (t·p), routed experts ÷ (t·p·ep); ZeRO ≥ 1
    steps only this rank's shard (÷ the shard group, experts ÷ dp/ep within it)."""
    per_param = work.optimizer_step_bytes_per_param / cluster.memory_bytes_per_s
    sharded = lay.zero >= 1
    shard = lay.as_float("shard")
    dense = (work.params_total - work.params_expert) * per_param
    seconds = dense / (tp_pp * np.where(sharded, shard, 1.0))
    if work.params_expert > 0:
        ep = lay.as_float("ep")
        expert_dp = np.minimum(np.maximum(lay.as_float("dp") / ep, 1.0), shard)
        expert = work.params_expert * per_param / (tp_pp * ep * np.where(sharded, expert_dp, 1.0))
        seconds = seconds + expert
    return np.asarray(seconds)


def _data_parallel(
    work: Workload, lay: Layouts, links: comm.Links, m: FloatArray
) -> tuple[FloatArray, FloatArray]:
    """Data-parallel bytes per GPU per step and their time before overlap.

    Dense parameters are synchronised over the ZeRO shard group (plus an all-reduce of the
    shards across replicas for HYBRID_SHARD); expert parameters over the expert-data-parallel
    group dp/ep (Megatron-LM's expert data parallelism).
    """
    tp = lay.as_float("tp")
    pp = lay.as_float("pp")
    dp = lay.as_float("dp")
    ep = lay.as_float("ep")
    params_gpu_dense = (work.params_total - work.params_expert) / (tp * pp)
    params_gpu_expert = work.params_expert / (tp * pp * ep)
    shard = lay.as_float("shard")
    replicas = dp / shard
    cbytes = comm.COMM_BYTES_PER_ELEMENT
    dense_bytes = params_gpu_dense * cbytes
    expert_bytes = params_gpu_expert * cbytes
    dp_bytes = comm.data_parallel_bytes(lay.zero, shard, dense_bytes, dense_bytes, m)
    if work.params_expert > 0:
        expert_dp = np.minimum(np.maximum(dp / ep, 1.0), shard)
        dp_bytes = dp_bytes + comm.data_parallel_bytes(
            lay.zero, expert_dp, expert_bytes, expert_bytes, m
        )
    t_dp = dp_bytes / links.group_bandwidth(tp, shard)
    if np.any(replicas > 1):
        hybrid = np.where(
            replicas > 1, comm.ring_all_reduce_bytes(replicas, dense_bytes / shard), 0.0
        )
        t_dp = t_dp + hybrid / links.group_bandwidth(tp * shard, replicas)
        dp_bytes = dp_bytes + hybrid
    return dp_bytes, t_dp


def _memory_screen(
    work: Workload,
    lay: Layouts,
    recipe: MemoryRecipe,
    *,
    m: FloatArray,
) -> dict[str, FloatArray]:
    """Per-GPU peak memory of each layout, term by term as the training estimator.

    The fuller of the first stage (embedding, micro-batches in flight) and the last stage
    (head, logits, one micro-batch in flight for 1F1B) sets the peak. With ep > 1 the
    routed experts' state is ÷ ep and ZeRO-sharded over the shard group ÷ ep (at least 1),
    and the bucket and ZeRO-3 gather hold one layer with E/ep experts, as in the estimator;
    rows with ep = 1 take exactly the arithmetic without experts.
    """
    f64 = np.float64
    tp = lay.as_float("tp")
    pp = lay.as_float("pp")
    shard = lay.as_float("shard")
    layers_stage = np.ceil(work.layers / pp)
    share = layers_stage / work.layers
    multi = pp > 1
    z = lay.zero
    # the stage's bytes ÷ tp, ZeRO-sharded (weights, gradients, optimizer)
    divisors = [tp * d for d in zero_divisors(z, shard)]
    has_ep = bool(sum(recipe.expert_state)) and bool(np.any(lay.ep > 1))
    layer_parts = [share * in_layers for in_layers in recipe.layer_state] if has_ep else []

    pp_index, share_of_pp, multi_of_pp = _per_pipeline_degree(lay, work.layers)

    def state(outside: StateBytes) -> list[FloatArray]:
        if not has_ep:
            return [
                (share_of_pp * in_layers + np.where(multi_of_pp, out, single))[pp_index] / div
                for in_layers, out, single, div in zip(
                    recipe.layer_state, outside, recipe.outside_single, divisors, strict=True
                )
            ]
        held = [
            np.where(multi, out, single)
            for out, single in zip(outside, recipe.outside_single, strict=True)
        ]
        plain = [
            (part + out) / div for part, out, div in zip(layer_parts, held, divisors, strict=True)
        ]
        return _expert_parallel_state(
            lay, recipe, share=share, outside=held, divisors=divisors, plain=plain
        )

    # every saved tensor is s·b·(something): price b = 1 once per (tp, sp, recompute), × b
    # dense integer code per (tp, sp, recompute): O(n) grouping, no sort
    n_rc = len(RECOMPUTE_CODES)
    code = (lay.tp * 2 + lay.sp) * n_rc + lay.recompute
    present = np.zeros(int(code.max(initial=0)) + 1, dtype=bool)
    present[code] = True
    unique = np.flatnonzero(present)
    inv = (np.cumsum(present) - 1)[code]
    acts = [
        recipe.activations(1, k // n_rc // 2, bool(k // n_rc % 2), RECOMPUTE_CODES[k % n_rc])
        for k in unique.tolist()
    ]
    b = lay.as_float("micro_batch")

    def field(name: str) -> FloatArray:
        return np.asarray(np.array([getattr(a, name) for a in acts], dtype=f64)[inv] * b)

    kept = field("kept_per_layer")
    working = field("recompute_working")
    logits = field("logits")
    in_flight = training_in_flight(pp, m, lay.gpipe, lay.as_float("v"))  # cached floats
    first_flight = np.where(in_flight > 0, in_flight, pp)
    last_flight = training_in_flight_last(pp, m, lay.gpipe, lay.as_float("v"))
    outside_only = field("outside_only")
    outside_first = np.where(multi, field("outside_first"), outside_only)
    outside_last = np.where(multi, field("outside_last"), outside_only)
    gather, fixed_temps = _fixed_temporaries(lay, recipe, has_ep=has_ep)
    kept_stage = kept * layers_stage

    def stage(
        held: StateBytes, flight: FloatArray, outside: FloatArray, last: bool
    ) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray, FloatArray]:
        w, g, o = state(held)
        activ = kept_stage * flight + outside * flight
        lg = logits if last else np.where(multi, 0.0, logits)
        temp = fixed_temps + np.maximum(lg, working)
        allocated = w + g + o + activ + temp
        peak = allocated + recipe.cuda_context_bytes + recipe.fragmentation_fraction * allocated
        return w, g, o, activ, peak

    first = stage(recipe.outside_first, first_flight, outside_first, last=False)
    last = stage(recipe.outside_last, last_flight, outside_last, last=True)
    use_last = last[4] > first[4]
    pick = [np.where(use_last, b_, a_) for a_, b_ in zip(first, last, strict=True)]
    return {
        "weights_bytes": pick[0],
        "gradients_bytes": pick[1],
        "optimizer_bytes": pick[2],
        "activations_bytes": pick[3],
        "zero3_gathered_bytes": gather,
        "peak_bytes": pick[4],
    }


def _per_pipeline_degree(
    lay: Layouts, layers: int
) -> tuple[npt.NDArray[np.int64], FloatArray, npt.NDArray[np.bool_]]:
    """(index of each layout's pp among the distinct ones, layer share ⌈L/p⌉/L and p > 1 per
    distinct pp): what depends on pp alone is priced once per pp value and gathered."""
    seen = np.zeros(int(lay.pp.max(initial=1)) + 1, dtype=bool)
    seen[lay.pp] = True
    values = np.flatnonzero(seen).astype(np.float64)
    index = (np.cumsum(seen) - 1)[lay.pp]
    return index, np.ceil(layers / values) / layers, values > 1


def _fixed_temporaries(
    lay: Layouts, recipe: MemoryRecipe, *, has_ep: bool
) -> tuple[FloatArray, FloatArray]:
    """(ZeRO-3 gathered block, all fixed temporaries) per GPU: the ZeRO-2 bucket or DDP
    bucket, the ZeRO-3 gather and QLoRA's dequantised matrix, each ÷ tp."""
    tp = lay.as_float("tp")
    z = lay.zero
    zero2_bucket, zero3_gather = _layer_temporaries_by_ep(lay, recipe, has_ep=has_ep)
    sharded = lay.shard > 1
    bucket = np.where(
        (z >= 2) & sharded,
        zero2_bucket / tp,
        np.where(sharded & (not recipe.megatron_buckets), float(DDP_BUCKET_BYTES), 0.0),
    )
    gather = np.where((z >= 3) & sharded, zero3_gather / tp, 0.0)
    fixed = bucket + gather
    if recipe.temporaries.dequant:
        fixed = fixed + recipe.temporaries.dequant / tp
    return np.asarray(gather), np.asarray(fixed)


def _expert_parallel_state(
    lay: Layouts,
    recipe: MemoryRecipe,
    *,
    share: FloatArray,
    outside: list[FloatArray],
    divisors: list[FloatArray],
    plain: list[FloatArray],
) -> list[FloatArray]:
    """Weights, gradients, optimizer per GPU where ep > 1 (``plain`` elsewhere): the stage's
    non-expert state (and ``outside``) ÷ ``divisors`` (tp × ZeRO over the shard group), its
    routed experts ÷ tp·ep × ZeRO over the expert-data-parallel group shard/ep (at least 1),
    as :func:`.training.estimate_training`."""
    tp = lay.as_float("tp")
    ep = lay.as_float("ep")
    expert_dp = np.maximum(lay.as_float("shard") / ep, 1.0)
    expert_divisors = [tp * ep * d for d in zero_divisors(lay.zero, expert_dp)]
    split = lay.ep > 1
    return [
        np.where(split, (share * (whole - expert) + out) / div + share * expert / e_div, p)
        for whole, expert, out, div, e_div, p in zip(
            recipe.layer_state,
            recipe.expert_state,
            outside,
            divisors,
            expert_divisors,
            plain,
            strict=True,
        )
    ]


def _layer_temporaries_by_ep(
    lay: Layouts, recipe: MemoryRecipe, *, has_ep: bool
) -> tuple[float | FloatArray, float | FloatArray]:
    """One layer's ZeRO-2 bucket and ZeRO-3 gather (tp = 1) as a GPU holding E/ep experts
    stores it: the recipe's when no layout has ep > 1, else per layout from a table over
    the ep values present, O(n)."""
    if not has_ep:
        return recipe.temporaries.zero2_bucket, recipe.temporaries.zero3_gather
    seen = np.zeros(int(lay.ep.max()) + 1, dtype=bool)
    seen[lay.ep] = True
    table = np.zeros((2, seen.size), dtype=np.float64)
    for e in np.flatnonzero(seen).tolist():
        t_e = recipe.temporaries_for_ep(int(e))
        table[:, e] = (t_e.zero2_bucket, t_e.zero3_gather)
    return table[0][lay.ep], table[1][lay.ep]


def microbatches_in_flight_last(
    pp: npt.ArrayLike, microbatches: npt.ArrayLike, gpipe: npt.ArrayLike, v: npt.ArrayLike
) -> FloatArray:
    """Micro-batches (in stage-loads of L/p layers) the *last* pipeline stage holds at its peak.

    GPipe: all m. 1F1B: 1 (the last stage runs each backward right after its forward;
    Narayanan et al. 2021 section 2.2.1). Interleaved with v chunks: Megatron-LM's schedule
    warms up (p − r − 1)·2 + (v − 1)·p chunk-forwards on rank r before its first backward
    (``megatron/core/pipeline_parallel/schedules.py``, interleaved warm-up count), so the last
    rank (r = p − 1) holds (v − 1)·p + 1 chunks of L/(p·v) layers: ((v − 1)·p + 1)/v
    stage-loads (the same rule gives the first rank's p·(1 + (p − 1)/(p·v)) of
    :func:`microbatches_in_flight`). Never more than m.
    """
    p = np.asarray(pp, dtype=np.float64)
    m = np.asarray(microbatches, dtype=np.float64)
    v_ = np.asarray(v, dtype=np.float64)
    interleaved = np.where(v_ > 1, ((v_ - 1.0) * p + 1.0) / v_, 1.0)
    return np.asarray(np.where(np.asarray(gpipe, dtype=bool), m, np.minimum(interleaved, m)))


def training_in_flight_last(
    pp: npt.ArrayLike, microbatches: npt.ArrayLike, gpipe: npt.ArrayLike, v: npt.ArrayLike
) -> FloatArray:
    """``last_stage_microbatches_in_flight`` for the training estimator (rounded up)."""
    return np.asarray(np.ceil(microbatches_in_flight_last(pp, microbatches, gpipe, v) - 1e-9))


def training_in_flight(
    pp: npt.ArrayLike, microbatches: npt.ArrayLike, gpipe: npt.ArrayLike, v: npt.ArrayLike
) -> FloatArray:
    """``microbatches_in_flight`` to pass to the training estimator: 0 means "its default"
    (pp on the first stage, 1 on the last: plain 1F1B with m ≥ p); otherwise the
    :func:`microbatches_in_flight` count, rounded up."""
    p = np.asarray(pp, dtype=np.float64)
    m = np.asarray(microbatches, dtype=np.float64)
    value = np.ceil(microbatches_in_flight(pp, microbatches, gpipe, v) - 1e-9)
    default = ~np.asarray(gpipe, dtype=bool) & (np.asarray(v) <= 1) & (m >= p)
    return np.asarray(np.where(default, 0.0, value))


def bottleneck_of(row: dict[str, float]) -> str:
    """Name the largest non-compute part of a step, or 'compute' when compute dominates."""
    parts = {name: row.get(f"time_{name}", 0.0) for name in TIME_PARTS}
    overhead = {k: v for k, v in parts.items() if k != "compute"}
    worst = max(overhead, key=lambda k: overhead[k])
    total = sum(parts.values()) or 1.0
    if overhead[worst] < 0.05 * total:
        return "compute"
    labels = {
        "bubble": "pipeline bubble",
        "tensor_parallel": "tensor-parallel all-reduce",
        "pipeline_p2p": "pipeline send/receive",
        "expert_all_to_all": "MoE all-to-all",
        "data_parallel": "data-parallel gradient sync",
    }
    return f"{labels[worst]} ({100 * overhead[worst] / total:.0f}% of step)"


# --------------------------------------------------------------------- one layout (report)


@dataclass(frozen=True)
class ResolvedLayout:
    """A layout with every degree decided and the problems found while deciding."""

    tp: int
    pp: int
    dp: int
    ep: int
    zero_stage: int
    shard: int
    micro_batch: int
    v: int
    schedule: str
    sequence_parallel: bool
    recompute: str
    gradient_accumulation_steps: int
    problems: tuple[str, ...]

    @property
    def gpus(self) -> int:
        return self.tp * self.pp * self.dp

    def as_arrays(self) -> Layouts:
        def i(x: int) -> npt.NDArray[np.int64]:
            return np.array([x], dtype=np.int64)

        rc = RECOMPUTE_CODES.index(self.recompute) if self.recompute in RECOMPUTE_CODES else 1
        return Layouts(
            tp=i(self.tp),
            pp=i(self.pp),
            dp=i(self.dp),
            ep=i(self.ep),
            zero=i(self.zero_stage),
            shard=i(self.shard),
            micro_batch=i(self.micro_batch),
            v=i(self.v),
            gpipe=np.array([self.schedule == "gpipe"]),
            sp=np.array([self.sequence_parallel]),
            recompute=i(rc),
        )


def resolve_layout(
    inputs: ParallelInputs, num_gpus: int, micro_batch: int, recompute: str, layers: int
) -> ResolvedLayout:
    """Decide dp, ZeRO stage, shard group, v and accumulation steps; list inconsistencies."""
    problems: list[str] = []
    tp, pp = inputs.tp, inputs.pp
    if inputs.dp is not None:
        dp = inputs.dp
        if dp * tp * pp != num_gpus:
            problems.append(
                f"dp·tp·pp = {dp}·{tp}·{pp} = {dp * tp * pp} GPUs, not the scenario's {num_gpus}"
            )
    else:
        dp = max(1, num_gpus // (tp * pp))
        if num_gpus % (tp * pp):
            problems.append(f"{num_gpus} GPUs are not a multiple of tp·pp = {tp * pp}")
    zero: int = inputs.zero_stage
    shard = dp
    if inputs.fsdp_strategy is not None:
        zero = FSDP_TO_ZERO[inputs.fsdp_strategy]
        if inputs.fsdp_strategy == "HYBRID_SHARD":
            in_node = max(1, inputs.gpus_per_node // tp)
            shard = math.gcd(dp, in_node)
    ep = inputs.expert_parallel
    if dp % ep:
        problems.append(f"expert parallel {ep} does not divide dp = {dp}")
    per_step = dp * micro_batch
    accumulation = max(1, math.ceil(inputs.global_batch / per_step))
    if inputs.global_batch % per_step:
        problems.append(
            f"global batch {inputs.global_batch} is not a multiple of dp·micro-batch = {per_step}"
        )
    v = inputs.interleave_chunks if inputs.schedule == "interleaved" else 1
    if pp > layers:
        problems.append(f"pp = {pp} exceeds the model's {layers} layers")
    elif layers % (pp * v):
        problems.append(f"{layers} layers do not split evenly into pp·v = {pp * v} chunks")
    if v > 1 and accumulation % pp:
        problems.append(
            f"the interleaved schedule needs micro-batches ({accumulation}) to be a multiple "
            f"of pp = {pp} (Megatron-LM)"
        )
    if inputs.sequence_parallel and tp == 1:
        problems.append("sequence parallelism has no effect with tp = 1")
    return ResolvedLayout(
        tp=tp,
        pp=pp,
        dp=dp,
        ep=ep,
        zero_stage=zero,
        shard=shard,
        micro_batch=micro_batch,
        v=v,
        schedule=inputs.schedule,
        sequence_parallel=inputs.sequence_parallel,
        recompute=recompute,
        gradient_accumulation_steps=accumulation,
        problems=tuple(problems),
    )


class ParallelismReport(BaseModel):
    """The parallelism section: layout, bubble, communication, step time, MFU, memory."""

    model_config = ConfigDict(frozen=True)

    gpus: int
    nodes: int
    gpus_per_node: int
    dp: int
    tp: int
    pp: int
    ep: int
    zero_stage: int
    fsdp_strategy: str | None
    sequence_parallel: bool
    schedule: str
    interleave_chunks: int
    micro_batch: int
    global_batch: int
    gradient_accumulation_steps: int
    bubble_fraction: float
    step_seconds: float
    tokens_per_s: float
    mfu: float
    hfu: float
    comm_bytes_per_step: float
    comm_bytes_breakdown: dict[str, float]
    time_breakdown_seconds: dict[str, float]
    links: dict[str, str]
    bottleneck: str
    peak_bytes: float | None
    fits: bool | None
    zero3_gathered_bytes: float
    gpus_per_instance: int | None
    """Fewest GPUs (a power of two) on which one model instance fits in some layout."""
    problems: list[str]

    def figures(self) -> list[Figure]:
        nar = "Narayanan et al. 2021, arXiv:2104.04473"

        def fig(key: str, label: str, unit: Unit, formula: str = "", source: str = "") -> Figure:
            return Figure(
                key=key,
                label=label,
                value=getattr(self, key),
                unit=unit,
                formula=formula,
                source=source,
            )

        f = [
            Figure(
                key="layout",
                label="Layout (dp × tp × pp)",
                value=f"{self.dp} × {self.tp} × {self.pp} = {self.gpus} GPUs on {self.nodes} nodes",
                unit="text",
                formula="dp · tp · pp = GPUs",
            ),
            fig(
                "zero_stage",
                "ZeRO stage",
                "count",
                source="Rajbhandari et al. 2019, arXiv:1910.02054",
            ),
            fig(
                "gradient_accumulation_steps",
                "Micro-batches per step",
                "count",
                "m = global batch ÷ (dp · micro-batch)",
            ),
            fig(
                "bubble_fraction",
                "Pipeline bubble",
                "percent",
                "(p − 1) ÷ (v · m) of the ideal compute time",
                f"{nar} section 2.2",
            ),
            fig(
                "comm_bytes_per_step",
                "Communication per GPU per step",
                "bytes",
                "TP all-reduces + pipeline p2p + MoE all-to-all + DP/ZeRO collectives",
                "Shoeybi 2019 §3; Narayanan 2021 §4.1; Rajbhandari 2019 §7",
            ),
            fig(
                "step_seconds",
                "Step time",
                "seconds",
                "(m + (p−1)/v)·(compute + TP + p2p + all-to-all) + exposed DP",
                f"{nar} section 2.2; overlap model in core.comm",
            ),
            fig(
                "tokens_per_s",
                "Throughput",
                "tokens/s",
                "global batch · sequence length ÷ step time",
            ),
            fig(
                "mfu",
                "MFU",
                "percent",
                "(6N + 12·L·H·Q·T) · tokens/s ÷ (GPUs · peak)",
                "Chowdhery et al. 2022 (PaLM) Appendix B",
            ),
            fig(
                "hfu",
                "HFU (with recomputation)",
                "percent",
                "hardware FLOPs · tokens/s ÷ (GPUs · peak)",
                "Korthikanti et al. 2022, arXiv:2205.05198 section 6",
            ),
            fig("bottleneck", "Bottleneck", "text"),
        ]
        f.extend(
            Figure(
                key=f"time_{part}",
                label=f"  time: {part.replace('_', ' ')}",
                value=seconds,
                unit="seconds",
            )
            for part, seconds in self.time_breakdown_seconds.items()
        )
        if self.zero_stage >= 3:
            f.append(
                fig(
                    "zero3_gathered_bytes",
                    "ZeRO-3 gathered parameters",
                    "bytes",
                    "2 blocks (current + prefetched) × block params ÷ tp × bytes/param",
                )
            )
        if self.gpus_per_instance is not None:
            f.append(
                fig(
                    "gpus_per_instance",
                    "Fewest GPUs for one instance",
                    "count",
                    "smallest power of two with a fitting layout (search)",
                )
            )
        if self.peak_bytes is not None:
            f.append(
                fig(
                    "peak_bytes",
                    "Peak memory per GPU",
                    "bytes",
                    "training estimator at this layout",
                )
            )
        f.extend(
            Figure(key="problem", label="Problem", value=p, unit="text") for p in self.problems
        )
        return f


def _num(x: float) -> float:
    """A JSON-safe float (no NaN/inf)."""
    return float(x) if math.isfinite(x) else 0.0


def parallelism_report(
    arch: Architecture,
    gpu: GPU,
    num_gpus: int,
    inputs: ParallelInputs,
    training_inputs: TrainingInputs,
    *,
    params_override: float | None = None,
    compute_dtype: str = "bf16",
) -> ParallelismReport:
    """Price the scenario's layout; per-GPU memory from the training estimator."""
    lay = resolve_layout(
        inputs,
        num_gpus,
        int(training_inputs.micro_batch),
        str(training_inputs.recompute),
        arch.layers,
    )
    params = params_override or float(_count_parameters(arch).total)
    work = workload_of(
        arch,
        int(training_inputs.seq_len),
        inputs.global_batch,
        params,
        None,
        training_inputs=training_inputs,
    )
    cluster = cluster_of(gpu, inputs, compute_dtype)
    recipe = memory_recipe(arch, training_inputs, gpu, params)
    out = {
        k: float(v[0]) for k, v in evaluate_layouts(work, cluster, lay.as_arrays(), recipe).items()
    }
    problems = list(lay.problems)
    exact = training_memory(arch, gpu, lay, training_inputs, params_override=params_override)
    peak = float(exact.peak_bytes)
    fits = peak <= gpu.memory_bytes
    g = inputs.gpus_per_node
    links = {
        "tensor_parallel": _link_name(comm.crosses_nodes(1, lay.tp, g)),
        "data_parallel": _link_name(comm.crosses_nodes(lay.tp, lay.dp, g)),
        "pipeline": _link_name(comm.crosses_nodes(lay.tp * lay.dp, lay.pp, g)),
    }
    return ParallelismReport(
        gpus=lay.gpus,
        nodes=math.ceil(lay.gpus / g),
        gpus_per_node=g,
        dp=lay.dp,
        tp=lay.tp,
        pp=lay.pp,
        ep=lay.ep,
        zero_stage=lay.zero_stage,
        fsdp_strategy=inputs.fsdp_strategy,
        sequence_parallel=lay.sequence_parallel,
        schedule=lay.schedule,
        interleave_chunks=lay.v,
        micro_batch=lay.micro_batch,
        global_batch=inputs.global_batch,
        gradient_accumulation_steps=lay.gradient_accumulation_steps,
        bubble_fraction=_num(out["bubble_fraction"]),
        step_seconds=_num(out["step_seconds"]),
        tokens_per_s=_num(out["tokens_per_s"]),
        mfu=_num(out["mfu"]),
        hfu=_num(out["hfu"]),
        comm_bytes_per_step=_num(out["comm_bytes_per_step"]),
        comm_bytes_breakdown={
            "tensor_parallel": _num(out["comm_tp_bytes"]),
            "pipeline_p2p": _num(out["comm_pp_bytes"]),
            "expert_all_to_all": _num(out["comm_ep_bytes"]),
            "data_parallel": _num(out["comm_dp_bytes"]),
        },
        time_breakdown_seconds={p: _num(out[f"time_{p}"]) for p in TIME_PARTS},
        links=links,
        bottleneck=bottleneck_of(out),
        peak_bytes=peak,
        fits=fits,
        zero3_gathered_bytes=_num(out["zero3_gathered_bytes"]),
        gpus_per_instance=_gpus_per_instance(
            arch, gpu, inputs, training_inputs, params_override=params_override
        ),
        problems=problems,
    )


def training_layout_kwargs(lay: ResolvedLayout) -> dict[str, Any]:
    """Keyword arguments of ``estimate_training`` for a resolved layout: the ZeRO stage
    (FSDP names mapped), the shard group as dp (HYBRID_SHARD shards inside a node only),
    the micro-batches in flight of the schedule (None: the estimator's 1F1B default) and
    the expert-parallel degree ep (routed experts ÷ ep, ZeRO-sharded over dp/ep)."""
    return {
        "tp": lay.tp,
        "pp": lay.pp,
        "dp": lay.shard,
        "zero_stage": lay.zero_stage,
        "sequence_parallel": lay.sequence_parallel,
        "microbatches_in_flight": _in_flight_for(lay),
        "last_stage_microbatches_in_flight": int(
            training_in_flight_last(
                lay.pp, lay.gradient_accumulation_steps, lay.schedule == "gpipe", lay.v
            )
        ),
        "ep": lay.ep,
    }


def scenario_layout(scenario: Any) -> ResolvedLayout:
    """The scenario's resolved layout (what the training section should pass on)."""
    return resolve_layout(
        scenario.parallelism,
        scenario.num_gpus,
        int(scenario.training.micro_batch),
        str(scenario.training.recompute),
        scenario.model.architecture.layers,
    )


def training_memory(
    arch: Architecture,
    gpu: GPU,
    lay: ResolvedLayout,
    training_inputs: TrainingInputs,
    *,
    params_override: float | None = None,
) -> TrainingReport:
    """The training estimator's report for this layout."""
    return estimate_training(
        arch, training_inputs, gpu, params_override=params_override, **training_layout_kwargs(lay)
    )


def _gpus_per_instance(
    arch: Architecture,
    gpu: GPU,
    inputs: ParallelInputs,
    training_inputs: TrainingInputs,
    *,
    params_override: float | None,
) -> int | None:
    """:func:`llm_planner.core.search.min_gpus_per_instance` for the report (feeds compute)."""
    from llm_planner.core.search import min_gpus_per_instance

    return min_gpus_per_instance(
        arch, gpu, inputs, training_inputs, params_override=params_override, max_gpus=1 << 16
    )


def _link_name(crosses: bool) -> str:
    return "inter-node" if crosses else "intra-node"


@cache
def hardware_flops_factors(
    arch: Architecture, training_inputs: TrainingInputs, model_flops: float
) -> tuple[float, float, float]:
    """Hardware ÷ model FLOPs for each policy of RECOMPUTE_CODES, relative to
    ``model_flops`` per token (this module's MFU count, :func:`model_flops_per_token`):
    :func:`llm_planner.core.training.hardware_flops_factor`, the one definition."""
    ti = training_inputs
    values = [
        hardware_flops_factor(arch, ti.model_copy(update={"recompute": rc}), model_flops)
        for rc in RECOMPUTE_CODES
    ]
    return (values[0], values[1], values[2])


# --------------------------------------------------------------------- GUI series


def zero_stage_comparison(
    arch: Architecture,
    training_inputs: TrainingInputs,
    gpu: GPU,
    inputs: ParallelInputs,
    num_gpus: int,
    *,
    params_override: float | None = None,
) -> list[dict[str, float]]:
    """Per-GPU memory components for ZeRO stages 0-3 at the scenario's tp/pp/dp, from the
    training estimator (one source of truth)."""
    lay = resolve_layout(
        inputs,
        num_gpus,
        int(training_inputs.micro_batch),
        str(training_inputs.recompute),
        arch.layers,
    )
    rows: list[dict[str, float]] = []
    for stage in range(4):
        rep = training_memory(
            arch,
            gpu,
            replace(lay, zero_stage=stage),
            training_inputs,
            params_override=params_override,
        )
        rows.append(
            {
                "zero_stage": float(stage),
                "weights_bytes": float(rep.weights_bytes),
                "gradients_bytes": float(rep.gradients_bytes),
                "optimizer_bytes": float(rep.optimizer_bytes),
                "activations_bytes": float(rep.activations_bytes),
                "temporary_bytes": float(rep.temporary_bytes),
                "overhead_bytes": float(rep.overhead_bytes),
                "peak_bytes": float(rep.peak_bytes),
            }
        )
    return rows


def _in_flight_for(lay: ResolvedLayout) -> int | None:
    """The training estimator's ``microbatches_in_flight`` for a layout (None: its default)."""
    m = lay.gradient_accumulation_steps
    value = float(training_in_flight(lay.pp, m, lay.schedule == "gpipe", lay.v))
    return int(value) if value > 0 else None


PipelineEvent = tuple[int, int, float, float, str]
"""(stage, micro-batch, start, end, "forward" | "backward"), times in forward-pass units."""


def pipeline_timeline(
    pp: int,
    microbatches: int,
    schedule: str = "1f1b",
    v: int = 1,
    *,
    forward_time: float = 1.0,
    backward_time: float = 2.0,
) -> list[PipelineEvent]:
    """The pipeline schedule as events for drawing, by list scheduling of its dependencies.

    Forward of micro-batch i on (virtual) stage k waits for stage k−1's forward; its
    backward waits for stage k+1's backward (or its own forward on the last stage). GPipe
    runs every forward first (Huang et al. 2019); 1F1B starts p − s forwards on stage s and
    then alternates one forward, one backward (Narayanan et al. 2021 section 2.2.1);
    interleaved splits each stage into v chunks (device d holds chunks d, d+p, ...), each
    1/v of the time, with Megatron-LM's warm-up of 2·(p − d − 1) + (v − 1)·p chunk-forwards
    (section 2.2.2). Makespan of GPipe and 1F1B: (m + p − 1)·(t_f + t_b).
    """
    if pp < 1 or microbatches < 1 or v < 1:
        raise ValueError("pp, microbatches and v must be at least 1")
    v = v if schedule == "interleaved" else 1
    chunks = pp * v
    tf, tb = forward_time / v, backward_time / v
    fwd_done: dict[tuple[int, int], float] = {}
    bwd_done: dict[tuple[int, int], float] = {}
    events: list[PipelineEvent] = []
    free = [0.0] * pp
    order = _device_orders(pp, microbatches, schedule, v)
    nxt = [0] * pp
    remaining = sum(len(ops) for ops in order)
    while remaining:
        # list scheduling: among the devices' next ops, the one that can start earliest runs
        best: tuple[float, int] | None = None
        for d in range(pp):
            if nxt[d] == len(order[d]):
                continue
            kind, k, i = order[d][nxt[d]]
            if kind == "forward":
                ready = 0.0 if k == 0 else fwd_done.get((k - 1, i), math.inf)
            elif k == chunks - 1:
                ready = fwd_done.get((k, i), math.inf)
            else:
                ready = bwd_done.get((k + 1, i), math.inf)
            start = max(ready, free[d])
            if math.isfinite(start) and (best is None or (start, d) < best):
                best = (start, d)
        if best is None:
            raise RuntimeError("pipeline schedule deadlocked")  # pragma: no cover
        start, d = best
        kind, k, i = order[d][nxt[d]]
        end = start + (tf if kind == "forward" else tb)
        free[d] = end
        (fwd_done if kind == "forward" else bwd_done)[(k, i)] = end
        events.append((d, i, start, end, kind))
        nxt[d] += 1
        remaining -= 1
    events.sort(key=lambda e: (e[0], e[2]))
    return events


def _device_orders(
    pp: int, microbatches: int, schedule: str, v: int
) -> list[list[tuple[str, int, int]]]:
    """Each device's ops in issue order: (kind, virtual stage, micro-batch)."""
    fwd_queue: list[list[tuple[int, int]]] = [[] for _ in range(pp)]
    bwd_queue: list[list[tuple[int, int]]] = [[] for _ in range(pp)]
    group = pp if v > 1 else microbatches  # Megatron issues interleaved chunks p at a time
    for d in range(pp):
        for start in range(0, microbatches, group):
            block = range(start, min(start + group, microbatches))
            for c in range(v):
                fwd_queue[d].extend((c * pp + d, i) for i in block)
            for c in reversed(range(v)):
                bwd_queue[d].extend((c * pp + d, i) for i in block)
    order: list[list[tuple[str, int, int]]] = []
    for d in range(pp):
        n = len(fwd_queue[d])
        if schedule == "gpipe":
            warmup = n
        elif v > 1:
            warmup = min(n, 2 * (pp - d - 1) + (v - 1) * pp)
        else:
            warmup = min(n, pp - d - 1)
        ops = [("forward", *fwd_queue[d][j]) for j in range(warmup)]
        for j in range(warmup, n):  # steady state: one forward, one backward
            ops.append(("forward", *fwd_queue[d][j]))
            ops.append(("backward", *bwd_queue[d][j - warmup]))
        ops.extend(("backward", *bwd_queue[d][j]) for j in range(n - warmup, n))
        order.append(ops)
    return order
