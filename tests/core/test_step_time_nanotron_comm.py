"""nanotron's tensor-parallel and ZeRO-1 communication as the step-time model prices it
(issue 14): the column-parallel linears' backward all-gathers, the cross-node TP network
step, and ZeRO-1's whole-buffer gradient all-reduce with its per-rank parameter unpacking.
Other stacks keep the bucketed ZeRO-1 and NCCL's own network step.

Expected values are hand computations written out next to each assertion.
"""

from __future__ import annotations

import numpy as np
import pytest
from layout_helpers import one_layout

from llm_planner.core.primitives.gpus import get_gpu
from llm_planner.core.primitives.presets import get_preset
from llm_planner.core.quantities import comm
from llm_planner.core.quantities.stacks import (
    TP_NETWORK_STEP_LATENCY_SECONDS_NANOTRON,
    ZERO1_GATHER_HOST_SECONDS_PER_RANK_PER_LAYER_NANOTRON,
    get_stack,
)
from llm_planner.core.sections import parallelism as par
from llm_planner.core.sections.parallelism import step_time
from llm_planner.core.sections.training import TrainingInputs

H100 = get_gpu("h100-sxm")
INPUTS = par.ParallelInputs(gpus_per_node=8)
CLUSTER = par.cluster_of(H100, INPUTS)


_layout = one_layout


def _work(stack: str, batch: int = 64) -> par.Workload:
    """Llama-3.1-8B at seq 4096 on ``stack`` (its gradient-reduce dtype included)."""
    arch = get_preset("llama-3.1-8b").architecture
    ti = TrainingInputs(seq_len=4096, stack=stack)
    return par.workload_of(arch, 4096, batch, hw_factors=(1.0, 1.0, 4 / 3), training_inputs=ti)


def test_nanotron_backward_all_gathers_add_one_all_reduce_of_bytes_per_layer() -> None:
    """Llama-3.1-8B, h = 4096, s = 4096, micro-batch 1, tp 4 with sequence parallelism:
    the activation is 4096 · 4096 · 2 B = 33,554,432 B; a ring all-reduce over 4 ranks sends
    2 · 3/4 of it = 50,331,648 B. Megatron-style: 4 all-reduce-equivalents per layer =
    201,326,592 B; nanotron's two extra backward all-gathers (3/4 of the message each) add
    one more: 251,658,240 B. × 32 layers × m = 64 micro-batches per step."""
    lay = _layout(tp=4, sp=True)
    mega = par.evaluate_layouts(_work("megatron"), CLUSTER, lay)
    nano = par.evaluate_layouts(_work("nanotron"), CLUSTER, lay)
    assert float(mega["comm_tp_bytes"][0]) == pytest.approx(201_326_592 * 32 * 64)
    assert float(nano["comm_tp_bytes"][0]) == pytest.approx(251_658_240 * 32 * 64)
    # without sequence parallelism nanotron's linears all-reduce: no extra gathers
    plain = par.evaluate_layouts(_work("nanotron"), CLUSTER, _layout(tp=4))
    assert float(plain["comm_tp_bytes"][0]) == pytest.approx(201_326_592 * 32 * 64)


def test_nanotron_tp_group_across_nodes_pays_its_network_step() -> None:
    """tp 16 on 8-GPU nodes spans 2 nodes. One ring all-gather / reduce-scatter over 16
    ranks: base 8.4 µs + 14 NVLink steps × 3.4 µs + 1 network step. nanotron: 10 per layer
    (4 forward, 4 backward, 2 backward re-gathers) with its 6e-4 s network step; Megatron:
    8 per layer with the cluster's (NCCL's 14 µs). Per layer per micro-batch:
    nanotron 10 · (8.4 + 47.6 + 600) µs = 6.56 ms; Megatron 8 · (8.4 + 47.6 + 14) µs = 0.56 ms.
    Inside a node (tp 8) the stack's step does not apply: 10 · (8.4 + 7 · 3.4) µs = 0.322 ms.
    """
    assert TP_NETWORK_STEP_LATENCY_SECONDS_NANOTRON == 6.0e-4  # the fitted value documented
    layers = np.array([1.0])
    no_recompute = np.array([False])

    def per_layer(stack: str, tp: int) -> float:
        s = get_stack(stack)
        lay = _layout(tp=tp, sp=True)
        regathers = lay.sp & s.tp_backward_regathers_input
        lat = step_time._tensor_parallel_latency(
            CLUSTER,
            lay,
            layers,
            no_recompute,
            regathers=regathers,
            network_step=s.tp_network_step_latency_seconds,
        )
        return float(lat[0])

    assert CLUSTER.intra_step_latency == pytest.approx(3.4e-6)
    assert CLUSTER.inter_step_latency == pytest.approx(14e-6)
    assert per_layer("nanotron", 16) == pytest.approx(10 * (8.4e-6 + 14 * 3.4e-6 + 6e-4))
    assert per_layer("megatron", 16) == pytest.approx(8 * (8.4e-6 + 14 * 3.4e-6 + 14e-6))
    assert per_layer("nanotron", 8) == pytest.approx(10 * (8.4e-6 + 7 * 3.4e-6))


