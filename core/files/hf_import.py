"""Import a Hugging Face ``config.json`` (and safetensors headers) into an :class:`Architecture`.

Offline and read-only: the file or folder is local, nothing is downloaded, no code from the
model folder is ever executed (``auto_map`` / ``trust_remote_code`` are ignored), and every
input is size-limited and validated field by field. Field names and their defaults follow
the ``configuration_*.py`` files of Hugging Face transformers for each supported
``model_type``; a field the config leaves out takes that class's default, except the shape
fields (layers, width, heads, FFN, vocabulary), which are required.

Safetensors (https://github.com/huggingface/safetensors, "Format"): a file starts with an
8-byte little-endian header length N, then N bytes of JSON mapping each tensor name to its
``dtype``, ``shape`` and ``data_offsets``. Only that header is read, so the exact parameter
count and the stored dtype come without loading a single weight.
"""

from __future__ import annotations

import json
import math
import os
import struct
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from llm_planner.core.primitives.architecture import (
    Architecture,
    MLAConfig,
    MoEConfig,
    RecurrentConfig,
    count_parameters,
)
from llm_planner.core.primitives.reading import FileReadError, open_regular, read_bounded

if TYPE_CHECKING:
    from llm_planner.core.inputs.training import TrainingInputs

CONFIG_MAX_BYTES = 1_000_000
"""config.json files are a few kB; anything above 1 MB is not a model config."""

INDEX_MAX_BYTES = 64_000_000
"""``model.safetensors.index.json`` lists every tensor name (DeepSeek-V3's is ~9 MB)."""

SAFETENSORS_HEADER_MAX_BYTES = 100_000_000
"""The reference safetensors implementation refuses headers above 100 MB; so do we."""

SAFETENSORS_MAX_FILES = 4096

MAX_DIMENSION = 2**31 - 1
"""Largest width, vocabulary or context accepted from a config (an untrusted file)."""
MAX_LAYERS = 10_000
"""Largest depth accepted: estimators may work layer by layer."""
_LAYER_FIELDS = {"num_hidden_layers", "n_layer", "first_k_dense_replace"}

SAFETENSORS_DTYPES: dict[str, tuple[str, int | None]] = {
    # safetensors dtype → (our name, bytes per element; None: sub-byte, size not checked)
    "BF16": ("bf16", 2),
    "F16": ("fp16", 2),
    "F32": ("fp32", 4),
    "F64": ("fp64", 8),
    "F8_E4M3": ("fp8", 1),
    "F8_E5M2": ("fp8", 1),
    "F8_E8M0": ("fp8_e8m0", 1),
    "F6_E2M3": ("fp6", None),
    "F6_E3M2": ("fp6", None),
    "F4": ("fp4", None),
    "I8": ("int8", 1),
    "U8": ("uint8", 1),
    "I16": ("int16", 2),
    "U16": ("uint16", 2),
    "I32": ("int32", 4),
    "U32": ("uint32", 4),
    "I64": ("int64", 8),
    "U64": ("uint64", 8),
    "BOOL": ("bool", 1),
}

NON_PARAMETER_SUFFIXES = ("weight_scale_inv", "weight_scale", "input_scale", "k_scale", "v_scale")
"""Tensors stored beside fp8 weights (block / per-tensor quantization scales, e.g. DeepSeek-V3's
``weight_scale_inv``): metadata of the weight format, not model parameters; not counted."""

_TORCH_DTYPES = {
    "bfloat16": "bf16",
    "float16": "fp16",
    "half": "fp16",
    "float32": "fp32",
    "float": "fp32",
    "float8_e4m3fn": "fp8",
}


class HFImportError(ValueError):
    """A config or safetensors file that cannot be imported; the message names the file and
    the field (or byte range) that is wrong."""


class ImportedModel(BaseModel):
    """What a local Hugging Face model folder (or a lone config.json) says about a model."""

    model_config = ConfigDict(frozen=True)

    architecture: Architecture
    model_type: str
    source_path: Path
    safetensors_params: int | None = None
    """Exact element count of every parameter tensor in the safetensors headers."""
    safetensors_dtype: str | None = None
    """The dtype holding most of those elements (bf16, fp16, fp32, fp8, int8, ...)."""
    safetensors_files: int = 0
    config_dtype: str | None = None
    """``torch_dtype`` (or ``dtype``) of config.json, in our names, when it gives one."""
    weights_format: str | None = None
    """The inference weights format the files imply (a :mod:`.quantization` id): from
    ``quantization_config`` (fp8, GPTQ, AWQ, bitsandbytes, MXFP4), a GGUF file's tensor
    types, or the stored / config dtype."""
    weights_bytes: float | None = None
    """Exact weight bytes where the files say: a GGUF file's tensor sum, the safetensors
    data, or MXFP4 experts + 16-bit rest; None: P × bits per weight."""
    file_params: int | None = None
    """A GGUF file's own parameter count (Σ tensor elements)."""
    notes: tuple[str, ...] = ()
    """What the import could not represent or read (e.g. a missing shard)."""
    warnings: tuple[str, ...] = ()
    """Disagreements between the files (config.json vs the weights' own counts)."""


# ------------------------------------------------------------------ reading files


def _read_limited(path: Path, limit: int, what: str) -> bytes:
    """Through the one bounded reader: a FIFO or a device is refused, never waited on."""
    try:
        return read_bounded(path, limit, what)
    except FileReadError as error:
        raise HFImportError(str(error)) from None


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _accept_constant(name: str) -> float:
    """``Infinity``, ``-Infinity`` and ``NaN``, which Python's ``json.dumps`` (and so
    transformers' ``save_pretrained``) writes for non-finite floats (Nemotron-H's
    ``time_step_limit``)."""
    return float(name)


def _parse_json_object(
    data: bytes, label: str, what: str, *, tolerant: bool = False
) -> dict[str, Any]:
    """A JSON object from ``data``. ``tolerant``: a third-party file written by Python
    (config.json), where non-finite constants are accepted; otherwise strict JSON.
    Sizes are limited by the caller (:func:`_read_limited`)."""
    constant = _accept_constant if tolerant else _reject_constant
    try:
        value = json.loads(data.decode("utf-8"), parse_constant=constant)
    except UnicodeDecodeError:
        raise HFImportError(f"{label}: {what} is not UTF-8 text") from None
    except json.JSONDecodeError as error:
        raise HFImportError(
            f"{label}: {what} is not valid JSON (line {error.lineno} column {error.colno}: "
            f"{error.msg})"
        ) from None
    except (ValueError, RecursionError) as error:
        raise HFImportError(f"{label}: {what} is not valid JSON ({error})") from None
    if not isinstance(value, dict):
        raise HFImportError(f"{label}: {what} must be a JSON object, not {type(value).__name__}")
    return value


# ------------------------------------------------------------------ config fields


class _Config:
    """Typed access to config.json fields; every failure names the file, field and type."""

    def __init__(self, data: dict[str, Any], label: str, model_type: str) -> None:
        self.data = data
        self.label = label
        self.model_type = model_type
        self.read: set[str] = set()
        """Every field a mapper looked up (present or not): what the import used."""

    def error(self, message: str) -> HFImportError:
        return HFImportError(f"{self.label}: {message} ({self.model_type})")

    def _lookup(self, names: tuple[str, ...]) -> tuple[str, Any]:
        self.read.update(names)
        for name in names:
            if name in self.data and self.data[name] is not None:
                return name, self.data[name]
        return names[0], None

    def int_(self, *names: str, default: int | None = None, minimum: int = 1) -> int:
        """A required integer (or ``default`` when absent / null)."""
        value = self.opt_int(*names, minimum=minimum)
        if value is None:
            if default is None:
                raise self.error(f"missing field {names[0]!r}")
            return default
        return value

    def opt_int(self, *names: str, minimum: int = 1) -> int | None:
        name, value = self._lookup(names)
        if value is None:
            return None
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.error(f"field {name!r} must be an integer, got {value!r}")
        if value < minimum:
            raise self.error(f"field {name!r} must be at least {minimum}, got {value}")
        limit = MAX_LAYERS if name in _LAYER_FIELDS else MAX_DIMENSION
        if value > limit:
            raise self.error(f"field {name!r} is implausibly large ({value:,} > {limit:,})")
        return value

    def bool_(self, *names: str, default: bool) -> bool:
        name, value = self._lookup(names)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise self.error(f"field {name!r} must be true or false, got {value!r}")
        return value

    def str_(self, *names: str, default: str | None = None) -> str | None:
        name, value = self._lookup(names)
        if value is None:
            return default
        if not isinstance(value, str):
            raise self.error(f"field {name!r} must be a string, got {value!r}")
        return value

    def head_dim(self, hidden: int, heads: int) -> int:
        """``head_dim`` when given (Gemma, Mistral-Nemo), else hidden / heads."""
        explicit = self.opt_int("head_dim")
        if explicit is not None:
            return explicit
        if hidden % heads:
            raise self.error(
                f"hidden_size ({hidden}) is not a multiple of num_attention_heads ({heads}) "
                "and no 'head_dim' is given"
            )
        return hidden // heads


