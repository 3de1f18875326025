"""Step time of many layouts at once: compute, memory-bound kernels, exposed communication
per kind, pipeline bubble, optimizer step; tokens/s, MFU and HFU."""

from __future__ import annotations

import numpy as np

from llm_planner.core.quantities import comm
from llm_planner.core.sections.parallelism.layout import Layouts
from llm_planner.core.sections.parallelism.memory import MemoryRecipe, memory_screen
from llm_planner.core.sections.parallelism.schedule import FloatArray
from llm_planner.core.sections.parallelism.workload import (
    Cluster,
    Workload,
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

    tokens/s = global batch · s ÷ step; MFU = the estimate's model FLOPs/token (6·P, or with
    attention: :func:`llm_planner.core.quantities.flops.mfu_flops_per_token`) · tokens/s ÷
    (GPUs · peak); HFU = the FLOPs executed (matmuls, attention, recomputation) ÷ peak
    (Korthikanti et al. 2022 section 6; Chowdhery et al. 2022 Appendix B).
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
    mfu = work.mfu_flops_per_token * tokens_per_s / (gpus * peak)
    hfu = work.model_flops_per_token * hw_factor * tokens_per_s / (gpus * peak)

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
        out.update(memory_screen(work, lay, recipe, m=m))
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
