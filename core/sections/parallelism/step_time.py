"""Step time of many layouts at once: compute, memory-bound kernels, exposed communication
per kind, pipeline bubble, optimizer step; tokens/s, MFU and HFU."""

from __future__ import annotations

import math

import numpy as np

from llm_planner.core.quantities import activation_offload, comm
from llm_planner.core.quantities.offload import host_link_bytes_per_s
from llm_planner.core.sections.parallelism.layout import (
    COMPUTE_KEY,
    DEGREES_KEY,
    Layouts,
    priced_per_group,
)
from llm_planner.core.sections.parallelism.memory import memory_screen
from llm_planner.core.sections.parallelism.schedule import FloatArray
from llm_planner.core.sections.parallelism.step_time_comm import (
    _context_parallel,
    _data_parallel,
    _pipeline_and_experts,
    _tensor_parallel_latency,
    _tied_embedding_sync_seconds,
)
from llm_planner.core.sections.parallelism.step_time_compute import (
    _chunk_layers,
    _compute_seconds,
    _executed_flops_per_token,
    _fullest_stage,
    _optimizer_step_seconds,
)
from llm_planner.core.sections.parallelism.step_time_host import (
    _host_floor,
    _layer_launches,
    synchronised_micro_batch,
)
from llm_planner.core.sections.parallelism.step_time_inputs import (
    StepInputs,
    mixed_precision_optimizer_extra_bytes,
    step_inputs_of,
)
from llm_planner.core.sections.parallelism.step_time_offload import offload_seconds
from llm_planner.core.sections.parallelism.workload import (
    Cluster,
    Workload,
    full_replay_share,
    layout_hw_factors,
)
from llm_planner.core.sections.training_memory import MemoryTerms

__all__ = [
    "TIME_PARTS",
    "StepInputs",
    "_fullest_stage",
    "_layer_launches",
    "_tensor_parallel_latency",
    "_tied_embedding_sync_seconds",
    "bottleneck_of",
    "evaluate_layouts",
    "microbatches_per_step",
    "mixed_precision_optimizer_extra_bytes",
    "step_inputs_of",
]

TIME_PARTS = (
    "compute",
    "bubble",
    "tensor_parallel",
    "pipeline_p2p",
    "expert_all_to_all",
    "context_parallel",
    "data_parallel",
    "offload",
    "overhead",
)
"""Keys of the step-time breakdown, in display order."""


def _replicas_at_work(
    global_batch: float, dp: FloatArray, b: FloatArray
) -> tuple[FloatArray, FloatArray]:
    """The data-parallel replicas that hold work and each one's micro-batches per step:
    replicas beyond the batch hold no sequence and sit out (at least one micro-batch each);
    m = global batch ÷ (working replicas · micro-batch)."""
    dp_work = np.minimum(dp, np.maximum(1.0, np.floor(global_batch / b)))
    return dp_work, global_batch / (dp_work * b)


def microbatches_per_step(global_batch: float, lay: Layouts) -> FloatArray:
    """Micro-batches per step of each layout, as :func:`evaluate_layouts` counts them."""
    return _replicas_at_work(global_batch, lay.as_float("dp"), lay.as_float("micro_batch"))[1]