Fields = dict[str, Any]
_M = TypeVar("_M", bound=BaseModel)
"""Keyword arguments for :class:`Architecture` built by one model type's mapper."""


def _llama_like(c: _Config, max_context: int, tied: bool) -> Fields:
    """Fields shared by the Llama family (LlamaConfig and its descendants)."""
    layers = c.int_("num_hidden_layers")
    hidden = c.int_("hidden_size")
    heads = c.int_("num_attention_heads")
    return {
        "layers": layers,
        "hidden_size": hidden,
        "heads": heads,
        "kv_heads": c.int_("num_key_value_heads", default=heads),
        "head_dim": c.head_dim(hidden, heads),
        "ffn_size": c.int_("intermediate_size"),
        "ffn_kind": "swiglu",
        "vocab_size": c.int_("vocab_size"),
        "max_context": c.int_("max_position_embeddings", default=max_context),
        "tied_embeddings": c.bool_("tie_word_embeddings", default=tied),
        "positions": "rotary",
        "norm": "rmsnorm",
    }


def _llama(c: _Config) -> Fields:
    """LlamaConfig: attention_bias puts a bias on q, k, v and o; mlp_bias on all three MLP maps."""
    fields = _llama_like(c, max_context=2048, tied=False)
    fields["attention_bias"] = "all" if c.bool_("attention_bias", default=False) else "none"
    fields["mlp_bias"] = c.bool_("mlp_bias", default=False)
    return fields


def _mistral(c: _Config) -> Fields:
    """MistralConfig: Llama without biases, with an optional sliding window (4096 in v0.1)."""
    fields = _llama_like(c, max_context=4096 * 32, tied=False)
    fields["sliding_window"] = c.opt_int("sliding_window")
    return fields


def _mixtral(c: _Config) -> Fields:
    """MixtralConfig: every layer's FFN is ``num_local_experts`` SwiGLU experts of
    ``intermediate_size``, top ``num_experts_per_tok``; the router has no bias."""
    fields = _mistral(c)
    fields["moe"] = {
        "num_experts": c.int_("num_local_experts", default=8),
        "experts_per_token": c.int_("num_experts_per_tok", default=2),
        "expert_ffn_size": fields["ffn_size"],
    }
    return fields


def _qwen2(c: _Config) -> Fields:
    """Qwen2Config: q, k and v projections carry a bias (o does not); the window is only used
    when ``use_sliding_window`` is true."""
    fields = _llama_like(c, max_context=32768, tied=False)
    fields["attention_bias"] = "qkv" if c.bool_("attention_bias", default=True) else "none"
    if c.bool_("use_sliding_window", default=False):
        fields["sliding_window"] = c.opt_int("sliding_window")
    return fields


def _qwen2_moe(c: _Config) -> Fields:
    """Qwen2MoeConfig: routed experts of ``moe_intermediate_size`` plus one shared expert of
    ``shared_expert_intermediate_size`` (expressed as that many routed-size experts) behind
    a 1×h sigmoid gate; MoE on every ``decoder_sparse_step``-th layer."""
    fields = _qwen2(c)
    expert = c.int_("moe_intermediate_size")
    shared = c.opt_int("shared_expert_intermediate_size", minimum=0) or 0
    if shared % expert:
        raise c.error(
            f"shared_expert_intermediate_size ({shared}) is not a multiple of "
            f"moe_intermediate_size ({expert}); not representable"
        )
    fields["moe"] = {
        "num_experts": c.int_("num_experts"),
        "experts_per_token": c.int_("num_experts_per_tok"),
        "expert_ffn_size": expert,
        "num_shared_experts": shared // expert,
        "shared_expert_gate": shared > 0,
        **_sparse_layers(c, "decoder_sparse_step"),
    }
    return fields


def _phi3(c: _Config) -> Fields:
    """Phi3Config: fused qkv_proj and gate_up_proj hold exactly the parameters of separate
    q/k/v and gate/up maps, so the Llama accounting applies; no biases."""
    fields = _llama_like(c, max_context=4096, tied=False)
    fields["sliding_window"] = c.opt_int("sliding_window")
    return fields


def _gemma(c: _Config) -> Fields:
    """GemmaConfig: GeGLU MLP, head_dim 256 by default, tied embeddings."""
    fields = _llama_like(c, max_context=8192, tied=True)
    fields["head_dim"] = c.int_("head_dim", default=256)
    fields["ffn_kind"] = "geglu"
    fields["attention_bias"] = "all" if c.bool_("attention_bias", default=False) else "none"
    return fields


def _gemma2(c: _Config) -> Fields:
    """Gemma2Config: Gemma plus pre- and post-norms around attention and MLP (4 per layer) and
    a sliding window on alternate layers. ``query_pre_attn_scalar`` scales scores only."""
    fields = _gemma(c)
    fields["norms_per_layer"] = 4
    window = c.opt_int("sliding_window")
    if window is None and "sliding_window" not in c.data:
        window = 4096
    fields["sliding_window"] = window
    fields["sliding_window_layers"] = "alternate"
    return fields


def _gpt_neox(c: _Config) -> Fields:
    """GPTNeoXConfig: LayerNorm, biases everywhere (``attention_bias`` default true), rotary on
    ``rotary_pct`` of each head (no parameters), parallel residual by default, untied."""
    layers = c.int_("num_hidden_layers")
    hidden = c.int_("hidden_size")
    heads = c.int_("num_attention_heads")
    return {
        "layers": layers,
        "hidden_size": hidden,
        "heads": heads,
        "kv_heads": heads,
        "head_dim": c.head_dim(hidden, heads),
        "ffn_size": c.int_("intermediate_size"),
        "ffn_kind": "gelu_mlp",
        "vocab_size": c.int_("vocab_size"),
        "max_context": c.int_("max_position_embeddings", default=2048),
        "tied_embeddings": c.bool_("tie_word_embeddings", default=False),
        "positions": "rotary",
        "norm": "layernorm",
        "attention_bias": "all" if c.bool_("attention_bias", default=True) else "none",
        "mlp_bias": True,
        "parallel_attention": c.bool_("use_parallel_residual", default=True),
    }


def _gpt2(c: _Config) -> Fields:
    """GPT2Config: learned positions (``n_positions``), LayerNorm, biases everywhere, MLP of
    ``n_inner`` (None: 4·n_embd), tied embeddings."""
    hidden = c.int_("n_embd", "hidden_size")
    heads = c.int_("n_head", "num_attention_heads")
    if hidden % heads:
        raise c.error(f"n_embd ({hidden}) is not a multiple of n_head ({heads})")
    return {
        "layers": c.int_("n_layer", "num_hidden_layers"),
        "hidden_size": hidden,
        "heads": heads,
        "kv_heads": heads,
        "head_dim": hidden // heads,
        "ffn_size": c.int_("n_inner", default=4 * hidden),
        "ffn_kind": "gelu_mlp",
        "vocab_size": c.int_("vocab_size"),
        "max_context": c.int_("n_positions", "max_position_embeddings", default=1024),
        "tied_embeddings": c.bool_("tie_word_embeddings", default=True),
        "positions": "learned",
        "norm": "layernorm",
        "attention_bias": "all",
        "mlp_bias": True,
    }


def _falcon(c: _Config) -> Fields:
    """FalconConfig (and the older RefinedWeb / RefinedWebModel configs).

    KV heads: ``num_kv_heads`` with ``new_decoder_architecture`` (or without ``multi_query``),
    else 1 (multi-query). Norms per layer: 2 when attention is not parallel or with the new
    architecture (``num_ln_in_parallel_attn`` 2: ln_attn and ln_mlp), else 1. FFN
    ``ffn_hidden_size`` (None: 4·h); ``bias`` on every linear map; ALiBi or rotary; tied.
    """
    hidden = c.int_("hidden_size", "n_embed")
    heads = c.int_("num_attention_heads", "n_head")
    new_arch = c.bool_("new_decoder_architecture", default=c.model_type == "RefinedWeb")
    multi_query = c.bool_("multi_query", default=True)
    kv_heads = c.int_("num_kv_heads", "n_head_kv", default=heads)
    if not (new_arch or not multi_query):
        kv_heads = 1
    parallel = c.bool_("parallel_attn", default=True)
    lns = c.opt_int("num_ln_in_parallel_attn")
    if lns is None and new_arch:
        lns = 2
    bias = c.bool_("bias", default=False)
    if hidden % heads:
        raise c.error(f"hidden_size ({hidden}) is not a multiple of num_attention_heads ({heads})")
    return {
        "layers": c.int_("num_hidden_layers", "n_layer"),
        "hidden_size": hidden,
        "heads": heads,
        "kv_heads": kv_heads,
        "head_dim": hidden // heads,
        "ffn_size": c.int_("ffn_hidden_size", default=4 * hidden),
        "ffn_kind": "gelu_mlp",
        "vocab_size": c.int_("vocab_size"),
        "max_context": c.int_("max_position_embeddings", default=2048),
        "tied_embeddings": c.bool_("tie_word_embeddings", default=True),
        "positions": "alibi" if c.bool_("alibi", default=False) else "rotary",
        "norm": "layernorm",
        "norms_per_layer": 2 if (not parallel or lns == 2) else 1,
        "attention_bias": "all" if bias else "none",
        "mlp_bias": bias,
        "parallel_attention": parallel,
    }


