"""The data-parallel terms of ONE layout in Python floats.

:func:`data_parallel_one` is :func:`.step_time_comm._data_parallel_arrays` at one layout:
the same terms (its docstring gives them and their sources), the same operations in the
same order, so each value is the very float the array function gives for that layout
(IEEE double either way). It exists for speed alone: the report prices the scenario's one
layout, where the array function's eighty numpy calls on length-1 arrays cost 0.07 ms.
``tests/core/test_fast_paths.py`` checks every step-time figure of a layout alone against
the same layout among others; a term added to one function must be added to the other.
"""

from __future__ import annotations

import math

from llm_planner.core.quantities import comm
from llm_planner.core.sections.parallelism.layout import Layouts
from llm_planner.core.sections.parallelism.step_time_inputs import StepInputs
from llm_planner.core.sections.parallelism.workload import Cluster, Workload


def _ring_all_reduce(n: float, message: float) -> float:
    """:func:`.comm.ring_all_reduce_bytes` of one group."""
    return 2.0 * (n - 1.0) / n * message


def _ring_gather(n: float, message: float) -> float:
    """:func:`.comm.ring_gather_bytes` of one group."""
    return (n - 1.0) / n * message


def _bytes(zero: int, dp: float, grads: float, params: float, m: float) -> float:
    """:func:`.comm.data_parallel_bytes` of one layout."""
    if zero == 0:
        return _ring_all_reduce(dp, grads)
    if zero == 1:
        return _ring_gather(dp, grads) + _ring_gather(dp, params)
    if zero == 2:
        return m * _ring_gather(dp, grads) + _ring_gather(dp, params)
    return m * (_ring_gather(dp, grads) + 2.0 * _ring_gather(dp, params))


def _bandwidth(links: comm.Links, stride: float, size: float) -> float:
    """:meth:`.comm.Links.group_bandwidth` (hierarchical) of one group."""
    g = float(links.gpus_per_node)
    if stride * size <= g:
        return links.intra_bytes_per_s
    k = min(max(float(math.floor(g / stride)), 1.0), size)
    return min(links.intra_bytes_per_s, k * links.inter_bytes_per_s_per_node / g)


def _latency(cluster: Cluster, kind: str, ranks: float, nodes: float) -> float | None:
    return comm.collective_latency_one(
        kind,
        ranks,
        nodes,
        intra_step=cluster.intra_step_latency,
        inter_step=cluster.inter_step_latency,
        base=cluster.base_latency,
    )


def _params(
    work: Workload, si: StepInputs | None, tp_pp: float, ep: float, zero: int
) -> tuple[float, float, float, float]:
    """(dense, expert parameters whose gradients are reduced; dense, expert parameters
    gathered): :func:`.step_time_comm._trained_params_per_gpu` and
    :func:`.step_time_comm._gathered_params_per_gpu` of one layout."""
    if si is not None and si.frozen:
        dense, expert = si.adapter_params / tp_pp, 0.0
    else:
        dense = (work.params_total - work.params_expert) / tp_pp
        expert = work.params_expert / (tp_pp * ep)
    if zero == 3:
        return (
            dense,
            expert,
            (work.params_total - work.params_expert) / tp_pp,
            (work.params_expert / (tp_pp * ep)),
        )
    return dense, expert, dense, expert


def _bucket_bytes(work: Workload, cluster: Cluster, tp: float, dp: float) -> float:
    """One gradient bucket's bytes (the stack's size, or one layer's gradients)."""
    gbytes = work.gradient_reduce_bytes
    bucket = cluster.dp_bucket_bytes or work.stack.dp_bucket_bytes
    if bucket is None:
        return max(work.layer_params / tp * gbytes, 1.0)
    return max(float(bucket), work.stack.dp_bucket_params_per_rank * dp * gbytes)


def _count_latency(
    zero: int, m: float, buckets: float, layers_gpu: float, latencies: tuple[float, float]
) -> float:
    """The collectives' latency per step by ZeRO stage (buckets, per-layer gathers)."""
    lat_ar, lat_g = latencies
    if zero == 0:
        return buckets * lat_ar
    if zero == 1:
        return buckets * lat_g + lat_g
    if zero == 2:
        return m * buckets * lat_g + lat_g
    return m * (buckets + 2.0 * layers_gpu) * lat_g


