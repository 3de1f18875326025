"""The tensors saved outside a model's layers (embedding, final norm, output head, loss) and
the logits' transient working set, per pipeline stage (:mod:`.activations` re-exports them:
the activation ledger's public API)."""

from __future__ import annotations

from llm_planner.core.primitives.architecture import Architecture
from llm_planner.core.primitives.dtypes import bytes_per_element
from llm_planner.core.primitives.kept import kept
from llm_planner.core.quantities.activation_profiles import HF_MODULES, ImplementationProfile
from llm_planner.core.quantities.activation_tensors import (
    FP32,
    INDEX_BYTES,
    NO_TRAITS,
    LedgerEntry,
    Num,
    RecomputeKind,
    SavedTensor,
    dropout_mask,
    ledger_config,
    ledger_entry,
    norm_tensors,
    tensor_bytes,
)


def outside_layer_ledger(
    arch: Architecture,
    seq_len: int,
    micro_batch: int,
    *,
    tp: int = 1,
    sequence_parallel: bool = False,
    profile: str | ImplementationProfile = "megatron",
    dropout: bool = True,
    activation_dtype: str = "bf16",
    first_stage: bool = True,
    last_stage: bool = True,
    lora: bool = False,
    recompute: RecomputeKind = "none",
    flash: bool = True,
) -> list[LedgerEntry]:
    """:func:`outside_tensors` as the report's ledger lines, bytes per GPU."""
    tensors = outside_tensors(
        arch,
        seq_len,
        micro_batch,
        tp=tp,
        profile=profile,
        dropout=dropout,
        activation_dtype=activation_dtype,
        first_stage=first_stage,
        last_stage=last_stage,
        lora=lora,
        recompute=recompute,
        flash=flash,
    )
    return [ledger_entry(t, float(tensor_bytes(t, tp, sequence_parallel))) for t in tensors]


def outside_layer_bytes(
    arch: Architecture,
    seq_len: int,
    micro_batch: Num,
    *,
    tp: int = 1,
    sequence_parallel: bool = False,
    profile: str | ImplementationProfile = "megatron",
    dropout: bool = True,
    activation_dtype: str = "bf16",
    first_stage: bool = True,
    last_stage: bool = True,
    lora: bool = False,
    recompute: RecomputeKind = "none",
    flash: bool = True,
) -> Num:
    """The sum of :func:`outside_layer_ledger`'s bytes, the same additions in the same
    order, without building its lines (the memory terms price it for three kinds of stage
    at two micro-batches per activation setting). ``micro_batch`` may be an integer array:
    one sum per entry, each the scalar's (the tensors' sizes are products in b)."""
    tensors = outside_tensors(
        arch,
        seq_len,
        micro_batch,
        tp=tp,
        profile=profile,
        dropout=dropout,
        activation_dtype=activation_dtype,
        first_stage=first_stage,
        last_stage=last_stage,
        lora=lora,
        recompute=recompute,
        flash=flash,
    )
    return sum((tensor_bytes(t, tp, sequence_parallel) for t in tensors), 0.0 * micro_batch)


def outside_stage_bytes(
    arch: Architecture,
    seq_len: int,
    micro_batch: Num,
    *,
    tp: int = 1,
    sequence_parallel: bool = False,
    profile: str | ImplementationProfile = "megatron",
    dropout: bool = True,
    activation_dtype: str = "bf16",
    lora: bool = False,
    recompute: RecomputeKind = "none",
    flash: bool = True,
) -> tuple[Num, Num, Num]:
    """:func:`outside_layer_bytes` of the first stage, the last and the only one (first and
    last), from one list of the tensors: each sum the same additions in the same order (the
    first stage's is a prefix of the only one's)."""
    first, shared, last = _outside_parts(
        arch,
        seq_len,
        micro_batch,
        tp=tp,
        profile=profile,
        dropout=dropout,
        activation_dtype=activation_dtype,
        lora=lora,
        recompute=recompute,
        flash=flash,
    )
    zero = 0.0 * micro_batch
    shared_bytes = [tensor_bytes(t, tp, sequence_parallel) for t in shared]
    last_bytes = [tensor_bytes(t, tp, sequence_parallel) for t in last]
    on_first = sum((tensor_bytes(t, tp, sequence_parallel) for t in first), zero)
    on_first = sum(shared_bytes, on_first)
    return on_first, sum(shared_bytes + last_bytes, zero), sum(last_bytes, on_first)


