"""FLOPs per token: the seed's 6·P·D, attention scores, and the model FLOPs MFU divides by.

One definition of each count, imported by every section that needs it (compute budget,
training's recomputation factor, parallelism's step time and MFU). FLOP, per token.
"""

from __future__ import annotations

from llm_planner.core.primitives.architecture import Architecture
from llm_planner.core.quantities.mtp import MTP_NORMS, mtp_layer_index, mtp_layer_matmul_active


def training_flops_6pd(params: float, tokens: float) -> float:
    """Training FLOPs C = 6·P·D: forward 2·P·D, backward 4·P·D.

    Kaplan et al. 2020 (arXiv:2001.08361) section 2.1; EleutherAI Transformer Math 101.
    P = parameters each token passes through (active parameters for MoE). Ignores the
    attention-score FLOPs (see :func:`training_flops_with_attention`).
    """
    return 6.0 * params * tokens


def windowed_layers(arch: Architecture) -> int:
    """Layers that attend only within ``sliding_window`` tokens.

    ``all``: every layer (Mistral 7B v0.1); ``alternate``: every other layer starting
    with the first, ⌈L/2⌉ of them (Gemma 2: local and global layers alternate); every
    N-th global (Gemma 3); only attention layers count in a hybrid
    (:attr:`Architecture.windowed_attention_layers`).
    """
    return arch.windowed_attention_layers


def _attention_widths(arch: Architecture) -> tuple[int, int]:
    """(query·key width, value width) summed over heads: a·d each for MHA/GQA/MQA;
    a·(d_nope + d_rope) and a·d_v for MLA (DeepSeek-V2 section 2.1)."""
    if arch.mla is not None:
        m = arch.mla
        return (
            arch.heads * (m.qk_nope_head_dim + m.qk_rope_head_dim),
            arch.heads * m.v_head_dim,
        )
    return arch.q_size, arch.q_size


def attention_forward_flops_per_token(
    arch: Architecture, context: float, causal: bool = False
) -> float:
    """Forward FLOPs per token of attention scores (Q·Kᵀ) and weighted sum (A·V).

    Per layer 2·n_ctx·d_qk + 2·n_ctx·d_v, i.e. 4·s·h for standard attention: the 4·B·s²·h
    per layer of Narayanan et al. 2021 (arXiv:2104.04473, eq. (3), the s/(6h) term) and
    PaLM's 12·L·H·Q·T for training (Appendix B) divided by 3 for the forward pass only.
    Kaplan et al. 2020, Table 1 counts half of this (2·n_layer·n_ctx·d_attn, scores only).
    ``causal=False`` counts every token against the full context, as these papers do;
    ``causal=True`` averages over positions (a prompt's token i sees i tokens). Layers
    with a sliding window see at most ``sliding_window`` tokens; global layers of their own
    head width (Gemma 4's ``global_head_dim``) count at that width.
    """
    qk, v = _attention_widths(arch)
    per_context_token = 2.0 * (qk + v)
    windowed = windowed_layers(arch)
    full: float = arch.attention_layers - windowed
    if arch.global_head_dim is not None and arch.mla is None:
        # global layers of their own head width (Gemma 4): count them in local-layer widths
        full = full * arch.global_head_dim / arch.head_dim

    def effective(limit: float | None) -> float:
        if limit is None or context <= limit:
            return context / 2.0 if causal else context
        if not causal:
            return limit
        return limit - limit * limit / (2.0 * context)  # mean of min(i, w) for i ≤ s

    window = float(arch.sliding_window) if arch.sliding_window is not None else None
    total = windowed * effective(window) + full * effective(None)
    return per_context_token * total


def training_flops_with_attention(
    params: float, tokens: float, arch: Architecture, seq_len: int
) -> float:
    """6·P·D plus the attention FLOPs: D·(6·P + 3 · attention forward per token).

    The training count PaLM uses for MFU (Appendix B: 6N + 12·L·H·Q·T per token) and
    Narayanan et al. 2021 eq. (3) without recomputation; grows with the sequence length.
    """
    return tokens * (6.0 * params + 3.0 * attention_forward_flops_per_token(arch, seq_len))


