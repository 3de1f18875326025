"""The activation ledger's building blocks: a saved tensor (shape in s, b, h…, dtype, how
tensor and sequence parallelism shard it), the ledger entry it becomes, the pricing
configuration of one layer, and the tensors shared by every block (norms, QK norms, LoRA's
saved inputs, dropout masks). The blocks themselves are :mod:`.activation_attention`
(attention) and :mod:`.activations` (FFN, recurrent mixers, the layer and the public API).
Sources are in :mod:`.activations`' docstring (Korthikanti et al. 2022, section 4)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from llm_planner.core.primitives.architecture import Architecture
from llm_planner.core.primitives.dtypes import bytes_per_element
from llm_planner.core.quantities.activation_profiles import (
    HF_MODULES,
    ImplementationProfile,
    ModuleTraits,
    get_profile,
)

Num = Any
"""A number or a numpy array of numbers (s, b, t may be arrays in the vectorised search)."""

RecomputeKind = Literal["none", "selective", "full", "threshold"]
Shard = Literal["tp", "sp", "none"]
"""How a tensor is divided across the tensor-parallel group: ``tp`` always by t (it lives
between a column- and a row-parallel linear); ``sp`` by t only with sequence parallelism
(norm/dropout regions, Korthikanti 2022 section 4.2.2); ``none`` never."""

FP32 = bytes_per_element("fp32")
MASK_BYTES = bytes_per_element("int8")
"""A torch.bool dropout mask takes one byte per element, like int8."""
INDEX_BYTES = 2 * bytes_per_element("fp32")
"""Token ids are int64: 8 bytes each."""


NO_TRAITS = ModuleTraits(source="Llama's modules")


def module_traits(arch: Architecture, cfg: LedgerConfig) -> ModuleTraits:
    if not cfg.profile.hf_modules or arch.hf_model_type is None:
        return NO_TRAITS
    return HF_MODULES.get(arch.hf_model_type, NO_TRAITS)


class LedgerEntry(BaseModel):
    """One saved tensor of one layer (or outside the layers), bytes per GPU."""

    model_config = ConfigDict(frozen=True)

    name: str
    shape: str = Field(description="element count as a formula in s, b, h, a, kv, f, V, k, E")
    dtype: str
    bytes: float = Field(description="bytes per GPU for this tensor, per layer")
    block: str = Field(description="attention, mlp, moe, norm or outside")
    shard: Shard
    attention_core: bool = Field(
        default=False, description="dropped and recomputed by selective recomputation"
    )
    kept: bool = Field(default=True, description="kept for backward under the recomputation policy")


@dataclass(frozen=True)
class SavedTensor:
    """Internal ledger line: bytes may be a numpy array (vectorised s, b, t)."""

    name: str
    shape: str
    dtype: str
    elements: Num  # before sharding
    bytes_per_element: float
    block: str
    shard: Shard
    attention_core: bool = False
    producer_flops: Num = 0.0  # forward FLOPs to recreate it from kept inputs (threshold)


def shard_divisor(shard: Shard, tp: Num, sequence_parallel: bool) -> Num:
    if shard == "tp" or (shard == "sp" and sequence_parallel):
        return tp
    return 1


def tensor_bytes(t: SavedTensor, tp: Num, sequence_parallel: bool) -> Num:
    # shard_divisor written out: priced for every tensor of every pricing
    shard = t.shard
    divisor = tp if shard == "tp" or (shard == "sp" and sequence_parallel) else 1
    return t.elements * t.bytes_per_element / divisor


def ledger_entry(t: SavedTensor, size: float, *, kept: bool = True) -> LedgerEntry:
    """The report's line for a saved tensor of ``size`` bytes per GPU."""
    return LedgerEntry(
        name=t.name,
        shape=t.shape,
        dtype=t.dtype,
        bytes=size,
        block=t.block,
        shard=t.shard,
        attention_core=t.attention_core,
        kept=kept,
    )


