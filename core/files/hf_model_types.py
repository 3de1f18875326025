"""Which family reads which ``model_type``: the recurrent and hybrid families (Mamba,
RWKV, Jamba), the table of mappers (``_MAPPERS``), transformers' class names
(``ARCHITECTURE_CLASSES``), the aliases of known families (``MODEL_TYPE_ALIASES``) and the
generic reader of an unknown decoder (``GENERIC_ASSUMED``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from llm_planner.core.files.hf_config import (
    Fields,
    _Config,
)
from llm_planner.core.files.hf_families import (
    _chatglm,
    _cohere,
    _cohere2,
    _deepseek,
    _deepseek_v1,
    _falcon,
    _gemma,
    _gemma2,
    _gemma3_text,
    _gpt2,
    _gpt_bigcode,
    _gpt_neox,
    _gpt_oss,
    _gptj,
    _granite,
    _granitemoe,
    _internlm2,
    _llama,
    _llama4_text,
    _llama_like,
    _mistral,
    _mixtral,
    _olmo,
    _olmo2,
    _olmoe,
    _phi,
    _phi3,
    _qwen2,
    _qwen2_moe,
    _qwen3,
    _qwen3_moe,
    _stablelm,
    _starcoder2,
)
from llm_planner.core.files.hf_families_hybrid import (
    _gemma4_text,
    _nemotron_h,
    _qwen3_5_moe_text,
    _qwen3_5_text,
    _qwen3_next,
)


def _auto_rank(c: _Config, name: str, hidden: int) -> int:
    """Mamba's dt_rank: an integer, or "auto" = ⌈h / 16⌉ (Gu & Dao 2023, Appendix E)."""
    if c.data.get(name) == "auto" or c.data.get(name) is None:
        return math.ceil(hidden / 16)
    return c.int_(name)


def _recurrent_base(c: _Config, hidden: int, vocab: int, layers: int, tied: bool) -> Fields:
    """Fields of a model with no attention: one head and head_dim placeholders (no layer
    uses them), no FFN, no positions."""
    return {
        "layers": layers,
        "hidden_size": hidden,
        "heads": 1,
        "kv_heads": 1,
        "head_dim": hidden,
        "vocab_size": vocab,
        "tied_embeddings": c.bool_("tie_word_embeddings", default=tied),
        "positions": "none",
        "norm": "rmsnorm",
        "norms_per_layer": 1,
    }


def _mamba(c: _Config) -> Fields:
    """MambaConfig: blocks of one RMSNorm and a Mamba mixer (no FFN), d_inner = expand·h
    (``intermediate_size``), ``state_size`` N, ``conv_kernel``, dt_rank ("auto": ⌈h/16⌉),
    biases per ``use_bias`` / ``use_conv_bias``; tied by default."""
    hidden = c.int_("hidden_size")
    fields = _recurrent_base(
        c, hidden, c.int_("vocab_size"), c.int_("num_hidden_layers"), tied=True
    )
    inner = c.int_("intermediate_size", default=c.int_("expand", default=2) * hidden)
    fields.update(ffn_size=inner, ffn_kind="gelu_mlp", max_context=1 << 20)
    fields["recurrent"] = {
        "kind": "mamba",
        "inner_size": inner,
        "state_size": c.int_("state_size", default=16),
        "conv_kernel": c.int_("conv_kernel", default=4),
        "time_step_rank": _auto_rank(c, "time_step_rank", hidden),
        "conv_bias": c.bool_("use_conv_bias", default=True),
        "proj_bias": c.bool_("use_bias", default=False),
    }
    return fields


def _mamba2(c: _Config) -> Fields:
    """Mamba2Config: blocks of one RMSNorm and a Mamba-2 mixer, d_inner = expand·h,
    ``num_heads`` heads, ``n_groups`` B/C groups, ``state_size`` N; untied by default."""
    hidden = c.int_("hidden_size")
    fields = _recurrent_base(
        c, hidden, c.int_("vocab_size"), c.int_("num_hidden_layers"), tied=False
    )
    inner = c.int_("expand", default=2) * hidden
    heads = c.int_("num_heads", default=128)
    head_dim = c.int_("head_dim", default=64)
    if heads * head_dim != inner:
        raise c.error(f"num_heads·head_dim ({heads}·{head_dim}) ≠ expand·hidden_size ({inner})")
    fields.update(ffn_size=inner, ffn_kind="gelu_mlp", max_context=1 << 20)
    fields["recurrent"] = {
        "kind": "mamba2",
        "inner_size": inner,
        "state_size": c.int_("state_size", default=128),
        "conv_kernel": c.int_("conv_kernel", default=4),
        "heads": heads,
        "groups": c.int_("n_groups", default=8),
        "conv_bias": c.bool_("use_conv_bias", default=True),
        "proj_bias": c.bool_("use_bias", default=False),
    }
    return fields


