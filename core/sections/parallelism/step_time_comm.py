"""Communication per micro-batch and per step: pipeline sends, MoE all-to-all, context
parallelism's ring, tensor-parallel latency, a tied embedding's sync and data parallelism
(:mod:`.step_time`)."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from llm_planner.core.quantities import comm
from llm_planner.core.quantities import moe as moe_work
from llm_planner.core.sections.parallelism.layout import DEGREES_KEY, Layouts, priced_per_group
from llm_planner.core.sections.parallelism.schedule import FloatArray
from llm_planner.core.sections.parallelism.step_time_dp_one import data_parallel_one
from llm_planner.core.sections.parallelism.step_time_inputs import StepInputs
from llm_planner.core.sections.parallelism.workload import (
    Cluster,
    Workload,
    full_replay_share,
    layout_hw_factors,
)


def _hidden_all_to_all(raw: FloatArray, overlap: float, compute: FloatArray | None) -> FloatArray:
    """The MoE dispatch time left exposed when a schedule hides the share ``overlap`` of it
    behind another micro-batch's compute: raw − overlap · min(raw, compute). A transfer runs
    under computation only as long as there is computation to run under (Megatron-Core's
    ``overlap_moe_expert_parallel_comm``, NVIDIA/Megatron-LM@d98e8a64 pipeline_parallel/
    combined_1f1b.py: a micro-batch's all-to-alls on their own stream beside the other
    micro-batch's compute; DeepSeek-V3's DualPipe, arXiv:2412.19437 section 3.2.1), so a
    dispatch longer than the micro-batch's compute keeps the excess. ``compute`` None: no
    bound (raw × (1 − overlap))."""
    if overlap <= 0.0:
        return np.asarray(raw)
    if compute is None:
        return np.asarray(raw * (1.0 - overlap))
    return np.asarray(raw - overlap * np.minimum(raw, compute))


def _pipeline_and_experts(
    work: Workload,
    cluster: Cluster,
    lay: Layouts,
    tokens_mb: FloatArray,
    compute: FloatArray | None = None,
) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray]:
    """(bytes, seconds) per micro-batch of the pipeline sends and of the MoE all-to-all
    (exposed: less what the stack's or the scenario's overlap hides behind ``compute``,
    :func:`_hidden_all_to_all`); the search's layouts once per distinct degrees (the
    exposure, which reads ``compute``, per layout)."""
    grouped = priced_per_group(
        lay,
        DEGREES_KEY,
        [tokens_mb],
        lambda g, arrays: _pipeline_and_experts_arrays(work, cluster, g, arrays[0]),
    )
    pp_bytes_mb, t_pp, ep_bytes_mb, t_ep = (
        grouped
        if grouped is not None
        else _pipeline_and_experts_arrays(work, cluster, lay, tokens_mb)
    )
    if work.moe_layers > 0:
        overlap = max(cluster.ep_overlap, work.stack.moe_dispatch_overlap)
        t_ep = _hidden_all_to_all(t_ep, overlap, compute)
    return pp_bytes_mb, np.asarray(t_pp), ep_bytes_mb, np.asarray(t_ep)


def _pipeline_and_experts_arrays(
    work: Workload, cluster: Cluster, lay: Layouts, tokens_mb: FloatArray
) -> list[FloatArray]:
    """:func:`_pipeline_and_experts` of every layout, the MoE dispatch before any overlap."""
    tp = lay.as_float("tp")
    pp = lay.as_float("pp")
    dp = lay.as_float("dp")
    ep = lay.as_float("ep")
    v = lay.as_float("v")
    links = cluster.links
    g = float(cluster.gpus_per_node)
    pp_bytes_mb = comm.pipeline_p2p_bytes_per_microbatch(pp, tp, tokens_mb, work.hidden, v)
    stage_ranks = tp * lay.as_float("cp") * dp  # Megatron's rank order tp-cp-ep-dp-pp
    pp_inside = stage_ranks * pp <= g
    pp_bw = np.where(
        pp_inside, links.intra_bytes_per_s, links.group_bandwidth(stage_ranks, 2.0, False)
    )
    p2p_latency = cluster.base_latency + np.where(pp_inside, 0.0, cluster.inter_p2p_latency)
    t_pp = pp_bytes_mb / pp_bw + np.where(pp > 1, 2.0 * v * p2p_latency, 0.0)
    if work.moe_layers > 0 and work.moe_dispatcher == "allgather":
        ep_bytes_mb, t_ep = _allgather_dispatch(work, cluster, lay, tokens_mb)
    elif work.moe_layers > 0:
        per_layer = comm.moe_all_to_all_bytes_per_layer(ep, tp, tokens_mb, work.hidden, work.top_k)
        ep_bytes_mb = (work.moe_layers / pp) * per_layer
        # dispatch and combine, forward and backward: 4 all-to-alls per MoE layer, each on the
        # links the ep group spans; the busiest rank receives and sends its load factor × the
        # mean (the slowest rank sets the step)
        one = moe_work.all_to_all_seconds(
            links,
            tp,
            ep,
            per_layer / 4.0 * work.moe_load_factor,
            base=cluster.base_latency,
            intra_step=cluster.intra_step_latency,
            inter_step=cluster.inter_step_latency,
        )
        t_ep = (work.moe_layers / pp) * 4.0 * one
    else:
        ep_bytes_mb = np.zeros_like(tp)
        t_ep = np.zeros_like(tp)
    return [pp_bytes_mb, np.asarray(t_pp), ep_bytes_mb, np.asarray(t_ep)]


def _allgather_dispatch(
    work: Workload,
    cluster: Cluster,
    lay: Layouts,
    tokens_mb: FloatArray,
) -> tuple[FloatArray, FloatArray]:
    """(bytes, seconds) per micro-batch of the all-gather dispatcher on the fullest stage:
    its MoE layers ÷ pp × :func:`.moe.allgather_dispatch_bytes_per_layer` over the tp·ep group
    (contiguous ranks, Megatron-Core's order tp-cp-ep-dp-pp with cp = 1; each rank holds
    s·b ÷ tp tokens), as ring collectives on the links the group spans
    (:meth:`.comm.Links.group_bandwidth`), each of the four with NCCL's all-gather latency
    (:func:`.comm.collective_latency_seconds`), before the overlap the stack or the scenario
    sets (:func:`_pipeline_and_experts` applies :func:`_hidden_all_to_all`). Every rank
    receives all tokens, so the load imbalance does not change it."""
    tp = lay.as_float("tp")
    group = tp * lay.as_float("ep")
    layers = work.moe_layers / lay.as_float("pp")
    per_layer = moe_work.allgather_dispatch_bytes_per_layer(group, tokens_mb / tp, work.hidden)
    g = cluster.gpus_per_node
    latency = 4.0 * comm.collective_latency_seconds(
        "all_gather",
        group,
        comm.nodes_spanned(1.0, group, g),
        intra_step=cluster.intra_step_latency,
        inter_step=cluster.inter_step_latency,
        base=cluster.base_latency,
    )
    seconds = per_layer / cluster.links.group_bandwidth(1.0, group) + latency
    return np.asarray(layers * per_layer), np.asarray(layers * seconds)


def _context_parallel(
    work: Workload,
    cluster: Cluster,
    lay: Layouts,
    tokens_mb: FloatArray,
    *,
    layers: FloatArray,
    si: StepInputs,
) -> tuple[FloatArray, FloatArray]:
    """(bytes, exposed seconds) per micro-batch of context parallelism's K/V ring on the
    fullest stage (``layers`` layers; ``tokens_mb`` = s·b/cp, this GPU's tokens).

    Megatron-Core's default ``cp_comm_type = "p2p"`` (NVIDIA/Megatron-LM@d98e8a64
    megatron/core/transformer/transformer_config.py lines 1030-1044: "Exchange KV chunks with
    P2P communications in ring topology. P2P is async and can be overlapped with attention
    compute"; docs/user-guide/features/context_parallel.md: the all-gather of K/V in the
    forward and the reduce-scatter of their gradients in the backward run as ring P2P, and
    K/V are gathered again in the backward rather than stored). Per layer each GPU sends
    cp − 1 chunks of its s·b/cp tokens' keys and values (``si.kv_width`` elements per token
    ÷ tp: the K/V heads are split by tensor parallelism) in the forward, the same again in
    the backward plus as many K/V gradients, and once more when full recomputation replays
    the forward: (3, or 4) · (cp − 1) · s·b/cp · kv_width/tp · 2 bytes (16-bit K/V and
    gradients: an assumption). The ring spans the cp group, ranks tp apart (Megatron-Core's
    order tp-cp-ep-dp-pp, parallel_state.py line 617), on the link that group spans
    (:meth:`.comm.Links.group_bandwidth`, point-to-point), each of the (cp − 1) steps a P2P
    latency. Overlapped with the attention kernels of the same layers: exposed = max(0,
    ring time − attention time) (the fused attention's FLOPs of this GPU's tokens at the
    attention kernel's rate). Causal load balance as Megatron does it (each rank holds
    chunks i and 2·cp − 1 − i of 2·cp) makes every rank's attention work 1/cp of the
    sequence's, which the per-token attention FLOPs × s·b/cp tokens already price."""
    tp = lay.as_float("tp")
    cp = lay.as_float("cp")
    if not np.any(cp > 1.0) or si.kv_width <= 0.0:
        zero = np.zeros_like(tp)
        return zero, zero
    passes = 3.0 + full_replay_share(work, lay)
    steps = passes * (cp - 1.0) * layers
    bytes_mb = steps * tokens_mb * si.kv_width / tp * comm.COMM_BYTES_PER_ELEMENT
    links = cluster.links
    spans = tp * cp > float(cluster.gpus_per_node)
    latency = cluster.base_latency + np.where(spans, cluster.inter_p2p_latency, 0.0)
    t_ring = bytes_mb / links.group_bandwidth(tp, cp, False) + steps * latency
    attention_eff = cluster.attention_efficiency or comm.ATTENTION_EFFICIENCY[
        work.stack.flash_attention_generation
    ].get(cluster.generation, cluster.kernel_efficiency)
    hw = layout_hw_factors(work, lay)
    attention = min(work.attention_flops_per_token, work.model_flops_per_token)
    t_attention = (
        layers
        / work.layers
        * tokens_mb
        / tp
        * attention
        * hw
        / (cluster.peak_flops * cluster.tensor_rate_fraction * attention_eff)
    )
    exposed = np.where(cp > 1.0, np.maximum(t_ring - t_attention, 0.0), 0.0)
    return np.where(cp > 1.0, bytes_mb, 0.0), exposed


