"""Step time of pipelines whose stages sit on different nodes, and tensor parallelism across
nodes (issue 14): the nanotron stack's host-synchronous pipeline floor, its exposed tied-
embedding gradient sync, and the hierarchical ring bandwidth of a cross-node TP group.

Expected values are hand computations written out next to each assertion.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest
from layout_helpers import one_layout

from llm_planner.core.primitives.gpus import get_gpu
from llm_planner.core.primitives.presets import get_preset
from llm_planner.core.quantities import comm
from llm_planner.core.quantities.stacks import (
    PIPELINE_SPANNING_NODES_HOST_SECONDS_PER_LAYER_PER_TP_NANOTRON,
    get_stack,
)
from llm_planner.core.sections import parallelism as par
from llm_planner.core.sections.parallelism import step_time

H100 = get_gpu("h100-sxm")


_layout = one_layout


def _work(stack: str, batch: int = 64) -> par.Workload:
    arch = get_preset("llama-3.1-8b").architecture
    work = par.workload_of(arch, 4096, batch, hw_factors=(1.0, 1.0, 4 / 3))
    return replace(work, stack=get_stack(stack))


def _host_bound(host: float = 1.0) -> par.Cluster:
    """A cluster whose host time per layer dwarfs every GPU term (1 s per layer): a
    micro-batch then takes layers × the floor, whatever the GPU does."""
    return replace(
        par.cluster_of(H100, par.ParallelInputs(gpus_per_node=8)),
        host_seconds_per_layer=host,
    )


def test_nanotron_pipeline_across_nodes_adds_a_floor_per_layer_per_tp_rank() -> None:
    """tp 4 × pp 4 × dp 2 = 32 GPUs on 8-GPU nodes: the pipeline spans nodes, so each layer's
    floor is host + 4 × 3 ms. 32 layers ÷ 4 stages = 8 layers per stage; m = 64 ÷ (2 · 1)
    = 32 micro-batches, 1F1B slots m + p − 1 = 35. With the host at 1 s per layer the step
    is 35 × 8 × (1 + 0.012) s (+ the DP and optimizer terms, under 0.2% of it here)."""
    work = _work("nanotron")
    lay = _layout(tp=4, pp=4, dp=2, sp=True)
    out = par.evaluate_layouts(work, _host_bound(), lay)
    per_tp = PIPELINE_SPANNING_NODES_HOST_SECONDS_PER_LAYER_PER_TP_NANOTRON
    assert per_tp == 3.0e-3  # the fitted value the docstring states
    expected = 35 * 8 * (1.0 + 4 * per_tp)
    assert float(out["step_seconds"][0]) == pytest.approx(expected, rel=2e-3)
    # the same layout on one node (tp 2 × pp 4 × dp 1 = 8 GPUs) pays no such floor
    inside = par.evaluate_layouts(work, _host_bound(), _layout(tp=2, pp=4, dp=1, sp=True))
    m_inside = 64  # 64 ÷ (1 · 1)
    assert float(inside["step_seconds"][0]) == pytest.approx((m_inside + 3) * 8 * 1.0, rel=2e-3)


def test_the_floor_is_nanotron_s_only() -> None:
    """Megatron's profile has no such term: the same cross-node layout costs 35 × 8 × 1 s."""
    work = _work("megatron")
    assert work.stack.pipeline_spanning_nodes_host_seconds_per_layer_per_tp == 0.0
    out = par.evaluate_layouts(work, _host_bound(), _layout(tp=4, pp=4, dp=2, sp=True))
    assert float(out["step_seconds"][0]) == pytest.approx(35 * 8 * 1.0, rel=2e-3)


def test_no_pipeline_no_floor() -> None:
    """tp 4 × dp 8 = 32 GPUs across 4 nodes but pp 1: no pipeline send, so nanotron's floor
    is the host's alone: m = 64 ÷ 8 = 8 micro-batches × 32 layers × 1 s."""
    out = par.evaluate_layouts(_work("nanotron"), _host_bound(), _layout(tp=4, dp=8, sp=True))
    assert float(out["step_seconds"][0]) == pytest.approx(8 * 32 * 1.0, rel=2e-3)