def outside_tensors(
    arch: Architecture,
    seq_len: int,
    micro_batch: int,
    *,
    tp: int = 1,
    profile: str | ImplementationProfile = "megatron",
    dropout: bool = True,
    activation_dtype: str = "bf16",
    first_stage: bool = True,
    last_stage: bool = True,
    lora: bool = False,
    recompute: RecomputeKind = "none",
    flash: bool = True,
) -> list[SavedTensor]:
    """Tensors saved outside the layers (Korthikanti 2022 section 4.3, equation 5):
    embedding (its dropout mask; the int64 token ids in PyTorch), final norm, output
    projection input, and the cross-entropy's fp32 softmax of the logits, 4·s·b·V/t
    bytes (vocabulary-parallel). The first pipeline stage holds the first, the last
    stage the rest.

    ``lora``: embedding, norms and head are frozen, so nothing upstream of the first
    adapter needs a gradient (no ids, masks), and the head saves no input. (The first
    layer's first norm then saves nothing either; that one norm is not subtracted.)"""
    first, shared, last = _outside_parts(
        arch,
        seq_len,
        micro_batch,
        tp=tp,
        profile=profile,
        dropout=dropout,
        activation_dtype=activation_dtype,
        lora=lora,
        recompute=recompute,
        flash=flash,
    )
    return (first if first_stage else []) + shared + (last if last_stage else [])


def _outside_parts(
    arch: Architecture,
    seq_len: int,
    micro_batch: Num,
    *,
    tp: Num,
    profile: str | ImplementationProfile,
    dropout: bool,
    activation_dtype: str,
    lora: bool,
    recompute: RecomputeKind,
    flash: bool,
) -> tuple[list[SavedTensor], list[SavedTensor], list[SavedTensor]]:
    """:func:`outside_tensors` in three parts, in its order: the first stage's alone, those
    every stage holds, the last stage's alone.

    The tensors are kept by what they depend on (:func:`_kept_outside_parts`): not tp nor
    sequence parallelism (they set each tensor's divisor, :func:`.tensor_bytes`), and of
    the policy only whether full recomputation holds eager attention's mask, so the memory
    terms' pricings of one micro-batch under several (tp, SP, policy) share one list. An
    array ``micro_batch`` (the vectorised callers) cannot be kept: built afresh."""
    del tp  # the tensors' elements do not depend on it
    first, shared, last = _kept_outside_parts(
        arch,
        seq_len,
        micro_batch,
        profile,
        dropout,
        activation_dtype,
        lora,
        mask_held(recompute, flash),
    )
    return list(first), list(shared), list(last)


def mask_held(recompute: RecomputeKind | str, flash: bool) -> bool:
    """Whether the tensors outside the layers include eager attention's causal mask held by
    the layer checkpoints (under a profile of Hugging Face modules): full recomputation
    without flash attention, the one policy the outside tensors depend on."""
    return recompute == "full" and not flash


