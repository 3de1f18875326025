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
    flash_output_follows_q: bool = Field(
        default=False,
        description="the fused kernel's output takes q's memory layout (PyTorch's CPU flash "
        "kernel); CUDA's flash and efficient kernels always return a (b, s, a, d) layout",
    )
    hf_modules: bool = Field(
        default=False,
        description="the model runs its Hugging Face transformers modules: each family's "
        "modelling-file terms apply (:data:`HF_MODULES`, keyed by Architecture.hf_model_type)",
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
                "SDPA flash (saves q, k, v, output and fp32 log-sum-exp; GQA in the kernel, "
                "enable_gqa, unless a mask is materialised; the output is laid out so that "
                "o_proj's input is a view of it), RoPE cos/sin tables, cross-entropy on fp32 "
                "logits; each family's own terms (HF_MODULES)."
            ),
            norm_stats=True,
            hf_rmsnorm=True,
            softmax_fp32=True,
            fused_swiglu=False,
            flash_repeat_kv=False,
            flash_output_copy=False,
            rotary_tables=True,
            hf_modules=True,
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
            flash_repeat_kv=False,
            flash_output_copy=False,
            rotary_tables=True,
            hf_modules=True,
            flash_output_follows_q=True,
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


TRANSFORMERS = "huggingface/transformers@v5.24.0"
"""The transformers release whose modelling files the family terms below were read from,
and measured against (tests/validation/test_torch_activations.py)."""


