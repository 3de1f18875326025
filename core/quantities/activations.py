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
:data:`PROFILES`): the same model saves different tensors under fused Megatron-Core kernels
and under plain PyTorch / Hugging Face modules. ``tests/validation`` measures the
"pytorch-cpu" profile against PyTorch's own saved tensors.

:func:`activation_bytes_per_layer` is pure arithmetic in s, b and t (numpy arrays work:
no Python branch depends on their values), for the parallel-layout search to vectorise.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from llm_planner.core.primitives.architecture import Architecture
from llm_planner.core.primitives.dtypes import bytes_per_element
from llm_planner.core.quantities import recurrent

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


class ImplementationProfile(BaseModel):
    """Which tensors a training stack saves for the same layer. Each flag is one difference."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    name: str
    description: str
    norm_stats: bool = Field(
        description="norms also save per-token statistics (mean/rstd), s·b each; Korthikanti "
        "2022 leaves them out of its count"
    )
    norm_stats_fp32: bool = Field(
        default=True, description="statistics in fp32 (CUDA); else in the activation dtype (CPU)"
    )
    hf_rmsnorm: bool = Field(
        description="RMSNorm as Hugging Face writes it: upcasts its input to fp32 (4·s·b·h "
        "saved) and saves the normalised value in the activation dtype before the weight"
    )
    softmax_fp32: bool = Field(
        description="attention softmax computed and saved in fp32, then cast (HF eager)"
    )
    mask_in_activation_dtype: bool = Field(
        default=False,
        description="dropout mask stored in the activation dtype (PyTorch's CPU dropout "
        "multiplies by a noise tensor) instead of 1-byte bool (CUDA native_dropout)",
    )
    fused_swiglu: bool = Field(
        description="gated MLP activation fused (Megatron bias_swiglu): saves the fc1 output "
        "(gate ‖ up, 2·s·b·f) only, instead of gate, SiLU(gate) and up separately"
    )
    flash_repeat_kv: bool = Field(
        description="GQA keys/values expanded to every query head before the fused attention "
        "kernel (HF repeat_kv before SDPA); Megatron/TE flash reads the kv heads directly"
    )
    flash_output_copy: bool = Field(
        description="the fused kernel's output is saved by the kernel AND copied (transpose + "
        "reshape) into the out-projection input; Megatron's sbhd layout makes that a view"
    )
    logits_fp32_saved: bool = Field(
        default=True, description="cross-entropy saves fp32 (log-)softmax of the logits"
    )
    embedding_ids: bool = Field(description="embedding backward saves the int64 token ids")
    flash_qkv_copy_held: bool = Field(
        default=False,
        description="multi-head attention: q, k and v are one permuted contiguous copy of the "
        "QKV output and the kernel saves q as a view of it, so the whole copy (q + 2·kv "
        "elements) stays alive beside a second copy of k and v (nanotron)",
    )
    rotary_tables: bool = Field(
        default=False,
        description="RoPE's cos and sin tables (b·s·d each, activation dtype) are saved by "
        "the multiplications that apply them; computed once per forward, shared by layers",
    )
    source: str


PROFILES: dict[str, ImplementationProfile] = {
    p.id: p
    for p in (
        ImplementationProfile(
            id="megatron",
            name="Megatron-Core (fused kernels)",
            description=(
                "Korthikanti et al. 2022's accounting of Megatron-LM: fused LayerNorm/RMSNorm "
                "saving its input (statistics ignored), 16-bit softmax, 1-byte dropout masks, "
                "fused bias-GeLU / bias-SwiGLU, TransformerEngine flash attention reading GQA "
                "kv heads directly, output in sbhd layout (a view)."
            ),
            norm_stats=False,
            hf_rmsnorm=False,
            softmax_fp32=False,
            fused_swiglu=True,
            flash_repeat_kv=False,
            flash_output_copy=False,
            embedding_ids=False,
            source="Korthikanti et al. 2022 (arXiv:2205.05198) section 4.1; Megatron-Core "
            "fused_bias_swiglu, TE DotProductAttention",
        ),
        ImplementationProfile(
            id="pytorch",
            name="Plain PyTorch / Hugging Face modules (CUDA)",
            description=(
                "nn.LayerNorm (input + fp32 mean/rstd), HF LlamaRMSNorm (fp32 copy of the "
                "input, normalised value, fp32 rstd), HF eager attention (fp32 softmax then "
                "cast; repeat_kv for GQA), unfused SiLU(gate)·up, native_dropout 1-byte masks, "
                "SDPA flash (saves q, k, v, output and fp32 log-sum-exp; the output is laid "
                "out so that o_proj's input is a view of it), RoPE cos/sin tables, "
                "cross-entropy on fp32 logits."
            ),
            norm_stats=True,
            hf_rmsnorm=True,
            softmax_fp32=True,
            fused_swiglu=False,
            flash_repeat_kv=True,
            flash_output_copy=False,
            rotary_tables=True,
            embedding_ids=True,
            source="PyTorch autograd formulas (derivatives.yaml), transformers "
            "modeling_llama/eager_attention_forward; measured in tests/validation",
        ),
        ImplementationProfile(
            id="nanotron",
            name="nanotron (Triton RMSNorm, flash-attn, TP linears)",
            description=(
                "nanotron's Llama: TritonRMSNorm saving its input and fp32 rstd; the column "
                "linears save their (sequence-sharded) input and re-gather it in backward; "
                "q, k, v permuted into one contiguous copy (multi-head) with k, v concatenated "
                "into a second, flash_attn_varlen_func saving q, k, v, output and fp32 "
                "log-sum-exp (o_proj's input is a view of its output); GLUActivation "
                "unfused (gate‖up output, SiLU(gate), their product); sharded cross-entropy "
                "saving the fp32 softmax."
            ),
            norm_stats=True,
            hf_rmsnorm=False,
            softmax_fp32=False,
            fused_swiglu=False,
            flash_repeat_kv=False,
            flash_output_copy=False,
            flash_qkv_copy_held=True,
            embedding_ids=True,
            source="huggingface/nanotron@2411b022: src/nanotron/models/llama.py "
            "(LlamaDecoderLayer, CausalSelfAttention.forward and _forward_training, "
            "GLUActivation), src/nanotron/nn/layer_norm.py (TritonRMSNorm), "
            "src/nanotron/parallel/tensor_parallel/functional.py (column_linear with "
            "tp_recompute_allgather = True, the default in config/parallelism_config.py: "
            "saves the sharded input; _ShardedCrossEntropy saves the fp32 softmax)",
        ),
        ImplementationProfile(
            id="pytorch-cpu",
            name="Plain PyTorch / Hugging Face modules (CPU)",
            description=(
                "As 'pytorch', but PyTorch's CPU kernels store dropout masks and LayerNorm "
                "statistics in the activation dtype (measured)."
            ),
            norm_stats=True,
            norm_stats_fp32=False,
            hf_rmsnorm=True,
            softmax_fp32=True,
            mask_in_activation_dtype=True,
            fused_swiglu=False,
            flash_repeat_kv=True,
            flash_output_copy=False,
            rotary_tables=True,
            embedding_ids=True,
            source="measured with torch.autograd.graph.saved_tensors_hooks "
            "(tests/validation/test_torch_activations.py)",
        ),
    )
}


def get_profile(profile_id: str) -> ImplementationProfile:
    """The profile ``profile_id``; a ValueError lists the known ones."""
    try:
        return PROFILES[profile_id]
    except KeyError:
        raise ValueError(
            f"unknown implementation {profile_id!r}; known: {', '.join(PROFILES)}"
        ) from None


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
class _Tensor:
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


def _divisor(shard: Shard, tp: Num, sequence_parallel: bool) -> Num:
    if shard == "tp" or (shard == "sp" and sequence_parallel):
        return tp
    return 1


def _bytes(t: _Tensor, tp: Num, sequence_parallel: bool) -> Num:
    return t.elements * t.bytes_per_element / _divisor(t.shard, tp, sequence_parallel)


def _ledger_entry(t: _Tensor, size: float, *, kept: bool = True) -> LedgerEntry:
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
class _Config:
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


def _mask(cfg: _Config) -> tuple[float, str]:
    if cfg.profile.mask_in_activation_dtype:
        return cfg.act, cfg.act_dtype
    return MASK_BYTES, "bool"


def _norm_tensors(arch: Architecture, cfg: _Config, where: str) -> list[_Tensor]:
    """What one norm saves (its output is counted by the linear that reads it)."""
    s, b, h, act = cfg.s, cfg.b, arch.hidden_size, cfg.act
    p = cfg.profile
    out: list[_Tensor] = []
    if arch.norm == "rmsnorm" and p.hf_rmsnorm:
        out.append(
            _Tensor(f"{where}: fp32 copy of input", "s·b·h", "fp32", s * b * h, FP32, "norm", "sp")
        )
    if arch.norm == "rmsnorm" and p.hf_rmsnorm and cfg.lora_rank is None:
        # weight·x̂ saves x̂ for the weight's gradient; a frozen weight (LoRA) needs none
        out.append(
            _Tensor(
                f"{where}: normalised x (before ·weight)",
                "s·b·h",
                cfg.act_dtype,
                s * b * h,
                act,
                "norm",
                "sp",
            )
        )
    if not (arch.norm == "rmsnorm" and p.hf_rmsnorm):
        out.append(_Tensor(f"{where}: input", "s·b·h", cfg.act_dtype, s * b * h, act, "norm", "sp"))
    if p.norm_stats:
        stat_bytes, stat_dtype = (
            (FP32, "fp32") if p.norm_stats_fp32 or arch.norm == "rmsnorm" else (act, cfg.act_dtype)
        )
        stats = 1 if arch.norm == "rmsnorm" else 2
        names = "rstd" if stats == 1 else "mean, rstd"
        out.append(
            _Tensor(
                f"{where}: {names}",
                f"{stats}·s·b",
                stat_dtype,
                stats * s * b,
                stat_bytes,
                "norm",
                "sp",
            )
        )
    return out


def _lora_tensor(cfg: _Config, target: str, tokens: Num, block: str) -> list[_Tensor]:
    """LoRA: B saves A's output x·A (tokens × r) for each targeted matrix."""
    if cfg.lora_rank is None or target not in cfg.lora_targets:
        return []
    r = cfg.lora_rank
    return [
        _Tensor(
            f"LoRA {target}: x·A",
            f"tokens·r (r={r})",
            cfg.act_dtype,
            tokens * r,
            cfg.act,
            block,
            "none",
        )
    ]


