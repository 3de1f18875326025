"""The attention block's saved tensors: standard / GQA / MQA attention with a fused (flash)
or an eager kernel, and multi-head latent attention (DeepSeek-V2/V3). Korthikanti et al.
2022 (arXiv:2205.05198) section 4.1 for the eager accounting; the fused kernels' saved
outputs and log-sum-exp from FlashAttention-2 (Dao 2023, arXiv:2307.08691); MLA from
DeepSeek-V2 (arXiv:2405.04434) section 2.1. Assembled into a layer by :mod:`.activations`."""

from __future__ import annotations

import numpy as np

from llm_planner.core.primitives.architecture import Architecture
from llm_planner.core.quantities.activation_tensors import (
    FP32,
    INDEX_BYTES,
    LedgerConfig,
    Num,
    SavedTensor,
    dropout_mask,
    lora_tensor,
    masked_share,
    module_traits,
    norm_tensors,
    qk_norm_tensors,
    trains_input,
)


def _mla_attention_tensors(arch: Architecture, cfg: LedgerConfig) -> list[SavedTensor]:
    """Multi-head latent attention (DeepSeek-V2/V3, arXiv:2405.04434 section 2.1): the
    down-projections read the norm output; the q and kv latents (ranks r_q, r_kv) are
    normalised and read by the up-projections; then per head q and k of width
    d_nope + d_rope (the rotary part of k shared by the heads, expanded by torch.cat)
    and v of width d_v. transformers v5.24.0 models/deepseek_v3/modeling_deepseek_v3.py
    DeepseekV3Attention: q_a_proj → q_a_layernorm → q_b_proj; kv_a_proj_with_mqa →
    kv_a_layernorm → kv_b_proj; k_pe expanded and concatenated; the eager attention."""
    mla = arch.mla
    assert mla is not None
    s, b, act, dt = cfg.s, cfg.b, cfg.act, cfg.act_dtype
    p = cfg.profile
    a, h, sd = arch.heads, arch.hidden_size, s * b
    d_qk = mla.qk_nope_head_dim + mla.qk_rope_head_dim
    out: list[SavedTensor] = []
    if trains_input(cfg, "q", "k", "v"):
        out.append(
            SavedTensor(
                "down-projections' input (norm output)",
                "s·b·h",
                cfg.lin_dtype,
                sd * h,
                cfg.lin,
                "attention",
                "sp",
            )
        )
    for name, rank in (("q", mla.q_lora_rank), ("kv", mla.kv_lora_rank)):
        if rank is None:
            continue
        out += norm_tensors(arch, cfg, f"{name} latent norm", width=rank, block="attention")
        out.append(
            SavedTensor(
                f"{name} up-projection input (latent norm output)",
                f"s·b·r_{name}",
                cfg.lin_dtype,
                sd * rank,
                cfg.lin,
                "attention",
                "sp",
            )
        )
    att_flops = 2.0 * b * s * s * a * (d_qk + mla.v_head_dim)
    out.append(
        SavedTensor("Q (nope ‖ rope)", "s·b·a·d_qk", dt, sd * a * d_qk, act, "attention", "tp")
    )
    out.append(
        SavedTensor(
            "K (nope ‖ shared rope)", "s·b·a·d_qk", dt, sd * a * d_qk, act, "attention", "tp"
        )
    )
    out.append(SavedTensor("V", "s·b·a·d_v", dt, sd * a * mla.v_head_dim, act, "attention", "tp"))
    if cfg.flash:
        out.append(
            SavedTensor(
                "flash log-sum-exp",
                "a·s·b",
                "fp32",
                a * sd,
                FP32,
                "attention",
                "tp",
                producer_flops=att_flops,
            )
        )
    else:
        scores = a * s * s * b
        sm_bytes, sm_dtype = (FP32, "fp32") if p.softmax_fp32 else (act, dt)
        out.append(
            SavedTensor(
                "softmax output",
                "a·s²·b",
                sm_dtype,
                scores,
                sm_bytes,
                "attention",
                "tp",
                True,
                att_flops / 2,
            )
        )
        if p.softmax_fp32 and act != FP32:
            out.append(
                SavedTensor(
                    "softmax output cast to activation dtype",
                    "a·s²·b",
                    dt,
                    scores,
                    act,
                    "attention",
                    "tp",
                    True,
                )
            )
    if trains_input(cfg, "o"):
        out.append(
            SavedTensor(
                "out-projection input (attention output)",
                "s·b·a·d_v",
                cfg.lin_dtype,
                sd * a * mla.v_head_dim,
                cfg.lin,
                "attention",
                "tp",
            )
        )
    return out