def _deepseek(c: _Config) -> Fields:
    """DeepseekV2Config / DeepseekV3Config: multi-head latent attention and DeepSeekMoE.

    MLA dims ``q_lora_rank`` (null: direct q projection, V2-Lite), ``kv_lora_rank``,
    ``qk_nope_head_dim``, ``qk_rope_head_dim``, ``v_head_dim``. Layers from
    ``first_k_dense_replace`` on are MoE: ``n_routed_experts`` of ``moe_intermediate_size``,
    top ``num_experts_per_tok``, plus ``n_shared_experts``. ``topk_method`` "noaux_tc" (V3's)
    adds the per-expert score-correction bias to the router. The multi-token-prediction
    module (``num_nextn_predict_layers``) is not part of the architecture counted here.
    """
    v3 = c.model_type == "deepseek_v3"
    layers = c.int_("num_hidden_layers")
    heads = c.int_("num_attention_heads")
    v_head_dim = c.int_("v_head_dim")
    fields: Fields = {
        "layers": layers,
        "hidden_size": c.int_("hidden_size"),
        "heads": heads,
        "kv_heads": c.int_("num_key_value_heads", default=heads),
        "head_dim": v_head_dim,
        "ffn_size": c.int_("intermediate_size"),
        "ffn_kind": "swiglu",
        "vocab_size": c.int_("vocab_size"),
        "max_context": c.int_("max_position_embeddings", default=4096 if v3 else 2048),
        "tied_embeddings": c.bool_("tie_word_embeddings", default=False),
        "positions": "rotary",
        "norm": "rmsnorm",
        "attention_bias": "all" if c.bool_("attention_bias", default=False) else "none",
        "mla": {
            "q_lora_rank": c.opt_int("q_lora_rank"),
            "kv_lora_rank": c.int_("kv_lora_rank"),
            "qk_nope_head_dim": c.int_("qk_nope_head_dim"),
            "qk_rope_head_dim": c.int_("qk_rope_head_dim", minimum=0),
            "v_head_dim": v_head_dim,
        },
    }
    routed = c.opt_int("n_routed_experts")
    if routed is not None:
        topk_method = c.str_("topk_method", default="noaux_tc" if v3 else "greedy")
        fields["moe"] = {
            "num_experts": routed,
            "experts_per_token": c.int_("num_experts_per_tok"),
            "expert_ffn_size": c.int_("moe_intermediate_size"),
            "num_shared_experts": c.opt_int("n_shared_experts", minimum=0) or 0,
            "first_dense_layers": c.opt_int("first_k_dense_replace", minimum=0) or 0,
            "layer_period": c.int_("moe_layer_freq", default=1),
            "router_bias": topk_method == "noaux_tc",
        }
    return fields


def _window_every(c: _Config, layers: int, default_every: int | None) -> int | None:
    """Every N-th layer global, from ``layer_types`` (transformers ≥ 4.53 writes the list)
    or ``sliding_window_pattern``; None: every layer uses the window. A list that is not
    periodic in that way is not representable and is refused."""
    types = c.data.get("layer_types")
    if types is None:
        return c.opt_int("sliding_window_pattern", "_sliding_window_pattern") or default_every
    if (
        not isinstance(types, list)
        or len(types) != layers
        or not all(t in ("sliding_attention", "full_attention", "chunked_attention") for t in types)
    ):
        raise c.error(f"field 'layer_types' must list {layers} attention types")
    full = [i for i, t in enumerate(types) if t == "full_attention"]
    if not full:
        return None
    every = full[0] + 1
    if full != list(range(every - 1, layers, every)):
        raise c.error("field 'layer_types' is not every-N-th-layer global; not representable")
    return every


def _sparse_layers(c: _Config, step_name: str) -> dict[str, int]:
    """MoE placement for Qwen-MoE's ``decoder_sparse_step`` s (layer i is MoE when
    (i+1) % s = 0) after leading ``mlp_only_layers`` (which must be 0..k-1)."""
    step = c.int_(step_name, default=1)
    dense = c.data.get("mlp_only_layers") or []
    if not isinstance(dense, list) or dense != list(range(len(dense))):
        raise c.error("field 'mlp_only_layers' must list leading layers 0..k-1 to be representable")
    return {"first_dense_layers": len(dense), "layer_period": step, "layer_offset": step - 1}


def _qwen3(c: _Config) -> Fields:
    """Qwen3Config: Llama with per-head RMSNorms on q and k (``q_norm``/``k_norm`` of
    head_dim), ``head_dim`` 128 by default, biases on q/k/v/o only with attention_bias."""
    fields = _llama_like(c, max_context=32768, tied=False)
    fields["head_dim"] = c.int_("head_dim", default=128)
    fields["attention_bias"] = "all" if c.bool_("attention_bias", default=False) else "none"
    fields["qk_norm"] = "head"
    if c.bool_("use_sliding_window", default=False):
        fields["sliding_window"] = c.opt_int("sliding_window")
    return fields


def _qwen3_moe(c: _Config) -> Fields:
    """Qwen3MoeConfig: Qwen3 attention; MoE layers of ``num_experts`` experts of
    ``moe_intermediate_size``, top ``num_experts_per_tok``, no shared expert, router
    without bias; dense layers (``mlp_only_layers``, off the sparse step) of intermediate_size."""
    fields = _qwen3(c)
    fields["moe"] = {
        "num_experts": c.int_("num_experts", default=128),
        "experts_per_token": c.int_("num_experts_per_tok", default=8),
        "expert_ffn_size": c.int_("moe_intermediate_size", default=768),
        **_sparse_layers(c, "decoder_sparse_step"),
    }
    return fields


def _gemma3_text(c: _Config) -> Fields:
    """Gemma3TextConfig: Gemma 2's four norms per layer and GeGLU, per-head q/k RMSNorms,
    and a 1024-token window (default 4096) on all but every 6th layer
    (``sliding_window_pattern``, or ``layer_types``); tied embeddings."""
    defaults = {
        "vocab_size": 262208,
        "hidden_size": 2304,
        "intermediate_size": 9216,
        "num_hidden_layers": 26,
        "num_attention_heads": 8,
        "num_key_value_heads": 4,
    }  # Gemma3TextConfig's, which a multimodal config's text_config relies on
    c = _Config(
        {**defaults, **{k: v for k, v in c.data.items() if v is not None}}, c.label, c.model_type
    )
    fields = _gemma(c)
    fields["norms_per_layer"] = 4
    fields["qk_norm"] = "head"
    fields["max_context"] = c.int_("max_position_embeddings", default=131072)
    window = c.opt_int("sliding_window")
    fields["sliding_window"] = window if window is not None else 4096
    fields["global_attention_every"] = _window_every(c, fields["layers"], 6)
    return fields


def _olmo(c: _Config) -> Fields:
    """OlmoConfig: Llama-shaped, no biases, and parameter-free LayerNorms (OlmoLayerNorm)."""
    fields = _llama_like(c, max_context=2048, tied=False)
    fields["attention_bias"] = "all" if c.bool_("attention_bias", default=False) else "none"
    fields["norm"] = "nonparametric"
    return fields


def _olmo2(c: _Config) -> Fields:
    """Olmo2Config: RMSNorm after attention and after the MLP (two per layer, none before),
    and RMSNorms over all q heads and all k heads (``q_norm`` a·d, ``k_norm`` kv·d)."""
    fields = _olmo(c)
    fields["norm"] = "rmsnorm"
    fields["qk_norm"] = "full"
    return fields


def _olmoe(c: _Config) -> Fields:
    """OlmoeConfig: OLMo-2's q/k norms (over h and kv·d), pre-norms, every layer MoE with
    ``num_experts`` experts of intermediate_size, top ``num_experts_per_tok``."""
    fields = _llama_like(c, max_context=4096, tied=False)
    fields["attention_bias"] = "all" if c.bool_("attention_bias", default=False) else "none"
    fields["qk_norm"] = "full"
    fields["moe"] = {
        "num_experts": c.int_("num_experts", default=64),
        "experts_per_token": c.int_("num_experts_per_tok", default=8),
        "expert_ffn_size": fields["ffn_size"],
    }
    return fields


def _cohere(c: _Config) -> Fields:
    """CohereConfig: one bias-free LayerNorm per layer feeding attention and the SwiGLU MLP
    in parallel; optional LayerNorms over all q and k heads (``use_qk_norm``); tied."""
    fields = _llama_like(c, max_context=8192, tied=True)
    fields["norm"] = "layernorm_nobias"
    fields["norms_per_layer"] = 1
    fields["parallel_attention"] = True
    fields["attention_bias"] = "all" if c.bool_("attention_bias", default=False) else "none"
    if c.bool_("use_qk_norm", default=False):
        fields["qk_norm"] = "full"
    return fields