def _tied_embedding_sync_seconds(work: Workload, cluster: Cluster, lay: Layouts) -> FloatArray:
    """Exposed time per step of summing a tied embedding's gradient between the first and the
    last pipeline stage, for a stack that does it after the pipeline flush
    (``StackProfile.tied_embedding_sync_exposed``; nanotron: src/nanotron/trainer.py
    ``training_step`` calls ``sync_tied_weights_gradients`` after the pipeline and the DP
    sync, not overlapped; src/nanotron/parallel/tied_parameters.py all-reduces the gradient
    buffers, fp32 under its FP32GradientAccumulator, over the ranks that hold the tied copy).

    One ring all-reduce over 2 ranks of V·h/tp elements in the stack's reduce dtype: each
    rank sends and receives the whole buffer once, bytes ÷ the point-to-point link between
    the two stages (the network when the job spans nodes: the last stage is on another node)
    + NCCL's latency. 0 without a pipeline or an untied head."""
    pp = lay.as_float("pp")
    if not work.stack.tied_embedding_sync_exposed or work.tied_embedding_params <= 0:
        return np.zeros_like(pp)
    tp = lay.as_float("tp")
    dp = lay.as_float("dp")
    g = float(cluster.gpus_per_node)
    links = cluster.links
    message = work.tied_embedding_params / tp * work.gradient_reduce_bytes
    stage_ranks = tp * lay.as_float("cp") * dp  # Megatron's rank order tp-cp-ep-dp-pp
    inside = stage_ranks * pp <= g
    bw = np.where(inside, links.intra_bytes_per_s, links.group_bandwidth(stage_ranks, 2.0, False))
    nodes = np.where(inside, 1.0, 2.0)
    latency = comm.collective_latency_seconds(
        "all_reduce",
        2.0,
        nodes,
        intra_step=cluster.intra_step_latency,
        inter_step=cluster.inter_step_latency,
        base=cluster.base_latency,
    )
    seconds = comm.ring_all_reduce_bytes(2.0, message) / bw + latency
    return np.asarray(np.where(pp > 1.0, seconds, 0.0))


