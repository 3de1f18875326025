"""The MoE router's and the dispatcher preprocessing's kernel launches, by hand from the
Megatron-LM that the Megatron-Bridge MoE rows ran (the Bridge's ``3rdparty/Megatron-LM``
pin: 25.11 at NVIDIA/Megatron-LM@0d8e0714, 26.02 at @b0cc2706; the calls counted here are
the same at both), against step_time_host's counts.

Every Bridge MoE preset runs the fused paths: ``moe_router_fusion = True``
(scripts/performance configs ``set_qwen3_common_configs`` / ``set_deepseek_v3_common_configs``)
and ``moe_permute_fusion = True`` (the Qwen3 and DeepSeek providers), so the router's top-k,
its auxiliary-loss scores and the loss are Transformer Engine kernels (the Bridge's uv.lock:
TE 2.9 at NVIDIA/TransformerEngine@70f53666 for 25.11, 2.12 at @5671fd36 for 26.02, alike
here; transformer_engine/pytorch/router.py: one ``tex`` kernel per call and direction) and
the permutation TE's mask-map kernels (transformer_engine/pytorch/triton/permutation.py).

Setting of the Qwen3-30B-A3B rows: softmax score, top-8 after the softmax, ``aux_loss``,
no z-loss, no expert bias, router dtype unset (bf16), dropless, the all-to-all dispatcher,
tp 1, ep 8 (16 local experts), ``calculate_per_token_loss`` off.
"""

from __future__ import annotations

from layout_helpers import one_layout

from llm_planner.core.primitives.presets import get_preset
from llm_planner.core.sections.parallelism import step_time_host
from llm_planner.core.sections.parallelism.step_time_inputs import StepInputs
from llm_planner.core.sections.parallelism.workload import workload_of

QWEN = get_preset("qwen3-30b-a3b").architecture

# Forward of TopKRouter with moe_router_fusion (router.py ``TopKRouter.forward``,
# ``routing``, ``_apply_aux_loss``, ``attach_and_log_load_balancing_loss``; moe_utils.py):
ROUTER_FORWARD_FUSED = {
    "gating: RouterGatingLinearFunction.forward, te_general_gemm": 1,
    "topk_routing_with_score_function -> TE fused_topk_with_score_function_fwd": 1,
    "compute_routing_scores_for_aux_loss -> TE fused_score_for_moe_aux_loss_fwd": 1,
    "_apply_aux_loss: routing_map.sum(dim=0) (tp·cp group of 1: no all-reduce)": 1,
    "switch_load_balancing_loss_func -> TE fused_moe_aux_loss_fwd": 1,
    "save_to_aux_losses_tracker: aux_loss / coeff, values[layer - 1] += loss": 2,
    # MoEAuxLossAutoScaler.forward saves the loss: no kernel
}
FORCE_BALANCING_FORWARD = 2
"""The Bridge benchmarks' ``moe_router_force_load_balancing`` (RandomSTE.forward:
``logits.clone().normal_()``), a benchmark-only step; its backward passes the gradient."""

# The router's backward, fused:
ROUTER_BACKWARD_FUSED = {
    "MoEAuxLossAutoScaler.backward: ones_like(aux_loss) * scale": 2,
    "FusedAuxLoss.backward -> fused_moe_aux_loss_bwd": 1,
    "FusedComputeScoresForMoEAuxLoss.backward -> fused_score_for_moe_aux_loss_bwd": 1,
    "FusedTopkScoreFunction.backward -> fused_topk_with_score_function_bwd": 1,
    "the two gradients of the logits (top-k and aux-loss branches) summed": 1,
    "RouterGatingLinearFunction.backward: input and weight gradient GEMMs": 2,
}

# token_dispatcher.py MoEAlltoAllTokenDispatcher.preprocess (ep 8 > 1, dropless):
PREPROCESS = {
    "routing_map.sum(dim=0) (.long() of an int64 sum: no kernel)": 1,
    "input_splits: reshape(ep, local).sum(axis=1)": 1,
    "gather_from_sequence_parallel_region over tp·ep: all-gather": 1,
    "the local experts' slice .contiguous()": 1,
    "num_global_tokens_per_rank: sum(axis=2)": 1,
    "output_splits_tp: sum(axis=1) (output_splits is an index view)": 1,
    "num_tokens_per_local_expert: sum(dim=(0, 1))": 1,
}
# _maybe_dtoh_and_synchronize: non-blocking copies to the host of tokens_per_expert,
# input_splits, output_splits, output_splits_tp (num_out_tokens is a Python int when
# dropless; the per-local-expert counts stay on the GPU under permute fusion)
DEVICE_TO_HOST = 4