def _trains_input(cfg: _Config, *targets: str) -> bool:
    """A linear saves its input only if its weight (or a LoRA adapter on it) is trained."""
    return cfg.lora_rank is None or any(t in cfg.lora_targets for t in targets)


def _attention_tensors(arch: Architecture, cfg: _Config) -> list[_Tensor]:
    s, b, act, dt = cfg.s, cfg.b, cfg.act, cfg.act_dtype
    p = cfg.profile
    a, q, h = arch.heads, arch.q_size, arch.hidden_size
    kv = arch.kv_size
    sd = s * b
    att_flops = 4.0 * b * s * s * q  # QK^T and P·V, forward (Korthikanti 2022 section 5)
    out: list[_Tensor] = []
    if _trains_input(cfg, "q", "k", "v"):
        out.append(
            _Tensor(
                "QKV projection input (norm output)", "s·b·h", dt, sd * h, act, "attention", "sp"
            )
        )
    for target in ("q", "k", "v"):
        out += _lora_tensor(cfg, target, sd, "attention")
    kv_per_gpu_heads = np.minimum(cfg.tp, arch.kv_heads)  # kv heads replicate when t > kv
    kv_elems = sd * kv * cfg.tp / kv_per_gpu_heads  # divided by t later
    qkv_flops = 2.0 * sd * h * (q + 2 * kv)
    if cfg.flash:
        expand = p.flash_repeat_kv
        k_shape = "s·b·a·d" if expand else "s·b·kv·d"
        k_elems = sd * q if expand else kv_elems
        out.append(
            _Tensor(
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
                _Tensor(
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
            _Tensor(kv_name + rep, k_shape, dt, k_elems, act, "attention", "tp")
            for kv_name in ("K", "V")
        ]
        out.append(
            _Tensor(
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
        if p.flash_output_copy:
            out.append(
                _Tensor(
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
            if _trains_input(cfg, "o"):
                out.append(
                    _Tensor(
                        "out-projection input (O, transposed copy)",
                        "s·b·a·d",
                        dt,
                        sd * q,
                        act,
                        "attention",
                        "tp",
                    )
                )
        else:
            out.append(
                _Tensor(
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
    else:
        k_elems = sd * q if arch.kv_heads != arch.heads else kv_elems
        rep = " (repeated to a heads)" if arch.kv_heads != arch.heads else ""
        out.append(
            _Tensor("Q", "s·b·a·d", dt, sd * q, act, "attention", "tp", producer_flops=qkv_flops)
        )
        out.append(
            _Tensor(
                "K" + rep, "s·b·a·d" if rep else "s·b·kv·d", dt, k_elems, act, "attention", "tp"
            )
        )
        sm_bytes, sm_dtype = (FP32, "fp32") if p.softmax_fp32 else (act, dt)
        scores = a * s * s * b
        out.append(
            _Tensor(
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
            mb, md = _mask(cfg)
            out.append(
                _Tensor("attention dropout mask", "a·s²·b", md, scores, mb, "attention", "tp", True)
            )
            out.append(
                _Tensor(
                    "attention dropout output", "a·s²·b", dt, scores, act, "attention", "tp", True
                )
            )
        elif p.softmax_fp32 and act != FP32:
            out.append(
                _Tensor(
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
            _Tensor(
                "V" + rep, "s·b·a·d" if rep else "s·b·kv·d", dt, k_elems, act, "attention", "tp"
            )
        )
        if _trains_input(cfg, "o"):
            out.append(
                _Tensor(
                    "out-projection input (attention output)",
                    "s·b·a·d",
                    dt,
                    sd * q,
                    act,
                    "attention",
                    "tp",
                    producer_flops=att_flops / 2,
                )
            )
    out += _lora_tensor(cfg, "o", sd, "attention")
    if cfg.dropout:
        mb, md = _mask(cfg)
        out.append(
            _Tensor("attention residual dropout mask", "s·b·h", md, sd * h, mb, "attention", "sp")
        )
    return out


def _mlp_tensors(
    arch: Architecture, cfg: _Config, tokens: Num, f: int, *, label: str, tok: str
) -> list[_Tensor]:
    """One MLP (dense, a shared expert or the routed experts) on ``tokens`` tokens."""
    act, dt, p, h = cfg.act, cfg.act_dtype, cfg.profile, arch.hidden_size
    out: list[_Tensor] = []
    up_flops = 2.0 * tokens * h * f
    if arch.gated:
        if p.fused_swiglu:
            out.append(
                _Tensor(
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
                _Tensor(
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
                _Tensor(f"{label}activation output", f"{tok}·f", dt, tokens * f, act, "mlp", "tp")
            )
            out.append(
                _Tensor(
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
    else:
        out.append(
            _Tensor(
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
    if _trains_input(cfg, "down"):
        out.append(
            _Tensor(
                f"{label}fc2 input (activation output)",
                f"{tok}·f",
                dt,
                tokens * f,
                act,
                "mlp",
                "tp",
            )
        )
    out += _lora_tensor(cfg, "down", tokens, "mlp")
    return out


def _ffn_tensors(arch: Architecture, cfg: _Config, moe_layer: bool) -> list[_Tensor]:
    s, b, act, dt, h = cfg.s, cfg.b, cfg.act, cfg.act_dtype, arch.hidden_size
    sd = s * b
    out: list[_Tensor] = []
    fc1_trained = _trains_input(cfg, "gate", "up")
    if fc1_trained:
        name = "router and fc1 input (norm output)" if moe_layer else "fc1 input (norm output)"
        out.append(_Tensor(name, "s·b·h", dt, sd * h, act, "mlp", "sp"))
    for target in ("gate", "up"):
        if target == "gate" and not arch.gated:
            continue
        out += _lora_tensor(cfg, target, sd, "mlp")
    if moe_layer and arch.moe is not None:
        moe = arch.moe
        k, e = moe.experts_per_token, moe.num_experts
        out.append(_Tensor("router probabilities", "s·b·E", "fp32", sd * e, FP32, "moe", "sp"))
        if fc1_trained:
            out.append(
                _Tensor(
                    "routed tokens (k copies, expert fc1 input)",
                    "k·s·b·h",
                    dt,
                    k * sd * h,
                    act,
                    "moe",
                    "sp",
                )
            )
        out += [
            replace(t, block="moe")
            for t in _mlp_tensors(
                arch, cfg, k * sd, moe.expert_ffn_size, label="routed experts: ", tok="k·s·b"
            )
        ]
        out.append(
            _Tensor(
                "expert outputs (before weighted combine)",
                "k·s·b·h",
                dt,
                k * sd * h,
                act,
                "moe",
                "sp",
            )
        )
        if moe.num_shared_experts:
            f_shared = moe.num_shared_experts * moe.expert_ffn_size
            out += _mlp_tensors(arch, cfg, sd, f_shared, label="shared experts: ", tok="s·b")
    else:
        out += _mlp_tensors(arch, cfg, sd, arch.ffn_size, label="", tok="s·b")
    if cfg.dropout:
        mb, md = _mask(cfg)
        out.append(_Tensor("MLP residual dropout mask", "s·b·h", md, sd * h, mb, "mlp", "sp"))
    return out


def _attention_share(arch: Architecture, moe_layer: bool) -> float:
    """Fraction of the model's MoE (or other) layers whose mixer is attention: 1 for a
    transformer, 0 for Mamba / RWKV, Jamba's 1/8 of its non-MoE layers."""
    kind = [i for i in range(arch.layers) if arch.is_moe_layer(i) == moe_layer]
    return sum(arch.is_attention_layer(i) for i in kind) / len(kind) if kind else 1.0


def _recurrent_layer_tensors(arch: Architecture, cfg: _Config, moe_layer: bool) -> list[_Tensor]:
    """A layer of a model with recurrent mixers (:mod:`.recurrent`): its norms, the mean of
    its kind's mixers (attention tensors × the attention share, recurrent × the rest) and
    its FFN where the block has one (Jamba; not Mamba or RWKV)."""
    share = _attention_share(arch, moe_layer)
    tensors = _norm_tensors(arch, cfg, "mixer norm")
    if share > 0:
        tensors += [replace(t, elements=t.elements * share) for t in _attention_tensors(arch, cfg)]
    for saved in recurrent.recurrent_saved_tensors(arch, cfg.s, cfg.b):
        fp32 = saved.dtype == "fp32"
        tensors.append(
            _Tensor(
                saved.name if share == 0 else f"{saved.name} (× {1 - share:.3g} of layers)",
                saved.shape,
                "fp32" if fp32 else cfg.act_dtype,
                saved.elements * (1 - share),
                FP32 if fp32 else cfg.act,
                "recurrent",
                saved.shard,
            )
        )
    if arch.recurrent is not None and (arch.recurrent.has_ffn or share > 0):
        ffn_share = 1.0 if arch.recurrent.has_ffn else share
        more = _norm_tensors(arch, cfg, "MLP norm") if arch.norms_per_layer > 1 else []
        more += _ffn_tensors(arch, cfg, moe_layer)
        tensors += [replace(t, elements=t.elements * ffn_share) for t in more]
    elif arch.norms_per_layer > 1:
        tensors += _norm_tensors(arch, cfg, "channel-mix norm")
    return tensors


def _layer_tensors(arch: Architecture, cfg: _Config, moe_layer: bool) -> list[_Tensor]:
    """Every tensor one layer saves, before recomputation."""
    if arch.recurrent is not None:
        return _recurrent_layer_tensors(arch, cfg, moe_layer)
    tensors = _norm_tensors(arch, cfg, "attention norm")
    tensors += _attention_tensors(arch, cfg)
    tensors += _norm_tensors(arch, cfg, "MLP norm")
    tensors += _ffn_tensors(arch, cfg, moe_layer)
    if arch.parallel_attention and arch.norms_per_layer < 2:
        # GPT-J / Falcon: attention and MLP read one norm's output (a single saved tensor);
        # NeoX has two norms on the same input, so two outputs
        tensors = [
            t
            for t in tensors
            if not t.name.startswith("MLP norm") and not t.name.startswith("fc1 input")
        ]
    return tensors


def _config(
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
) -> _Config:
    prof = profile if isinstance(profile, ImplementationProfile) else get_profile(profile)
    return _Config(
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
    )


ALL_LINEAR = ("q", "k", "v", "o", "gate", "up", "down")


def _recompute_split(
    tensors: list[_Tensor],
    tp: Num,
    sequence_parallel: bool,
    recompute: RecomputeKind,
    threshold_bytes: Num,
    *,
    cfg: _Config,
    arch: Architecture,
) -> tuple[Num, Num, Num]:
    """(kept bytes, one layer's recompute working set, recomputed forward FLOPs) per layer."""
    all_bytes = [_bytes(t, tp, sequence_parallel) for t in tensors]
    total = sum(all_bytes)
    if recompute == "none":
        return total, 0.0, 0.0
    if recompute == "full":
        # keep the layer input (Megatron stores it sharded along s with SP), rerun the layer
        kept = cfg.s * cfg.b * arch.hidden_size * cfg.act / _divisor("sp", tp, sequence_parallel)
        return kept, total, -1.0  # -1: the whole layer's forward (computed by the caller)
    if recompute == "selective":
        # Megatron recomputes the attention core (QK^T, softmax, dropout, P·V) from Q, K, V
        core = sum(x for x, t in zip(all_bytes, tensors, strict=True) if t.attention_core)
        has_core = any(t.attention_core for t in tensors)
        flops = 4.0 * cfg.b * cfg.s * cfg.s * arch.q_size / tp if has_core else 0.0
        return total - core, core, flops
    # threshold: drop every tensor larger than X bytes (EleutherAI NeoX-style)
    dropped = sum(x * (x > threshold_bytes) for x in all_bytes)
    flops = sum(
        t.producer_flops / tp * (x > threshold_bytes)
        for x, t in zip(all_bytes, tensors, strict=True)
    )
    return total - dropped, dropped, flops


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
) -> Num:
    """Bytes one layer keeps for backward, per GPU, after recomputation.

    The sum of :func:`layer_ledger` (kept tensors only). For Megatron's profile, a GPT
    layer with dropout and no flash: s·b·h·(10 + 24/t + 5·a·s/(h·t)) without SP and
    s·b·h/t·(34 + 5·a·s/h) with SP (Korthikanti 2022 eqs. 1-4); selective → 34·s·b·h/t;
    full → 2·s·b·h (/t with SP). Pure arithmetic: ``seq_len``, ``micro_batch`` and ``tp``
    may be numpy arrays. ``moe_layer`` None: an MoE layer if the model has any.
    """
    moe = arch.moe is not None if moe_layer is None else moe_layer
    cfg = _config(
        seq_len=seq_len,
        micro_batch=micro_batch,
        tp=tp,
        profile=profile,
        flash=flash,
        dropout=dropout,
        activation_dtype=activation_dtype,
        lora_rank=lora_rank,
        lora_targets=lora_targets,
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
) -> LayerActivations:
    """The ledger of one layer (every saved tensor, bytes per GPU) and its recomputation."""
    moe = arch.moe is not None if moe_layer is None else moe_layer
    cfg = _config(
        seq_len=seq_len,
        micro_batch=micro_batch,
        tp=tp,
        profile=profile,
        flash=flash,
        dropout=dropout,
        activation_dtype=activation_dtype,
        lora_rank=lora_rank,
        lora_targets=lora_targets,
    )
    tensors = _layer_tensors(arch, cfg, moe)
    x = float("inf") if threshold_bytes is None else threshold_bytes
    kept, working, flops = _recompute_split(
        tensors, tp, sequence_parallel, recompute, x, cfg=cfg, arch=arch
    )
    fwd = float(layer_forward_flops(arch, seq_len, micro_batch, moe)) / tp

    def keeps(t: _Tensor, size: float) -> bool:
        if recompute == "selective":
            return not t.attention_core
        if recompute == "threshold":
            return size <= x
        return recompute == "none"

    sizes = [float(_bytes(t, tp, sequence_parallel)) for t in tensors]
    ledger = [
        _ledger_entry(t, size, kept=keeps(t, size)) for t, size in zip(tensors, sizes, strict=True)
    ]
    saved = float(sum(e.bytes for e in ledger))
    if recompute == "full":
        ledger.append(
            LedgerEntry(
                name="layer input (full-recomputation checkpoint)",
                shape="s·b·h",
                dtype=activation_dtype,
                bytes=float(kept),
                block="checkpoint",
                shard="sp",
            )
        )
    return LayerActivations(
        ledger=ledger,
        saved_bytes=saved,
        kept_bytes=float(kept),
        recompute_working_bytes=float(working),
        recompute_flops=fwd if flops == -1.0 else float(flops),
        forward_flops=fwd,
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
) -> list[LedgerEntry]:
    """Tensors saved outside the layers (Korthikanti 2022 section 4.3, equation 5):
    embedding (its dropout mask; the int64 token ids in PyTorch), final norm, output
    projection input, and the cross-entropy's fp32 softmax of the logits, 4·s·b·V/t
    bytes (vocabulary-parallel). The first pipeline stage holds the first, the last
    stage the rest.

    ``lora``: embedding, norms and head are frozen, so nothing upstream of the first
    adapter needs a gradient (no ids, masks), and the head saves no input. (The first
    layer's first norm then saves nothing either; that one norm is not subtracted.)"""
    cfg = _config(
        seq_len=seq_len,
        micro_batch=micro_batch,
        tp=tp,
        profile=profile,
        flash=False,
        dropout=dropout,
        activation_dtype=activation_dtype,
        lora_rank=1 if lora else None,
        lora_targets=(),
    )
    s, b, sd = seq_len, micro_batch, seq_len * micro_batch
    p = cfg.profile
    tensors: list[_Tensor] = []
    if first_stage and not lora:
        if p.embedding_ids:
            tensors.append(
                _Tensor("token ids (int64)", "s·b", "int64", sd, INDEX_BYTES, "outside", "none")
            )
        if dropout:
            mb, md = _mask(cfg)
            tensors.append(
                _Tensor(
                    "embedding dropout mask",
                    "s·b·h",
                    md,
                    sd * arch.hidden_size,
                    mb,
                    "outside",
                    "sp",
                )
            )
    if first_stage and arch.positions == "learned" and p.embedding_ids and not lora:
        tensors.append(
            _Tensor("position ids (int64)", "s", "int64", s, INDEX_BYTES, "outside", "none")
        )
    if arch.positions == "rotary" and p.rotary_tables:
        d = arch.head_dim
        tensors.append(
            _Tensor(
                "rotary cos and sin (shared by layers)",
                "2·b·s·d",
                cfg.act_dtype,
                2 * sd * d,
                cfg.act,
                "outside",
                "none",
            )
        )
    if last_stage:
        tensors += [replace(t, block="outside") for t in _norm_tensors(arch, cfg, "final norm")]
        if not lora:
            tensors.append(
                _Tensor(
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
            tensors.append(
                _Tensor(
                    "cross-entropy targets (int64)",
                    "s·b",
                    "int64",
                    sd,
                    INDEX_BYTES,
                    "outside",
                    "none",
                )
            )
        if p.logits_fp32_saved:
            tensors.append(
                _Tensor(
                    "cross-entropy: fp32 softmax of logits",
                    "s·b·V",
                    "fp32",
                    s * b * arch.vocab_size,
                    FP32,
                    "outside",
                    "tp",
                )
            )
    return [_ledger_entry(t, float(_bytes(t, tp, sequence_parallel))) for t in tensors]


def logits_working_bytes(
    arch: Architecture,
    seq_len: int,
    micro_batch: int,
    *,
    tp: int = 1,
    activation_dtype: str = "bf16",
) -> float:
    """Transient logits memory at the loss: the logits in the activation dtype plus their
    fp32 copy / gradient, (act + 4)·s·b·V/t bytes (vocabulary-parallel over t). With the
    saved fp32 softmax this is the s·b·V·4-scale term that can set the peak for large V."""
    act = bytes_per_element(activation_dtype)
    return (act + FP32) * seq_len * micro_batch * arch.vocab_size / tp