class ModuleTraits(BaseModel):
    """What one family's Hugging Face modelling file saves that Llama's does not."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    norm_output_fp32: bool = Field(
        default=False,
        description="RMSNorm multiplies its weight in fp32, so the normalised x̂ it saves is "
        "fp32 (4·s·b·h), not the activation dtype (Gemma's x̂·(1 + w), OLMo-2's w·x̂)",
    )
    layernorm_fp32: bool = Field(
        default=False,
        description="LayerNorm runs on an fp32 copy of its input: input and statistics fp32",
    )
    layernorm_manual_fp32: bool = Field(
        default=False,
        description="LayerNorm written out in fp32 (Cohere): x − mean twice, x̂ and rstd, fp32",
    )
    eager_softmax: Literal["fp32_cast", "act", "fp32_qk"] = Field(
        default="fp32_cast",
        description="eager attention: softmax in fp32 then cast (Llama's "
        "eager_attention_forward); in the activation dtype (one tensor serves P·V); or q and "
        "k cast to fp32 for QK^T as well (GPT-J)",
    )
    attention_softcap: bool = Field(
        default=False, description="tanh soft-capping of the attention scores (Gemma-2)"
    )
    qk_norm_weightless: bool = Field(
        default=False, description="q/k norm without a weight (Llama 4's L2 norm): no x̂ saved"
    )
    qk_l2_norm_nope_every: int | None = Field(
        default=None,
        ge=1,
        description="a weightless per-head q/k norm (no parameters, so not in "
        "Architecture.qk_norm) on every layer but each N-th, the NoPE layers (Llama 4: "
        "use_qk_norm, default true, only where use_rope; no_rope_layer_interval 4)",
    )
    sdpa_value_view: bool = Field(
        default=False,
        description="one fused QKV projection whose v SDPA receives as a view: the whole "
        "q + 2·kv output stays alive (GPT-NeoX, Phi-3); eager attention copies v for its bmm",
    )
    q_head_major: bool = Field(
        default=False,
        description="q reaches SDPA laid out (b, a, s, d) in memory (sliced from a fused QKV "
        "output or rebuilt by torch.cat for partial rotary), not as a transposed (b, s, a, d) "
        "view: a kernel whose output follows q's layout then needs a copy for o_proj",
    )
    final_softcap: bool = Field(
        default=False, description="tanh soft-capping of the logits, result saved (Gemma-2)"
    )
    experts_on_every_token: bool = Field(
        default=False,
        description="every routed expert runs on every token, its input scaled by the "
        "token's router score (zero when not chosen): E copies of the tokens, not top-k "
        "(Llama 4's Llama4TextMoe: hidden_states.repeat(num_experts, 1) * router_scores)",
    )
    glu_saved: int = Field(
        default=4,
        ge=1,
        description="f-sized tensors one gated MLP saves per token, down_proj's input "
        "included (unfused SiLU(gate)·up: gate, SiLU(gate), up, product = 4)",
    )
    router_fp32: bool = Field(
        default=False,
        description="the router's linear runs on an fp32 copy of its input (DeepSeek-V2/V3's "
        "TopkRouter: F.linear(hidden_states.type(torch.float32), ...)): 4·s·b·h saved",
    )
    shared_expert_gate: bool = Field(
        default=False,
        description="the shared expert's output times a sigmoid gate: both saved (Qwen2-MoE)",
    )
    source: str


HF_MODULES: dict[str, ModuleTraits] = {
    **dict.fromkeys(
        ("gemma", "gemma3_text"),
        ModuleTraits(
            norm_output_fp32=True,
            source=f"{TRANSFORMERS} src/transformers/models/gemma/modeling_gemma.py "
            "GemmaRMSNorm: output = self._norm(x.float()) * (1.0 + self.weight.float())",
        ),
    ),
    "olmo2": ModuleTraits(
        norm_output_fp32=True,
        source=f"{TRANSFORMERS} src/transformers/models/olmo2/modeling_olmo2.py "
        "Olmo2RMSNorm: (self.weight * hidden_states).to(input_dtype) in fp32",
    ),
    "olmo": ModuleTraits(
        layernorm_fp32=True,
        source=f"{TRANSFORMERS} src/transformers/models/olmo/modeling_olmo.py "
        "OlmoLayerNorm: F.layer_norm(hidden_states.to(torch.float32), ...)",
    ),
    **dict.fromkeys(
        ("cohere", "cohere2"),
        ModuleTraits(
            layernorm_manual_fp32=True,
            source=f"{TRANSFORMERS} src/transformers/models/cohere/modeling_cohere.py "
            "CohereLayerNorm: (x - mean).pow(2).mean(...), (x - mean) * rsqrt, weight * x̂ "
            "in fp32",
        ),
    ),
    "gemma2": ModuleTraits(
        norm_output_fp32=True,
        attention_softcap=True,
        final_softcap=True,
        source=f"{TRANSFORMERS} src/transformers/models/gemma2/modeling_gemma2.py "
        "(eager_attention_forward: softcap · tanh(scores / softcap); Gemma2ForCausalLM: "
        "final_logit_softcapping the same on the logits; Gemma2RMSNorm as Gemma's)",
    ),
    **dict.fromkeys(
        ("gpt2", "falcon", "RefinedWeb", "RefinedWebModel"),
        ModuleTraits(
            eager_softmax="act",
            source=f"{TRANSFORMERS} src/transformers/models/gpt2/modeling_gpt2.py, "
            "falcon/modeling_falcon.py (eager: softmax in the activation dtype)",
        ),
    ),
    "gptj": ModuleTraits(
        eager_softmax="fp32_qk",
        source=f"{TRANSFORMERS} src/transformers/models/gptj/modeling_gptj.py _attn: "
        "query.to(torch.float32), key.to(torch.float32), softmax, .to(value.dtype)",
    ),
    "llama4_text": ModuleTraits(
        eager_softmax="act",
        qk_norm_weightless=True,
        qk_l2_norm_nope_every=4,
        experts_on_every_token=True,
        source=f"{TRANSFORMERS} src/transformers/models/llama4/modeling_llama4.py "
        "(Llama4TextL2Norm without weight; eager softmax in the activation dtype; "
        "Llama4TextMoe runs every expert on every token, scaled by its router score)",
    ),
    **dict.fromkeys(
        ("phi", "stablelm"),
        ModuleTraits(
            q_head_major=True,
            source=f"{TRANSFORMERS} src/transformers/models/phi/modeling_phi.py, "
            "stablelm/modeling_stablelm.py (partial rotary: q = torch.cat((q_rot, q_pass)))",
        ),
    ),
    **dict.fromkeys(
        ("gpt_neox", "phi3"),
        ModuleTraits(
            sdpa_value_view=True,
            q_head_major=True,
            source=f"{TRANSFORMERS} src/transformers/models/gpt_neox/modeling_gpt_neox.py, "
            "phi3/modeling_phi3.py (qkv = self.query_key_value(x) / self.qkv_proj(x), then "
            "q, k, v sliced from it; rotary makes new q and k, v stays a view)",
        ),
    ),
    **dict.fromkeys(
        ("deepseek_v2", "deepseek_v3"),
        ModuleTraits(
            router_fp32=True,
            source=f"{TRANSFORMERS} src/transformers/models/deepseek_v3/modeling_deepseek_v3.py "
            "DeepseekV3TopkRouter.forward",
        ),
    ),
    "qwen2_moe": ModuleTraits(
        shared_expert_gate=True,
        source=f"{TRANSFORMERS} src/transformers/models/qwen2_moe/modeling_qwen2_moe.py "
        "(shared_expert_output = sigmoid(self.shared_expert_gate(x)) * shared_expert_output)",
    ),
    "gpt_oss": ModuleTraits(
        eager_softmax="act",
        norm_output_fp32=True,
        glu_saved=7,
        source=f"{TRANSFORMERS} src/transformers/models/gpt_oss/modeling_gpt_oss.py "
        "(GptOssRMSNorm: (self.weight * hidden_states).to(input_dtype) in fp32; eager: "
        "sinks concatenated to the scores, their max subtracted, softmax in the "
        "activation dtype; GptOssExperts._apply_gate: gate‖up, both clamped, "
        "gate·sigmoid(α·gate), (up + 1)·glu: 7 f-sized tensors with down_proj's input)",
    ),
}
"""Each supported family's departures from Llama's modules (absent: none), read from its
modelling file at :data:`TRANSFORMERS`."""

ACTIVATION_SAVED: dict[str, int] = {"gelu_new": 4, "gelu_fast": 7}
"""f-sized tensors the activation function saves when written out in Python (transformers
src/transformers/activations.py @ v5.24.0): NewGELU 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³)))
saves x (pow), tanh's result, 0.5·x and 1 + tanh; FastGELU 0.5·x·(1 + tanh(0.7978845608·x·
(1 + 0.044715·x²))) saves x, 0.044715·x, 0.7978845608·x, 1 + 0.044715·x², tanh's result,
0.5·x and 1 + tanh. Every other activation (F.gelu, SiLU, GELUTanh) saves its input: 1."""

_NO_TRAITS = ModuleTraits(source="Llama's modules")


def _traits(arch: Architecture, cfg: _Config) -> ModuleTraits:
    if not cfg.profile.hf_modules or arch.hf_model_type is None:
        return _NO_TRAITS
    return HF_MODULES.get(arch.hf_model_type, _NO_TRAITS)


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


def _norm_tensors(
    arch: Architecture, cfg: _Config, where: str, *, width: Num = None, stats_per_token: Num = 1
) -> list[_Tensor]:
    """What one norm saves (its output is counted by the linear that reads it). ``width``:
    the normalised size (h, or a q/k norm's a·d); ``stats_per_token``: statistics per token
    (a per-head q/k norm has one per head)."""
    s, b, act = cfg.s, cfg.b, cfg.act
    w = arch.hidden_size if width is None else width
    p = cfg.profile
    traits = _traits(arch, cfg)
    out: list[_Tensor] = []
    if arch.norm == "rmsnorm" and p.hf_rmsnorm:
        out.append(
            _Tensor(f"{where}: fp32 copy of input", "s·b·h", "fp32", s * b * w, FP32, "norm", "sp")
        )
    if arch.norm == "rmsnorm" and p.hf_rmsnorm and cfg.lora_rank is None:
        # weight·x̂ saves x̂ for the weight's gradient; a frozen weight (LoRA) needs none
        x_bytes, x_dtype = (FP32, "fp32") if traits.norm_output_fp32 else (act, cfg.act_dtype)
        out.append(
            _Tensor(
                f"{where}: normalised x (before ·weight)",
                "s·b·h",
                x_dtype,
                s * b * w,
                x_bytes,
                "norm",
                "sp",
            )
        )
    if arch.norm != "rmsnorm" and traits.layernorm_manual_fp32:
        out.append(
            _Tensor(
                f"{where}: x − mean (twice), x̂ in fp32",
                "3·s·b·h",
                "fp32",
                3 * s * b * w,
                FP32,
                "norm",
                "sp",
            )
        )
    elif not (arch.norm == "rmsnorm" and p.hf_rmsnorm):
        in_bytes, in_dtype = (FP32, "fp32") if traits.layernorm_fp32 else (act, cfg.act_dtype)
        out.append(_Tensor(f"{where}: input", "s·b·h", in_dtype, s * b * w, in_bytes, "norm", "sp"))
    if p.norm_stats:
        fp32_stats = p.norm_stats_fp32 or arch.norm == "rmsnorm" or traits.layernorm_fp32
        stat_bytes, stat_dtype = (FP32, "fp32") if fp32_stats else (act, cfg.act_dtype)
        stats = 1 if arch.norm == "rmsnorm" or traits.layernorm_manual_fp32 else 2
        names = "rstd" if stats == 1 else "mean, rstd"
        out.append(
            _Tensor(
                f"{where}: {names}",
                f"{stats}·s·b",
                stat_dtype,
                stats * s * b * stats_per_token,
                stat_bytes,
                "norm",
                "sp",
            )
        )
    return out


def _qk_norm_tensors(arch: Architecture, cfg: _Config) -> list[_Tensor]:
    """A q/k norm (Qwen3, Gemma 3, OLMo-2, Llama 4) as its HF module saves it: each of q and
    k is normalised like the layer's norms, over a head (``head``: statistics per head) or
    over all heads (``full``); a weightless norm (Llama 4's L2 norm) saves no x̂."""
    traits = _traits(arch, cfg)
    kind, share = arch.qk_norm, 1.0
    if traits.qk_l2_norm_nope_every is not None:
        kind = "head"
        share = 1.0 - (arch.layers // traits.qk_l2_norm_nope_every) / arch.layers
    if kind == "none" or not cfg.profile.hf_modules or arch.norm != "rmsnorm":
        return []
    out: list[_Tensor] = []
    for name, heads in (("q", arch.heads), ("k", arch.kv_heads)):
        per_token = heads if kind == "head" else 1
        width = heads * arch.head_dim
        tensors = _norm_tensors(arch, cfg, f"{name} norm", width=width, stats_per_token=per_token)
        if traits.qk_norm_weightless:
            tensors = [t for t in tensors if "normalised" not in t.name]
        out += [
            replace(t, block="attention", shard="tp", elements=t.elements * share) for t in tensors
        ]
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


def _masked_share(arch: Architecture, s: Num) -> Num:
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


def _mla_attention_tensors(arch: Architecture, cfg: _Config) -> list[_Tensor]:
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
    out: list[_Tensor] = []
    if _trains_input(cfg, "q", "k", "v"):
        out.append(
            _Tensor(
                "down-projections' input (norm output)", "s·b·h", dt, sd * h, act, "attention", "sp"
            )
        )
    for name, rank in (("q", mla.q_lora_rank), ("kv", mla.kv_lora_rank)):
        if rank is None:
            continue
        out += [
            replace(t, block="attention")
            for t in _norm_tensors(arch, cfg, f"{name} latent norm", width=rank)
        ]
        out.append(
            _Tensor(
                f"{name} up-projection input (latent norm output)",
                f"s·b·r_{name}",
                dt,
                sd * rank,
                act,
                "attention",
                "sp",
            )
        )
    att_flops = 2.0 * b * s * s * a * (d_qk + mla.v_head_dim)
    out.append(_Tensor("Q (nope ‖ rope)", "s·b·a·d_qk", dt, sd * a * d_qk, act, "attention", "tp"))
    out.append(
        _Tensor("K (nope ‖ shared rope)", "s·b·a·d_qk", dt, sd * a * d_qk, act, "attention", "tp")
    )
    out.append(_Tensor("V", "s·b·a·d_v", dt, sd * a * mla.v_head_dim, act, "attention", "tp"))
    if cfg.flash:
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
    else:
        scores = a * s * s * b
        sm_bytes, sm_dtype = (FP32, "fp32") if p.softmax_fp32 else (act, dt)
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
        if p.softmax_fp32 and act != FP32:
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
    if _trains_input(cfg, "o"):
        out.append(
            _Tensor(
                "out-projection input (attention output)",
                "s·b·a·d_v",
                dt,
                sd * a * mla.v_head_dim,
                act,
                "attention",
                "tp",
            )
        )
    return out


def _flash_core(
    arch: Architecture, cfg: _Config, kv_elems: Num, qkv_flops: Num, att_flops: Num
) -> list[_Tensor]:
    """The fused kernel's saved tensors (FlashAttention / SDPA): q, k, v, output, log-sum-exp."""
    s, b, act, dt = cfg.s, cfg.b, cfg.act, cfg.act_dtype
    p = cfg.profile
    a, q = arch.heads, arch.q_size
    sd = s * b
    traits = _traits(arch, cfg)
    out: list[_Tensor] = []
    expand = p.flash_repeat_kv and arch.kv_heads != arch.heads
    k_shape = "s·b·a·d" if expand else "s·b·kv·d"
    k_elems = sd * q if expand else kv_elems
    if p.hf_modules and not expand and arch.kv_heads != arch.heads:
        # transformers' sdpa_attention_forward passes enable_gqa (no repeat_kv) unless
        # an attention mask is materialised: a window shorter than the sequence
        share = _masked_share(arch, s)
        k_elems = kv_elems + share * (sd * q - kv_elems)
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
    if traits.sdpa_value_view:
        out.append(
            _Tensor(
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
    if p.flash_output_copy or (p.flash_output_follows_q and traits.q_head_major):
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
    return out


def _eager_core(
    arch: Architecture, cfg: _Config, kv_elems: Num, qkv_flops: Num, att_flops: Num
) -> list[_Tensor]:
    """Eager attention's saved tensors: q, k, the (soft-capped) softmax, its cast or
    dropout, v and the out-projection input."""
    s, b, act, dt = cfg.s, cfg.b, cfg.act, cfg.act_dtype
    p = cfg.profile
    a, q = arch.heads, arch.q_size
    sd = s * b
    traits = _traits(arch, cfg)
    out: list[_Tensor] = []
    k_elems = sd * q if arch.kv_heads != arch.heads else kv_elems
    rep = " (repeated to a heads)" if arch.kv_heads != arch.heads else ""
    qk_bytes, qk_dtype = (FP32, "fp32") if traits.eager_softmax == "fp32_qk" else (act, dt)
    out.append(
        _Tensor(
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
        _Tensor(
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
            _Tensor(
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
            _Tensor(
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
            _Tensor("attention dropout output", "a·s²·b", dt, scores, act, "attention", "tp", True)
        )
    elif softmax_fp32 and act != FP32:
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
        _Tensor("V" + rep, "s·b·a·d" if rep else "s·b·kv·d", dt, k_elems, act, "attention", "tp")
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
    return out


def _attention_tensors(arch: Architecture, cfg: _Config) -> list[_Tensor]:
    if arch.mla is not None and cfg.lora_rank is None and not cfg.dropout:
        return _mla_attention_tensors(arch, cfg)
    s, b, act, dt = cfg.s, cfg.b, cfg.act, cfg.act_dtype
    q, h = arch.q_size, arch.hidden_size
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
    out += _qk_norm_tensors(arch, cfg)
    kv_per_gpu_heads = np.minimum(cfg.tp, arch.kv_heads)  # kv heads replicate when t > kv
    kv_elems = sd * kv * cfg.tp / kv_per_gpu_heads  # divided by t later
    qkv_flops = 2.0 * sd * h * (q + 2 * kv)
    core = _flash_core if cfg.flash else _eager_core
    out += core(arch, cfg, kv_elems, qkv_flops, att_flops)
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
            more = _traits(arch, cfg).glu_saved - 4
            if more > 0:
                out.append(
                    _Tensor(
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
        extra = ACTIVATION_SAVED.get(arch.hidden_act or "", 1) - 1 if p.hf_modules else 0
        if extra:
            out.append(
                _Tensor(
                    f"{label}{arch.hidden_act} written out: its other saved tensors",
                    f"{extra}·{tok}·f",
                    dt,
                    extra * tokens * f,
                    act,
                    "mlp",
                    "tp",
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
        if cfg.profile.hf_modules and _traits(arch, cfg).experts_on_every_token:
            out.append(
                _Tensor(
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
                _Tensor(
                    "routing indices (int64) and weights (fp32)",
                    "k·s·b·40 + 4·s·b bytes",
                    "int64/fp32",
                    k * sd * 40.0 + 4.0 * sd,
                    1.0,
                    "moe",
                    "sp",
                )
            )
            if _traits(arch, cfg).router_fp32:
                out.append(
                    _Tensor("router input, fp32 copy", "s·b·h", "fp32", sd * h, FP32, "moe", "sp")
                )
        copies, tok = (e, "E·s·b") if _traits(arch, cfg).experts_on_every_token else (k, "k·s·b")
        if fc1_trained:
            out.append(
                _Tensor(
                    f"routed tokens ({copies} copies, expert fc1 input)",
                    f"{tok}·h",
                    dt,
                    copies * sd * h,
                    act,
                    "moe",
                    "sp",
                )
            )
        out += [
            replace(t, block="moe")
            for t in _mlp_tensors(
                arch, cfg, copies * sd, moe.expert_ffn_size, label="routed experts: ", tok=tok
            )
        ]
        out.append(
            _Tensor(
                "expert outputs (before weighted combine)"
                if copies == k
                else "token copies before the router-score scaling",
                f"{tok}·h",
                dt,
                copies * sd * h,
                act,
                "moe",
                "sp",
            )
        )
        if moe.num_shared_experts:
            f_shared = moe.num_shared_experts * moe.expert_ffn_size
            out += _mlp_tensors(arch, cfg, sd, f_shared, label="shared experts: ", tok="s·b")
            if _traits(arch, cfg).shared_expert_gate:
                out.append(
                    _Tensor(
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
    elif arch.parallel_attention:
        # NeoX / Falcon-40B: both norms read the same input, saved once (one storage)
        tensors = [t for t in tensors if t.name != "MLP norm: input"]
    if cfg.profile.hf_modules and arch.norms_per_layer > 2:
        # Gemma-2/3: post-attention and post-MLP norms too; their outputs go to the residual
        for i in range(arch.norms_per_layer - 2):
            tensors += _norm_tensors(arch, cfg, f"post-norm {i + 1}")
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
    recompute: RecomputeKind = "none",
    flash: bool = True,
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
        # HF computes them from position_ids = cache_position[None]: one (1, s, d) table
        # each, broadcast over the batch (modeling_llama.py LlamaModel.forward)
        tensors.append(
            _Tensor(
                "rotary cos and sin (shared by layers)",
                "2·s·d",
                cfg.act_dtype,
                2 * s * d,
                cfg.act,
                "outside",
                "none",
            )
        )
    if p.hf_modules and recompute == "full" and not flash and arch.recurrent is None:
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
        tensors.append(
            _Tensor(
                "causal mask(s) held by the layer checkpoints",
                f"{masks}·b·s²",
                cfg.act_dtype,
                masks * b * s * s,
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
        if (
            arch.hf_model_type
            and p.hf_modules
            and HF_MODULES.get(arch.hf_model_type, _NO_TRAITS).final_softcap
        ):
            tensors.append(
                _Tensor(
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