def test_nanotron_zero1_all_reduces_the_whole_buffer_exposed() -> None:
    """dp 16 × tp 8 (16 nodes, one DP rank per node), ZeRO-1, nanotron (fp32 gradient
    reduce). Per GPU: P/8 parameters, P = 8,030,261,248 (Llama-3.1-8B). Each DP ring has one
    rank per node, so it gets that GPU's share of the node's network: 400e9 · 0.8 / 8 =
    40 GB/s. After the flush: one all-reduce of the fp32 buffer, 2 · 15/16 · 4 · P/8 B, and
    after the step one all-gather of the bf16 shards, 15/16 · 2 · P/8 B, each + NCCL's
    latency over 16 ranks on 16 nodes (all-reduce: the tree, 8.4 µs + 2 · log2(16) · 14 µs;
    all-gather: the ring, 8.4 µs + 15 · 14 µs), + the unpacking of 16 ranks × 32 layers ×
    5e-5 s; none of it hidden behind the backward."""
    work = _work("nanotron", batch=256)
    assert work.gradient_reduce_bytes == 4.0  # nanotron reduces its fp32 accumulation buffer
    lay = _layout(tp=8, dp=16, zero=1, sp=True)
    out = par.evaluate_layouts(work, CLUSTER, lay)
    p_gpu = work.params_total / 8
    bw = 400e9 * 0.8 / 8
    reduce = 2 * 15 / 16 * 4 * p_gpu / bw + 8.4e-6 + 2 * 4 * 14e-6
    gather = 15 / 16 * 2 * p_gpu / bw + 8.4e-6 + 15 * 14e-6
    unpack = 16 * 32 * ZERO1_GATHER_HOST_SECONDS_PER_RANK_PER_LAYER_NANOTRON
    assert ZERO1_GATHER_HOST_SECONDS_PER_RANK_PER_LAYER_NANOTRON == 5.0e-5
    assert float(out["time_data_parallel"][0]) == pytest.approx(reduce + gather + unpack)
    assert float(out["comm_dp_bytes"][0]) == pytest.approx(
        2 * 15 / 16 * 4 * p_gpu + 15 / 16 * 2 * p_gpu
    )
    # the same layout under DeepSpeed (bucketed reduce-scatter during the last backward,
    # bf16 gradients) exposes far less: most of it hides behind the backward
    ds = par.evaluate_layouts(_work("deepspeed", batch=256), CLUSTER, lay)
    assert float(ds["time_data_parallel"][0]) < 0.5 * (reduce + gather)


def test_the_other_stacks_do_not_take_nanotron_behaviour() -> None:
    """The nanotron-only switches default off: every other stack keeps NCCL's network step,
    the bucketed ZeRO-1 and no backward re-gathers."""
    for stack in ("megatron", "deepspeed", "torchtitan", "hf"):
        s = get_stack(stack)
        assert s.tp_network_step_latency_seconds is None
        assert not s.tp_backward_regathers_input
        assert not s.zero1_syncs_whole_buffer
        assert s.zero1_gather_host_seconds_per_rank_per_layer == 0.0
    assert comm.tensor_parallel_bytes_per_layer(4, 4096, 4096) == pytest.approx(201_326_592)