def _tensor_parallel_latency(
    cluster: Cluster,
    lay: Layouts,
    layers: FloatArray,
    full_recompute: npt.NDArray[np.float64],
    *,
    regathers: npt.NDArray[np.bool_],
    network_step: float | None,
) -> FloatArray:
    """Latency of one micro-batch's tensor-parallel collectives on the fullest stage.

    Per layer: 2 all-reduces forward and 2 backward (Shoeybi et al. 2019 section 3), or with
    sequence parallelism 2 all-gathers + 2 reduce-scatters forward and as many backward
    (Korthikanti et al. 2022 section 4.2.2); full recomputation replays the forward's;
    ``regathers``: 2 more all-gathers in the backward (the column-parallel linears gather
    their input again, :attr:`.stacks.StackProfile.tp_backward_regathers_input`).
    Each costs NCCL's latency over tp ranks on the nodes the group spans; a network step
    costs the stack's ``network_step`` (:attr:`.stacks.StackProfile.
    tp_network_step_latency_seconds`) where it sets one, else the cluster's."""
    groups = lay.groups(("tp",))  # the latencies depend on tp alone: once per value
    tp = lay.as_float("tp") if groups is None else lay.as_float("tp")[groups.first]
    nodes = comm.nodes_spanned(1.0, tp, cluster.gpus_per_node)
    intra, inter = cluster.intra_step_latency, cluster.inter_step_latency
    if network_step is not None:
        inter = network_step
    base = cluster.base_latency
    all_reduce = comm.collective_latency_seconds(
        "all_reduce", tp, nodes, intra_step=intra, inter_step=inter, base=base
    )
    gather = comm.collective_latency_seconds(
        "all_gather", tp, nodes, intra_step=intra, inter_step=inter, base=base
    )
    passes = 2.0 + full_recompute
    if groups is None:
        per_layer = np.where(lay.sp, 4.0 * gather, 2.0 * all_reduce) * passes
    else:  # (2 all-reduces, 4 gathers) per tp value, picked per layout by tp and SP
        table = np.stack([2.0 * all_reduce, 4.0 * gather], axis=1).reshape(-1)
        per_layer = table[groups.inverse * 2 + lay.sp] * passes
        gather = groups.spread(gather)
    if regathers.any():
        per_layer = per_layer + np.where(regathers, 2.0 * gather, 0.0)
    return np.asarray(layers * per_layer)