def _rwkv(c: _Config) -> Fields:
    """RwkvConfig (RWKV-4): LayerNorms with bias (two per block, plus ``pre_ln`` after the
    embedding), time-mix over ``attention_hidden_size`` (default h) and channel-mix of
    ``intermediate_size`` (default 4h); untied."""
    hidden = c.int_("hidden_size")
    fields = _recurrent_base(
        c, hidden, c.int_("vocab_size"), c.int_("num_hidden_layers"), tied=False
    )
    channel = c.int_("intermediate_size", default=4 * hidden)
    fields.update(
        ffn_size=channel,
        ffn_kind="gelu_mlp",
        norm="layernorm",
        norms_per_layer=2,
        embedding_norm=True,
        max_context=c.int_("context_length", default=1024),
    )
    fields["recurrent"] = {
        "kind": "rwkv",
        "inner_size": c.int_("attention_hidden_size", default=hidden),
        "state_size": 0,
        "conv_kernel": 0,
        "ffn_size": channel,
    }
    return fields


def _jamba(c: _Config) -> Fields:
    """JambaConfig: attention (no positions, no bias) on layers i % ``attn_layer_period`` =
    ``attn_layer_offset``, Mamba mixers (with dt/B/C RMSNorms) elsewhere; every layer has
    two RMSNorms and an FFN, MoE on i % ``expert_layer_period`` = ``expert_layer_offset``
    (``num_experts`` of intermediate_size, top ``num_experts_per_tok``, router without bias)."""
    fields = _llama_like(c, max_context=262144, tied=False)
    hidden = fields["hidden_size"]
    fields["positions"] = "none"
    experts = c.int_("num_experts", default=16)
    if experts > 1:
        fields["moe"] = {
            "num_experts": experts,
            "experts_per_token": c.int_("num_experts_per_tok", default=2),
            "expert_ffn_size": fields["ffn_size"],
            "layer_period": c.int_("expert_layer_period", default=2),
            "layer_offset": c.int_("expert_layer_offset", default=1, minimum=0),
        }
    fields["recurrent"] = {
        "kind": "mamba",
        "inner_size": c.int_("mamba_expand", default=2) * hidden,
        "state_size": c.int_("mamba_d_state", default=16),
        "conv_kernel": c.int_("mamba_d_conv", default=4),
        "time_step_rank": _auto_rank(c, "mamba_dt_rank", hidden),
        "conv_bias": c.bool_("mamba_conv_bias", default=True),
        "proj_bias": c.bool_("mamba_proj_bias", default=False),
        "inner_norms": True,
        "attention_period": c.int_("attn_layer_period", default=8),
        "attention_offset": c.int_("attn_layer_offset", default=4, minimum=0),
        "has_ffn": True,
    }
    return fields


_MAPPERS: dict[str, Callable[[_Config], Fields]] = {
    "llama": _llama,
    "mistral": _mistral,
    "mixtral": _mixtral,
    "qwen2": _qwen2,
    "qwen2_moe": _qwen2_moe,
    "phi3": _phi3,
    "gemma": _gemma,
    "gemma2": _gemma2,
    "gpt_neox": _gpt_neox,
    "gpt2": _gpt2,
    "falcon": _falcon,
    "RefinedWeb": _falcon,
    "RefinedWebModel": _falcon,
    "deepseek_v2": _deepseek,
    "deepseek_v3": _deepseek,
    "deepseek": _deepseek_v1,
    "qwen3": _qwen3,
    "qwen3_moe": _qwen3_moe,
    "gemma3_text": _gemma3_text,
    "olmo": _olmo,
    "olmo2": _olmo2,
    "olmoe": _olmoe,
    "cohere": _cohere,
    "cohere2": _cohere2,
    "starcoder2": _starcoder2,
    "gpt_bigcode": _gpt_bigcode,
    "gptj": _gptj,
    "phi": _phi,
    "stablelm": _stablelm,
    "granite": _granite,
    "granitemoe": _granitemoe,
    "internlm2": _internlm2,
    "gpt_oss": _gpt_oss,
    "llama4_text": _llama4_text,
    "mamba": _mamba,
    "mamba2": _mamba2,
    "rwkv": _rwkv,
    "jamba": _jamba,
    "chatglm": _chatglm,
    "qwen3_5_text": _qwen3_5_text,
    "qwen3_5_moe_text": _qwen3_5_moe_text,
    "qwen3_next": _qwen3_next,
    "nemotron_h": _nemotron_h,
    "gemma4_text": _gemma4_text,
}

