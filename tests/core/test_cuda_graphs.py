"""CUDA graphs (issue 27): the kernels each capture scope takes off the host's launch floor,
by hand from Megatron-Core's layer (NVIDIA/Megatron-LM@d98e8a64 transformer_layer.py
``_te_cuda_graph_capture``) and the kernel counts of step_time_host."""

from __future__ import annotations

import dataclasses

from layout_helpers import one_layout

from llm_planner.core.composition.estimate import estimate
from llm_planner.core.composition.scenario import default_scenario
from llm_planner.core.inputs.scenario import Scenario, with_changes
from llm_planner.core.primitives.gpus import get_gpu
from llm_planner.core.primitives.presets import get_preset
from llm_planner.core.quantities import comm
from llm_planner.core.sections.parallelism import step_time_host
from llm_planner.core.sections.parallelism.step_time_inputs import StepInputs
from llm_planner.core.sections.parallelism.workload import workload_of

QWEN = get_preset("qwen3-30b-a3b").architecture
LLAMA = get_preset("llama-3.1-8b").architecture


def _captured(arch: object, scope: str, capacity: float | None = None, **lay: int) -> float:
    work = workload_of(arch, 4096, 512)  # type: ignore[arg-type]
    if capacity is not None:
        work = dataclasses.replace(work, moe_capacity_factor=capacity)
    si = StepInputs(cuda_graphs=scope)
    return float(step_time_host._captured_launches(work, one_layout(**lay), si)[0])


def test_dense_layer_scopes_by_hand() -> None:
    # a dense layer, tp 1, no recomputation: 16 + 44 = 60 kernels. The MLP block:
    # 5 forward (LayerNorm, fc1, bias-GeLU, fc2, bias-dropout-add) + 18 backward = 23;
    # the attention block the other 37. Each captured block costs 2 graph launches.
    assert _captured(LLAMA, "attn") == 37 - 2
    assert _captured(LLAMA, "mlp") == 23 - 2
    assert _captured(LLAMA, "layer") == 60 - 2
    # tp 2 without SP: 2 all-reduces forward and 2 backward, half in each block
    assert _captured(LLAMA, "attn", tp=2) == 37 + 2 - 2
    assert _captured(LLAMA, "none") == 0.0


def test_moe_layer_scopes_by_hand() -> None:
    # Qwen3-30B-A3B, every layer MoE, ep 8: the MoE block's own kernels are 145 beyond the
    # dense count (test_moe_pricing). attn + moe_router + moe_preprocess: the attention
    # block's 35 net, and the fused router's 7 + the preprocessing's 11 forward kernels +
    # the router's 8 gradients = 26, − 2 launches (tallies: test_moe_router_kernels)
    assert _captured(QWEN, "attn_moe_router", ep=8) == 35 + 24
    # the router and preprocessing alone (the Megatron-Bridge presets' [moe_router,
    # moe_preprocess]): 26 − 2
    assert _captured(QWEN, "moe_router", ep=8) == 24
    # 'mlp' is refused by Megatron when every layer is MoE: nothing captured
    assert _captured(QWEN, "mlp", ep=8) == 0.0
    # whole layers, dropless: the experts stay eager, as attn_moe_router
    assert _captured(QWEN, "layer", ep=8) == 35 + 24
    # whole layers with drop-and-pad (capacity factor 1): all 60 + 145 kernels, − 2
    assert _captured(QWEN, "layer", capacity=1.0, ep=8) == 60 + 145 - 2


def _qwen_on_b200(**training: object) -> Scenario:
    changes: dict[str, object] = {
        "model.preset": "qwen3-30b-a3b",
        "model.architecture": QWEN.model_dump(),
        "gpu": get_gpu("b200").model_dump(),
        "num_gpus": 8,
        "training.stack": "megatron",
        "training.recompute": "none",
        "training.micro_batch": 1,
        "parallelism.tp": 1,
        "parallelism.pp": 1,
        "parallelism.dp": None,
        "parallelism.expert_parallel": 8,
        "parallelism.global_batch": 512,
        "parallelism.gpus_per_node": 8,
    }
    changes.update({f"training.{k}": v for k, v in training.items()})
    return with_changes(default_scenario(), changes)


def test_partial_graphs_lower_a_launch_bound_step_by_hand() -> None:
    # micro-batch 1 is bound by the launches (test_moe_pricing): 48 layers × (205 − 59)
    # + the head's 61 and the embedding's 17 kernels, × 42.5 µs, per micro-batch, 64 of them.
    # The dispatcher syncs the host once per MoE layer in the forward (test_moe_host_sync):
    # the graphed attention no longer runs under the host's launches there, each layer's
    # forward stretch is h_A + g_B, not h_A + h_B, so the step lies above the launch sum by
    # at most the forward's GPU time, a third of the GPU's step (the full-iteration graph's
    # step, nothing on the host); still below the eager step.
    par = estimate(_qwen_on_b200(cuda_graphs="attn_moe_router"), suggest=False).parallelism
    eager = estimate(_qwen_on_b200(), suggest=False).parallelism
    full = estimate(_qwen_on_b200(cuda_graphs="full_iteration"), suggest=False).parallelism
    kernels = 48 * (205 - 59) + step_time_host.HEAD_KERNELS + step_time_host.EMBEDDING_KERNELS
    launches = 64 * kernels * comm.HOST_SECONDS_PER_KERNEL_LAUNCH
    assert par.time_breakdown_seconds["overhead"] > 0
    assert launches < par.step_seconds < launches + full.step_seconds / 3.0
    assert par.step_seconds < eager.step_seconds


def test_full_iteration_leaves_the_gpu_s_time() -> None:
    eager = estimate(_qwen_on_b200(), suggest=False).parallelism
    full = estimate(_qwen_on_b200(cuda_graphs="full_iteration"), suggest=False).parallelism
    assert full.time_breakdown_seconds["overhead"] == 0.0
    assert full.step_seconds < 0.6 * eager.step_seconds


def test_default_is_eager() -> None:
    # old scenario files keep their numbers: no graphs unless asked
    assert default_scenario().training.cuda_graphs == "none"