def _data_parallel(
    work: Workload,
    lay: Layouts,
    cluster: Cluster,
    m: FloatArray,
    dp_work: FloatArray,
    *,
    si: StepInputs | None = None,
) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray]:
    """:func:`_data_parallel_arrays`; one layout (the report's) in Python floats
    (:func:`.step_time_dp_one.data_parallel_one`: the same values)."""
    if len(lay) == 1:
        one = data_parallel_one(work, lay, cluster, m=float(m[0]), dp_work=float(dp_work[0]), si=si)
        if one is not None:
            return np.array([one[0]]), np.array([one[1]]), np.array([one[2]]), np.array([one[3]])
    grouped = priced_per_group(  # once per distinct (degrees, ZeRO stage, micro-batch)
        lay,
        DEGREES_KEY,
        [m, dp_work],
        lambda g, arrays: _data_parallel_arrays(work, g, cluster, *arrays, si=si),
    )
    if grouped is not None:
        return grouped[0], grouped[1], grouped[2], grouped[3]
    return _data_parallel_arrays(work, lay, cluster, m, dp_work, si=si)


def _data_parallel_arrays(
    work: Workload,
    lay: Layouts,
    cluster: Cluster,
    m: FloatArray,
    dp_work: FloatArray,
    *,
    si: StepInputs | None = None,
) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray]:
    """Data-parallel bytes per GPU per step, their time before overlap, the last bucket's
    time (always exposed) and the parameter all-gather after the optimizer step.
    ``dp_work``: the replicas that hold a sequence (dp capped at the global batch ÷ b).

    Dense parameters are synchronised over the ZeRO shard group (plus an all-reduce of the
    shards across replicas for HYBRID_SHARD); expert parameters over the expert-data-parallel
    group dp/ep (Megatron-LM's expert data parallelism). Gradients travel in the stack's
    reduce dtype (nanotron and torchtitan reduce in fp32), parameters in 16 bits (in FP8/FP4
    where they are kept so: ``work.param_gather_bytes``). The
    gradients go in buckets of the stack's size (a stack without one reduces one layer per
    bucket, as FSDP2 does per block); each bucket's collective costs NCCL's latency
    (:func:`.comm.collective_latency_seconds`) + bytes ÷ link; ZeRO-3 all-gathers every
    layer before its forward and its backward. Fine-tuning (``si.frozen``): only the
    adapters' gradients are reduced and, after a ZeRO-1/2 step, gathered; ZeRO-3 still
    gathers the frozen weights before each use.
    """
    links = cluster.links
    tp = lay.as_float("tp")
    pp = lay.as_float("pp")
    dp = dp_work * lay.as_float("cp")  # gradients reduce over the dp·cp group (Megatron)
    ep = lay.as_float("ep")
    params_gpu_dense, params_gpu_expert = _trained_params_per_gpu(work, lay, si)
    shard = np.minimum(lay.as_float("shard"), dp)
    replicas = dp / shard
    gbytes = work.gradient_reduce_bytes
    pbytes = work.param_gather_bytes
    gathered, experts = _gathered_params_per_gpu(work, lay, params_gpu_dense, params_gpu_expert)
    dp_bytes = comm.data_parallel_bytes(
        lay.zero, shard, params_gpu_dense * gbytes, gathered * pbytes, m
    )
    if work.params_expert > 0:
        expert_dp = np.minimum(np.maximum(dp / ep, 1.0), shard)
        dp_bytes = dp_bytes + comm.data_parallel_bytes(
            lay.zero, expert_dp, params_gpu_expert * gbytes, experts * pbytes, m
        )
    bw = links.group_bandwidth(tp, shard)
    t_dp = dp_bytes / bw
    # latency: buckets of gradients, per-layer gathers under ZeRO-3
    g = cluster.gpus_per_node
    nodes = comm.nodes_spanned(tp, shard, g)
    intra, inter = cluster.intra_step_latency, cluster.inter_step_latency
    base = cluster.base_latency
    lat_ar = comm.collective_latency_seconds(
        "all_reduce", shard, nodes, intra_step=intra, inter_step=inter, base=base
    )
    lat_g = comm.collective_latency_seconds(
        "all_gather", shard, nodes, intra_step=intra, inter_step=inter, base=base
    )
    stack = work.stack
    grad_gpu = (params_gpu_dense + params_gpu_expert) * gbytes
    layer_grad = np.maximum(work.layer_params / tp * gbytes, 1.0)
    bucket = cluster.dp_bucket_bytes or stack.dp_bucket_bytes
    if bucket is None:
        bucket_bytes = layer_grad
    else:
        grows = stack.dp_bucket_params_per_rank * dp * gbytes
        bucket_bytes = np.maximum(float(bucket), grows)
    buckets = np.maximum(1.0, np.ceil(grad_gpu / bucket_bytes))
    layers_gpu = np.ceil(work.layers / pp)
    count_lat = np.where(
        lay.zero == 0,
        buckets * lat_ar,
        np.where(
            lay.zero == 1,
            buckets * lat_g + lat_g,
            np.where(
                lay.zero == 2,
                m * buckets * lat_g + lat_g,
                m * (buckets + 2.0 * layers_gpu) * lat_g,
            ),
        ),
    )
    single = shard <= 1
    t_dp = np.where(single, 0.0, t_dp + count_lat)
    reduce_share = np.where(lay.zero == 0, 2.0, 1.0) * (shard - 1.0) / np.maximum(shard, 1.0)
    last_bucket = np.minimum(bucket_bytes, grad_gpu) * reduce_share / bw + np.where(
        lay.zero == 0, lat_ar, lat_g
    )
    t_last = np.where(single, 0.0, last_bucket)
    gather_bytes = comm.ring_gather_bytes(shard, (params_gpu_dense + params_gpu_expert) * pbytes)
    t_gather = np.where(
        single | (lay.zero == 0) | (lay.zero == 3), 0.0, gather_bytes / bw + buckets * lat_g
    )
    if stack.zero1_syncs_whole_buffer and work.params_expert <= 0:
        dp_bytes, t_dp, t_last, t_gather = _zero1_whole_buffer(
            work,
            lay,
            (dp_bytes, t_dp, t_last, t_gather),
            shard=shard,
            grad_gpu=grad_gpu,
            gather_bytes=gather_bytes,
            bw=bw,
            latencies=(lat_ar, lat_g),
            layers_gpu=layers_gpu,
        )
    if np.any(replicas > 1):
        dense_bytes = params_gpu_dense * gbytes
        hybrid = np.where(
            replicas > 1, comm.ring_all_reduce_bytes(replicas, dense_bytes / shard), 0.0
        )
        t_dp = t_dp + hybrid / links.group_bandwidth(tp * shard, replicas)
        dp_bytes = dp_bytes + hybrid
    return dp_bytes, np.asarray(t_dp), np.asarray(t_last), np.asarray(t_gather)