def test_tied_embedding_gradient_sync_is_exposed_for_nanotron() -> None:
    """nanotron all-reduces the tied embedding's fp32 gradient between the first and the
    last stage after the pipeline flush (trainer.py sync_tied_weights_gradients). A tied
    model (V·h = 128,256 × 4,096 here, made tied), tp 2 × pp 2 × dp 4 = 16 GPUs: the two
    stages sit on different nodes. Buffer per rank V·h/2 × 4 B; a 2-rank ring all-reduce
    sends 2·(1/2) = 1 × it; over the network at one GPU's share (400 GB/s × 0.8 per node ÷
    8 = 40 GB/s) plus NCCL's latency (8.4 µs + 2 network steps of 14 µs, or the tree's
    2·log2(2)·14 µs: both 28 µs)."""
    arch = get_preset("llama-3.1-8b").architecture
    tied = arch.model_copy(update={"tied_embeddings": True})
    nanotron = get_stack("nanotron")
    assert nanotron.gradient_reduce_bytes == 4.0  # fp32 gradient buffers
    work = replace(
        par.workload_of(tied, 4096, 64, hw_factors=(1.0, 1.0, 4 / 3)),
        stack=nanotron,
        gradient_reduce_bytes=nanotron.gradient_reduce_bytes,
    )
    assert work.tied_embedding_params == 128_256 * 4096
    cluster = par.cluster_of(H100, par.ParallelInputs(gpus_per_node=8))
    lay = _layout(tp=2, pp=2, dp=4, sp=True)
    seconds = float(step_time._tied_embedding_sync_seconds(work, cluster, lay)[0])
    message = 128_256 * 4096 / 2 * 4.0
    expected = message / 40e9 + 8.4e-6 + 2 * 14e-6
    assert seconds == pytest.approx(expected, rel=1e-6)
    # untied, no pipeline, or another stack: nothing
    assert float(step_time._tied_embedding_sync_seconds(work, cluster, _layout(tp=2))[0]) == 0.0
    megatron = replace(work, stack=get_stack("megatron"))
    assert float(step_time._tied_embedding_sync_seconds(megatron, cluster, lay)[0]) == 0.0
    untied = replace(work, tied_embedding_params=0.0)
    assert float(step_time._tied_embedding_sync_seconds(untied, cluster, lay)[0]) == 0.0


def test_tensor_parallel_across_nodes_uses_hierarchical_rings() -> None:
    """A tp 16 group on 8-GPU nodes: NCCL's rings cross each node boundary once per channel,
    so a rank gets 8 × its NIC share (8 × 400 GB/s × 0.8 ÷ 8 = 320 GB/s), capped by NVLink
    (450 GB/s × 0.8 = 360): 320 GB/s, not one NIC's 40 GB/s. Checked through the step:
    with no latency, no host time, no overlap, the TP time of one micro-batch is its bytes
    ÷ 320 GB/s."""
    inputs = par.ParallelInputs(gpus_per_node=8, tp_overlap=0.0)
    cluster = replace(
        par.cluster_of(H100, inputs),
        host_seconds_per_layer=0.0,
        base_latency=0.0,
        intra_step_latency=0.0,
        inter_step_latency=0.0,
        memory_bytes_per_s=math.inf,
    )
    assert float(cluster.links.group_bandwidth(1.0, 16.0)) == pytest.approx(320e9)
    work = _work("megatron", batch=1)
    out = par.evaluate_layouts(work, cluster, _layout(tp=16, sp=True))
    per_layer = comm.tensor_parallel_bytes_per_layer(
        np.array([16.0]), np.array([4096.0]), work.hidden, np.array([False])
    )
    expected = float(per_layer[0]) * 32 / 320e9
    assert float(out["time_tensor_parallel"][0]) == pytest.approx(expected, rel=1e-6)