def evaluate_layouts(
    work: Workload,
    cluster: Cluster,
    lay: Layouts,
    recipe: MemoryTerms | None = None,
    step_inputs: StepInputs | None = None,
) -> dict[str, FloatArray]:
    """Price every layout: step time and its breakdown, comm bytes, MFU, HFU, memory screen.

    Step-time model (all per GPU, per optimizer step):

    - one micro-batch's GPU work on the fullest stage, t_gpu:
      - GEMMs: each weight GEMM's FLOPs at peak × its own efficiency
        (:func:`.comm.gemm_efficiency`: the large-size kernel efficiency × wave quantisation
        over the SMs × a size term), the attention core at the fused attention kernel's rate
        (:data:`.comm.ATTENTION_EFFICIENCY`), × hardware/model FLOPs of the recompute policy,
        × ⌈L/(p·v)⌉·p·v/L (the fullest stage sets the pace);
      - the memory-bound kernels (norms, activation functions, rotary, softmax/dropout when
        not flash, residual adds): bytes ÷ (HBM bandwidth · MEMORY_BANDWIDTH_ACHIEVED_FRACTION),
        on the same CUDA stream as the GEMMs, so added (Ivanov et al. 2021, arXiv:2007.00072);
      - exposed tensor-parallel time (1 − TP overlap) · (bytes ÷ link + collectives ×
        latency): 4 all-reduces per layer (8 all-gathers/reduce-scatters with sequence
        parallelism), each priced with NCCL's latency model (:func:`.comm.
        collective_latency_seconds`); a TP group larger than a node uses the network as
        NCCL's rings do (:meth:`.comm.Links.group_bandwidth`, hierarchical: each ring
        enters and leaves a node once, its channels spread over the node's NICs, so a rank
        gets up to gpus-per-node × its NIC share, capped by NVLink). The nanotron sweep's
        tp 16 runs without a pipeline bear that out: their time per layer grows by ~1 ms
        per sequence of micro-batch (1B), i.e. ~150-200 GB/s per rank, where one NIC's
        share would be 50 GB/s at most;
      - pipeline point-to-point: bytes ÷ link + 2·v sends × P2P latency (+ a network step
        when stages sit on different nodes), per micro-batch; the MoE all-to-all (4 per MoE
        layer, each on the links its ep group spans, NVLink and network at once, with NCCL's
        latency, × the busiest expert's load: :func:`.moe.all_to_all_seconds`), less the
        share ``ep_overlap`` a schedule hides behind the micro-batch's compute, at most that
        compute (:func:`.step_time_comm._hidden_all_to_all`; DeepSeek-V3's DualPipe,
        arXiv:2412.19437 section 3.2.1; the stack's own default overlap, 0 for Megatron-Core);
    - context parallelism (cp > 1): every per-GPU term above on s·b/cp tokens (each GPU
      holds that share of every sequence; GPUs = tp·cp·pp·dp), plus the K/V ring's time
      left over after the attention kernels it overlaps (:func:`_context_parallel`);
    - the host: a micro-batch cannot finish before the CPU has launched its kernels: the
      larger of ⌈L/(p·v)⌉·v layers × the stack's host seconds per layer and the launch
      floor, (those layers × the kernels each launches + the head's and embedding's) ×
      :data:`.comm.HOST_SECONDS_PER_KERNEL_LAUNCH` (:func:`_launch_seconds`, kernel counts
      read from Megatron-LM's GPT layer): t_mb = max(t_gpu, t_host);
      the difference is reported as ``overhead``. When the pipeline spans nodes
      (p > 1 and t·d·p > GPUs per node) a stack with host-synchronous pipeline sends
      (nanotron) adds tp × its ``pipeline_spanning_nodes_host_seconds_per_layer_per_tp``
      to each layer's floor (:data:`.stacks.PIPELINE_SPANNING_NODES_HOST_SECONDS_PER_LAYER_
      PER_TP_NANOTRON`: measured on the sweep, 0 for the other stacks);
    - pipeline: (m + (p−1)/v) · t_mb (Narayanan et al. 2021 section 2.2: bubble (p−1)/(v·m)
      of the ideal time);
    - data parallel (:func:`_data_parallel`): gradients reduced bucket by bucket (the
      stack's bucket size), each collective latency + bytes ÷ link; the buckets are hidden
      behind DP_OVERLAP × the backward compute (+ the GPU's idle time when the launch floor
      sets the pace) that runs while they are issued (the last
      micro-batch for ZeRO-0/1, every micro-batch's backward for ZeRO-2, every micro-batch
      for ZeRO-3, whose per-layer gathers prefetch one layer ahead) but the last bucket is
      always exposed (it is ready only when the backward ends); ZeRO-1/2's parameter
      all-gather after the optimizer step is exposed; a stack that sums a tied embedding's
      gradient between the first and last stage after the flush (nanotron) adds that
      all-reduce, exposed (:func:`_tied_embedding_sync_seconds`, counted with the data-
      parallel time);
    - the optimizer step, once per step after the last backward: G + 2·O + W bytes per
      parameter this GPU steps, + the mixed-precision optimizer's own passes, ÷ HBM
      bandwidth (:func:`_optimizer_step_seconds`).

    ``step_inputs`` (:func:`step_inputs_of`): unfused attention priced as its batched GEMMs,
    fine-tuning (LoRA, QLoRA) as what it runs (:func:`_compute_seconds`); None: full
    training with fused attention and no optimizer passes beyond Adam's.

    tokens/s = global batch · s ÷ step; MFU = the estimate's model FLOPs/token (6·P, or with
    attention: :func:`llm_planner.core.quantities.flops.mfu_flops_per_token`) · tokens/s ÷
    (GPUs · peak); HFU = the FLOPs executed (matmuls, attention, recomputation) ÷ peak
    (Korthikanti et al. 2022 section 6; Chowdhery et al. 2022 Appendix B).
    """
    si = step_inputs or StepInputs()
    tp = lay.as_float("tp")
    pp = lay.as_float("pp")
    dp = lay.as_float("dp")
    b = lay.as_float("micro_batch")
    v = lay.as_float("v")
    tp_pp = tp * pp
    # replicas beyond the batch hold no sequence and sit out (at least one micro-batch each)
    dp_work, m = _replicas_at_work(work.global_batch, dp, b)
    tokens_mb = work.seq_len * b / lay.as_float("cp")  # this GPU's share of the sequences
    hw_factor = layout_hw_factors(work, lay)
    peak = cluster.peak_flops
    # the slowest stage sets the pace: ceil(L/(p·v)) layers per chunk when L does not split
    balanced = cluster.balance_pipeline_head
    if balanced is None:
        balanced = work.stack.pipeline_balances_head
    fullest_layers, fullest_head = _fullest_stage(work, pp, v, balanced=balanced)
    chunk_layers = _chunk_layers(work, pp, v, fullest_layers)
    stage_layers = chunk_layers * v  # ⌈L/(p·v)⌉·v: the layers one micro-batch runs here
    stage_tokens = tokens_mb * fullest_layers / (work.layers * tp)  # s·b·(layers share) ÷ t
    t_c, t_mem = _compute_seconds(
        work, cluster, lay, stage_tokens, tokens_mb, head_on_stage=fullest_head, step_inputs=si
    )
    off = offload_seconds(work, cluster, lay, si.offload, m=m, t_c=t_c, tp_pp=tp_pp)
    # DeepSpeedCPUAdam steps the offloaded layouts instead of the GPU
    t_opt = off.gpu_optimizer(_optimizer_step_seconds(work, lay, cluster, tp_pp, si))

    tp_priced = priced_per_group(  # reads tp, pp, SP and the policy: once per group
        lay,
        COMPUTE_KEY,
        [tokens_mb, stage_layers],
        lambda g, a: _tensor_parallel(work, cluster, g, a[0], a[1]),
    )
    tp_bytes_mb, t_tp = (
        tp_priced
        if tp_priced is not None
        else _tensor_parallel(work, cluster, lay, tokens_mb, stage_layers)
    )
    pp_bytes_mb, t_pp, ep_bytes_mb, t_ep = _pipeline_and_experts(
        work, cluster, lay, tokens_mb, compute=t_c
    )

    dp_bytes, t_dp, t_last, t_gather = _data_parallel(work, lay, cluster, m, dp_work, si=si)
    scheduled = priced_per_group(  # reads ZeRO, pp, v (and m: dp, micro-batch): once per group
        lay, DEGREES_KEY, [m], lambda g, a: _schedule_shares(g, a[0])
    )
    window_share, bubble, slots = scheduled if scheduled is not None else _schedule_shares(lay, m)
    t_host, t_launch = _host_floor(
        work, cluster, lay, stage_layers, head_on_stage=fullest_head, si=si
    )
    cp_bytes_mb, t_cp = _context_parallel(work, cluster, lay, tokens_mb, layers=stage_layers, si=si)
    t_off, off_bytes = _activation_offload(work, cluster, lay, si, t_c=t_c, tokens_mb=tokens_mb)
    t_gpu = t_c + t_tp + t_pp + t_ep + t_cp + t_off
    # when the launches set the pace the backward lasts longer by the GPU's idle time
    hidden_by_compute = (
        cluster.dp_overlap * window_share * (t_c + np.maximum(t_launch - t_gpu, 0.0))
    )
    exposed_dp = np.maximum(t_last, t_dp - t_gather - hidden_by_compute) + t_gather

    t_mb = _micro_batch_seconds(
        work,
        cluster,
        lay,
        si,
        layers=stage_layers,
        fullest_layers=fullest_layers,
        fullest_head=fullest_head,
        hw_factor=hw_factor,
        t_gpu=t_gpu,
        t_host=t_host,
        t_layers=(t_c, t_tp + t_cp, t_ep),
    )
    exposed_dp = exposed_dp + _tied_embedding_sync_seconds(work, cluster, lay)
    step = slots * t_mb + exposed_dp + t_opt + off.exposed
    tokens_per_s = work.global_batch * work.seq_len / step
    degrees = lay.groups(DEGREES_KEY)  # GPUs (t·p·d·cp) · peak: once per group of degrees
    at = slice(None) if degrees is None else degrees.first
    gpus_peak = tp_pp[at] * dp[at] * lay.as_float("cp")[at] * peak
    gpus_peak = gpus_peak if degrees is None else degrees.spread(gpus_peak)
    mfu = work.mfu_flops_per_token * tokens_per_s / gpus_peak
    hfu = _executed_flops_per_token(work, lay, si, hw_factor) * tokens_per_s / gpus_peak

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
        "time_context_parallel": m * t_cp,
        "time_data_parallel": exposed_dp,
        "time_data_parallel_total": t_dp,
        "time_offload": off.exposed + m * t_off,
        "comm_offload_bytes": off.host_link_bytes + m * off_bytes,
        "time_overhead": m * (t_mb - t_gpu),
        "time_gemm_attention": m * (t_c - t_mem),
        "comm_tp_bytes": m * tp_bytes_mb,
        "comm_pp_bytes": m * pp_bytes_mb,
        "comm_ep_bytes": m * ep_bytes_mb,
        "comm_cp_bytes": m * cp_bytes_mb,
        "comm_dp_bytes": dp_bytes,
    }
    out["comm_bytes_per_step"] = (
        out["comm_tp_bytes"]
        + out["comm_pp_bytes"]
        + out["comm_ep_bytes"]
        + out["comm_cp_bytes"]
        + dp_bytes
    )
    if recipe is not None:
        out.update(memory_screen(work, lay, recipe, m=m))
    return out