def _trained_params_per_gpu(
    work: Workload, lay: Layouts, si: StepInputs | None
) -> tuple[FloatArray, FloatArray]:
    """(dense, routed-expert) parameters per GPU whose gradients are reduced: the model's
    ÷ (t·p) (experts ÷ ep more), or the adapters' only when the base is frozen."""
    tp_pp = lay.as_float("tp") * lay.as_float("pp")
    if si is not None and si.frozen:
        return np.asarray(si.adapter_params / tp_pp), np.zeros_like(tp_pp)
    dense = (work.params_total - work.params_expert) / tp_pp
    return np.asarray(dense), np.asarray(work.params_expert / (tp_pp * lay.as_float("ep")))


def _gathered_params_per_gpu(
    work: Workload, lay: Layouts, trained_dense: FloatArray, trained_expert: FloatArray
) -> tuple[FloatArray, FloatArray]:
    """(dense, routed-expert) parameters per GPU that the data-parallel group all-gathers:
    the trained ones after a ZeRO-1/2 step, every parameter (frozen ones included) before
    each use under ZeRO-3."""
    tp_pp = lay.as_float("tp") * lay.as_float("pp")
    zero3 = lay.zero == 3
    dense = np.where(zero3, (work.params_total - work.params_expert) / tp_pp, trained_dense)
    expert_all = work.params_expert / (tp_pp * lay.as_float("ep"))
    return np.asarray(dense), np.asarray(np.where(zero3, expert_all, trained_expert))


