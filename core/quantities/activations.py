"""The activation ledger: every tensor one transformer layer saves for its backward pass.

Training memory grows during the forward pass by what autograd keeps for the backward
pass. This module lists those tensors one by one, for one layer, with a shape formula
(in s, b, h, a, kv heads, FFN size f, vocabulary V), a dtype and bytes per GPU, so the
activation total is explainable line by line (the training tab shows the list).

The reference accounting is Korthikanti et al. 2022, "Reducing Activation Recomputation
in Large Transformer Models" (arXiv:2205.05198), section 4.1: a GPT layer with 16-bit
activations and dropout saves s·b·h·(34 + 5·a·s/h) bytes —

* attention block 11·s·b·h + 5·a·s²·b: QKV input 2sbh, Q and K 4sbh, softmax output
  2as²b, its dropout mask as²b, dropout output 2as²b, V 2sbh, output-projection input
  2sbh, output dropout mask sbh;
* MLP 19·s·b·h: first linear's input 2sbh, GeLU input 8sbh, second linear's input 8sbh,
  dropout mask sbh;
* the two layer norms' inputs 4·s·b·h.

Tensor parallelism of degree t (section 4.2.1) shards the tensors between the column- and
row-parallel linears (Q, K, V, scores, MLP interior) by t; sequence parallelism (4.2.2)
also shards the rest (norm and dropout regions) by t along the sequence, giving
s·b·h/t·(34 + 5·a·s/h).

Implementation profiles say which tensors a given training stack really saves (see
:data:`PROFILES`, :mod:`.activation_profiles`): the same model saves different tensors
under fused Megatron-Core kernels and under plain PyTorch / Hugging Face modules.
``tests/validation`` measures the "pytorch-cpu" profile against PyTorch's own saved tensors.

:func:`activation_bytes_per_layer` is pure arithmetic in s, b and t (numpy arrays work:
no Python branch depends on their values), for the parallel-layout search to vectorise.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, NamedTuple

from llm_planner.core.primitives.architecture import LORA_TARGETS, Architecture
from llm_planner.core.primitives.kept import kept
from llm_planner.core.quantities import recurrent
from llm_planner.core.quantities.activation_layer import _attention_share, _layer_tensors
from llm_planner.core.quantities.activation_outside import (
    logits_working_bytes,
    outside_layer_bytes,
    outside_layer_ledger,
    outside_stage_bytes,
    outside_tensors,
)
from llm_planner.core.quantities.activation_profiles import (
    ACTIVATION_SAVED,
    HF_MODULES,
    PROFILES,
    TRANSFORMERS,
    ImplementationProfile,
    ModuleTraits,
    get_profile,
)
from llm_planner.core.quantities.activation_recompute import (
    selective_drops,
    selective_module_flops,
)
from llm_planner.core.quantities.activation_tensors import (
    FP32,
    LedgerConfig,
    LedgerEntry,
    Num,
    RecomputeKind,
    SavedTensor,
    Shard,
    ledger_config,
    ledger_entry,
    tensor_bytes,
)

__all__ = [
    "ACTIVATION_SAVED",
    "ALL_LINEAR",
    "HF_MODULES",
    "PROFILES",
    "TRANSFORMERS",
    "ImplementationProfile",
    "LayerActivations",
    "LedgerEntry",
    "ModuleTraits",
    "RecomputeKind",
    "activation_bytes_per_layer",
    "get_profile",
    "layer_activations",
    "layer_forward_flops",
    "layer_kept_at",
    "layer_kept_bytes",
    "layer_saved_tensors",
    "logits_working_bytes",
    "outside_layer_bytes",
    "outside_layer_ledger",
    "outside_stage_bytes",
    "outside_tensors",
]
"""The ledger's public API; the profiles (:mod:`.activation_profiles`) are re-exported for
the faces that list them."""


ALL_LINEAR = LORA_TARGETS


def _recompute_split(
    tensors: list[SavedTensor],
    tp: Num,
    sequence_parallel: bool,
    recompute: RecomputeKind,
    threshold_bytes: Num,
    *,
    cfg: LedgerConfig,
    arch: Architecture,
) -> tuple[Num, Num, Num]:
    """(kept bytes, one layer's recompute working set, recomputed forward FLOPs) per layer."""
    return _recompute_detail(
        tensors, tp, sequence_parallel, recompute, threshold_bytes, cfg=cfg, arch=arch
    )[:3]


_Split = tuple[Num, Num, Num, list[Num], list[bool] | None]
"""(kept, working set, recomputed FLOPs, each tensor's bytes, whether Megatron's selective
drops each tensor (None under the other policies))."""


def _recompute_detail(
    tensors: list[SavedTensor],
    tp: Num,
    sequence_parallel: bool,
    recompute: RecomputeKind,
    threshold_bytes: Num,
    *,
    cfg: LedgerConfig,
    arch: Architecture,
) -> _Split:
    """:func:`_recompute_split` with what it read of each tensor (the ledger's lines reuse
    it: :func:`layer_activations`)."""
    all_bytes = [tensor_bytes(t, tp, sequence_parallel) for t in tensors]
    total = sum(all_bytes)
    if recompute == "none":
        return total, 0.0, 0.0, all_bytes, None
    if recompute == "full":
        # keep the layer input (Megatron stores it sharded along s with SP; partitioned over
        # tp or on the host: CHECKPOINT_PLACEMENTS), rerun the layer
        split = cfg.checkpoint_placement == "partitioned" or sequence_parallel
        on_gpu = 0.0 if cfg.checkpoint_placement == "cpu" else 1.0
        kept = on_gpu * cfg.s * cfg.b * arch.hidden_size * cfg.act / (tp if split else 1)
        # -1: the whole layer's forward (computed by the caller)
        return kept, total, -1.0, all_bytes, None
    if recompute == "selective" and _op_sac_applies(cfg, arch):
        sac = op_sac_tensors(arch, cfg, sequence_parallel, moe_layer=_is_moe_ledger(tensors))
        kept = sum(tensor_bytes(t, tp, sequence_parallel) for t in sac)
        fwd = layer_forward_flops(arch, cfg.s, cfg.b, _is_moe_ledger(tensors)) / tp
        saved = _op_sac_saved_flops(arch, cfg, _is_moe_ledger(tensors)) / tp
        return kept, total, fwd - saved, all_bytes, None
    if recompute == "selective":
        # Megatron recomputes the modules of --recompute-modules (default the attention core,
        # QK^T, softmax, dropout, P·V, from Q, K, V): :mod:`.activation_recompute`
        return _megatron_selective(tensors, all_bytes, total, cfg=cfg, arch=arch)
    # threshold: drop every tensor larger than X bytes (EleutherAI NeoX-style)
    dropped = sum(x * (x > threshold_bytes) for x in all_bytes)
    flops = sum(
        t.producer_flops / tp * (x > threshold_bytes)
        for x, t in zip(all_bytes, tensors, strict=True)
    )
    return total - dropped, dropped, flops, all_bytes, None


def _megatron_selective(
    tensors: list[SavedTensor],
    all_bytes: list[Num],
    total: Num,
    *,
    cfg: LedgerConfig,
    arch: Architecture,
) -> _Split:
    """(kept, working set, recomputed forward FLOPs per GPU, the bytes, which tensors are
    dropped) under Megatron's selective recompute of ``cfg.recompute_modules``: the dropped
    tensors are the working set; the attention core replays 4·b·s²·a·d when its tensors
    are saved (none under flash), the checkpointed MLP / MoE modules their GEMMs
    (:func:`.selective_module_flops`)."""
    modules, moe, mla = cfg.recompute_modules, _is_moe_ledger(tensors), arch.mla is not None
    drops = [selective_drops(t, modules, moe_layer=moe, mla=mla) for t in tensors]
    dropped = sum(x for x, drop in zip(all_bytes, drops, strict=True) if drop)
    has_core = "core_attn" in modules and any(t.attention_core for t in tensors)
    flops = 4.0 * cfg.b * cfg.s * cfg.s * arch.q_size / cfg.tp if has_core else 0.0
    flops = flops + selective_module_flops(arch, cfg.s * cfg.b, modules, moe_layer=moe) / cfg.tp
    return total - dropped, dropped, flops, all_bytes, drops


def _op_sac_applies(cfg: LedgerConfig, arch: Architecture) -> bool:
    """torchtitan's op-level SAC as :func:`op_sac_tensors` reads it: a profile that runs it
    and a block of attention and MLP (recurrent mixers are not torchtitan models; MLA's
    matmuls are counted as the standard block's, an approximation)."""
    return cfg.profile.selective == "op_sac" and arch.recurrent is None


def _is_moe_ledger(tensors: list[SavedTensor]) -> bool:
    return any(t.block == "moe" for t in tensors)


def _op_sac_mlp_widths(arch: Architecture, moe_layer: bool) -> tuple[int, bool]:
    """(width of the MLP whose matmuls the policy counts, gated?): the dense MLP, or an MoE
    layer's shared experts (routed experts run torch._grouped_mm, not in the save list)."""
    if moe_layer and arch.moe is not None:
        return arch.moe.expert_ffn_size * arch.moe.num_shared_experts, arch.gated
    return arch.ffn_size, arch.gated


def op_sac_tensors(
    arch: Architecture, cfg: LedgerConfig, sequence_parallel: bool, *, moe_layer: bool
) -> list[SavedTensor]:
    """What torchtitan's op-level selective activation checkpointing keeps of one block.

    pytorch/torchtitan@b5bcd76c torchtitan/distributed/activation_checkpoint.py,
    SelectiveAC: the block is checkpointed (its input kept); the outputs of the ops in
    ``_get_default_save_ops`` are MUST_SAVE, "except every second mm/linear" (a counter per
    block forward, so the 1st, 3rd, 5th, 7th matmul are kept); everything else (norms,
    RoPE, SiLU, products) is recomputed. Llama's block runs wq, wk, wv, wo
    (models/common/attention.py QKVLinear) then w1, w3, w2 (feed_forward.py
    ``w2(silu(w1(x)) * w3(x))``): kept are wq's and wv's outputs, the attention kernel's
    output and fp32 log-sum-exp (the math kernel also returns its b·a·s² probabilities),
    w1's output and w2's; with a 2-matrix MLP (w1, w2) the 6th matmul w2 is recomputed.
    With tensor parallelism the row-parallel matmul's output is the full s·b·h partial
    sum and, with sequence parallelism, reduce_scatter_tensor's output is kept too.
    """
    s, b, act = cfg.s, cfg.b, cfg.act
    h, q, kv = arch.hidden_size, arch.q_size, arch.kv_size
    f, gated = _op_sac_mlp_widths(arch, moe_layer)

    def t(name: str, shape: str, elements: Num, bpe: float, shard: Shard) -> SavedTensor:
        return SavedTensor(name, shape, cfg.act_dtype, elements, bpe, "checkpoint", shard)

    out = [
        t("block input (checkpoint)", "s·b·h", s * b * h, act, "sp"),
        t("wq output (1st matmul)", "s·b·a·d", s * b * q, act, "tp"),
        t("wv output (3rd matmul)", "s·b·kv", s * b * kv, act, "tp"),
        t("attention kernel output", "s·b·a·d", s * b * q, act, "tp"),
    ]
    if cfg.flash:
        out.append(
            SavedTensor(
                "attention log-sum-exp",
                "b·a·s",
                "fp32",
                b * arch.heads * s,
                FP32,
                "checkpoint",
                "tp",
            )
        )
    else:
        out.append(
            t("attention probabilities (math kernel)", "b·a·s²", b * arch.heads * s * s, act, "tp")
        )
    if sequence_parallel:
        out.append(t("wo reduce-scatter output", "s·b·h", s * b * h, act, "sp"))
    if f > 0:
        out.append(t("w1 output (5th matmul)", "s·b·f", s * b * f, act, "tp"))
        if gated:
            out.append(t("w2 output (7th matmul, partial sum)", "s·b·h", s * b * h, act, "none"))
            if sequence_parallel:
                out.append(t("w2 reduce-scatter output", "s·b·h", s * b * h, act, "sp"))
    return out


def _op_sac_saved_flops(arch: Architecture, cfg: LedgerConfig, moe_layer: bool) -> Num:
    """Forward FLOPs of the ops whose outputs :func:`op_sac_tensors` keeps (before tp):
    wq, wv, the attention core (4·b·s²·a·d), w1 and, gated, w2."""
    h, tokens = arch.hidden_size, cfg.s * cfg.b
    f, gated = _op_sac_mlp_widths(arch, moe_layer)
    mats = h * arch.q_size + h * arch.kv_size + h * f * (2 if gated else 1)
    return 2.0 * tokens * mats + 4.0 * cfg.b * cfg.s * cfg.s * arch.q_size


def layer_forward_flops(arch: Architecture, seq_len: Num, micro_batch: Num, moe_layer: bool) -> Num:
    """Forward FLOPs of one layer: 2·tokens·(matrix parameters a token meets) + attention
    4·b·s²·a·d (QK^T and P·V; Korthikanti 2022 section 5, no causal halving)."""
    h, tokens = arch.hidden_size, seq_len * micro_batch
    mats = 2 * h * arch.q_size + 2 * h * arch.kv_size
    if moe_layer and arch.moe is not None:
        moe = arch.moe
        per = (3 if arch.gated else 2) * h * moe.expert_ffn_size
        mats += per * (moe.experts_per_token + moe.num_shared_experts) + h * moe.num_experts
    else:
        mats += (3 if arch.gated else 2) * h * arch.ffn_size
    if arch.recurrent is not None:  # the mean layer of its kind (:func:`_attention_share`)
        share = _attention_share(arch, moe_layer)
        has_ffn = arch.recurrent.has_ffn
        attention = 2 * h * arch.q_size + 2 * h * arch.kv_size
        mixed = share * (2.0 * tokens * attention + 4.0 * micro_batch * seq_len**2 * arch.q_size)
        ffn = 2.0 * tokens * (mats - attention) * (1.0 if has_ffn else share)
        rec = (1 - share) * recurrent.recurrent_forward_flops(arch, seq_len, micro_batch)
        return mixed + ffn + rec
    return 2.0 * tokens * mats + 4.0 * micro_batch * seq_len * seq_len * arch.q_size


def activation_bytes_per_layer(  # noqa: PLR0917 (positional order is the published interface)
    arch: Architecture,
    seq_len: Num,
    micro_batch: Num,
    tp: Num = 1,
    sequence_parallel: bool = False,
    recompute: RecomputeKind = "none",
    flash: bool = False,
    profile: str | ImplementationProfile = "megatron",
    *,
    threshold_bytes: Num = float("inf"),
    dropout: bool = True,
    activation_dtype: str = "bf16",
    moe_layer: bool | None = None,
    lora_rank: int | None = None,
    lora_targets: tuple[str, ...] = ALL_LINEAR,
    gemm_input: tuple[str, float] | None = None,
) -> Num:
    """Bytes one layer keeps for backward, per GPU, after recomputation.

    The sum of :func:`layer_ledger` (kept tensors only). For Megatron's profile, a GPT
    layer with dropout and no flash: s·b·h·(10 + 24/t + 5·a·s/(h·t)) without SP and
    s·b·h/t·(34 + 5·a·s/h) with SP (Korthikanti 2022 eqs. 1-4); selective → 34·s·b·h/t;
    full → 2·s·b·h (/t with SP). Pure arithmetic: ``seq_len``, ``micro_batch`` and ``tp``
    may be numpy arrays. ``moe_layer`` None: an MoE layer if the model has any.
    """
    moe = arch.moe is not None if moe_layer is None else moe_layer
    cfg = ledger_config(
        seq_len=seq_len,
        micro_batch=micro_batch,
        tp=tp,
        profile=profile,
        flash=flash,
        dropout=dropout,
        activation_dtype=activation_dtype,
        lora_rank=lora_rank,
        lora_targets=lora_targets,
        gemm_input=gemm_input,
    )
    tensors = _layer_tensors(arch, cfg, moe)
    kept, _, _ = _recompute_split(
        tensors, tp, sequence_parallel, recompute, threshold_bytes, cfg=cfg, arch=arch
    )
    return kept


@dataclass(frozen=True)
class LayerActivations:
    """One layer's saved tensors and what recomputation does to them (scalars)."""

    ledger: list[LedgerEntry]
    saved_bytes: float  # before recomputation
    kept_bytes: float  # after recomputation
    recompute_working_bytes: float  # regenerated during this layer's backward
    recompute_flops: float  # extra forward FLOPs per layer per GPU
    forward_flops: float  # one layer's forward FLOPs per GPU


@kept()
def _kept_layer_tensors(
    arch: Architecture, cfg: LedgerConfig, moe_layer: bool
) -> tuple[SavedTensor, ...]:
    """:func:`.activation_layer._layer_tensors`, kept by its arguments: the tensors do not
    depend on the recomputation policy or sequence parallelism, and one estimate prices the
    same layer under three policies (training, the fewest-GPUs screen, the step time's
    element-wise traffic). Arrays in the configuration (the vectorised callers) cannot be
    hashed: computed afresh."""
    return tuple(_layer_tensors(arch, cfg, moe_layer))


_EXACT = 2**53
"""Integers below this are exact in a float64."""


def _tensors_key(arch: Architecture, cfg: LedgerConfig) -> LedgerConfig:
    """``cfg`` as the layer's tensors see it: tp enters their elements only where kv heads
    replicate (:func:`.activation_attention.attention_tensors`: s·b·kv·t ÷ min(t, kv heads),
    the same s·b·kv for every t up to the kv heads while the product is an exact float), so
    such a t prices the tensors of t = 1 and one estimate's tp degrees share them; the
    divisors that tp and sequence parallelism set are applied after
    (:func:`.tensor_bytes`)."""
    tp = cfg.tp
    if (
        type(tp) is int
        and 1 < tp <= arch.kv_heads
        and type(cfg.s) is int
        and type(cfg.b) is int
        and cfg.s * cfg.b * arch.kv_size * tp < _EXACT
    ):
        return replace(cfg, tp=1)
    return cfg


def layer_activations(
    arch: Architecture,
    seq_len: int,
    micro_batch: int,
    *,
    tp: int = 1,
    sequence_parallel: bool = False,
    recompute: RecomputeKind = "none",
    threshold_bytes: float | None = None,
    flash: bool = False,
    profile: str | ImplementationProfile = "megatron",
    dropout: bool = True,
    activation_dtype: str = "bf16",
    moe_layer: bool | None = None,
    lora_rank: int | None = None,
    lora_targets: tuple[str, ...] = ALL_LINEAR,
    recompute_modules: tuple[str, ...] = ("core_attn",),
    checkpoint_placement: str = "gpu",
    gemm_input: tuple[str, float] | None = None,
) -> LayerActivations:
    """The ledger of one layer (every saved tensor, bytes per GPU) and its recomputation.

    ``recompute_modules``: what Megatron's selective drops; ``checkpoint_placement``: where
    full recompute's layer inputs live (:mod:`.activation_recompute`). ``gemm_input``: (dtype
    label, bytes per element) of the copy each linear layer saves of its input for the
    weight-gradient GEMM under a low-precision recipe whose stack saves it quantized
    (:attr:`.stacks.StackProfile.saves_quantized_gemm_inputs`); None: in the activation
    dtype."""
    split = _layer_split(
        arch,
        seq_len,
        micro_batch,
        tp=tp,
        sequence_parallel=sequence_parallel,
        recompute=recompute,
        threshold_bytes=threshold_bytes,
        flash=flash,
        profile=profile,
        dropout=dropout,
        activation_dtype=activation_dtype,
        moe_layer=moe_layer,
        lora_rank=lora_rank,
        lora_targets=lora_targets,
        recompute_modules=recompute_modules,
        checkpoint_placement=checkpoint_placement,
        gemm_input=gemm_input,
    )
    cfg, moe, tensors, x = split.cfg, split.moe, split.tensors, split.threshold
    fwd = float(layer_forward_flops(arch, seq_len, micro_batch, moe)) / tp

    op_sac = recompute == "selective" and _op_sac_applies(cfg, arch)
    sizes = [float(size) for size in split.sizes]  # each tensor's tensor_bytes
    if op_sac:
        keeps = [False] * len(sizes)
    elif split.drops is not None:  # Megatron's selective: what it does not drop
        keeps = [not drop for drop in split.drops]
    elif recompute == "threshold":
        keeps = [size <= x for size in sizes]
    else:
        keeps = [recompute == "none"] * len(sizes)
    ledger = [
        ledger_entry(t, size, kept=keep)
        for t, size, keep in zip(tensors, sizes, keeps, strict=True)
    ]
    saved = float(sum(e.bytes for e in ledger))
    if op_sac:
        ledger += [
            ledger_entry(t, float(tensor_bytes(t, tp, sequence_parallel)))
            for t in op_sac_tensors(arch, cfg, sequence_parallel, moe_layer=moe)
        ]
    if recompute == "full":
        ledger.append(
            LedgerEntry(
                name="layer input (full-recomputation checkpoint)",
                shape="s·b·h",
                dtype=activation_dtype,
                bytes=float(split.kept),
                block="checkpoint",
                shard="sp",
            )
        )
    return LayerActivations(
        ledger=ledger,
        saved_bytes=saved,
        kept_bytes=float(split.kept),
        recompute_working_bytes=float(split.working),
        recompute_flops=fwd if split.flops == -1.0 else float(split.flops),
        forward_flops=fwd,
    )


def layer_kept_bytes(
    arch: Architecture, seq_len: int, micro_batch: int, **options: Any
) -> tuple[float, float]:
    """(``kept_bytes``, ``recompute_working_bytes``) of :func:`layer_activations` with the
    same arguments, the same arithmetic, without building its ledger lines: the memory
    terms need only these two for each (b, tp, sequence parallel, policy) they price, and
    the layout search prices several per estimate."""
    split = _layer_split(arch, seq_len, micro_batch, **options)
    return float(split.kept), float(split.working)


def layer_saved_tensors(
    arch: Architecture, seq_len: int, micro_batch: int, **options: Any
) -> list[SavedTensor]:
    """The tensors :func:`layer_activations` lists with the same arguments, before
    recomputation, without building its ledger lines (each line is a tensor with its
    :func:`tensor_bytes`)."""
    return _layer_split(arch, seq_len, micro_batch, split=False, **options).tensors


class _LayerSplit(NamedTuple):
    cfg: LedgerConfig
    moe: bool
    tensors: list[SavedTensor]
    threshold: float
    kept: Num
    working: Num
    flops: Num
    sizes: list[Num]
    drops: list[bool] | None


def _layer_split(
    arch: Architecture,
    seq_len: int,
    micro_batch: int,
    *,
    tp: int = 1,
    sequence_parallel: bool = False,
    recompute: RecomputeKind = "none",
    threshold_bytes: float | None = None,
    flash: bool = False,
    profile: str | ImplementationProfile = "megatron",
    dropout: bool = True,
    activation_dtype: str = "bf16",
    moe_layer: bool | None = None,
    lora_rank: int | None = None,
    lora_targets: tuple[str, ...] = ALL_LINEAR,
    recompute_modules: tuple[str, ...] = ("core_attn",),
    checkpoint_placement: str = "gpu",
    gemm_input: tuple[str, float] | None = None,
    split: bool = True,
) -> _LayerSplit:
    """The layer's saved tensors and their split under the recomputation policy
    (:func:`_recompute_split`), shared by :func:`layer_activations` and
    :func:`layer_kept_bytes` (the arguments are theirs); ``split`` False: the tensors alone
    (:func:`layer_saved_tensors`)."""
    moe = arch.moe is not None if moe_layer is None else moe_layer
    cfg = ledger_config(
        seq_len=seq_len,
        micro_batch=micro_batch,
        tp=tp,
        profile=profile,
        flash=flash,
        dropout=dropout,
        activation_dtype=activation_dtype,
        lora_rank=lora_rank,
        lora_targets=lora_targets,
        recompute_modules=recompute_modules,
        checkpoint_placement=checkpoint_placement,
        gemm_input=gemm_input,
    )
    tensors = list(_kept_layer_tensors(arch, _tensors_key(arch, cfg), moe))
    x = float("inf") if threshold_bytes is None else threshold_bytes
    if not split:
        return _LayerSplit(cfg, moe, tensors, x, 0.0, 0.0, 0.0, [], None)
    kept, working, flops, sizes, drops = _recompute_detail(
        tensors, tp, sequence_parallel, recompute, x, cfg=cfg, arch=arch
    )
    return _LayerSplit(cfg, moe, tensors, x, kept, working, flops, sizes, drops)


def layer_kept_at(
    arch: Architecture,
    cfg: LedgerConfig,
    *,
    moe_layer: bool,
    sequence_parallel: bool,
    recompute: RecomputeKind,
    threshold_bytes: float | None,
) -> tuple[float, float]:
    """:func:`layer_kept_bytes` given its pricing configuration (``cfg``, at its tp: what
    :func:`_layer_split` builds from the options), the same arithmetic: the memory terms
    price one configuration under several sequence-parallel settings and policies
    (:mod:`.training_activations`)."""
    tensors = list(_kept_layer_tensors(arch, _tensors_key(arch, cfg), moe_layer))
    x = float("inf") if threshold_bytes is None else threshold_bytes
    kept, working, _ = _recompute_split(
        tensors, cfg.tp, sequence_parallel, recompute, x, cfg=cfg, arch=arch
    )
    return float(kept), float(working)