@dataclass(frozen=True)
class LedgerConfig:
    s: Num
    b: Num
    tp: Num
    act: float  # activation bytes per element
    act_dtype: str
    profile: ImplementationProfile
    flash: bool
    dropout: bool
    lora_rank: int | None
    lora_targets: frozenset[str]
    recompute_modules: frozenset[str] = frozenset({"core_attn"})
    """What 'selective' drops (Megatron's ``--recompute-modules``; :mod:`.activation_recompute`)."""
    checkpoint_placement: str = "gpu"
    """Where full recompute's layer inputs live (gpu, partitioned over tp, cpu)."""
    gemm_input: tuple[str, float] | None = None
    """(dtype label, bytes per element) of the copy a linear layer saves of its input under a
    low-precision recipe whose stack saves it quantized (Transformer Engine); None: the
    input is saved in the activation dtype."""

    @property
    def lin_dtype(self) -> str:
        """dtype of a saved linear-layer input (:attr:`gemm_input`)."""
        return self.act_dtype if self.gemm_input is None else self.gemm_input[0]

    @property
    def lin(self) -> float:
        """bytes per element of a saved linear-layer input (:attr:`gemm_input`)."""
        return self.act if self.gemm_input is None else self.gemm_input[1]


def dropout_mask(cfg: LedgerConfig) -> tuple[float, str]:
    if cfg.profile.mask_in_activation_dtype:
        return cfg.act, cfg.act_dtype
    return MASK_BYTES, "bool"


def norm_tensors(
    arch: Architecture,
    cfg: LedgerConfig,
    where: str,
    *,
    width: Num = None,
    stats_per_token: Num = 1,
    block: str = "norm",
) -> list[SavedTensor]:
    """What one norm saves (its output is counted by the linear that reads it). ``width``:
    the normalised size (h, or a q/k norm's a·d); ``stats_per_token``: statistics per token
    (a per-head q/k norm has one per head); ``block``: the ledger block its lines go to."""
    s, b, act = cfg.s, cfg.b, cfg.act
    w = arch.hidden_size if width is None else width
    p = cfg.profile
    traits = module_traits(arch, cfg)
    out: list[SavedTensor] = []
    if arch.norm == "rmsnorm" and p.hf_rmsnorm:
        out.append(
            SavedTensor(
                f"{where}: fp32 copy of input", "s·b·h", "fp32", s * b * w, FP32, block, "sp"
            )
        )
    if arch.norm == "rmsnorm" and p.hf_rmsnorm and cfg.lora_rank is None:
        # weight·x̂ saves x̂ for the weight's gradient; a frozen weight (LoRA) needs none
        x_bytes, x_dtype = (FP32, "fp32") if traits.norm_output_fp32 else (act, cfg.act_dtype)
        out.append(
            SavedTensor(
                f"{where}: normalised x (before ·weight)",
                "s·b·h",
                x_dtype,
                s * b * w,
                x_bytes,
                block,
                "sp",
            )
        )
    if arch.norm != "rmsnorm" and traits.layernorm_manual_fp32:
        out.append(
            SavedTensor(
                f"{where}: x − mean (twice), x̂ in fp32",
                "3·s·b·h",
                "fp32",
                3 * s * b * w,
                FP32,
                block,
                "sp",
            )
        )
    elif not (arch.norm == "rmsnorm" and p.hf_rmsnorm):
        in_bytes, in_dtype = (FP32, "fp32") if traits.layernorm_fp32 else (act, cfg.act_dtype)
        out.append(
            SavedTensor(f"{where}: input", "s·b·h", in_dtype, s * b * w, in_bytes, block, "sp")
        )
    if p.norm_stats:
        fp32_stats = p.norm_stats_fp32 or arch.norm == "rmsnorm" or traits.layernorm_fp32
        stat_bytes, stat_dtype = (FP32, "fp32") if fp32_stats else (act, cfg.act_dtype)
        stats = 1 if arch.norm == "rmsnorm" or traits.layernorm_manual_fp32 else 2
        names = "rstd" if stats == 1 else "mean, rstd"
        out.append(
            SavedTensor(
                f"{where}: {names}",
                f"{stats}·s·b",
                stat_dtype,
                stats * s * b * stats_per_token,
                stat_bytes,
                block,
                "sp",
            )
        )
    return out