def _zero1_whole_buffer(
    work: Workload,
    lay: Layouts,
    parts: tuple[FloatArray, FloatArray, FloatArray, FloatArray],
    *,
    shard: FloatArray,
    grad_gpu: FloatArray,
    gather_bytes: FloatArray,
    bw: FloatArray,
    latencies: tuple[FloatArray, FloatArray],
    layers_gpu: FloatArray,
) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray]:
    """:func:`_data_parallel`'s ``parts`` (bytes, seconds, last bucket, gather) with the
    ZeRO-1 layouts replaced by a ZeRO-1 that syncs its whole gradient buffer
    (``StackProfile.zero1_syncs_whole_buffer``: nanotron).

    huggingface/nanotron@0e0a27ea: with fp32 gradient accumulation and ZeRO-1 the model is
    not wrapped in DDP (src/nanotron/trainer.py ``make_ddp``); after the pipeline flush
    ``sync_gradients_across_dp(..., reduce_scatter=False)`` runs one ``dist.all_reduce`` of
    the whole contiguous fp32 gradient buffer (optim/gradient_accumulator.py), and after the
    optimizer step ``ZeroDistributedOptimizer._all_gather_params`` (optim/zero.py) one
    ``dist.all_gather`` of the updated bf16 shards, then a Python loop copying each rank's
    slice of each parameter back (distributed.py ``all_gather_coalesced``): the stack's
    ``zero1_gather_host_seconds_per_rank_per_layer`` × dp × the GPU's layers. Neither is
    overlapped with the backward: the all-reduce is the 'last bucket' (always exposed) and
    the gather is exposed after the step. One collective each: one NCCL latency each
    (``latencies`` = all-reduce, all-gather), bytes ÷ the DP link ``bw``."""
    dp_bytes, t_dp, t_last, t_gather = parts
    whole = (lay.zero == 1) & (shard > 1)
    lat_ar, lat_g = latencies
    reduce_bytes = comm.ring_all_reduce_bytes(shard, grad_gpu)
    t_reduce = reduce_bytes / bw + lat_ar
    unpack = work.stack.zero1_gather_host_seconds_per_rank_per_layer * shard * layers_gpu
    t_whole_gather = gather_bytes / bw + lat_g + unpack
    return (
        np.asarray(np.where(whole, reduce_bytes + gather_bytes, dp_bytes)),
        np.asarray(np.where(whole, t_reduce + t_whole_gather, t_dp)),
        np.asarray(np.where(whole, t_reduce, t_last)),
        np.asarray(np.where(whole, t_whole_gather, t_gather)),
    )