def _cohere2(c: _Config) -> Fields:
    """Cohere2Config: Cohere with a 4096-token window on all but every 4th layer."""
    fields = _cohere(c)
    fields["sliding_window"] = c.int_("sliding_window", default=4096)
    fields["global_attention_every"] = _window_every(c, fields["layers"], 4)
    return fields


def _starcoder2(c: _Config) -> Fields:
    """Starcoder2Config: GQA, LayerNorms with bias, GELU MLP (c_fc, c_proj), biases on every
    linear map with ``use_bias``, optional sliding window, tied."""
    fields = _llama_like(c, max_context=4096, tied=True)
    bias = c.bool_("use_bias", default=True)
    fields.update(
        ffn_kind="gelu_mlp",
        norm="layernorm",
        attention_bias="all" if bias else "none",
        mlp_bias=bias,
        sliding_window=c.opt_int("sliding_window"),
    )
    return fields


def _gpt_bigcode(c: _Config) -> Fields:
    """GPTBigCodeConfig: GPT-2 with multi-query attention (one k/v head) by default."""
    fields = _gpt2(c)
    if c.bool_("multi_query", default=True):
        fields["kv_heads"] = 1
    return fields


def _gptj(c: _Config) -> Fields:
    """GPTJConfig: one LayerNorm per layer feeding attention (q, k, v, out without bias) and
    the GELU MLP (fc_in, fc_out with bias) in parallel; rotary; untied head with a bias."""
    hidden = c.int_("n_embd", "hidden_size")
    heads = c.int_("n_head", "num_attention_heads")
    if hidden % heads:
        raise c.error(f"n_embd ({hidden}) is not a multiple of n_head ({heads})")
    return {
        "layers": c.int_("n_layer", "num_hidden_layers"),
        "hidden_size": hidden,
        "heads": heads,
        "kv_heads": heads,
        "head_dim": hidden // heads,
        "ffn_size": c.int_("n_inner", default=4 * hidden),
        "ffn_kind": "gelu_mlp",
        "vocab_size": c.int_("vocab_size"),
        "max_context": c.int_("n_positions", default=2048),
        "tied_embeddings": c.bool_("tie_word_embeddings", default=False),
        "norm": "layernorm",
        "norms_per_layer": 1,
        "parallel_attention": True,
        "mlp_bias": True,
        "head_bias": True,
    }


def _phi(c: _Config) -> Fields:
    """PhiConfig (phi-1, phi-1.5, phi-2): one LayerNorm per layer feeding attention and the
    GELU MLP in parallel, biases on every linear map and the head, partial rotary, untied;
    optional per-head LayerNorms on q and k (``qk_layernorm``)."""
    fields = _llama_like(c, max_context=2048, tied=False)
    fields.update(
        ffn_kind="gelu_mlp",
        norm="layernorm",
        norms_per_layer=1,
        parallel_attention=True,
        attention_bias="all",
        mlp_bias=True,
        head_bias=True,
    )
    if c.bool_("qk_layernorm", default=False):
        fields["qk_norm"] = "head"
    return fields


def _stablelm(c: _Config) -> Fields:
    """StableLmConfig: LayerNorms with bias, SwiGLU without bias, q/k/v biases with
    ``use_qkv_bias``, per-head q/k LayerNorms with ``qk_layernorm``, one norm per layer
    with ``use_parallel_residual``."""
    fields = _llama_like(c, max_context=4096, tied=False)
    parallel = c.bool_("use_parallel_residual", default=False)
    fields.update(
        norm="layernorm",
        attention_bias="qkv" if c.bool_("use_qkv_bias", default=False) else "none",
        parallel_attention=parallel,
        norms_per_layer=1 if parallel else 2,
    )
    if c.bool_("qk_layernorm", default=False):
        fields["qk_norm"] = "full"  # one LayerNorm(head_dim) per head: a·d and kv·d, with bias
    return fields


def _granite(c: _Config) -> Fields:
    """GraniteConfig: Llama plus scalar multipliers (no parameters)."""
    return _llama(c)


def _granitemoe(c: _Config) -> Fields:
    """GraniteMoeConfig: every layer MoE, ``num_local_experts`` SwiGLU experts of
    intermediate_size (fused input_linear/output_linear), top ``num_experts_per_tok``,
    router without bias."""
    fields = _llama(c)
    fields["moe"] = {
        "num_experts": c.int_("num_local_experts", default=8),
        "experts_per_token": c.int_("num_experts_per_tok", default=2),
        "expert_ffn_size": fields["ffn_size"],
    }
    return fields


def _internlm2(c: _Config) -> Fields:
    """InternLM2 (remote code, ``modeling_internlm2.py`` of internlm/internlm2-7b, never run):
    fused ``wqkv`` h → (a + 2·kv)·d and ``wo``, both with bias when ``bias`` (default true),
    SwiGLU ``w1``/``w3``/``w2`` without bias, RMSNorm ``attention_norm``/``ffn_norm``,
    untied ``output``. The fused map holds exactly separate q/k/v's parameters."""
    fields = _llama_like(c, max_context=2048, tied=False)
    fields["attention_bias"] = "all" if c.bool_("bias", default=True) else "none"
    return fields


def _deepseek_v1(c: _Config) -> Fields:
    """DeepSeekMoE v1 (remote code, ``modeling_deepseek.py`` of deepseek-ai/deepseek-moe-16b-base,
    never run): Llama attention; from ``first_k_dense_replace`` on, every
    ``moe_layer_freq``-th layer is MoE with ``n_routed_experts`` experts of
    ``moe_intermediate_size`` plus one shared MLP of n_shared_experts × that size (the same
    parameters as n_shared experts), a router without bias."""
    fields = _llama(c)
    routed = c.opt_int("n_routed_experts")
    if routed is not None:
        fields["moe"] = {
            "num_experts": routed,
            "experts_per_token": c.int_("num_experts_per_tok"),
            "expert_ffn_size": c.int_("moe_intermediate_size", default=1407),
            "num_shared_experts": c.opt_int("n_shared_experts", minimum=0) or 0,
            "first_dense_layers": c.opt_int("first_k_dense_replace", minimum=0) or 0,
            "layer_period": c.int_("moe_layer_freq", default=1),
        }
    return fields


def _gpt_oss(c: _Config) -> Fields:
    """GptOssConfig: biases on q/k/v/o, one sink logit per head, a 128-token window on every
    other layer (``layer_types``), every layer MoE: ``num_local_experts`` SwiGLU experts of
    intermediate_size with biases, top ``num_experts_per_tok``, router with bias."""
    fields = _llama_like(c, max_context=131072, tied=False)
    fields.update(
        head_dim=c.int_("head_dim", default=64),
        attention_bias="all" if c.bool_("attention_bias", default=True) else "none",
        attention_sinks=True,
        mlp_bias=True,
        sliding_window=c.int_("sliding_window", default=128),
    )
    fields["global_attention_every"] = _window_every(c, fields["layers"], 2)
    fields["moe"] = {
        "num_experts": c.int_("num_local_experts", default=128),
        "experts_per_token": c.int_("num_experts_per_tok", "experts_per_token", default=4),
        "expert_ffn_size": fields["ffn_size"],
        "router_bias": True,
    }
    return fields


def _llama4_text(c: _Config) -> Fields:
    """Llama4TextConfig: MoE layers every ``interleave_moe_layer_step`` (or ``moe_layers``)
    with ``num_local_experts`` experts of intermediate_size, top ``num_experts_per_tok``,
    one shared expert of the same size, a router without bias; dense layers of
    ``intermediate_size_mlp``; q/k L2 norms without parameters; chunked attention
    (``attention_chunk_size``, counted as a window) on all but every 4th (NoPE) layer."""
    fields = _llama_like(c, max_context=131072, tied=False)
    layers = fields["layers"]
    fields["head_dim"] = c.int_("head_dim", default=128)
    fields["ffn_size"] = c.int_("intermediate_size_mlp", default=16384)
    fields["attention_bias"] = "all" if c.bool_("attention_bias", default=False) else "none"
    step = c.int_("interleave_moe_layer_step", default=1)
    explicit = c.data.get("moe_layers")
    if explicit is not None and explicit != list(range(step - 1, layers, step)):
        raise c.error("field 'moe_layers' is not every interleave_moe_layer_step-th layer")
    fields["moe"] = {
        "num_experts": c.int_("num_local_experts", default=16),
        "experts_per_token": c.int_("num_experts_per_tok", default=1),
        "expert_ffn_size": c.int_("intermediate_size", default=8192),
        "num_shared_experts": 1,
        "layer_period": step,
        "layer_offset": step - 1,
    }
    chunk = c.opt_int("attention_chunk_size")
    if chunk is not None:
        fields["sliding_window"] = chunk
        fields["global_attention_every"] = c.int_("no_rope_layer_interval", default=4)
    return fields