def _schedule_shares(lay: Layouts, m: FloatArray) -> list[FloatArray]:
    """(the share of the step's backward the data-parallel buckets hide behind, the
    pipeline bubble fraction, the slots of one step: m + (p − 1)/v micro-batch times) per
    layout; the window: the last micro-batch's backward for ZeRO-0/1, every micro-batch's
    backward for ZeRO-2, every micro-batch for ZeRO-3 (:func:`evaluate_layouts`)."""
    pp, v = lay.as_float("pp"), lay.as_float("v")
    # (np.where nested: np.select's first true condition, without its per-call set-up)
    window_share = np.where(
        lay.zero <= 1, comm.BACKWARD_SHARE, np.where(lay.zero == 2, comm.BACKWARD_SHARE * m, m)
    )
    return [window_share, comm.pipeline_bubble_fraction(pp, m, v), m + (pp - 1.0) / v]


def _tensor_parallel(
    work: Workload, cluster: Cluster, lay: Layouts, tokens_mb: FloatArray, layers: FloatArray
) -> list[FloatArray]:
    """(bytes, exposed seconds) of one micro-batch's tensor-parallel collectives on the
    fullest stage (``layers``: the layers it runs, ⌈L/(p·v)⌉·v): the bytes of
    :func:`.comm.tensor_parallel_bytes_per_layer` over the stage's L/p layers ÷ the TP
    group's bandwidth, + :func:`_tensor_parallel_latency`, × (1 − the cluster's TP
    overlap)."""
    tp = lay.as_float("tp")
    links = cluster.links
    layers_stage = work.layers / lay.as_float("pp")
    full = full_replay_share(work, lay)
    regathers = lay.sp & work.stack.tp_backward_regathers_input
    tp_bytes_mb = layers_stage * comm.tensor_parallel_bytes_per_layer(
        tp, tokens_mb, work.hidden, full, regathers
    )
    tp_lat_mb = _tensor_parallel_latency(
        cluster,
        lay,
        layers,
        full,
        regathers=regathers,
        network_step=work.stack.tp_network_step_latency_seconds,
    )
    t_tp = (tp_bytes_mb / links.group_bandwidth(1.0, tp) + tp_lat_mb) * (1.0 - cluster.tp_overlap)
    return [tp_bytes_mb, t_tp]