_TEXT_CONFIG_TYPES = {
    "gemma3": "gemma3_text",
    "llama4": "llama4_text",
    "qwen3_5": "qwen3_5_text",
    "qwen3_5_moe": "qwen3_5_moe_text",
    "gemma4": "gemma4_text",
}
"""Multimodal configs whose language model sits in ``text_config``: imported as that text
model (the vision tower and projector are not counted; a note says so)."""

MULTIMODAL_TEXT_TYPES: dict[str, str] = dict(_TEXT_CONFIG_TYPES)
"""The multimodal model types read as their language model (a copy for the names page)."""

SUPPORTED_MODEL_TYPES: tuple[str, ...] = tuple(_MAPPERS)

ARCHITECTURE_CLASSES: dict[str, str] = {
    "LlamaForCausalLM": "llama",
    "MistralForCausalLM": "mistral",
    "MixtralForCausalLM": "mixtral",
    "Qwen2ForCausalLM": "qwen2",
    "Qwen2MoeForCausalLM": "qwen2_moe",
    "Phi3ForCausalLM": "phi3",
    "GemmaForCausalLM": "gemma",
    "Gemma2ForCausalLM": "gemma2",
    "GPTNeoXForCausalLM": "gpt_neox",
    "GPT2LMHeadModel": "gpt2",
    "FalconForCausalLM": "falcon",
    "DeepseekV2ForCausalLM": "deepseek_v2",
    "DeepseekV3ForCausalLM": "deepseek_v3",
    "Qwen3ForCausalLM": "qwen3",
    "Qwen3MoeForCausalLM": "qwen3_moe",
    "Gemma3ForCausalLM": "gemma3_text",
    "OlmoForCausalLM": "olmo",
    "Olmo2ForCausalLM": "olmo2",
    "OlmoeForCausalLM": "olmoe",
    "CohereForCausalLM": "cohere",
    "Cohere2ForCausalLM": "cohere2",
    "Starcoder2ForCausalLM": "starcoder2",
    "GPTBigCodeForCausalLM": "gpt_bigcode",
    "GPTJForCausalLM": "gptj",
    "PhiForCausalLM": "phi",
    "StableLmForCausalLM": "stablelm",
    "GraniteForCausalLM": "granite",
    "GraniteMoeForCausalLM": "granitemoe",
    "InternLM2ForCausalLM": "internlm2",
    "GptOssForCausalLM": "gpt_oss",
    "Llama4ForCausalLM": "llama4_text",
    "MambaForCausalLM": "mamba",
    "Mamba2ForCausalLM": "mamba2",
    "RwkvForCausalLM": "rwkv",
    "JambaForCausalLM": "jamba",
    "Qwen3_5ForCausalLM": "qwen3_5_text",
    "Qwen3_5MoeForCausalLM": "qwen3_5_moe_text",
    "Qwen3NextForCausalLM": "qwen3_next",
    "NemotronHForCausalLM": "nemotron_h",
    "Gemma4ForCausalLM": "gemma4_text",
}
"""transformers' causal-LM class of each mapped ``model_type`` (``models/*/modeling_*.py``).
A config whose ``model_type`` is not mapped but whose ``architectures`` names one of these
classes builds as that family (Moonshot's Kimi-K2 writes ``model_type: kimi_k2`` and
``architectures: [DeepseekV3ForCausalLM]``; its remote code is DeepSeek-V3's)."""

MODEL_TYPE_ALIASES: dict[str, tuple[str, str]] = {
    "mimo": (
        "qwen2",
        "Xiaomi MiMo's modeling_mimo.py builds MiMoModel on Qwen2Model (its "
        "multi-token-prediction layers are not counted)",
    ),
    "kimi_k2": (
        "deepseek_v3",
        "Moonshot's Kimi-K2 reuses DeepSeek-V3's architecture (its config names "
        "DeepseekV3ForCausalLM; the nested text_config of Kimi-K2.5 does not)",
    ),
    "baichuan": (
        "llama",
        "Baichuan 2's modeling_baichuan.py: Llama's decoder with q, k, v fused in one W_pack "
        "matrix and a NormHead output layer, the same parameters (13B: ALiBi positions)",
    ),
}
"""Model types whose remote modelling code is a mapped family under another name → (that
family, where the equivalence is read)."""