def _chatglm(c: _Config) -> Fields:
    """ChatGLM2/3 and GLM-4 (THUDM, remote code ``modeling_chatglm.py``): ``num_layers``
    blocks of RMSNorm (``rmsnorm``), a fused query_key_value of ``num_attention_heads``
    query heads and ``multi_query_group_num`` key/value groups (``multi_query_attention``)
    of ``kv_channels``, biased when ``add_qkv_bias``; ``dense`` and the SwiGLU MLP
    (dense_h_to_4h h → 2·``ffn_hidden_size``, dense_4h_to_h) biased when
    ``add_bias_linear``; a separate output_layer over ``padded_vocab_size``."""
    layers = c.int_("num_layers")
    hidden = c.int_("hidden_size")
    heads = c.int_("num_attention_heads")
    grouped = c.bool_("multi_query_attention", default=False)
    linear_bias = c.bool_("add_bias_linear", default=False)
    qkv_bias = c.bool_("add_qkv_bias", default=False)
    return {
        "layers": layers,
        "hidden_size": hidden,
        "heads": heads,
        "kv_heads": c.int_("multi_query_group_num", default=1) if grouped else heads,
        "head_dim": c.int_("kv_channels", default=hidden // heads),
        "ffn_size": c.int_("ffn_hidden_size"),
        "ffn_kind": "swiglu",
        "vocab_size": c.int_("padded_vocab_size", "vocab_size"),
        "max_context": c.int_("seq_length", default=2048),
        "tied_embeddings": c.bool_("tie_word_embeddings", default=False),
        "positions": "rotary",
        "norm": "rmsnorm" if c.bool_("rmsnorm", default=True) else "layernorm",
        "attention_bias": "all" if linear_bias else ("qkv" if qkv_bias else "none"),
        "mlp_bias": linear_bias,
    }


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
}

_TEXT_CONFIG_TYPES = {"gemma3": "gemma3_text", "llama4": "llama4_text"}
"""Multimodal configs whose language model sits in ``text_config``: imported as that text
model (the vision tower and projector are not counted; a note says so)."""

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


class ModelTypeReading(BaseModel):
    """How a config's ``model_type`` was read: the mapped family that builds it, and what
    the import says about that (None: the type is mapped as it is)."""

    model_config = ConfigDict(frozen=True)

    family: str
    note: str | None = None
    approximate: bool = False


_DECODER_CLASS_SUFFIXES = ("ForCausalLM", "LMHeadModel", "ForConditionalGeneration")
"""transformers' names for a model that generates text; other heads (``BertForMaskedLM``,
``...ForSequenceClassification``) are not read as a generic decoder."""


def _supported_list() -> str:
    return ", ".join(sorted(k for k in _MAPPERS if k.islower()))


def read_model_type(data: dict[str, Any], label: str = "config.json") -> ModelTypeReading:
    """The family ``data`` is built as: its ``model_type`` when mapped; else the class its
    ``architectures`` names (:data:`ARCHITECTURE_CLASSES`); else a known alias
    (:data:`MODEL_TYPE_ALIASES`); else a generic decoder (:func:`_generic_family`),
    marked approximate. Raises only for a config with no ``model_type`` at all."""
    if "model_type" not in data:
        raise HFImportError(f"{label}: missing field 'model_type'")
    model_type = data["model_type"]
    if not isinstance(model_type, str):
        raise HFImportError(f"{label}: field 'model_type' must be a string, got {model_type!r}")
    if model_type in _MAPPERS:
        return ModelTypeReading(family=model_type)
    classes = data.get("architectures")
    names = [c for c in classes if isinstance(c, str)] if isinstance(classes, list) else []
    for name in names:
        if name in ARCHITECTURE_CLASSES:
            family = ARCHITECTURE_CLASSES[name]
            return ModelTypeReading(
                family=family,
                note=f"model_type {model_type[:60]!r} is not known; its architectures field "
                f"names {name}, transformers' {family} class: read as {family}",
            )
    if model_type in MODEL_TYPE_ALIASES:
        family, why = MODEL_TYPE_ALIASES[model_type]
        return ModelTypeReading(
            family=family, note=f"model_type {model_type!r} read as {family}: {why}"
        )
    if names and not any(n.endswith(_DECODER_CLASS_SUFFIXES) for n in names):
        raise HFImportError(
            f"{label}: unsupported model_type {model_type[:60]!r} (supported: "
            f"{_supported_list()}); its architectures ({', '.join(n[:60] for n in names[:2])}) "
            "name no causal language model to read as a generic decoder"
        )
    family = _generic_family(data)
    named = f" ({', '.join(n[:60] for n in names[:2])})" if names else ""
    return ModelTypeReading(
        family=family,
        note=f"approximate: model_type {model_type[:60]!r}{named} is not known; read as "
        f"{GENERIC_ASSUMED[family]}",
        approximate=True,
    )


def _mapped_fields(config: _Config, family: str, label: str) -> Fields:
    """The family mapper's fields with its nested configs validated."""
    fields = (_MAPPERS.get(family) or _GENERIC_MAPPERS[family])(config)
    if isinstance(fields.get("moe"), dict):
        fields["moe"] = _validated(MoEConfig, fields["moe"], label, family)
    if isinstance(fields.get("mla"), dict):
        fields["mla"] = _validated(MLAConfig, fields["mla"], label, family)
    if isinstance(fields.get("recurrent"), dict):
        fields["recurrent"] = _validated(RecurrentConfig, fields["recurrent"], label, family)
    return fields


def architecture_from_config(data: dict[str, Any], label: str = "config.json") -> Architecture:
    """The :class:`Architecture` a parsed config.json describes; ``label`` names it in errors.
    A type that is not mapped is read as :func:`read_model_type` says (what it assumed is in
    :func:`read_config`'s notes)."""
    return read_config(data, label)[0]


def read_config(
    data: dict[str, Any], label: str = "config.json"
) -> tuple[Architecture, tuple[str, ...]]:
    """(architecture, notes): :func:`architecture_from_config` and how the type was read;
    for an approximate (generic) reading, the shape fields the import did not use."""
    model_type = data.get("model_type")
    if isinstance(model_type, str) and model_type in _TEXT_CONFIG_TYPES:
        text = data.get("text_config")
        if not isinstance(text, dict):
            raise HFImportError(f"{label}: field 'text_config' must be an object ({model_type})")
        inner = {"model_type": _TEXT_CONFIG_TYPES[model_type], **text}
        inner["model_type"] = _TEXT_CONFIG_TYPES[model_type]
        inner.setdefault("_name_or_path", data.get("_name_or_path"))
        return read_config(inner, label)
    if (
        isinstance(model_type, str)
        and model_type not in _MAPPERS
        and model_type not in MODEL_TYPE_ALIASES
        and isinstance(data.get("text_config"), dict)
    ):
        # a multimodal config of unknown type: its language model, as the known ones above
        inner = {"model_type": f"{model_type}_text", **data["text_config"]}
        inner.setdefault("_name_or_path", data.get("_name_or_path"))
        text_architecture, text_notes = read_config(inner, label)
        text_note = (
            f"model_type {model_type[:60]!r}: the language model (text_config) is read; "
            "other towers are not counted"
        )
        return text_architecture, (text_note, *text_notes)
    reading = read_model_type(data, label)
    family = reading.family
    config = _Config(data, label, family)
    try:
        fields = _mapped_fields(config, family, label)
    except HFImportError as error:
        if not reading.approximate:
            raise
        raise HFImportError(
            f"{label}: unsupported model_type {str(model_type)[:60]!r} (supported: "
            f"{_supported_list()}); read as a generic decoder: {error}"
        ) from None
    fields.setdefault("name", _display_name(data, label, str(model_type)))
    # the first Falcon configs (RefinedWeb) describe the same model as transformers' falcon
    fields.setdefault("hf_model_type", "falcon" if family.startswith("RefinedWeb") else family)
    _, act = config._lookup(_ACT_FIELDS)
    act = act if isinstance(act, str) and len(act) <= 64 else _ACT_DEFAULTS.get(family, "silu")
    fields.setdefault("hidden_act", act)
    architecture = _validated(Architecture, fields, label, family)
    notes = [reading.note] if reading.note else []
    if reading.approximate:
        unused = sorted(
            k for k, v in data.items() if k not in config.read and _is_shape_field(k, v)
        )
        if unused:
            notes.append(f"approximate: shape fields not used: {', '.join(unused[:12])}")
    return architecture, tuple(notes)


_ACT_FIELDS = ("hidden_activation", "hidden_act", "activation_function")
"""Where configs name the MLP activation (Gemma's hidden_activation wins over hidden_act,
as in transformers' modeling_gemma.py; GPT-2, GPT-J and GPTBigCode say activation_function)."""

