"""Multi-token prediction (MTP) modules: their parameters (FLOPs: :mod:`.flops`).

DeepSeek-V3 (Liu et al. 2024, arXiv:2412.19437, section 2.2 "Multi-Token Prediction",
eq. (21)-(25)): depth k has its own transformer block, an RMSNorm on the previous depth's
hidden state and one on the embedding of token i + k, a projection M_k of their
concatenation 2h → h, and shares the embedding table and the output head with the main
model; its cross-entropy against the labels shifted by k more is weighted by λ / D.

Megatron-Core implements it as ``--mtp-num-layers`` (NVIDIA/Megatron-LM@d98e8a64
megatron/core/transformer/multi_token_prediction.py): ``MultiTokenPredictionLayer`` holds
``enorm``, ``hnorm`` (the two norms), ``eh_proj`` (a column-parallel 2h → h linear, no
bias), ``mtp_model_layer`` (one transformer layer built from the model's own layer spec: an
MoE layer for DeepSeek-V3) and ``final_layernorm``; ``process_mtp_loss`` runs the shared
``output_layer`` once more per depth and a cross-entropy over the labels rolled by one more
token. ``mtp_on_this_rank`` / ``get_mtp_num_layers_to_build``: without a custom pipeline
layout every depth is built on the last pipeline stage. Nothing here is a fitted constant.
"""

from __future__ import annotations

from llm_planner.core.primitives.architecture import Architecture, layer_params, norm_params

MTP_NORMS = 3
"""Norms per MTP depth outside its transformer layer: ``enorm``, ``hnorm`` and
``final_layernorm`` (multi_token_prediction.py at d98e8a64)."""


def mtp_layer_index(arch: Architecture) -> int:
    """The main-model layer whose kind the MTP block repeats: the last one. Megatron's
    FLOPs count (megatron/training/training.py at d98e8a64, ``num_floating_point_operations``)
    adds each depth as a MoE layer when the last layer is one (``last_layer_is_moe``)."""
    return arch.layers - 1


def mtp_params_per_depth(arch: Architecture) -> int:
    """Parameters one MTP depth owns: its transformer layer (the last layer's kind, all of
    its experts), ``eh_proj`` 2h·h and three norms. The embedding table and the output head
    are the main model's (shared, arXiv:2412.19437 section 2.2), not counted here."""
    h = arch.hidden_size
    return layer_params(arch, mtp_layer_index(arch)) + 2 * h * h + MTP_NORMS * norm_params(arch)


def mtp_params(arch: Architecture, depths: int) -> int:
    """Parameters ``depths`` MTP modules add to the model (:func:`mtp_params_per_depth` each)."""
    return max(depths, 0) * mtp_params_per_depth(arch)


def mtp_layer_matmul_active(arch: Architecture) -> float:
    """Weight-matrix parameters one token passes through in the MTP block's layer: every
    matrix, the routed experts' × experts_per_token ÷ experts (the router included)."""
    index = mtp_layer_index(arch)
    moe = arch.moe
    share = moe.experts_per_token / moe.num_experts if moe is not None else 1.0
    return float(
        sum(
            m.elements * (share if m.routed else 1.0)
            for m in arch.layer_matrices(arch.is_moe_layer(index), index=index)
        )
    )


def mtp_saved_logits_bytes(
    arch: Architecture, seq_len: int, micro_batch: int, *, tp: int, depths: int
) -> float:
    """Bytes the MTP depths' losses keep on the last stage while the main loss runs: each
    depth's cross-entropy is computed in the forward (``process_mtp_loss`` at d98e8a64,
    before the main model's loss) and keeps its fp32 softmax over the vocabulary-parallel
    logits, 4·s·b·V/t bytes, until its backward (Megatron-Core
    ``_VocabParallelCrossEntropy`` saves ``exp_logits``); the main loss's working set
    (:func:`.activations.logits_working_bytes`) comes on top. The MTP block's few tensors
    outside its layer (the two norms, the 2h concatenation, the projection's output: about
    8·h·s·b, under 1% of a DeepSeek-V3 layer's) are left out."""
    return max(depths, 0) * 4.0 * seq_len * micro_batch * arch.vocab_size / tp