def _micro_batch_seconds(
    work: Workload,
    cluster: Cluster,
    lay: Layouts,
    si: StepInputs,
    *,
    layers: FloatArray,
    fullest_layers: FloatArray,
    fullest_head: FloatArray,
    hw_factor: FloatArray,
    t_gpu: FloatArray,
    t_host: FloatArray,
    t_layers: tuple[FloatArray, FloatArray, FloatArray],
) -> FloatArray:
    """t_mb: max(t_gpu, t_host), or where the MoE dispatcher syncs the host once per layer
    the sum over the stretches between syncs (:func:`.step_time_host.
    synchronised_micro_batch`). The GPU's forward time of one MoE layer: the forward's
    share of the stage's layer compute (the compute ``t_c`` less the head's FLOP share;
    forward 2 of the 6 FLOPs per parameter and token, Kaplan et al. 2020 section 2.1, of
    the executed ``hw − frozen``: recomputation replays in the backward, a frozen base skips
    its weight gradients) with the tensor- and context-parallel time, ÷ the stage's layers,
    plus half the all-to-all time per MoE layer (dispatch and combine of the forward, 2 of
    the 4). After the sync: the all-to-all's share and the routed experts' share of the
    layer's FLOPs (their GEMMs' FLOP share of :attr:`.Workload.gemms`, against GEMMs and
    attention), an approximation that prices both sides at one efficiency."""
    t_c, t_tp_cp, t_ep = t_layers
    if work.moe_layers <= 0 or work.num_experts <= 0:
        return np.asarray(np.maximum(t_gpu, t_host))
    model = max(work.model_flops_per_token, 1e-30)
    head = work.head_flops_per_token
    attention = min(work.attention_flops_per_token, model)
    layer_gemm = max(model - attention - head, 0.0)
    stage_layer_flops = fullest_layers / work.layers * (model - head)
    layer_share = stage_layer_flops / np.maximum(stage_layer_flops + fullest_head * head, 1e-30)
    frozen = 1.0 / 3.0 if si.frozen else 0.0
    forward = (1.0 / 3.0) / np.maximum(hw_factor - frozen, 1e-9)
    per_layer = forward * (t_c * layer_share + t_tp_cp) / np.maximum(layers, 1.0)
    moe_layers = np.maximum(layers * work.moe_layers / work.layers, 1e-9)
    a2a = 0.5 * t_ep / moe_layers
    routed = sum(g[2] for g in work.gemms if g[5]) * layer_gemm / max(layer_gemm + attention, 1e-30)
    return synchronised_micro_batch(
        work,
        cluster,
        lay,
        si,
        layers=layers,
        t_gpu=t_gpu,
        t_host=t_host,
        gpu_forward=per_layer + a2a,
        gpu_experts_forward=routed * per_layer + a2a,
    )