def model_flops_per_token(arch: Architecture, seq_len: int, params_matmul: float) -> float:
    """Model FLOPs per trained token (forward + backward, no recomputation).

    6·N + 12·L·H·Q·T (Chowdhery et al. 2022, PaLM, arXiv:2204.02311 Appendix B): N the
    parameters that multiply (active, embedding lookup excluded), L layers, H heads, Q head
    dimension, T the sequence length (attention scores and weighted sum, not halved for the
    causal mask, as in Narayanan et al. 2021's count). The attention term is 3 × the
    compute section's forward count (:func:`attention_forward_flops_per_token`:
    sliding windows cap T, MLA uses its own query-key and value widths), the same the
    recomputation factor (:func:`llm_planner.core.sections.training.training_flops`) uses.
    """
    return 6.0 * params_matmul + 3.0 * attention_forward_flops_per_token(arch, seq_len)


def mfu_flops_per_token(
    arch: Architecture,
    seq_len: int,
    params: float,
    *,
    include_attention: bool,
    mtp_layers: int = 0,
) -> float:
    """The model FLOPs per token that MFU counts, the same count as the budget C.

    6·P (Kaplan et al. 2020 section 2.1; the seed's C ≈ 6·P·D, with P the active
    parameters), plus the attention scores 3 × :func:`attention_forward_flops_per_token`
    when ``include_attention`` (PaLM's model FLOPs, Chowdhery et al. 2022 Appendix B). One
    count for the whole estimate: MFU = this × tokens/s ÷ (GPUs · peak) on every tab, so
    an assumed MFU and a modeled one mean the same thing and t = C/τ holds. ``mtp_layers``
    multi-token prediction depths add :func:`mtp_flops_per_token` (Megatron-LM counts them
    in its model FLOPs, and NVIDIA's published model TFLOP/s of the DeepSeek-V3 rows with
    MTP include them: tests/core/test_mtp.py).
    """
    attention = 3.0 * attention_forward_flops_per_token(arch, seq_len) if include_attention else 0.0
    mtp = mtp_flops_per_token(arch, seq_len, mtp_layers, include_attention=include_attention)
    return 6.0 * params + attention + mtp


def mtp_flops_per_token(
    arch: Architecture, seq_len: int, depths: int, *, include_attention: bool = True
) -> float:
    """Model FLOPs per trained token of ``depths`` MTP modules, forward + backward.

    Per depth, Megatron-LM's ``num_floating_point_operations`` (training.py at d98e8a64,
    ``transformer_flops``): one more layer of the model's last kind (``num_layers +
    mtp_num_layers``), the MTP norms and projection 6·(3h + 2h²) ("MTP norms and proj"), and
    one more logits pass 6·h·V (``* (mtp_num_layers + 1)  # MTP + final logit``); Megatron-Bridge's
    calculator counts the depths alike (src/megatron/bridge/training/utils/flop_utils.py at
    v0.2.0, 7af9601c, and at 067f987d: ``num_layers = cfg.model.num_layers +
    mtp_num_layers``, the last layer's kind, the logits × (1 + mtp_num_layers)); 6 = 3
    (forward + backward) × 2 (a multiply-add). The layer here is 6 × its active matrices
    (:func:`.mtp.mtp_layer_matmul_active`) plus, when ``include_attention``, one attention layer's
    scores and weighted sum (3 × :func:`attention_forward_flops_per_token` ÷ the
    attention layers; none when the last layer has no attention). NVIDIA's published model
    TFLOP/s of the DeepSeek-V3 rows with and without MTP (Megatron-Bridge 25.11) differ by
    this ratio (tests/core/test_mtp.py)."""
    if depths <= 0:
        return 0.0
    h, vocab = arch.hidden_size, arch.vocab_size
    layer = 6.0 * mtp_layer_matmul_active(arch)
    if include_attention and arch.attention_layers > 0:
        index = mtp_layer_index(arch)
        if arch.is_attention_layer(index):
            layer += 3.0 * attention_forward_flops_per_token(arch, seq_len) / arch.attention_layers
    projection = 6.0 * (MTP_NORMS * h + 2.0 * h * h)
    head = 6.0 * h * vocab
    return depths * (layer + projection + head)


def mtp_head_flops_per_token(arch: Architecture, depths: int) -> float:
    """The part of :func:`mtp_flops_per_token` that is output-head GEMMs: 6·h·V per depth."""
    return max(depths, 0) * 6.0 * arch.hidden_size * arch.vocab_size
