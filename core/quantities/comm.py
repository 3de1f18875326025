"""Communication volumes, link placement and step time of a 3D-parallel layout (vectorised).

Every function here takes numpy arrays (or scalars) of layout degrees, so one call prices
one layout for the report or a million for the search: the report and the search use the
same arithmetic. Bytes are per GPU per optimizer step unless a name says otherwise.

Rank placement follows Megatron-LM's default order (tensor fastest, then data, then
pipeline): a tensor-parallel group is ``tp`` consecutive GPUs, a data-parallel group has
stride ``tp``, a pipeline group stride ``tp·dp``. A group stays on the intra-node link
(NVLink/xGMI) when it fits inside one node, otherwise it crosses the inter-node network.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

# --------------------------------------------------------------------- editable constants

NETWORK_BYTES_PER_S_PER_GPU = 50e9
"""Scale-out network per GPU, one direction, when the GPU's catalog entry names none: one
400 Gb/s InfiniBand NDR NIC per GPU (DGX H100 / Meta's Llama-3 clusters) = 50e9 bytes/s."""

INTER_NODE_BANDWIDTH_BYTES_PER_S_PER_NODE = 8 * NETWORK_BYTES_PER_S_PER_GPU
"""Inter-node network of an 8-GPU node, one direction: 8 × 400 Gb/s = 3.2 Tb/s = 400e9
bytes/s (the per-node input's default is the GPU's NIC share × GPUs per node:
:func:`.workload.network_bytes_per_s_per_node`)."""

INTRA_NODE_ACHIEVED_FRACTION = 0.80
"""Share of the intra-node link's per-direction bandwidth a large NCCL collective reaches
(NCCL all-reduce bus bandwidth on 8×H100 NVLink 4 is reported around 360-370 of 450 GB/s
per direction in nccl-tests). Editable assumption."""

INTER_NODE_ACHIEVED_FRACTION = 0.80
"""Share of the inter-node network's line rate a large collective reaches (protocol and
congestion losses on a fat-tree InfiniBand fabric). Editable assumption."""

KERNEL_EFFICIENCY = 0.70
"""Fraction of the GPU's dense peak the training kernels reach while computing (large
bf16 GEMMs reach ~70-80% of peak on H100; attention, norms and elementwise kernels less).
Multiplies peak FLOP/s before bubbles and exposed communication. Editable assumption."""

DP_OVERLAP_FRACTION = 0.90
"""Share of the backward compute that can hide data-parallel gradient traffic (bucketed
reduce-scatter/all-reduce issued while later layers' gradients are still being computed,
Li et al. 2020, PyTorch DDP, arXiv:2006.15704 section 3.2.3). Editable assumption."""

TP_OVERLAP_FRACTION = 0.0
"""Share of tensor-parallel all-reduce time hidden behind compute. Megatron-LM's default
(no userbuffer overlap) exposes it fully: 0. Editable assumption."""

COMM_BYTES_PER_ELEMENT = 2.0
"""Activations and gradients travel in 16-bit (bf16/fp16) in every collective modelled."""

BACKWARD_SHARE = 2.0 / 3.0
"""Backward pass share of one micro-batch's compute: backward costs twice the forward
(Kaplan et al. 2020 section 2.1; the 2PD + 4PD split of C ≈ 6PD)."""

MEMORY_BANDWIDTH_ACHIEVED_FRACTION = 0.80
"""Share of the GPU's HBM bandwidth (``GPU.memory_bandwidth_bytes_per_s``) the element-wise
and normalisation kernels of training reach. A STREAM-like copy/triad kernel on an H100 SXM
sustains about 3.0-3.1 of its 3.35 TB/s (~90%); framework kernels (norms with a reduction,
short launches between GEMMs) reach less, hence 0.80. Chosen from that ceiling, not fitted
to the validation runs. Editable assumption."""

ELEMENTWISE_PASSES_FORWARD = 2.0
"""HBM passes over a non-GEMM kernel's output in the forward pass: it reads its input (about
the size of its output) and writes its output (Ivanov et al. 2021, "Data Movement Is All
You Need", MLSys, arXiv:2007.00072, section 3: element-wise and normalisation operators
move O(1) bytes per FLOP, so their time is bytes ÷ bandwidth)."""

ELEMENTWISE_PASSES_BACKWARD = 3.0
"""HBM passes over that output in the backward pass: read the incoming gradient, read the
saved tensor, write the outgoing gradient (same source)."""


# --------------------------------------------------------------------- formulas


def ring_all_reduce_bytes(n: npt.ArrayLike, message_bytes: npt.ArrayLike) -> FloatArray:
    """Bytes each rank sends in a ring all-reduce of ``message_bytes`` over ``n`` ranks.

    2·(n−1)/n · S: a reduce-scatter then an all-gather, each (n−1)/n · S (Patarasuk & Yuan
    2009; Rajbhandari et al. 2019, arXiv:1910.02054 section 7.1). 0 when n = 1.
    """
    n_ = np.asarray(n, dtype=np.float64)
    return np.asarray(2.0 * (n_ - 1.0) / n_ * np.asarray(message_bytes, dtype=np.float64))


def ring_gather_bytes(n: npt.ArrayLike, message_bytes: npt.ArrayLike) -> FloatArray:
    """Bytes each rank sends in a ring all-gather or reduce-scatter: (n−1)/n · S."""
    n_ = np.asarray(n, dtype=np.float64)
    return np.asarray((n_ - 1.0) / n_ * np.asarray(message_bytes, dtype=np.float64))


def data_parallel_bytes(
    zero_stage: npt.ArrayLike,
    dp: npt.ArrayLike,
    grad_bytes: npt.ArrayLike,
    param_bytes: npt.ArrayLike,
    microbatches: npt.ArrayLike,
) -> FloatArray:
    """Data-parallel bytes sent per GPU per step, by ZeRO stage (ring collectives).

    ``grad_bytes`` / ``param_bytes``: this GPU's model shard (after tp/pp) in 16 bits.
    Stage 0 (DDP): one all-reduce of the gradients per step, 2·(n−1)/n·Ψ.
    Stage 1: reduce-scatter of gradients + all-gather of updated parameters: same 2·(n−1)/n·Ψ
    (Rajbhandari et al. 2019, section 7.2.1). Stage 2: gradients are kept sharded, so each
    micro-batch's gradients are reduce-scattered ((n−1)/n·Ψ per micro-batch) plus one
    parameter all-gather: with one micro-batch exactly the 2Ψ of the paper. Stage 3:
    parameters all-gathered before each micro-batch's forward and again for its backward,
    gradients reduce-scattered: 3·(n−1)/n·Ψ per micro-batch, i.e. 1.5× DDP with one
    micro-batch (section 7.2.2). Assumes no parameter caching across micro-batches (the
    DeepSpeed / FSDP default).
    """
    z = np.asarray(zero_stage)
    m = np.asarray(microbatches, dtype=np.float64)
    g = np.asarray(grad_bytes, dtype=np.float64)
    p = np.asarray(param_bytes, dtype=np.float64)
    ddp = ring_all_reduce_bytes(dp, g)
    zero1 = ring_gather_bytes(dp, g) + ring_gather_bytes(dp, p)
    zero2 = m * ring_gather_bytes(dp, g) + ring_gather_bytes(dp, p)
    zero3 = m * (ring_gather_bytes(dp, g) + 2.0 * ring_gather_bytes(dp, p))
    return np.asarray(
        np.where(z == 0, ddp, np.where(z == 1, zero1, np.where(z == 2, zero2, zero3)))
    )


def tensor_parallel_bytes_per_layer(
    tp: npt.ArrayLike,
    tokens: npt.ArrayLike,
    hidden: float,
    full_recompute: npt.ArrayLike = False,
    regathers: npt.ArrayLike = False,
) -> FloatArray:
    """Tensor-parallel bytes sent per GPU per layer per micro-batch.

    Megatron (Shoeybi et al. 2019, arXiv:1909.08053 section 3, Figure 4): each transformer
    layer does 2 all-reduces in the forward pass (after attention and after the MLP) and 2
    in the backward, each of the s·b·h activation; full recomputation replays the forward:
    2 more (``full_recompute`` may be the share of layers replayed). With sequence
    parallelism each all-reduce becomes an all-gather plus a
    reduce-scatter of the same total volume (Korthikanti et al. 2022, arXiv:2205.05198
    section 4.2.2), so the bytes are the same. ``tokens`` = s·b. ``regathers`` (sequence
    parallelism only): the two column-parallel linears all-gather their input again in the
    backward (nanotron's ``tp_recompute_allgather``, huggingface/nanotron@2411b022
    src/nanotron/parallel/tensor_parallel/functional.py
    ``_ColumnLinearNoAsyncCommunicationReduceScatterMode.backward``): two all-gathers of
    s·b·h, the bytes of one more all-reduce.
    """
    tp_ = np.asarray(tp, dtype=np.float64)
    count = 4.0 + 2.0 * np.asarray(full_recompute, dtype=np.float64)  # a share replays part
    count = count + np.where(np.asarray(regathers, dtype=bool), 1.0, 0.0)
    message = np.asarray(tokens, dtype=np.float64) * hidden * COMM_BYTES_PER_ELEMENT
    return np.asarray(count * ring_all_reduce_bytes(tp_, message))


def pipeline_p2p_bytes_per_microbatch(
    pp: npt.ArrayLike, tp: npt.ArrayLike, tokens: npt.ArrayLike, hidden: float, v: npt.ArrayLike
) -> FloatArray:
    """Pipeline point-to-point bytes sent per GPU per micro-batch.

    Each stage boundary carries the s·b·h activation forward and its gradient backward;
    with Megatron's scatter/gather optimisation each tensor-parallel rank sends 1/t of it
    (Narayanan et al. 2021, arXiv:2104.04473 section 4.1). An interleaved schedule with v
    chunks crosses v times as many boundaries (section 2.2.2). 0 when pp = 1.
    """
    pp_ = np.asarray(pp, dtype=np.float64)
    message = np.asarray(tokens, dtype=np.float64) * hidden * COMM_BYTES_PER_ELEMENT
    per = 2.0 * np.asarray(v, dtype=np.float64) * message / np.asarray(tp, dtype=np.float64)
    return np.asarray(np.where(pp_ > 1, per, 0.0))


def moe_all_to_all_bytes_per_layer(
    ep: npt.ArrayLike, tp: npt.ArrayLike, tokens: npt.ArrayLike, hidden: float, top_k: int
) -> FloatArray:
    """Expert-parallel all-to-all bytes sent per GPU per MoE layer per micro-batch.

    Tokens are dispatched to their top-k experts and the results combined back: two
    all-to-alls forward, two backward, each moving k·s·b·h elements of which (e−1)/e leave
    the GPU (GShard, Lepikhin et al. 2020, arXiv:2006.16668 section 3.2). Tokens are split
    over the tensor-parallel ranks (sequence-parallel style dispatch). 0 when ep = 1.
    """
    ep_ = np.asarray(ep, dtype=np.float64)
    elements = top_k * np.asarray(tokens, dtype=np.float64) * hidden
    message = elements * COMM_BYTES_PER_ELEMENT / np.asarray(tp, dtype=np.float64)
    return np.asarray(4.0 * ring_gather_bytes(ep_, message))


def pipeline_bubble_fraction(
    pp: npt.ArrayLike, microbatches: npt.ArrayLike, v: npt.ArrayLike = 1
) -> FloatArray:
    """Pipeline bubble as a share of the pipeline's time: (p−1) ÷ (v·m + p − 1), in [0, 1).

    Narayanan et al. 2021 (arXiv:2104.04473 section 2.2, equations (1) and (2)) give the
    bubble relative to the ideal compute time, (p−1)/(v·m) for GPipe and 1F1B with v model
    chunks per GPU; that ratio exceeds 1 when m < p − 1. With the ideal time m·t and the
    bubble (p−1)·t/v, the bubble's share of the whole (ideal + bubble) is
    ((p−1)/v) ÷ (m + (p−1)/v) = (p−1) ÷ (v·m + p − 1): the idle share of every stage,
    the figure a user reads as "x% of the step". Equal to Narayanan's ratio ÷ (1 + ratio).
    """
    p = np.asarray(pp, dtype=np.float64)
    m = np.asarray(microbatches, dtype=np.float64)
    idle = p - 1.0
    return np.asarray(idle / (np.asarray(v, dtype=np.float64) * m + idle))


@dataclass(frozen=True)
class Links:
    """Achieved bandwidths (bytes/s, one direction) of the two kinds of link, per GPU."""

    gpus_per_node: int
    intra_bytes_per_s: float
    """Intra-node link per GPU × its achieved fraction."""
    inter_bytes_per_s_per_node: float
    """Inter-node network per node × its achieved fraction."""

    def group_bandwidth(
        self, stride: npt.ArrayLike, size: npt.ArrayLike, hierarchical: bool = True
    ) -> FloatArray:
        """Bandwidth per rank of a collective over ``size`` ranks spaced ``stride`` apart.

        Inside one node (stride·size ≤ GPUs per node): the intra-node link. Across nodes,
        every GPU of a node drives its share of the node's network (all groups of a kind
        communicate at once); a ring with k members per node crosses each node boundary
        once per k ranks (NCCL's hierarchical rings), so it gets k × that share, capped by
        the intra-node link. ``hierarchical=False`` (point-to-point, all-to-all): k = 1.
        """
        s = np.asarray(stride, dtype=np.float64)
        n = np.asarray(size, dtype=np.float64)
        g = float(self.gpus_per_node)
        inside = s * n <= g
        k = np.clip(np.floor(g / s), 1.0, n) if hierarchical else np.ones_like(s * n)
        across = np.minimum(self.intra_bytes_per_s, k * self.inter_bytes_per_s_per_node / g)
        return np.asarray(np.where(inside, self.intra_bytes_per_s, across))


def crosses_nodes(stride: int, size: int, gpus_per_node: int) -> bool:
    """Whether a group of ``size`` ranks spaced ``stride`` apart spans more than one node."""
    return size > 1 and stride * size > gpus_per_node


# --------------------------------------------------------------------- latency (NCCL's model)

NCCL_BASE_LATENCY_SECONDS = 8.4e-6
"""Fixed start-up latency of one NCCL collective, Simple protocol (ring and tree): NCCL's
tuning model, ``baseLatencies`` in src/graph/tuning.cc (NVIDIA/nccl@5067397c): 8.4 µs."""

NVLINK_STEP_LATENCY_SECONDS = 3.4e-6
"""Per-step latency of a ring step over NVLink, Simple protocol (``hwLatencies[NVLINK][Ring]
[Simple]`` = 3.4 µs, same file); tree steps inside a node 4.0 µs."""

NETWORK_STEP_LATENCY_SECONDS = 14e-6
"""Per-step latency of a step that crosses the network, Simple protocol
(``hwLatencies[NET][Ring|Tree][Simple]`` = 14 µs, same file). nccl-tests all-reduce of a
few bytes across 2+ InfiniBand nodes measures a few tens of µs, consistent with it."""


def collective_latency_seconds(
    kind: str,
    ranks: npt.ArrayLike,
    nodes: npt.ArrayLike,
    *,
    intra_step: float = NVLINK_STEP_LATENCY_SECONDS,
    inter_step: float = NETWORK_STEP_LATENCY_SECONDS,
    base: float = NCCL_BASE_LATENCY_SECONDS,
) -> FloatArray:
    """Latency term of one collective over ``ranks`` GPUs on ``nodes`` nodes (0 for 1 rank).

    NCCL's tuning model (src/graph/tuning.cc, NVIDIA/nccl@5067397c): base + steps × per-step
    latency. Ring all-reduce has 2(n−1) steps of which 2(nodes−1) cross the network; ring
    all-gather / reduce-scatter n−1, of which nodes−1 cross. Tree all-reduce (NCCL's choice
    for latency-bound all-reduces across nodes) 2·((n/nodes − 1) intra + log2(nodes) inter)
    steps. For an all-reduce NCCL takes the faster algorithm; the bandwidth term is the same
    here for both (NCCL rates the tree's bus bandwidth 0.92 × 0.85 of the ring's on Hopper
    (same file), only worth it when latency dominates, which is when this minimum picks it).
    """
    n = np.asarray(ranks, dtype=np.float64)
    k = np.maximum(np.asarray(nodes, dtype=np.float64), 1.0)
    if kind == "all_reduce":
        steps, inter = 2.0 * (n - 1.0), 2.0 * (k - 1.0)
        ring = (steps - inter) * intra_step + inter * inter_step
        tree = 2.0 * ((n / k - 1.0) * intra_step + np.log2(k) * inter_step)
        lat = np.where(k > 1, np.minimum(ring, tree), ring)
    else:
        steps, inter = n - 1.0, k - 1.0
        lat = (steps - inter) * intra_step + inter * inter_step
    return np.asarray(np.where(n > 1, base + lat, 0.0))


def nodes_spanned(stride: npt.ArrayLike, size: npt.ArrayLike, gpus_per_node: int) -> FloatArray:
    """How many nodes a group of ``size`` ranks spaced ``stride`` apart spans (≥ 1)."""
    s = np.asarray(stride, dtype=np.float64)
    n = np.asarray(size, dtype=np.float64)
    return np.asarray(np.maximum(1.0, np.ceil(s * n / float(gpus_per_node))))


# --------------------------------------------------------------------- kernels

GEMM_TILE_M = 128
"""Rows of a GEMM output tile (see GEMM_TILE_N)."""
GEMM_TILE_N = 256
"""Output tile of a large bf16 cuBLAS/CUTLASS GEMM on Hopper and Ampere (CUTLASS's default
128×256 tensor-core tile for bf16 GEMMs; one thread block per tile, one wave = one block
per SM)."""

STREAMING_MULTIPROCESSORS: dict[str, int] = {
    "h100": 132,
    "h800": 132,
    "h200": 132,
    "gh200": 132,
    "b200": 148,
    "a100": 108,
    "a800": 108,
    "v100": 80,
    "l40": 142,
    "mi300": 304,
}
"""SMs (AMD: compute units) per GPU by catalog-id prefix: H100 SXM 132 (NVIDIA H100
whitepaper), A100 108 (A100 whitepaper), V100 80 (Volta whitepaper), B200 148, L40S 142,
MI300X 304 CUs. Unknown GPUs: 108 (DEFAULT_SMS)."""

DEFAULT_SMS = 108
"""SMs assumed for a GPU not in STREAMING_MULTIPROCESSORS (an A100's)."""

GEMM_RAMP_SECONDS = 4e-6
"""Fixed time of one GEMM kernel beyond its FLOPs at full rate (launch latency on the GPU,
prologue filling the tensor-core pipeline, epilogue): a GEMM of F FLOP reaches
F / (F + peak·efficiency·GEMM_RAMP_SECONDS) of its large-size efficiency. 4 µs: cuBLAS bf16
GEMMs on H100 run at ~60% of their large-size rate at 1-2 GFLOP (e.g. 1024×1024×1024,
~8 µs) and within 10% of it above ~50 GFLOP, as published cuBLAS/CUTLASS size sweeps show
(NVIDIA's 'Matrix Multiplication Background User's Guide', Deep Learning Performance docs:
throughput rises with size until the GPU is filled, then steps down at each partial wave).
Stated assumption from those curves, not fitted here."""

HOST_SECONDS_PER_KERNEL_LAUNCH = 4.25e-5
"""Host (CPU) time per kernel an eager PyTorch training step launches: Python module code,
the autograd engine and the CUDA launch together, per kernel of a transformer layer's
forward, recomputed forward and backward (the kernel counts are
:data:`llm_planner.core.sections.parallelism.step_time_host.LAYER_KERNELS_FORWARD` and its
neighbours, read from Megatron-LM's GPT layer). A micro-batch whose GPU work is shorter
than its launches runs at the host's pace.

FITTED on the vTrain single-node set's hidden-1024 rows (720 Megatron-DeepSpeed runs on
2-8 A100; tests/validation/vtrain.py ``fit_launch``, grid 2e-5 … 6e-5 s by 2.5e-6) and
checked on its hidden-2048 rows, held out; residuals in docs/ACCURACY.md. What it fits:
with micro-batch 1 or 2 those runs take 3.0-3.6 ms per layer per micro-batch at tp 1-4
whatever the hidden size (1024 or 2048) while their GPU work is 0.6-3 ms, i.e. a floor of
≈ 76-82 launches (forward, its replay under full recomputation, backward, the tp
collectives) × 40-45 µs. A bare PyTorch op dispatch is ~5-10 µs (cudaLaunchKernel alone
2-5 µs); the rest is Python and autograd per op, which is why it is measured, not
derived. The stack's own per-layer host time (:attr:`.stacks.StackProfile.
host_seconds_per_layer`, e.g. nanotron's fitted 4.4 ms) is kept where it is larger."""

ATTENTION_EFFICIENCY: dict[str, dict[str, float]] = {
    "fa2": {"hopper": 0.35, "ampere": 0.65, "other": 0.45},
    "fa3": {"hopper": 0.55, "ampere": 0.65, "other": 0.45},
}
"""Share of dense bf16 peak a fused attention kernel reaches, forward + backward, by kernel
class and GPU generation. FlashAttention-2 on A100: 187-225 TFLOP/s fwd+bwd of 312 (Dao
2023, arXiv:2307.08691, section 4.1, Figure 4), ~0.65; on H100 ~335-350 of 989 TFLOP/s
(Shah et al. 2024, FlashAttention-3, arXiv:2407.08608 figures for FA2 on H100), ~0.35;
FlashAttention-3 / cuDNN fused attention on H100 500-600 fwd+bwd (same paper), ~0.55.
Older GPUs (Volta, consumer): 0.45, an assumption."""


def generation_of(gpu_id: str) -> str:
    """'hopper', 'ampere' or 'other' from a catalog id (for ATTENTION_EFFICIENCY)."""
    if gpu_id.startswith(("h100", "h800", "h200", "gh200")):
        return "hopper"
    if gpu_id.startswith(("a100", "a800", "a10", "a40", "a6000")):
        return "ampere"
    return "other"


def sms_of(gpu_id: str) -> int:
    """The SM count of a catalog GPU (:data:`STREAMING_MULTIPROCESSORS`)."""
    for prefix, sms in STREAMING_MULTIPROCESSORS.items():
        if gpu_id.startswith(prefix):
            return sms
    return DEFAULT_SMS


def gemm_efficiency(
    m: npt.ArrayLike,
    n: npt.ArrayLike,
    k: npt.ArrayLike,
    *,
    sms: int,
    large_efficiency: float,
    peak_flops: float,
    ramp_seconds: float = GEMM_RAMP_SECONDS,
    memory_bytes_per_s: float = float("inf"),
    batch: npt.ArrayLike = 1.0,
) -> FloatArray:
    """Achieved share of peak of an M×K · K×N GEMM: large-size efficiency × wave × size,
    capped by the memory roofline.

    - wave quantisation: the output splits into ⌈M/128⌉·⌈N/256⌉ tiles, one per SM per wave;
      a partial last wave leaves SMs idle: tiles ÷ (⌈tiles/SMs⌉ · SMs) (NVIDIA, Matrix
      Multiplication Background User's Guide, 'Wave Quantization');
    - size: F / (F + peak · efficiency · GEMM_RAMP_SECONDS) with F = 2·M·N·K, the fixed
      start-up time of a kernel, which dominates small GEMMs;
    - ``large_efficiency``: what a large GEMM reaches (ParallelInputs.kernel_efficiency);
    - memory roofline: a GEMM cannot run faster than it reads its two operands and writes its
      output once, 2 bytes each: efficiency ≤ F·B ÷ (2·(M·K + K·N + M·N)·peak), B the
      achieved HBM bandwidth (Williams et al. 2009, "Roofline", CACM 52(4)). It binds when
      a dimension is small: a LoRA adapter's rank, an unfused attention's head dimension
      (its scores GEMM has K = d, e.g. 64: ~57 FLOP per byte, under a third of an A100's
      fp16 peak at its 1.6 TB/s achieved), a handful of tokens; never for the weight GEMMs
      of pretraining (hundreds of FLOP per byte). ``memory_bytes_per_s`` infinite: no cap;
    - ``batch``: independent GEMMs of this shape in one batched call (``bmm``): their tiles
      share the waves and each reads its own operands.
    """
    m_ = np.asarray(m, dtype=np.float64)
    n_ = np.asarray(n, dtype=np.float64)
    k_ = np.asarray(k, dtype=np.float64)
    count = np.asarray(batch, dtype=np.float64)
    if m_.size == n_.size == k_.size == count.size == 1:
        one = gemm_efficiency_one(
            float(m_.flat[0]),
            float(n_.flat[0]),
            float(k_.flat[0]),
            float(count.flat[0]),
            sms=sms,
            large_efficiency=large_efficiency,
            peak_flops=peak_flops,
            ramp_seconds=ramp_seconds,
            memory_bytes_per_s=memory_bytes_per_s,
        )
        if one is not None:
            return np.full((1,) * max(m_.ndim, n_.ndim, k_.ndim, count.ndim), one)
    tiles = np.ceil(m_ / GEMM_TILE_M) * np.ceil(n_ / GEMM_TILE_N) * count
    wave = tiles / (np.ceil(tiles / sms) * sms)
    flops = 2.0 * m_ * n_ * k_ * count
    size = flops / (flops + peak_flops * large_efficiency * ramp_seconds)
    efficiency = large_efficiency * wave * size
    if math.isfinite(memory_bytes_per_s):
        moved = COMM_BYTES_PER_ELEMENT * (m_ * k_ + k_ * n_ + m_ * n_) * count
        efficiency = np.minimum(efficiency, flops * memory_bytes_per_s / (moved * peak_flops))
    return np.asarray(efficiency)


def gemm_efficiency_one(
    m: float,
    n: float,
    k: float,
    count: float,
    *,
    sms: int,
    large_efficiency: float,
    peak_flops: float,
    ramp_seconds: float,
    memory_bytes_per_s: float,
) -> float | None:
    """:func:`gemm_efficiency` of one GEMM in Python floats: the same operations in the same
    order (IEEE double either way, so the same value), without a dozen numpy calls on
    length-1 arrays (the scenario's one layout). None where numpy's inf/NaN rules would
    matter (a zero or non-finite size, no SMs): the caller takes the array path."""
    if not (
        sms > 0
        and peak_flops > 0
        and large_efficiency > 0
        and ramp_seconds >= 0
        and all(0 < x < math.inf for x in (m, n, k, count, peak_flops, large_efficiency))
        and not math.isnan(memory_bytes_per_s)
        and memory_bytes_per_s > 0
    ):
        return None
    tiles = float(math.ceil(m / GEMM_TILE_M)) * float(math.ceil(n / GEMM_TILE_N)) * count
    wave = tiles / (float(math.ceil(tiles / sms)) * sms)
    flops = 2.0 * m * n * k * count
    size = flops / (flops + peak_flops * large_efficiency * ramp_seconds)
    efficiency = large_efficiency * wave * size
    if math.isfinite(memory_bytes_per_s):
        moved = COMM_BYTES_PER_ELEMENT * (m * k + k * n + m * n) * count
        efficiency = min(efficiency, flops * memory_bytes_per_s / (moved * peak_flops))
    return efficiency