_ACT_DEFAULTS = {
    "gpt2": "gelu_new",
    "gptj": "gelu_new",
    "phi": "gelu_new",
    "gpt_neox": "gelu",
    "falcon": "gelu",
    "RefinedWeb": "gelu",
    "RefinedWebModel": "gelu",
    "gpt_bigcode": "gelu_pytorch_tanh",
    "starcoder2": "gelu_pytorch_tanh",
    "gemma": "gelu_pytorch_tanh",
    "gemma2": "gelu_pytorch_tanh",
    "gemma3_text": "gelu_pytorch_tanh",
}
"""The activation each configuration class defaults to when config.json leaves it out
(transformers 5.24.0 configuration_*.py; every other supported type: silu)."""


def _validated(cls: type[_M], fields: Fields, label: str, model_type: str) -> _M:
    try:
        return cls.model_validate(fields)
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        message = first["msg"].removeprefix("Value error, ")
        prefix = f"{where}: " if where else ""
        raise HFImportError(f"{label}: {prefix}{message} ({model_type})") from None


def _display_name(data: dict[str, Any], label: str, model_type: str) -> str:
    name = data.get("_name_or_path")
    if isinstance(name, str) and name.strip() and len(name) < 200:
        return name.strip().rstrip("/").rsplit("/", 1)[-1]
    folder = Path(label).parent.name
    return folder or model_type


# ------------------------------------------------------------------ safetensors


class SafetensorsSummary(BaseModel):
    """Parameter tensors found in safetensors headers."""

    model_config = ConfigDict(frozen=True)

    params: int
    dtype: str | None
    files: int
    elements_by_dtype: dict[str, int]
    data_bytes: int = 0
    """Σ byte ranges of every tensor (parameters and quantization scales): the weights'
    memory as stored."""


def read_safetensors_header(path: Path) -> dict[str, tuple[str, tuple[int, ...]]]:
    """Each tensor of a .safetensors file → (safetensors dtype, shape), from its header only.

    Checks that the header length fits the file and :data:`SAFETENSORS_HEADER_MAX_BYTES`,
    that it is a JSON object of ``{dtype, shape, data_offsets}`` entries, that each byte range
    lies inside the data section and (for whole-byte dtypes) holds exactly
    product(shape) · bytes per element.
    """
    try:
        file = open_regular(path, 2**63 - 1, "a safetensors file")
    except FileReadError as error:
        raise HFImportError(str(error)) from None
    try:
        size = os.fstat(file.fileno()).st_size
        with file:
            prefix = file.read(8)
            if len(prefix) < 8:
                raise HFImportError(f"{path}: too short for a safetensors file ({size} bytes)")
            (length,) = struct.unpack("<Q", prefix)
            if length > SAFETENSORS_HEADER_MAX_BYTES:
                raise HFImportError(
                    f"{path}: safetensors header of {length:,} bytes is over the "
                    f"{SAFETENSORS_HEADER_MAX_BYTES:,}-byte limit"
                )
            if 8 + length > size:
                raise HFImportError(
                    f"{path}: safetensors header length {length:,} exceeds the file size {size:,}"
                )
            raw = file.read(length)
    except OSError as error:
        raise HFImportError(f"{path}: cannot read ({error.strerror or error})") from None
    header = _parse_json_object(raw, str(path), "the safetensors header")
    data_bytes = size - 8 - length
    tensors: dict[str, tuple[str, tuple[int, ...]]] = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        tensors[name] = _tensor_entry(path, name, entry, data_bytes)
    return tensors


def _tensor_entry(
    path: Path, name: str, entry: Any, data_bytes: int
) -> tuple[str, tuple[int, ...]]:
    def bad(message: str) -> HFImportError:
        return HFImportError(f"{path}: tensor {name[:200]!r}: {message}")

    if not isinstance(entry, dict):
        raise bad("entry must be an object with dtype, shape and data_offsets")
    dtype, shape, offsets = entry.get("dtype"), entry.get("shape"), entry.get("data_offsets")
    if not isinstance(dtype, str) or not dtype or len(dtype) > 32:
        raise bad(f"bad dtype {dtype!r}")
    if not isinstance(shape, list) or len(shape) > 16:  # real tensors have at most 8 axes
        raise bad(f"bad shape {str(shape)[:80]}")
    if not all(isinstance(d, int) and not isinstance(d, bool) and 0 <= d < 2**63 for d in shape):
        raise bad(f"bad shape {str(shape)[:80]}")
    if (
        not isinstance(offsets, list)
        or len(offsets) != 2
        or not all(isinstance(o, int) and not isinstance(o, bool) for o in offsets)
        or not 0 <= offsets[0] <= offsets[1] <= data_bytes
    ):
        raise bad(f"data_offsets {offsets!r} outside the {data_bytes:,}-byte data section")
    elements = math.prod(shape)
    width = SAFETENSORS_DTYPES.get(dtype, (dtype, None))[1]
    if width is not None and offsets[1] - offsets[0] != elements * width:
        raise bad(
            f"{offsets[1] - offsets[0]:,} bytes for shape {shape} of {dtype} "
            f"(expected {elements * width:,})"
        )
    return dtype, tuple(shape)


def _is_parameter(name: str) -> bool:
    return not name.endswith(NON_PARAMETER_SUFFIXES)


def safetensors_files(folder: Path) -> tuple[list[Path], list[str]]:
    """The safetensors files of a model folder and notes on any that are missing.

    With ``model.safetensors.index.json``, the shards its ``weight_map`` names (plain file
    names inside the folder only); otherwise every ``*.safetensors`` file in the folder.
    """
    index = folder / "model.safetensors.index.json"
    if not index.is_file():
        return sorted(p for p in folder.glob("*.safetensors") if p.is_file()), []
    data = _parse_json_object(
        _read_limited(index, INDEX_MAX_BYTES, "the index"), str(index), "the index"
    )
    weight_map = data.get("weight_map")
    if not isinstance(weight_map, dict) or not all(isinstance(v, str) for v in weight_map.values()):
        raise HFImportError(f"{index}: field 'weight_map' must map tensor names to file names")
    names = sorted(set(weight_map.values()))
    for name in names:
        if Path(name).name != name or name in ("", ".", ".."):
            raise HFImportError(f"{index}: shard {name[:200]!r} is not a file name in the folder")
    if len(names) > SAFETENSORS_MAX_FILES:
        raise HFImportError(f"{index}: {len(names)} shards, over the {SAFETENSORS_MAX_FILES} limit")
    present = [folder / n for n in names if (folder / n).is_file()]
    missing = [n for n in names if not (folder / n).is_file()]
    notes = []
    if missing:
        notes.append(
            f"{len(missing)} of {len(names)} safetensors shards listed in {index.name} are "
            f"missing (first: {missing[0]}); no parameter count read"
        )
    return present, notes