_SHAPE_WORDS = frozenset({"size", "dim", "layers", "experts", "heads", "head", "rank"})
"""Words of config field names that describe shapes (``index_head_dim``, ``num_experts``,
``linear_num_value_heads``): a generic import lists the integer ones it did not use."""

_NOT_SHAPES = frozenset({"ep_size", "num_nextn_predict_layers", "pretraining_tp", "n_group"})
"""Integer fields with a shape word that size no parameter here (a runtime expert-parallel
size; multi-token-prediction layers, noted separately; Llama's tensor-parallel hint;
DeepSeek's router groups)."""


def _is_shape_field(name: str, value: Any) -> bool:
    if isinstance(value, bool) or not isinstance(value, int) or name in _NOT_SHAPES:
        return False
    if value == 0:  # a feature turned off (no layers, no chunking) sizes nothing
        return False
    words = name.lower().split("_")
    return words[0] in ("num", "n") or any(word in _SHAPE_WORDS for word in words)


GENERIC_ASSUMED = {
    "deepseek_v3": "DeepSeek-V3-style MLA attention and MoE (kv_lora_rank present)",
    "generic": "a Llama-style decoder (SwiGLU MLP, RMSNorm, rotary positions, grouped-query "
    "attention of head_dim), with mixture-of-experts FFNs where the config names experts "
    "(num_experts, n_routed_experts or num_local_experts; moe_intermediate_size; shared "
    "experts; first_k_dense_replace)",
}


def _generic_family(data: dict[str, Any]) -> str:
    """The family a config of unknown type is read as, from the fields it has."""
    return "deepseek_v3" if "kv_lora_rank" in data else "generic"


def _generic(c: _Config) -> Fields:
    """A decoder of unknown type read by the field names most configs share (LlamaConfig's,
    plus the experts' names of Mixtral, Qwen-MoE and DeepSeek configs). Approximate by
    construction: what it cannot see (linear-attention layers, extra projections) is missed,
    and the import lists the shape fields it did not use."""
    if c.opt_int("intermediate_size") is None and c.opt_int("moe_intermediate_size"):
        # every layer MoE: no dense FFN size given; the experts' stands in (unused)
        c.data = {**c.data, "intermediate_size": c.data["moe_intermediate_size"]}
    fields = _llama_like(c, max_context=4096, tied=False)
    fields["attention_bias"] = "all" if c.bool_("attention_bias", default=False) else "none"
    fields["mlp_bias"] = c.bool_("mlp_bias", default=False)
    if c.str_("hidden_act", default="silu") in _UNGATED_ACTS:
        fields["ffn_kind"] = "gelu_mlp"  # up → act → down, no gate
    experts = c.opt_int("num_experts", "n_routed_experts", "num_local_experts", "moe_num_experts")
    if experts is not None:
        expert_ffn = c.opt_int("moe_intermediate_size") or fields["ffn_size"]
        shared = c.opt_int(
            "n_shared_experts", "num_shared_experts", "moe_num_shared_experts", minimum=0
        )
        if shared is None:
            size = c.opt_int(
                "shared_expert_intermediate_size",
                "moe_shared_expert_intermediate_size",
                minimum=0,
            )
            shared = max(1, round(size / expert_ffn)) if size else 0
        fields["moe"] = {
            "num_experts": experts,
            "experts_per_token": c.int_(
                "num_experts_per_tok", "moe_topk", "moe_top_k", "moe_k", default=2
            ),
            "expert_ffn_size": expert_ffn,
            "num_shared_experts": shared,
            "first_dense_layers": c.opt_int(
                "first_k_dense_replace", "moe_layer_start_index", minimum=0
            )
            or 0,
            "layer_period": c.int_("decoder_sparse_step", "moe_layer_freq", default=1),
            "router_bias": c.str_("topk_method", default="") == "noaux_tc",
        }
    return fields


_GENERIC_MAPPERS: dict[str, Callable[[_Config], Fields]] = {"generic": _generic}

_UNGATED_ACTS = frozenset({"relu2", "xielu"})
"""Activations the configs that name them use in a two-matrix MLP without a gate (squared
ReLU: Nemotron, Arcee, nanochat, Jais 2; xIELU: Apertus)."""