# moe_utils.py permute -> TE moe_permute_with_probs (_moe_permute_mask_map): the row-id
# map's three passes and the permute kernel; its backward one unpermute kernel
PERMUTE_FORWARD_FUSED = 3 + 1
PERMUTE_BACKWARD_FUSED = 1

# Without moe_router_fusion the same router runs (moe_utils.py, unfused branches):
# forward: GEMM 1; topk_routing: topk (select + sort) 2, softmax in fp32 1, type_as 1,
# zeros_like + scatter (copy and scatter) 3, zeros_like + int + scatter 2 + bool 5;
# aux scores: softmax 1, topk 2, zeros_like + int + scatter 2 + bool 5; routing_map.sum 1;
# switch loss: probs.sum, product, sum, scale 4; tracker 2 → 28 (+2 forced balancing).
# backward: autoscaler 2, the loss's scale and product 2, aux softmax 1, the probs
# scatter's gather 1, type_as 1, softmax 1, topk's zeros + scatter 2, the logits' sum 1,
# GEMMs 2 → 13. Not priced: every calibration row ran fused.
ROUTER_FORWARD_UNFUSED = 28
ROUTER_BACKWARD_UNFUSED = 13


def test_router_and_preprocess_forward_before_the_sync_by_hand() -> None:
    # eager, fused, without the benchmark's forced balancing: 7 + 7 + 4 = 18
    router = sum(ROUTER_FORWARD_FUSED.values())
    assert router == 7
    assert router + sum(PREPROCESS.values()) + DEVICE_TO_HOST == 18
    assert step_time_host.MOE_ROUTER_KERNELS_FORWARD == 18


def test_router_kernels_forward_and_backward_by_hand() -> None:
    # 18 forward + the router's 8 gradient kernels = 26
    backward = sum(ROUTER_BACKWARD_FUSED.values())
    assert backward == 8
    assert step_time_host.MOE_ROUTER_KERNELS == 18 + 8
    # (unfused the router launches ROUTER_FORWARD_UNFUSED − 7 = 21 more forward and
    # ROUTER_BACKWARD_UNFUSED − 8 = 5 more backward: a graph would save more, not less)


def _moe_router_credit() -> float:
    work = workload_of(QWEN, 4096, 512)  # dropless: no capacity factor
    si = StepInputs(cuda_graphs="moe_router")
    return float(step_time_host._captured_launches(work, one_layout(ep=8), si)[0])


def test_router_graph_credit_is_not_above_the_sources_capture() -> None:
    # What TE's graph of [moe_router, moe_preprocess] replaces (transformer_layer.py
    # _te_cuda_graph_capture → _forward_mlp: the pre-MLP norm, router, preprocess and the
    # first permutation; the device-to-host copies move out of it, token_dispatcher.py
    # cuda_dtoh_point "before_ep_alltoall"):
    forward = 1 + 7 + sum(PREPROCESS.values()) + PERMUTE_FORWARD_FUSED  # 19
    # backward: permutation 1, router 8, the norm output's two gradients summed 1, the norm
    # (3, as the layer counts a fused norm backward), the residual's gradient summed 1
    backward = PERMUTE_BACKWARD_FUSED + 8 + 1 + 3 + 1  # 14
    # against it: the two graph launches, TE's copy of the input into the static buffer
    # (graph.py Graphed.forward) and of the incoming gradients (Graphed.backward: permuted
    # tokens, probabilities, the layer's residual; at 0d8e0714 also the MoE residual's
    # materialised zero gradient, 2 more)
    cost_26_02 = 2 + 1 + 3
    cost_25_11 = cost_26_02 + 2
    assert forward + backward - cost_25_11 == 25
    assert forward + backward - cost_26_02 == 27
    # the model credits 24: at most the source's, never more (with the Bridge's forced
    # balancing the graph also takes RandomSTE's 2)
    assert _moe_router_credit() == 24
    assert _moe_router_credit() <= forward + backward - cost_25_11
