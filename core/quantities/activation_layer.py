"""One transformer layer's saved tensors outside the attention block: the dense MLP, the MoE
FFN, recurrent mixers, and the whole layer's list (:mod:`.activations`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from llm_planner.core.primitives.architecture import Architecture
from llm_planner.core.quantities import recurrent
from llm_planner.core.quantities.activation_attention import attention_tensors
from llm_planner.core.quantities.activation_profiles import (
    ACTIVATION_SAVED,
)
from llm_planner.core.quantities.activation_tensors import (
    FP32,
    INDEX_BYTES,
    LedgerConfig,
    Num,
    SavedTensor,
    dropout_mask,
    lora_tensor,
    module_traits,
    norm_tensors,
    trains_input,
)


def _mlp_tensors(
    arch: Architecture, cfg: LedgerConfig, tokens: Num, f: int, *, label: str, tok: str
) -> list[SavedTensor]:
    """One MLP (dense, a shared expert or the routed experts) on ``tokens`` tokens."""
    act, dt, p, h = cfg.act, cfg.act_dtype, cfg.profile, arch.hidden_size
    out: list[SavedTensor] = []
    up_flops = 2.0 * tokens * h * f
    if arch.gated:
        if p.fused_swiglu:
            out.append(
                SavedTensor(
                    f"{label}fc1 output (gate ‖ up)",
                    f"2·{tok}·f",
                    dt,
                    2 * tokens * f,
                    act,
                    "mlp",
                    "tp",
                    producer_flops=2 * up_flops,
                )
            )
        else:
            out.append(
                SavedTensor(
                    f"{label}gate (activation input)",
                    f"{tok}·f",
                    dt,
                    tokens * f,
                    act,
                    "mlp",
                    "tp",
                    producer_flops=up_flops,
                )
            )
            out.append(
                SavedTensor(
                    f"{label}activation output", f"{tok}·f", dt, tokens * f, act, "mlp", "tp"
                )
            )
            out.append(
                SavedTensor(
                    f"{label}up",
                    f"{tok}·f",
                    dt,
                    tokens * f,
                    act,
                    "mlp",
                    "tp",
                    producer_flops=up_flops,
                )
            )
            more = module_traits(arch, cfg).glu_saved - 4
            if more > 0:
                out.append(
                    SavedTensor(
                        f"{label}gated activation's other saved tensors",
                        f"{more}·{tok}·f",
                        dt,
                        more * tokens * f,
                        act,
                        "mlp",
                        "tp",
                    )
                )
    else:
        out.append(
            SavedTensor(
                f"{label}GeLU input (fc1 output)",
                f"{tok}·f",
                dt,
                tokens * f,
                act,
                "mlp",
                "tp",
                producer_flops=up_flops,
            )
        )
        extra = ACTIVATION_SAVED.get(arch.hidden_act or "", 1) - 1 if p.hf_modules else 0
        if extra:
            out.append(
                SavedTensor(
                    f"{label}{arch.hidden_act} written out: its other saved tensors",
                    f"{extra}·{tok}·f",
                    dt,
                    extra * tokens * f,
                    act,
                    "mlp",
                    "tp",
                )
            )
    if trains_input(cfg, "down"):
        out.append(
            SavedTensor(
                f"{label}fc2 input (activation output)",
                f"{tok}·f",
                cfg.lin_dtype,
                tokens * f,
                cfg.lin,
                "mlp",
                "tp",
            )
        )
    out += lora_tensor(cfg, "down", tokens, "mlp")
    return out


def _fc1_input(cfg: LedgerConfig, elements: Num, moe_layer: bool) -> SavedTensor:
    """The norm output fc1 saves: quantized where the stack saves linear inputs so
    (:attr:`.activation_tensors.LedgerConfig.gemm_input`); an MoE layer's router (a plain
    linear) saves it in the activation dtype."""
    if moe_layer:
        return SavedTensor(
            "router and fc1 input (norm output)",
            "s·b·h",
            cfg.act_dtype,
            elements,
            cfg.act,
            "mlp",
            "sp",
        )
    return SavedTensor(
        "fc1 input (norm output)", "s·b·h", cfg.lin_dtype, elements, cfg.lin, "mlp", "sp"
    )


def paged_stash(routed: list[SavedTensor], factor: float) -> list[SavedTensor]:
    """The routed experts' saved tensors under Megatron-Core's MoE paged stash
    (``--moe-paged-stash``, read at NVIDIA/Megatron-LM@d98e8a64
    megatron/core/transformer/moe/paged_stash.py and docs/user-guide/features/
    paged_stash.md): every tensor the fused grouped MLP saves (experts.py
    ``TEGroupedMLP._fused_forward`` inside ``get_paged_stash_context``; Transformer Engine
    marks them, NVIDIA/TransformerEngine@d0067d0d pytorch/ops/fused/grouped_mlp.py
    ``mark_grouped_tensor(fc1 input, activation input, scales, fc2 input)``) is copied into
    pages of a buffer allocated once, ``PagedStashManager.allocate_stash_buffers``: its
    tokens are the largest sum over the schedule of the layers' *balanced* token counts
    (``avg_num_tokens`` = the capacity-padded buffer ÷ ``moe_expert_rank_capacity_factor``)
    × ``moe_paged_stash_buffer_size_factor_cuda`` = ``factor``; the original tensors are
    freed once copied, a page that does not fit goes to the pinned host buffer
    (``..._factor_cpu``). So the GPU holds ``factor`` × the balanced tensors: 1.2 × in
    Megatron-Bridge's recipes (more than the dropless count, which the app prices at
    balanced load; the headroom absorbs routing skew), ``factor`` < 1 spills the rest to
    host. Not priced: the capacity-sized tensors (× the capacity factor) of the one layer
    being stashed or reloaded."""
    return [
        replace(t, name=f"{t.name} (paged stash × {factor:g})", elements=t.elements * factor)
        for t in routed
    ]


def _combine_tensor(
    cfg: LedgerConfig, copies: int, tok: str, sd: Num, *, h: int, k: int
) -> SavedTensor:
    """What an MoE layer saves for the router-score scaling of its routed copies. Where the
    stack scales them inside the experts (:attr:`.activation_profiles.ImplementationProfile.
    moe_probs_in_experts`: Megatron-Core's weighted activation) the activation's backward
    reads the probability of each routed copy (fp32, 4·k·s·b bytes) and the combine
    (``unpermute`` without probabilities) saves nothing; otherwise the weighted combine
    saves the expert outputs, k·s·b·h in the activation dtype."""
    if cfg.profile.moe_probs_in_experts and copies == k:
        return SavedTensor(
            "router probabilities per routed copy (weighted activation)",
            "k·s·b",
            "fp32",
            copies * sd,
            FP32,
            "moe",
            "sp",
        )
    return SavedTensor(
        "expert outputs (before weighted combine)"
        if copies == k
        else "token copies before the router-score scaling",
        f"{tok}·h",
        cfg.act_dtype,
        copies * sd * h,
        cfg.act,
        "moe",
        "sp",
    )


def _routed_tensors(
    arch: Architecture, cfg: LedgerConfig, copies: int, tok: str, *, fc1_trained: bool
) -> list[SavedTensor]:
    """What an MoE layer's routed experts save for ``copies`` copies of the s·b tokens:
    their fc1 input, the expert MLP's tensors and the router-score scaling's
    (:func:`_combine_tensor`), held in the paged stash where the inputs set one
    (:func:`paged_stash`)."""
    assert arch.moe is not None
    sd, h, k = cfg.s * cfg.b, arch.hidden_size, arch.moe.experts_per_token
    out: list[SavedTensor] = []
    if fc1_trained:
        # the experts' fc1 is a linear layer like the dense one: under a recipe whose
        # stack saves quantized GEMM inputs it saves the quantized copy only
        # (NVIDIA/TransformerEngine@d0067d0d pytorch/module/grouped_linear.py)
        out.append(
            SavedTensor(
                f"routed tokens ({copies} copies, expert fc1 input)",
                f"{tok}·h",
                cfg.lin_dtype,
                copies * sd * h,
                cfg.lin,
                "moe",
                "sp",
            )
        )
    out += [
        replace(t, block="moe")
        for t in _mlp_tensors(
            arch, cfg, copies * sd, arch.moe.expert_ffn_size, label="routed experts: ", tok=tok
        )
    ]
    out.append(_combine_tensor(cfg, copies, tok, sd, h=h, k=k))
    if cfg.profile.moe_paged_stash > 0 and copies == k:
        return paged_stash(out, cfg.profile.moe_paged_stash)
    return out


def _ffn_tensors(arch: Architecture, cfg: LedgerConfig, moe_layer: bool) -> list[SavedTensor]:
    s, b, act, dt, h = cfg.s, cfg.b, cfg.act, cfg.act_dtype, arch.hidden_size
    sd = s * b
    out: list[SavedTensor] = []
    fc1_trained = trains_input(cfg, "gate", "up")
    if fc1_trained:
        out.append(_fc1_input(cfg, sd * h, moe_layer))
    for target in ("gate", "up"):
        if target == "gate" and not arch.gated:
            continue
        out += lora_tensor(cfg, target, sd, "mlp")
    if moe_layer and arch.moe is not None:
        moe = arch.moe
        k, e = moe.experts_per_token, moe.num_experts
        out.append(SavedTensor("router probabilities", "s·b·E", "fp32", sd * e, FP32, "moe", "sp"))
        if cfg.profile.hf_modules and module_traits(arch, cfg).experts_on_every_token:
            out.append(
                SavedTensor(
                    "top-k indices (int64) and router scores",
                    "k·s·b·8 + E·s·b·2 bytes",
                    "int64/act",
                    k * sd * INDEX_BYTES + e * sd * act,
                    1.0,
                    "moe",
                    "sp",
                )
            )
        elif cfg.profile.hf_modules:
            # transformers' MoE blocks (v5.24.0, integrations/moe.py grouped_mm dispatch):
            # top-k indices and three int64 index copies of the k·s·b assignments (sort,
            # gather, scatter), the routing weights and their normalisation in fp32
            out.append(
                SavedTensor(
                    "routing indices (int64) and weights (fp32)",
                    "k·s·b·40 + 4·s·b bytes",
                    "int64/fp32",
                    k * sd * 40.0 + 4.0 * sd,
                    1.0,
                    "moe",
                    "sp",
                )
            )
            if module_traits(arch, cfg).router_fp32:
                out.append(
                    SavedTensor(
                        "router input, fp32 copy", "s·b·h", "fp32", sd * h, FP32, "moe", "sp"
                    )
                )
        copies, tok = (
            (e, "E·s·b") if module_traits(arch, cfg).experts_on_every_token else (k, "k·s·b")
        )
        out += _routed_tensors(arch, cfg, copies, tok, fc1_trained=fc1_trained)
        if moe.num_shared_experts:
            f_shared = moe.num_shared_experts * moe.expert_ffn_size
            out += _mlp_tensors(arch, cfg, sd, f_shared, label="shared experts: ", tok="s·b")
            if module_traits(arch, cfg).shared_expert_gate:
                out.append(
                    SavedTensor(
                        "shared expert output (× its sigmoid gate)",
                        "s·b·h",
                        dt,
                        sd * h,
                        act,
                        "moe",
                        "sp",
                    )
                )
    else:
        out += _mlp_tensors(arch, cfg, sd, arch.ffn_size, label="", tok="s·b")
    if cfg.dropout:
        mb, md = dropout_mask(cfg)
        out.append(SavedTensor("MLP residual dropout mask", "s·b·h", md, sd * h, mb, "mlp", "sp"))
    return out


def _share(arch: Architecture, moe_layer: bool, has: Callable[[int], bool]) -> float:
    """Fraction of the model's MoE (or other) layers for which ``has`` holds."""
    kind = [i for i in range(arch.layers) if arch.is_moe_layer(i) == moe_layer]
    return sum(has(i) for i in kind) / len(kind) if kind else 1.0


def _attention_share(arch: Architecture, moe_layer: bool) -> float:
    """Fraction of the model's MoE (or other) layers whose mixer is attention: 1 for a
    transformer, 0 for Mamba / RWKV, Jamba's 1/8 of its non-MoE layers."""
    return _share(arch, moe_layer, arch.is_attention_layer)


def _recurrent_layer_tensors(
    arch: Architecture, cfg: LedgerConfig, moe_layer: bool
) -> list[SavedTensor]:
    """A layer of a model with recurrent mixers (:mod:`.recurrent`): its norms, the mean of
    its kind's mixers (attention tensors × the attention share, recurrent × the recurrent
    share; Nemotron-H's MLP layers have neither) and its FFN × the share of the kind's
    layers that have one (all of Jamba's and Qwen3.5's, none of Mamba's or RWKV's)."""
    share = _attention_share(arch, moe_layer)
    recurrent_share = _share(arch, moe_layer, arch.is_recurrent_layer)
    ffn_share = _share(arch, moe_layer, arch.has_ffn)
    tensors = norm_tensors(arch, cfg, "mixer norm")
    if share > 0:
        tensors += [replace(t, elements=t.elements * share) for t in attention_tensors(arch, cfg)]
    for saved in recurrent.recurrent_saved_tensors(arch, cfg.s, cfg.b):
        fp32 = saved.dtype == "fp32"
        tensors.append(
            SavedTensor(
                saved.name
                if recurrent_share == 1
                else f"{saved.name} (× {recurrent_share:.3g} of layers)",
                saved.shape,
                "fp32" if fp32 else cfg.act_dtype,
                saved.elements * recurrent_share,
                FP32 if fp32 else cfg.act,
                "recurrent",
                saved.shard,
            )
        )
    if ffn_share > 0:
        more = norm_tensors(arch, cfg, "MLP norm") if arch.norms_per_layer > 1 else []
        more += _ffn_tensors(arch, cfg, moe_layer)
        tensors += [replace(t, elements=t.elements * ffn_share) for t in more]
    elif arch.norms_per_layer > 1:
        tensors += norm_tensors(arch, cfg, "channel-mix norm")
    return tensors


def _layer_tensors(arch: Architecture, cfg: LedgerConfig, moe_layer: bool) -> list[SavedTensor]:
    """Every tensor one layer saves, before recomputation."""
    if arch.recurrent is not None:
        return _recurrent_layer_tensors(arch, cfg, moe_layer)
    tensors = norm_tensors(arch, cfg, "attention norm")
    tensors += attention_tensors(arch, cfg)
    tensors += norm_tensors(arch, cfg, "MLP norm")
    tensors += _ffn_tensors(arch, cfg, moe_layer)
    if arch.parallel_attention and arch.norms_per_layer < 2:
        # GPT-J / Falcon: attention and MLP read one norm's output (a single saved tensor);
        # NeoX has two norms on the same input, so two outputs
        tensors = [
            t
            for t in tensors
            if not t.name.startswith("MLP norm") and not t.name.startswith("fc1 input")
        ]
    elif arch.parallel_attention:
        # NeoX / Falcon-40B: both norms read the same input, saved once (one storage)
        tensors = [t for t in tensors if t.name != "MLP norm: input"]
    if cfg.profile.hf_modules and arch.norms_per_layer > 2:
        # Gemma-2/3: post-attention and post-MLP norms too; their outputs go to the residual
        for i in range(arch.norms_per_layer - 2):
            tensors += norm_tensors(arch, cfg, f"post-norm {i + 1}")
    return tensors