def _activation_offload(
    work: Workload,
    cluster: Cluster,
    lay: Layouts,
    si: StepInputs,
    *,
    t_c: FloatArray,
    tokens_mb: FloatArray,
) -> tuple[FloatArray, FloatArray]:
    """(seconds, host-link bytes) per micro-batch of CPU activation offloading on the
    fullest stage (:func:`.activation_offload.exposed_seconds`): the offloaded layers (at
    most all of the stage's layers but one, :func:`.training_offload.held_layers`) copy what
    each keeps of this GPU's tokens (``si.offload_bytes_per_token`` × s·b/cp ÷ tp: the
    activations split over the tensor-parallel group, exact with sequence parallelism, an
    approximation without) to the host in the forward and back in the backward, over the
    GPU's host link (``training.pcie_bandwidth_bytes_per_s``, else
    :func:`.offload.host_link_bytes_per_s`), hidden behind the micro-batch's compute
    ``t_c`` as far as it lasts."""
    if si.offload_layers <= 0:
        return np.zeros_like(t_c), np.zeros_like(t_c)
    stage = np.ceil(work.layers / lay.as_float("pp"))
    offloaded = np.minimum(si.offload_layers, np.maximum(stage - 1.0, 0.0))
    copy = offloaded * si.offload_bytes_per_token * tokens_mb / lay.as_float("tp")
    link = si.host_link_bytes_per_s or host_link_bytes_per_s(cluster.gpu_id)
    return activation_offload.exposed_seconds(copy, t_c, link), 2.0 * copy


def bottleneck_of(row: dict[str, float]) -> str:
    """Name the largest non-compute part of a step, or 'compute' when compute dominates."""
    parts = {name: row.get(f"time_{name}", 0.0) for name in TIME_PARTS}
    overhead = {k: v for k, v in parts.items() if k != "compute"}
    worst = max(overhead, key=lambda k: overhead[k])
    total = sum(parts.values()) or 1.0
    if not all(math.isfinite(v) for v in parts.values()):
        return "— (a part of the step time could not be computed)"
    if overhead[worst] < 0.05 * total:
        return "compute"
    labels = {
        "bubble": "pipeline bubble",
        "tensor_parallel": "tensor-parallel all-reduce",
        "pipeline_p2p": "pipeline send/receive",
        "expert_all_to_all": "MoE all-to-all",
        "context_parallel": "context-parallel K/V ring",
        "data_parallel": "data-parallel gradient sync",
        "offload": "offload over the host link (ZeRO offload, CPU optimizer step, "
        "activation copies)",
        "overhead": "host (CPU) launch overhead",
    }
    return f"{labels[worst]} ({100 * overhead[worst] / total:.0f}% of step)"