def _flash_core(
    arch: Architecture, cfg: LedgerConfig, kv_elems: Num, qkv_flops: Num, att_flops: Num
) -> list[SavedTensor]:
    """The fused kernel's saved tensors (FlashAttention / SDPA): q, k, v, output, log-sum-exp."""
    s, b, act, dt = cfg.s, cfg.b, cfg.act, cfg.act_dtype
    p = cfg.profile
    a, q = arch.heads, arch.q_size
    sd = s * b
    traits = module_traits(arch, cfg)
    out: list[SavedTensor] = []
    expand = p.flash_repeat_kv and arch.kv_heads != arch.heads
    k_shape = "s·b·a·d" if expand else "s·b·kv·d"
    k_elems = sd * q if expand else kv_elems
    if p.hf_modules and not expand and arch.kv_heads != arch.heads:
        # transformers' sdpa_attention_forward passes enable_gqa (no repeat_kv) unless
        # an attention mask is materialised: a window shorter than the sequence
        share = masked_share(arch, s)
        k_elems = kv_elems + share * (sd * q - kv_elems)
    out.append(
        SavedTensor(
            "Q (after rotary)",
            "s·b·a·d",
            dt,
            sd * q,
            act,
            "attention",
            "tp",
            producer_flops=qkv_flops,
        )
    )
    if p.flash_qkv_copy_held and arch.kv_heads == arch.heads:
        out.append(
            SavedTensor(
                "k, v in the QKV copy Q views",
                "2·s·b·kv·d",
                dt,
                2 * kv_elems,
                act,
                "attention",
                "tp",
            )
        )
    rep = " (repeated to a heads)" if expand else ""
    out += [
        SavedTensor(kv_name + rep, k_shape, dt, k_elems, act, "attention", "tp")
        for kv_name in ("K", "V")
    ]
    if traits.sdpa_value_view:
        out.append(
            SavedTensor(
                "V's fused QKV output (q and k parts kept alive by the view)",
                "s·b·(a + kv)·d",
                dt,
                sd * q + kv_elems,
                act,
                "attention",
                "tp",
            )
        )
    out.append(
        SavedTensor(
            "flash log-sum-exp",
            "a·s·b",
            "fp32",
            a * sd,
            FP32,
            "attention",
            "tp",
            producer_flops=att_flops,
        )
    )
    if p.flash_output_copy or (p.flash_output_follows_q and traits.q_head_major):
        out.append(
            SavedTensor(
                "flash output O",
                "s·b·a·d",
                dt,
                sd * q,
                act,
                "attention",
                "tp",
                producer_flops=att_flops,
            )
        )
        if trains_input(cfg, "o"):
            out.append(
                SavedTensor(
                    "out-projection input (O, transposed copy)",
                    "s·b·a·d",
                    cfg.lin_dtype,
                    sd * q,
                    cfg.lin,
                    "attention",
                    "tp",
                )
            )
    elif cfg.gemm_input is not None:
        # the kernel keeps O in the activation dtype for its backward; the out-projection
        # saves its own quantized copy (Transformer Engine, :mod:`.stacks` megatron)
        out.append(
            SavedTensor(
                "flash output O",
                "s·b·a·d",
                dt,
                sd * q,
                act,
                "attention",
                "tp",
                producer_flops=att_flops,
            )
        )
        if trains_input(cfg, "o"):
            out.append(
                SavedTensor(
                    "out-projection input (O, quantized copy)",
                    "s·b·a·d",
                    cfg.lin_dtype,
                    sd * q,
                    cfg.lin,
                    "attention",
                    "tp",
                )
            )
    else:
        out.append(
            SavedTensor(
                "flash output O = out-projection input",
                "s·b·a·d",
                dt,
                sd * q,
                act,
                "attention",
                "tp",
                producer_flops=att_flops,
            )
        )
    return out