@kept()
def _kept_outside_parts(  # noqa: PLR0917 (positional: the kept function's key)
    arch: Architecture,
    seq_len: int,
    micro_batch: Num,
    profile: str | ImplementationProfile,
    dropout: bool,
    activation_dtype: str,
    lora: bool,
    mask_held: bool,
) -> tuple[tuple[SavedTensor, ...], tuple[SavedTensor, ...], tuple[SavedTensor, ...]]:
    """:func:`_outside_parts`' tensors (``mask_held``: full recomputation without flash
    attention, the one policy whose tensors differ). Shared: tuples."""
    cfg = ledger_config(
        seq_len=seq_len,
        micro_batch=micro_batch,
        tp=1,
        profile=profile,
        flash=False,
        dropout=dropout,
        activation_dtype=activation_dtype,
        lora_rank=1 if lora else None,
        lora_targets=(),
    )
    s, b, sd = seq_len, micro_batch, seq_len * micro_batch
    p = cfg.profile
    first: list[SavedTensor] = []
    shared: list[SavedTensor] = []
    last: list[SavedTensor] = []
    if not lora:
        if p.embedding_ids:
            first.append(
                SavedTensor("token ids (int64)", "s·b", "int64", sd, INDEX_BYTES, "outside", "none")
            )
        if dropout:
            mb, md = dropout_mask(cfg)
            first.append(
                SavedTensor(
                    "embedding dropout mask",
                    "s·b·h",
                    md,
                    sd * arch.hidden_size,
                    mb,
                    "outside",
                    "sp",
                )
            )
    if arch.positions == "learned" and p.embedding_ids and not lora:
        first.append(
            SavedTensor("position ids (int64)", "s", "int64", s, INDEX_BYTES, "outside", "none")
        )
    if arch.positions == "rotary" and p.rotary_tables:
        d = arch.head_dim
        # HF computes them from position_ids = cache_position[None]: one (1, s, d) table
        # each, broadcast over the batch (modeling_llama.py LlamaModel.forward)
        shared.append(
            SavedTensor(
                "rotary cos and sin (shared by layers)",
                "2·s·d",
                cfg.act_dtype,
                2 * s * d,
                cfg.act,
                "outside",
                "none",
            )
        )
    if p.hf_modules and mask_held and arch.recurrent is None:
        # eager attention gets a 4-D additive causal mask (b, 1, s, s) in the activation
        # dtype (masking_utils.create_causal_mask); each checkpointed layer holds it as an
        # input until its backward: one tensor, shared (modeling_layers.py
        # GradientCheckpointingLayer)
        # models mixing windowed and global layers build one mask per layer type
        every = arch.global_attention_every
        mixed = arch.sliding_window is not None and (
            (arch.sliding_window_layers == "alternate" and arch.layers > 1)
            or (every is not None and arch.layers >= every)
        )
        masks = 2 if mixed else 1
        shared.append(
            SavedTensor(
                "causal mask(s) held by the layer checkpoints",
                f"{masks}·b·s²",
                cfg.act_dtype,
                masks * b * s * s,
                cfg.act,
                "outside",
                "none",
            )
        )
    last += norm_tensors(arch, cfg, "final norm", block="outside")
    if not lora:
        last.append(
            SavedTensor(
                "output projection input",
                "s·b·h",
                cfg.act_dtype,
                sd * arch.hidden_size,
                cfg.act,
                "outside",
                "sp",
            )
        )
    if p.embedding_ids:
        last.append(
            SavedTensor(
                "cross-entropy targets (int64)",
                "s·b",
                "int64",
                sd,
                INDEX_BYTES,
                "outside",
                "none",
            )
        )
    if (
        arch.hf_model_type
        and p.hf_modules
        and HF_MODULES.get(arch.hf_model_type, NO_TRAITS).final_softcap
    ):
        last.append(
            SavedTensor(
                "logit soft-cap: tanh result",
                "s·b·V",
                cfg.act_dtype,
                s * b * arch.vocab_size,
                cfg.act,
                "outside",
                "tp",
            )
        )
    if p.logits_fp32_saved:
        last.append(
            SavedTensor(
                "cross-entropy: fp32 softmax of logits",
                "s·b·V",
                "fp32",
                s * b * arch.vocab_size,
                FP32,
                "outside",
                "tp",
            )
        )
    return tuple(first), tuple(shared), tuple(last)


def logits_working_bytes(
    arch: Architecture,
    seq_len: int,
    micro_batch: int,
    *,
    tp: int = 1,
    activation_dtype: str = "bf16",
    softmax_in_place: bool = False,
) -> float:
    """Transient logits memory at the loss: the logits in the activation dtype plus their
    fp32 copy / gradient, (act + 4)·s·b·V/t bytes (vocabulary-parallel over t). With the
    saved fp32 softmax this is the s·b·V·4-scale term that can set the peak for large V.

    ``softmax_in_place`` (:attr:`.activation_profiles.ImplementationProfile.
    logits_softmax_in_place`): the fp32 buffer the loss works in is the saved softmax itself
    (counted among the saved tensors), so only the logits in the activation dtype come on
    top, act·s·b·V/t."""
    act = bytes_per_element(activation_dtype)
    extra = 0.0 if softmax_in_place else FP32
    return (act + extra) * seq_len * micro_batch * arch.vocab_size / tp
