"""The dropless MoE dispatcher's host sync (issue 27): Megatron-Core's all-to-all dispatcher
waits on the device-to-host copy of the token counts once per MoE layer in the forward
(NVIDIA/Megatron-LM@d98e8a64 megatron/core/transformer/moe/token_dispatcher.py
``MoEAlltoAllTokenDispatcher.preprocess``, ``_maybe_dtoh_and_synchronize``), so the host
cannot run ahead across it; and the all-to-all a schedule hides, at most the compute it hides
under. Hand computations from the kernel counts of step_time_host."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from layout_helpers import one_layout

from llm_planner.core.inputs.parallelism import ParallelInputs
from llm_planner.core.primitives.gpus import get_gpu
from llm_planner.core.primitives.presets import get_preset
from llm_planner.core.quantities import comm
from llm_planner.core.quantities.stacks import get_stack
from llm_planner.core.sections.parallelism import step_time_comm, step_time_host
from llm_planner.core.sections.parallelism.step_time_inputs import StepInputs
from llm_planner.core.sections.parallelism.workload import cluster_of, workload_of

QWEN = get_preset("qwen3-30b-a3b").architecture
LAUNCH = comm.HOST_SECONDS_PER_KERNEL_LAUNCH
MS = 1e-3


def _one(x: object) -> float:
    return float(np.asarray(x)[0])


def _work(**changes: object):  # type: ignore[no-untyped-def]
    return dataclasses.replace(workload_of(QWEN, 4096, 512), **changes)


CLUSTER = cluster_of(get_gpu("b200"), ParallelInputs())
LAY = one_layout(ep=8)


def test_megatron_syncs_torchtitan_only_with_expert_parallelism() -> None:
    layers = np.array([48.0])
    assert get_stack("megatron").moe_dropless_host_sync == "always"
    assert get_stack("torchtitan").moe_dropless_host_sync == "expert_parallel"
    # Qwen3-30B-A3B: every one of the 48 layers is MoE, one sync each
    assert (
        _one(step_time_host._syncs_per_micro_batch(_work(), CLUSTER, LAY, layers, StepInputs()))
        == 48
    )
    titan = _work(stack=get_stack("torchtitan"))
    si = StepInputs()
    assert _one(step_time_host._syncs_per_micro_batch(titan, CLUSTER, LAY, layers, si)) == 48
    assert (
        _one(step_time_host._syncs_per_micro_batch(titan, CLUSTER, one_layout(), layers, si)) == 0
    )
    # drop-and-pad (a capacity factor) and a full-iteration graph have none
    padded = _work(moe_capacity_factor=1.0)
    assert _one(step_time_host._syncs_per_micro_batch(padded, CLUSTER, LAY, layers, si)) == 0
    full = StepInputs(cuda_graphs="full_iteration")
    assert _one(step_time_host._syncs_per_micro_batch(_work(), CLUSTER, LAY, layers, full)) == 0
    assert (
        _one(
            step_time_host._syncs_per_micro_batch(
                _work(stack=get_stack("hf")), CLUSTER, LAY, layers, si
            )
        )
        == 0
    )


def test_host_either_side_of_the_sync_by_hand() -> None:
    # tp 1, ep 8 → 128 / 8 = 16 local experts. Before the sync: the attention block's 11
    # forward kernels + the router's 8 + the preprocessing's 10 = 29. After it: the MLP
    # side's LayerNorm and residual add (16 − 11 − 3 = 2), the MoE block's other 29 − 18 = 11
    # (permutations, all-to-alls, quantizations, activation, combine), 2 GEMMs × 16 experts.
    before, after = step_time_host._forward_host_parts(_work(), LAY, StepInputs())
    assert _one(before) == pytest.approx(29 * LAUNCH)
    assert _one(after) == pytest.approx((2 + 11 + 32) * LAUNCH)
    # graphs of the router and preprocessing: one launch instead of 18
    before, _ = step_time_host._forward_host_parts(
        _work(), LAY, StepInputs(cuda_graphs="moe_router")
    )
    assert _one(before) == pytest.approx((11 + 1) * LAUNCH)
    # and of attention too: two launches
    graphs = StepInputs(cuda_graphs="attn_moe_router")
    before, _ = step_time_host._forward_host_parts(_work(), LAY, graphs)
    assert _one(before) == pytest.approx(2 * LAUNCH)


def test_sync_rule_two_parts_by_hand() -> None:
    # h_B = 29 launches = 1.2325 ms, h_A = 45 launches = 1.9125 ms (the test above). Give the
    # GPU g_A = 0.5 ms after the sync (experts) and g_B = 1.5 ms before it (attention). A
    # stretch between two syncs: the device ends A at max(h_A, g_A) = 1.9125 ms and B at
    # max(h_A + h_B, g_A + g_B, h_A + g_B) = max(3.145, 2.0, 3.4125) = 3.4125 ms: attention
    # waits for the host to launch the experts, then runs with the host idle at the sync.
    # Rest of the micro-batch (backward, head): host 5 ms, GPU 200 ms.
    h_b, h_a = 29 * LAUNCH, 45 * LAUNCH
    assert (h_a + h_b) / MS == pytest.approx(3.145)
    t_host = np.array([48 * (h_a + h_b) + 5 * MS])
    t_gpu = np.array([48 * 2.0 * MS + 200 * MS])
    t_mb = step_time_host.synchronised_micro_batch(
        _work(),
        CLUSTER,
        LAY,
        StepInputs(),
        layers=np.array([48.0]),
        t_gpu=t_gpu,
        t_host=t_host,
        gpu_forward=np.array([2.0 * MS]),
        gpu_experts_forward=np.array([0.5 * MS]),
    )
    # 48 × 3.4125 + max(5, 200) = 163.8 + 200 = 363.8 ms; the larger of the sums says
    # max(48 × 3.145 + 5, 96 + 200) = 296 ms
    assert _one(t_mb) / MS == pytest.approx(363.8)
    assert max(_one(t_host), _one(t_gpu)) / MS == pytest.approx(296.0)
    # drop-and-pad: no sync, the larger of the sums
    padded = step_time_host.synchronised_micro_batch(
        _work(moe_capacity_factor=1.0),
        CLUSTER,
        LAY,
        StepInputs(),
        layers=np.array([48.0]),
        t_gpu=t_gpu,
        t_host=t_host,
        gpu_forward=np.array([2.0 * MS]),
        gpu_experts_forward=np.array([0.5 * MS]),
    )
    assert _one(padded) / MS == pytest.approx(296.0)


def test_hidden_all_to_all_is_bounded_by_compute() -> None:
    # a 3 s dispatch, 2 s of compute to hide it under: fully overlapped, 1 s stays exposed;
    # a 1 s dispatch under the same compute hides entirely; half the overlap hides half
    raw = np.array([3.0, 1.0])
    compute = np.array([2.0, 2.0])
    assert step_time_comm._hidden_all_to_all(raw, 1.0, compute).tolist() == [1.0, 0.0]
    assert step_time_comm._hidden_all_to_all(raw, 0.5, compute).tolist() == [2.0, 0.5]
    assert step_time_comm._hidden_all_to_all(raw, 0.0, compute).tolist() == [3.0, 1.0]
    assert step_time_comm._hidden_all_to_all(raw, 1.0, None).tolist() == [0.0, 0.0]