def data_parallel_one(
    work: Workload,
    lay: Layouts,
    cluster: Cluster,
    *,
    m: float,
    dp_work: float,
    si: StepInputs | None,
) -> tuple[float, float, float, float] | None:
    """(bytes, seconds, last bucket, gather) of :func:`.step_time_comm.
    _data_parallel_arrays` for the one layout of ``lay``; None where a value is not finite
    or not positive, where the array path relies on numpy's rules (the caller takes it)."""
    tp, pp, cp, ep = (float(getattr(lay, k)[0]) for k in ("tp", "pp", "cp", "ep"))
    zero = int(lay.zero[0])
    values = (tp, pp, cp, ep, m, dp_work, float(lay.shard[0]))
    if not all(0 < x < math.inf for x in values):
        return None
    links = cluster.links
    dp = dp_work * cp
    tp_pp = tp * pp
    dense, expert, gathered, experts = _params(work, si, tp_pp, ep, zero)
    shard = min(float(lay.shard[0]), dp)
    replicas = dp / shard
    gbytes = work.gradient_reduce_bytes
    pbytes = work.param_gather_bytes
    dp_bytes = _bytes(zero, shard, dense * gbytes, gathered * pbytes, m)
    if work.params_expert > 0:
        expert_dp = min(max(dp / ep, 1.0), shard)
        dp_bytes = dp_bytes + _bytes(zero, expert_dp, expert * gbytes, experts * pbytes, m)
    bw = _bandwidth(links, tp, shard)
    if not bw > 0:
        return None
    t_dp = dp_bytes / bw
    nodes = max(1.0, float(math.ceil(tp * shard / float(cluster.gpus_per_node))))
    lat_ar = _latency(cluster, "all_reduce", shard, nodes)
    lat_g = _latency(cluster, "all_gather", shard, nodes)
    bucket_bytes = _bucket_bytes(work, cluster, tp, dp)
    if lat_ar is None or lat_g is None or not 0 < bucket_bytes < math.inf:
        return None
    stack = work.stack
    grad_gpu = (dense + expert) * gbytes
    buckets = max(1.0, float(math.ceil(grad_gpu / bucket_bytes)))
    layers_gpu = float(math.ceil(work.layers / pp))
    count_lat = _count_latency(zero, m, buckets, layers_gpu, (lat_ar, lat_g))
    single = shard <= 1
    t_dp = 0.0 if single else t_dp + count_lat
    reduce_share = (2.0 if zero == 0 else 1.0) * (shard - 1.0) / max(shard, 1.0)
    last_bucket = min(bucket_bytes, grad_gpu) * reduce_share / bw + (lat_ar if zero == 0 else lat_g)
    t_last = 0.0 if single else last_bucket
    gather_bytes = _ring_gather(shard, (dense + expert) * pbytes)
    t_gather = 0.0 if single or zero in (0, 3) else gather_bytes / bw + buckets * lat_g
    if stack.zero1_syncs_whole_buffer and work.params_expert <= 0 and zero == 1 and not single:
        # :func:`.step_time_comm._zero1_whole_buffer`
        reduce_bytes = _ring_all_reduce(shard, grad_gpu)
        t_reduce = reduce_bytes / bw + lat_ar
        unpack = stack.zero1_gather_host_seconds_per_rank_per_layer * shard * layers_gpu
        t_whole_gather = gather_bytes / bw + lat_g + unpack
        dp_bytes, t_dp = reduce_bytes + gather_bytes, t_reduce + t_whole_gather
        t_last, t_gather = t_reduce, t_whole_gather
    if replicas > 1:
        hybrid = _ring_all_reduce(replicas, dense * gbytes / shard)
        across = _bandwidth(links, tp * shard, replicas)
        if not across > 0:
            return None
        t_dp = t_dp + hybrid / across
        dp_bytes = dp_bytes + hybrid
    return dp_bytes, t_dp, t_last, t_gather