def qk_norm_tensors(arch: Architecture, cfg: LedgerConfig) -> list[SavedTensor]:
    """A q/k norm (Qwen3, Gemma 3, OLMo-2, Llama 4) as its HF module saves it: each of q and
    k is normalised like the layer's norms, over a head (``head``: statistics per head) or
    over all heads (``full``); a weightless norm (Llama 4's L2 norm) saves no x̂."""
    traits = module_traits(arch, cfg)
    kind, share = arch.qk_norm, 1.0
    if traits.qk_l2_norm_nope_every is not None:
        kind = "head"
        share = 1.0 - (arch.layers // traits.qk_l2_norm_nope_every) / arch.layers
    if kind == "none" or not cfg.profile.hf_modules or arch.norm != "rmsnorm":
        return []
    out: list[SavedTensor] = []
    for name, heads in (("q", arch.heads), ("k", arch.kv_heads)):
        per_token = heads if kind == "head" else 1
        width = heads * arch.head_dim
        tensors = norm_tensors(arch, cfg, f"{name} norm", width=width, stats_per_token=per_token)
        if traits.qk_norm_weightless:
            tensors = [t for t in tensors if "normalised" not in t.name]
        out += [
            replace(t, block="attention", shard="tp", elements=t.elements * share) for t in tensors
        ]
    return out


def lora_tensor(cfg: LedgerConfig, target: str, tokens: Num, block: str) -> list[SavedTensor]:
    """LoRA: B saves A's output x·A (tokens × r) for each targeted matrix."""
    if cfg.lora_rank is None or target not in cfg.lora_targets:
        return []
    r = cfg.lora_rank
    return [
        SavedTensor(
            f"LoRA {target}: x·A",
            f"tokens·r (r={r})",
            cfg.act_dtype,
            tokens * r,
            cfg.act,
            block,
            "none",
        )
    ]


def trains_input(cfg: LedgerConfig, *targets: str) -> bool:
    """A linear saves its input only if its weight (or a LoRA adapter on it) is trained."""
    return cfg.lora_rank is None or any(t in cfg.lora_targets for t in targets)


def masked_share(arch: Architecture, s: Num) -> Num:
    """Share of layers whose SDPA call gets a materialised mask (a sliding window shorter
    than the sequence), so transformers repeats k and v to every query head
    (src/transformers/integrations/sdpa_attention.py @ v5.24.0, use_gqa_in_sdpa: GQA in
    the kernel only without a mask; masking_utils skips the causal mask otherwise)."""
    if arch.sliding_window is None:
        return 0.0
    if arch.global_attention_every:
        windowed = (arch.global_attention_every - 1) / arch.global_attention_every
    else:
        windowed = 0.5 if arch.sliding_window_layers == "alternate" else 1.0
    return np.where(np.asarray(s) > arch.sliding_window, windowed, 0.0)


def ledger_config(
    *,
    seq_len: Num,
    micro_batch: Num,
    tp: Num,
    profile: str | ImplementationProfile,
    flash: bool,
    dropout: bool,
    activation_dtype: str,
    lora_rank: int | None,
    lora_targets: tuple[str, ...] | frozenset[str],
    recompute_modules: tuple[str, ...] | frozenset[str] = ("core_attn",),
    checkpoint_placement: str = "gpu",
    gemm_input: tuple[str, float] | None = None,
) -> LedgerConfig:
    """The :class:`LedgerConfig` of these settings (a profile by name or as is)."""
    prof = profile if isinstance(profile, ImplementationProfile) else get_profile(profile)
    return LedgerConfig(
        s=seq_len,
        b=micro_batch,
        tp=tp,
        act=bytes_per_element(activation_dtype),
        act_dtype=activation_dtype,
        profile=prof,
        flash=flash,
        dropout=dropout,
        lora_rank=lora_rank,
        lora_targets=frozenset(lora_targets),
        recompute_modules=frozenset(recompute_modules),
        checkpoint_placement=checkpoint_placement,
        gemm_input=gemm_input,
    )