def _eager_core(
    arch: Architecture, cfg: LedgerConfig, kv_elems: Num, qkv_flops: Num, att_flops: Num
) -> list[SavedTensor]:
    """Eager attention's saved tensors: q, k, the (soft-capped) softmax, its cast or
    dropout, v and the out-projection input."""
    s, b, act, dt = cfg.s, cfg.b, cfg.act, cfg.act_dtype
    p = cfg.profile
    a, q = arch.heads, arch.q_size
    sd = s * b
    traits = module_traits(arch, cfg)
    out: list[SavedTensor] = []
    k_elems = sd * q if arch.kv_heads != arch.heads else kv_elems
    rep = " (repeated to a heads)" if arch.kv_heads != arch.heads else ""
    qk_bytes, qk_dtype = (FP32, "fp32") if traits.eager_softmax == "fp32_qk" else (act, dt)
    out.append(
        SavedTensor(
            "Q",
            "s·b·a·d",
            qk_dtype,
            sd * q,
            qk_bytes,
            "attention",
            "tp",
            producer_flops=qkv_flops,
        )
    )
    out.append(
        SavedTensor(
            "K" + rep,
            "s·b·a·d" if rep else "s·b·kv·d",
            qk_dtype,
            k_elems,
            qk_bytes,
            "attention",
            "tp",
        )
    )
    scores = a * s * s * b
    if traits.attention_softcap:
        out.append(
            SavedTensor(
                "soft-capped scores: tanh result",
                "a·s²·b",
                dt,
                scores,
                act,
                "attention",
                "tp",
                True,
            )
        )
    softmax_fp32 = p.softmax_fp32 and traits.eager_softmax != "act"
    sm_bytes, sm_dtype = (FP32, "fp32") if softmax_fp32 else (act, dt)
    if arch.attention_sinks and p.hf_modules:
        # gpt-oss: one sink column per head joins the scores; their row max (its int64
        # index saved) is subtracted before the softmax over s + 1 columns
        scores = a * s * (s + 1) * b
        out.append(
            SavedTensor(
                "sink-softmax row max indices",
                "a·s·b",
                "int64",
                a * sd,
                INDEX_BYTES,
                "attention",
                "tp",
                True,
            )
        )
    out.append(
        SavedTensor(
            "softmax output",
            "a·s²·b",
            sm_dtype,
            scores,
            sm_bytes,
            "attention",
            "tp",
            True,
            att_flops / 2,
        )
    )
    if cfg.dropout:
        mb, md = dropout_mask(cfg)
        out.append(
            SavedTensor("attention dropout mask", "a·s²·b", md, scores, mb, "attention", "tp", True)
        )
        out.append(
            SavedTensor(
                "attention dropout output", "a·s²·b", dt, scores, act, "attention", "tp", True
            )
        )
    elif softmax_fp32 and act != FP32:
        out.append(
            SavedTensor(
                "softmax output cast to activation dtype",
                "a·s²·b",
                dt,
                scores,
                act,
                "attention",
                "tp",
                True,
            )
        )
    out.append(
        SavedTensor(
            "V" + rep, "s·b·a·d" if rep else "s·b·kv·d", dt, k_elems, act, "attention", "tp"
        )
    )
    if trains_input(cfg, "o"):
        out.append(
            SavedTensor(
                "out-projection input (attention output)",
                "s·b·a·d",
                cfg.lin_dtype,
                sd * q,
                cfg.lin,
                "attention",
                "tp",
                producer_flops=att_flops / 2,
            )
        )
    return out


def attention_tensors(arch: Architecture, cfg: LedgerConfig) -> list[SavedTensor]:
    if arch.mla is not None and cfg.lora_rank is None and not cfg.dropout:
        return _mla_attention_tensors(arch, cfg)
    s, b = cfg.s, cfg.b
    q, h = arch.q_size, arch.hidden_size
    kv = arch.kv_size
    sd = s * b
    att_flops = 4.0 * b * s * s * q  # QK^T and P·V, forward (Korthikanti 2022 section 5)
    out: list[SavedTensor] = []
    if trains_input(cfg, "q", "k", "v"):
        out.append(
            SavedTensor(
                "QKV projection input (norm output)",
                "s·b·h",
                cfg.lin_dtype,
                sd * h,
                cfg.lin,
                "attention",
                "sp",
            )
        )
    for target in ("q", "k", "v"):
        out += lora_tensor(cfg, target, sd, "attention")
    out += qk_norm_tensors(arch, cfg)
    # kv heads replicate when t > kv (Python's min on one layout's t: the same number)
    tp = cfg.tp
    kv_per_gpu_heads = min(tp, arch.kv_heads) if type(tp) is int else np.minimum(tp, arch.kv_heads)
    kv_elems = sd * kv * cfg.tp / kv_per_gpu_heads  # divided by t later
    qkv_flops = 2.0 * sd * h * (q + 2 * kv)
    core = _flash_core if cfg.flash else _eager_core
    out += core(arch, cfg, kv_elems, qkv_flops, att_flops)
    out += lora_tensor(cfg, "o", sd, "attention")
    if cfg.dropout:
        mb, md = dropout_mask(cfg)
        out.append(
            SavedTensor(
                "attention residual dropout mask", "s·b·h", md, sd * h, mb, "attention", "sp"
            )
        )
    return out