def summarize_safetensors(paths: list[Path]) -> SafetensorsSummary:
    """Exact parameter count and dominant dtype over the headers of ``paths``.

    Counts product(shape) of every tensor except quantization scales
    (:data:`NON_PARAMETER_SUFFIXES`); a tensor name present in two files is an error.
    The dominant dtype is the one holding the most elements.
    """
    if len(paths) > SAFETENSORS_MAX_FILES:
        raise HFImportError(
            f"{len(paths)} safetensors files, over the {SAFETENSORS_MAX_FILES} limit"
        )
    seen: dict[str, Path] = {}
    by_dtype: dict[str, int] = {}
    data_bytes = 0
    for path in paths:
        for name, (dtype, shape) in read_safetensors_header(path).items():
            width = SAFETENSORS_DTYPES.get(dtype, (dtype, None))[1]
            if width is None:  # sub-byte types: packed elements, ⌈bits·n / 8⌉
                bits = {"F4": 4, "F6_E2M3": 6, "F6_E3M2": 6}.get(dtype, 8)
                data_bytes += -(-math.prod(shape) * bits // 8)
            else:
                data_bytes += math.prod(shape) * width
            if name in seen:
                raise HFImportError(f"{path}: tensor {name[:200]!r} is also in {seen[name].name}")
            seen[name] = path
            if not _is_parameter(name):
                continue
            ours = SAFETENSORS_DTYPES.get(dtype, (dtype.lower(), None))[0]
            by_dtype[ours] = by_dtype.get(ours, 0) + math.prod(shape)
    total = sum(by_dtype.values())
    dominant = max(by_dtype, key=lambda d: by_dtype[d]) if total else None
    return SafetensorsSummary(
        params=total,
        dtype=dominant,
        files=len(paths),
        elements_by_dtype=by_dtype,
        data_bytes=data_bytes,
    )


# ------------------------------------------------------------------ entry point


def architecture_from_path(path: Path) -> ImportedModel:
    """Import a local ``config.json`` file, a model folder that holds one, or a ``.gguf`` file.

    From a folder, safetensors headers (if any) give the exact stored parameter count,
    dtype and bytes; ``quantization_config`` sets the weights format. Raises
    :class:`HFImportError` with a one-line message naming the file and the field for
    anything missing, malformed, oversized or unsupported.
    """
    path = Path(path)
    gguf_file = _lone_gguf(path)
    if gguf_file is not None:
        return import_gguf(gguf_file)
    folder, config_path = _config_location(path)
    label = str(config_path)
    data = _parse_json_object(
        _read_limited(config_path, CONFIG_MAX_BYTES, "config.json"),
        label,
        "config.json",
        tolerant=True,
    )
    architecture, type_notes = read_config(data, label)
    notes: list[str] = list(type_notes)
    warnings: list[str] = []
    if data.get("num_nextn_predict_layers"):
        notes.append(
            "the multi-token-prediction module (num_nextn_predict_layers) is stored in the "
            "checkpoint but not counted in the architecture"
        )
    if data.get("model_type") in _TEXT_CONFIG_TYPES:
        notes.append(
            "a multimodal config: the language model (text_config) is imported; the vision "
            "tower and projector are not counted"
        )
    torch_dtype = data.get("torch_dtype", data.get("dtype"))
    config_dtype = _TORCH_DTYPES.get(torch_dtype) if isinstance(torch_dtype, str) else None
    quant = data.get("quantization_config")
    if quant is None:
        quant = modelopt_quant_config(config_path.parent)
    fmt, weights_bytes, quant_note = quantization_format(quant, architecture)
    if quant_note:
        notes.append(quant_note)

    params: int | None = None
    dtype: str | None = None
    files: list[Path] = []
    if path.is_dir():
        files, file_notes = safetensors_files(folder)
        notes.extend(file_notes)
        if files and not file_notes:
            summary = summarize_safetensors(files)
            params, dtype = summary.params, summary.dtype
            weights_bytes = float(summary.data_bytes)
            warnings.extend(_count_mismatch(architecture, params, quant is not None, data))
    if fmt is None:
        fmt = dtype if dtype in ("bf16", "fp16", "fp32", "fp8", "int8") else config_dtype
    return ImportedModel(
        architecture=architecture,
        model_type=str(data["model_type"]),
        source_path=config_path,
        safetensors_params=params,
        safetensors_dtype=dtype,
        safetensors_files=len(files),
        config_dtype=config_dtype,
        weights_format=fmt,
        weights_bytes=weights_bytes,
        notes=tuple(notes),
        warnings=tuple(warnings),
    )


def _lone_gguf(path: Path) -> Path | None:
    """``path`` if it is a .gguf file, or a folder's one .gguf file when it has no config."""
    if path.suffix.lower() == ".gguf" and path.is_file():
        return path
    if path.is_dir() and not (path / "config.json").is_file():
        ggufs = sorted(path.glob("*.gguf"))
        if len(ggufs) == 1:
            return ggufs[0]
        # the shards of one split model (<prefix>-0000k-of-0000n.gguf): its first shard
        from llm_planner.core.files.gguf import split_model_first_shard

        return split_model_first_shard(ggufs)
    return None


def _config_location(path: Path) -> tuple[Path, Path]:
    """(model folder, config.json) for a folder or a config file; one-line errors else."""
    if path.is_dir():
        if not (path / "config.json").is_file():
            raise HFImportError(f"{path}: no config.json in this folder")
        return path, path / "config.json"
    if path.is_file():
        if path.suffix == ".safetensors" or path.name.endswith(".index.json"):
            raise HFImportError(
                f"{path}: give the model folder (or its config.json), not a weights file"
            )
        return path.parent, path
    raise HFImportError(f"{path}: no such file or folder")


def _count_mismatch(
    arch: Architecture, stored: int, quantized: bool, data: dict[str, Any]
) -> list[str]:
    """A warning when config.json's architecture and the safetensors headers disagree on
    the parameter count (a packed quantized checkpoint stores fewer elements: not compared;
    DeepSeek's multi-token-prediction layers are stored but not counted: said so)."""
    counted = count_parameters(arch).total
    if quantized or stored == counted:
        return []
    extra = (
        " (includes the multi-token-prediction layers)"
        if data.get("num_nextn_predict_layers")
        else ""
    )
    return [
        f"warning: config.json describes {counted:,} parameters but the safetensors headers "
        f"hold {stored:,}{extra}; the estimates use config.json's architecture"
    ]


def _int_layout(method: str, bits: Any, group: Any) -> str | None:
    """The weight format id of a GPTQ/AWQ checkpoint of ``bits`` and ``group`` size
    (``-1`` or None: per channel), or None when the numbers are not a layout."""
    from llm_planner.core.quantities.quantization import grouped_int_format

    if isinstance(bits, bool) or not isinstance(bits, int):
        return None
    if group is None or group == -1:
        size = None
    elif isinstance(group, int) and not isinstance(group, bool) and group > 0:
        size = group
    else:
        return None
    if (bits, size) == (4, 128) and method in ("gptq", "awq"):
        return "awq_int4_g128"  # the listed layout (GPTQ and AWQ store the same tensors)
    try:
        return grouped_int_format(bits, size, method).id
    except ValueError:
        return None


def _compressed_tensors(quant: dict[str, Any]) -> tuple[str | None, str]:
    """(format id, note) of a compressed-tensors ``quantization_config``: the weights of its
    first config group (llm-compressor writes one for ``Linear``). int: the integer layout
    (symmetric: one scale per group; asymmetric: a zero point too); float 8 bits: fp8;
    float 4 bits: NVFP4 (group 16, ``nvfp4-pack-quantized``) or MXFP4 (group 32).
    (compressed-tensors ``QuantizationArgs``: num_bits, type, symmetric, strategy,
    group_size.)"""
    groups = quant.get("config_groups")
    if not isinstance(groups, dict) or not groups:
        return None, "compressed-tensors without config_groups; ignored"
    first = next(iter(groups.values()))
    weights = first.get("weights") if isinstance(first, dict) else None
    if not isinstance(weights, dict):
        return None, "compressed-tensors group without weights; ignored"
    bits, kind = weights.get("num_bits"), str(weights.get("type", "int")).lower()
    strategy = str(weights.get("strategy", "")).lower()
    group = weights.get("group_size") if strategy in ("group", "tensor_group") else None
    acts = "weights only" if first.get("input_activations") is None else "weights and inputs"
    more = f" (first of {len(groups)} config groups)" if len(groups) > 1 else ""
    ignored = quant.get("ignore") or []
    kept = (
        f"; {len(ignored)} ignored module patterns kept in 16 bits, not split out"
        if ignored
        else ""
    )
    if kind == "float" and bits == 8:
        return "fp8", f"compressed-tensors fp8 {acts}{more}{kept}"
    if kind == "float" and bits == 4:
        fmt = {16: "nvfp4", 32: "mxfp4"}.get(group) if isinstance(group, int) else None
        return fmt, f"compressed-tensors fp4, group {group}, {acts}{more}{kept}"
    if kind == "int":
        method = "int" if weights.get("symmetric", True) else "gptq"
        fmt = _int_layout(method, bits, group)
        side = "symmetric" if method == "int" else "asymmetric"
        return fmt, f"compressed-tensors int{bits} {side}, group {group}, {acts}{more}{kept}"
    return None, f"compressed-tensors weights {kind} {bits}-bit not recognised; ignored"


_MODELOPT_ALGOS = {
    "nvfp4": "nvfp4",
    "w4a16_nvfp4": "nvfp4",
    "nvfp4_awq": "nvfp4",
    "w4a8_nvfp4_fp8": "nvfp4",
    "fp8": "fp8",
    "fp8_pb_wo": "fp8",
    "w4a16_awq": "awq_int4_g128",
    "w4a8_awq": "awq_int4_g128",
}
"""TensorRT Model Optimizer's ``quant_algo`` names (its ``hf_quant_config.json`` and the
``quantization_config`` with ``quant_method: modelopt``) → weights format."""


def _modelopt(quant: dict[str, Any]) -> tuple[str | None, str]:
    """(format id, note) of a ModelOpt quantization: ``quant_algo`` (NVFP4, FP8, ...); for
    ``MIXED_PRECISION``, the algorithm most of its ``quantized_layers`` use."""
    algo = str(quant.get("quant_algo", "")).lower()
    excluded = quant.get("exclude_modules") or quant.get("ignore") or []
    kept = (
        f"; {len(excluded)} excluded module patterns kept in 16 bits, not split out"
        if excluded
        else ""
    )
    if algo == "mixed_precision":
        layers = quant.get("quantized_layers")
        algos = [
            str(v.get("quant_algo", "")).lower()
            for v in (layers.values() if isinstance(layers, dict) else [])
            if isinstance(v, dict)
        ]
        if not algos:
            return None, "ModelOpt MIXED_PRECISION without quantized_layers; ignored"
        algo = max(set(algos), key=algos.count)
        fmt = _MODELOPT_ALGOS.get(algo)
        return (
            fmt,
            f"ModelOpt mixed precision: {algos.count(algo)} of {len(algos)} layer "
            f"groups {algo.upper()}, the rest counted the same{kept}",
        )
    fmt = _MODELOPT_ALGOS.get(algo)
    if fmt is None:
        return None, f"ModelOpt quant_algo {algo.upper()!r} not recognised; ignored"
    return fmt, f"ModelOpt {algo.upper()} weights{kept}"


def quantization_format(
    quant: Any, arch: Architecture
) -> tuple[str | None, float | None, str | None]:
    """(weights format id, exact bytes or None, note) from a ``quantization_config``.

    ``fp8`` (DeepSeek-V3's block-wise e4m3, ``fbgemm_fp8``): fp8 weights. GPTQ / AWQ:
    packed integers of their ``bits`` with an fp16 scale and a packed zero per
    ``group_size`` (transformers' GPTQConfig defaults: 4 bits, group 128; ``-1``: per
    channel): ``gptq_int3_g128``, 4-bit group 128 as ``awq_int4_g128``. compressed-tensors
    (llm-compressor): the first config group's weights (:func:`_compressed_tensors`).
    ModelOpt (``quant_method`` ``modelopt``, or the folder's ``hf_quant_config.json``):
    its ``quant_algo`` (:func:`_modelopt`). bitsandbytes ``load_in_4bit``: NF4,
    ``load_in_8bit``: int8. ``mxfp4`` (gpt-oss; transformers ``quantizer_mxfp4.py``): the
    routed experts' matrices in MXFP4 (4.25 bits), everything else in bf16, so the bytes
    are exact: experts·4.25/8 + rest·2.
    """
    if quant is None:
        return None, None, None
    if not isinstance(quant, dict):
        return None, None, "quantization_config is not an object; ignored"
    method = str(quant.get("quant_method", "")).lower()
    if method in ("fp8", "fbgemm_fp8"):
        return (
            "fp8",
            None,
            "fp8 weights (quantization_config); 16-bit embeddings and norms not split out",
        )
    if method in ("gptq", "awq"):
        bits = quant.get("bits", quant.get("w_bit", 4))
        group = quant.get("group_size", quant.get("q_group_size", 128))
        # AutoGPTQ stores packed qzeros even when symmetric; AWQ without zero points not
        kind = "int" if method == "awq" and not quant.get("zero_point", True) else method
        fmt = _int_layout(kind, bits, group)
        size = "per channel" if group in (None, -1) else f"group {group}"
        if fmt is None:
            return None, None, f"{method.upper()} bits {bits!r}, group {group!r}: not a layout"
        return fmt, None, f"{method.upper()} {bits}-bit weights, {size}"
    if method == "compressed-tensors":
        fmt, note = _compressed_tensors(quant)
        return fmt, None, note
    if method in ("modelopt", "modelopt_fp4"):
        fmt, note = _modelopt(quant)
        return fmt, None, note
    if method == "bitsandbytes":
        if quant.get("load_in_4bit"):
            return "nf4", None, "bitsandbytes 4-bit weights"
        if quant.get("load_in_8bit"):
            return "int8", None, "bitsandbytes 8-bit weights"
    if method == "mxfp4" and arch.moe is not None:
        from llm_planner.core.quantities.quantization import get_weight_format

        counts = count_parameters(arch)
        one = arch.moe.expert_ffn_size * arch.hidden_size * (3 if arch.gated else 2)
        matrices = arch.moe_layers * arch.moe.num_experts * one
        mx_bits = get_weight_format("mxfp4").bits_per_weight
        exact = matrices * mx_bits / 8 + (counts.total - matrices) * 2.0
        return "mxfp4", exact, "MXFP4 routed experts, the rest bf16 (quantization_config)"
    return None, None, f"quantization_config quant_method {method!r} not recognised; ignored"


HF_QUANT_CONFIG_MAX_BYTES = 4 * 2**20
"""hf_quant_config.json is a few KB (its exclude list grows with the layer count)."""


def modelopt_quant_config(folder: Path) -> dict[str, Any] | None:
    """The ``quantization`` block of a folder's ``hf_quant_config.json`` (written by NVIDIA
    TensorRT Model Optimizer next to config.json: ``{"producer": {"name": "modelopt"},
    "quantization": {"quant_algo": "NVFP4", "group_size": 16, "exclude_modules": [...]}}``)
    as a ``quantization_config`` (``quant_method: modelopt``); None without one."""
    path = folder / "hf_quant_config.json"
    if not path.is_file():
        return None
    data = _parse_json_object(
        _read_limited(path, HF_QUANT_CONFIG_MAX_BYTES, "hf_quant_config.json"),
        str(path),
        "hf_quant_config.json",
        tolerant=True,
    )
    block = data.get("quantization", data)
    if not isinstance(block, dict):
        return None
    return {"quant_method": "modelopt", **block}


def import_gguf(path: Path) -> ImportedModel:
    """A GGUF file: the architecture from its tensor names, shapes and metadata, the exact
    parameter count and weight bytes from its own tensor infos (:mod:`.gguf`)."""
    from llm_planner.core.files import gguf

    try:
        header = gguf.read_gguf_model(path)
        fields = gguf.architecture_fields(header)
    except gguf.GGUFError as error:
        raise HFImportError(str(error)) from None
    label = str(path)
    for key, cls in (("moe", MoEConfig), ("recurrent", RecurrentConfig)):
        if isinstance(fields.get(key), dict):
            fields[key] = _validated(cls, fields[key], label, header.architecture)
    architecture = _validated(Architecture, fields, label, header.architecture)
    counted = count_parameters(architecture).total
    warnings = []
    if counted != header.parameter_count:
        warnings.append(
            f"warning: the architecture read from {path.name} counts {counted:,} parameters "
            f"but its tensors hold {header.parameter_count:,}; weights use the file's bytes"
        )
    mix = ", ".join(f"{k} {v / 1e9:.2f} GB" for k, v in list(header.bytes_by_type().items())[:4])
    return ImportedModel(
        architecture=architecture,
        model_type=f"gguf:{header.architecture}",
        source_path=path,
        weights_format=gguf.weights_format_of(header).lower(),
        weights_bytes=float(header.weight_bytes),
        file_params=header.parameter_count,
        notes=(
            f"GGUF v{header.version}, {len(header.tensors)} tensors"
            f"{f' in {header.shards} files' if header.shards > 1 else ''}: {mix}",
        ),
        warnings=tuple(warnings),
    )


def import_model(text: str) -> ImportedModel:
    """What the command line's ``model`` argument names: a local folder, config.json or
    .gguf file, else a Hub id ``org/name[@revision]`` found in the local Hugging Face
    cache (:mod:`.hub_cache`; offline). One-line :class:`HFImportError` otherwise."""
    from llm_planner.core.files import hub_cache

    path = Path(text).expanduser()
    if path.exists():
        return architecture_from_path(path)
    if hub_cache.looks_like_hub_id(text):
        try:
            snapshot = hub_cache.resolve_hub_id(text)
        except hub_cache.HubCacheError as error:
            raise HFImportError(str(error)) from None
        return architecture_from_path(snapshot)
    raise HFImportError(f"{text}: no such file or folder, and not a Hugging Face id (org/name)")


def inference_fields(imported: ImportedModel) -> dict[str, Any]:
    """The ``inference`` scenario fields an imported model implies: its weights format (a
    known :mod:`.quantization` id) and, when the files give them, the exact stored bytes
    (:class:`~llm_planner.core.sections.inference.StoredWeights`). Empty when unknown."""
    from llm_planner.core.quantities.quantization import get_weight_format

    name = imported.weights_format
    if name is None:
        return {}
    try:
        fmt = get_weight_format(name).id
    except ValueError:
        return {}
    fields: dict[str, Any] = {"weights_format": fmt}
    if imported.weights_bytes is not None:
        fields["stored_weights"] = {
            "format": fmt,
            "bytes": imported.weights_bytes,
            "source": str(imported.source_path)[:500],
        }
    return fields


IMPORTED_STACK = "hf"
"""The training stack a Hugging Face config import defaults to (issue 14): a model read from
its ``config.json`` is most likely trained with its transformers modules (Trainer /
accelerate), whose saved tensors the ``pytorch`` activation profile measures
(tests/validation/test_torch_activations.py), not with Megatron-Core's fused kernels."""


def training_fields(imported: ImportedModel, current: TrainingInputs) -> dict[str, str]:
    """The ``training`` fields an imported model implies over ``current``: a Hugging Face
    config (a folder, config.json or a Hub id in the cache) moves the scenario onto the
    Hugging Face stack (:data:`IMPORTED_STACK`) with that stack's activation profile unless
    the profile was edited (:meth:`TrainingInputs.with_stack`); the precision and profile stay
    editable under it. A GGUF file (an inference format) implies nothing: empty."""
    if imported.model_type.startswith("gguf:"):
        return {}
    return current.with_stack(IMPORTED_STACK)


def imported_fields(imported: ImportedModel, current: TrainingInputs) -> dict[str, Any]:
    """Every scenario field an imported model sets beyond the model itself, by dotted path
    (``inference.weights_format``, ``training.stack``, ...): :func:`inference_fields` and
    :func:`training_fields`, the one list the command line and the window apply."""
    fields = {f"inference.{k}": v for k, v in inference_fields(imported).items()}
    fields |= {f"training.{k}": v for k, v in training_fields(imported, current).items()}
    return fields
