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
import struct
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from llm_planner.core.primitives.architecture import Architecture, MLAConfig, MoEConfig

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
    notes: tuple[str, ...] = ()
    """What the import could not represent or read (e.g. a missing shard)."""


# ------------------------------------------------------------------ reading files


def _read_limited(path: Path, limit: int, what: str) -> bytes:
    try:
        size = path.stat().st_size
        if size > limit:
            raise HFImportError(f"{path}: {what} is {size:,} bytes, over the {limit:,}-byte limit")
        with path.open("rb") as file:
            data = file.read(limit + 1)
    except OSError as error:
        raise HFImportError(f"{path}: cannot read {what} ({error.strerror or error})") from None
    if len(data) > limit:
        raise HFImportError(f"{path}: {what} is over the {limit:,}-byte limit")
    return data


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _parse_json_object(data: bytes, label: str, what: str) -> dict[str, Any]:
    try:
        value = json.loads(data.decode("utf-8"), parse_constant=_reject_constant)
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

    def error(self, message: str) -> HFImportError:
        return HFImportError(f"{self.label}: {message} ({self.model_type})")

    def _lookup(self, names: tuple[str, ...]) -> tuple[str, Any]:
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
    ``shared_expert_intermediate_size`` (expressed as that many routed-size experts)."""
    fields = _qwen2(c)
    expert = c.int_("moe_intermediate_size")
    shared = c.opt_int("shared_expert_intermediate_size", minimum=0) or 0
    if shared % expert:
        raise c.error(
            f"shared_expert_intermediate_size ({shared}) is not a multiple of "
            f"moe_intermediate_size ({expert}); not representable"
        )
    if c.int_("decoder_sparse_step", default=1) != 1:
        raise c.error("decoder_sparse_step other than 1 is not representable")
    dense = c.data.get("mlp_only_layers") or []
    if not isinstance(dense, list) or dense != list(range(len(dense))):
        raise c.error("field 'mlp_only_layers' must list leading layers 0..k-1 to be representable")
    fields["moe"] = {
        "num_experts": c.int_("num_experts"),
        "experts_per_token": c.int_("num_experts_per_tok"),
        "expert_ffn_size": expert,
        "num_shared_experts": shared // expert,
        "first_dense_layers": len(dense),
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
        if c.int_("moe_layer_freq", default=1) != 1:
            raise c.error("moe_layer_freq other than 1 is not representable")
        topk_method = c.str_("topk_method", default="noaux_tc" if v3 else "greedy")
        fields["moe"] = {
            "num_experts": routed,
            "experts_per_token": c.int_("num_experts_per_tok"),
            "expert_ffn_size": c.int_("moe_intermediate_size"),
            "num_shared_experts": c.opt_int("n_shared_experts", minimum=0) or 0,
            "first_dense_layers": c.opt_int("first_k_dense_replace", minimum=0) or 0,
            "router_bias": topk_method == "noaux_tc",
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
}

SUPPORTED_MODEL_TYPES: tuple[str, ...] = tuple(_MAPPERS)


def architecture_from_config(data: dict[str, Any], label: str = "config.json") -> Architecture:
    """The :class:`Architecture` a parsed config.json describes; ``label`` names it in errors."""
    if "model_type" not in data:
        raise HFImportError(f"{label}: missing field 'model_type'")
    model_type = data["model_type"]
    if not isinstance(model_type, str) or model_type not in _MAPPERS:
        supported = ", ".join(sorted(k for k in _MAPPERS if k.islower()))
        raise HFImportError(
            f"{label}: unsupported model_type {model_type!r} (supported: {supported})"
        )
    config = _Config(data, label, model_type)
    fields = _MAPPERS[model_type](config)
    if isinstance(fields.get("moe"), dict):
        fields["moe"] = _validated(MoEConfig, fields["moe"], label, model_type)
    if isinstance(fields.get("mla"), dict):
        fields["mla"] = _validated(MLAConfig, fields["mla"], label, model_type)
    fields.setdefault("name", _display_name(data, label, model_type))
    return _validated(Architecture, fields, label, model_type)


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


def read_safetensors_header(path: Path) -> dict[str, tuple[str, tuple[int, ...]]]:
    """Each tensor of a .safetensors file → (safetensors dtype, shape), from its header only.

    Checks that the header length fits the file and :data:`SAFETENSORS_HEADER_MAX_BYTES`,
    that it is a JSON object of ``{dtype, shape, data_offsets}`` entries, that each byte range
    lies inside the data section and (for whole-byte dtypes) holds exactly
    product(shape) · bytes per element.
    """
    try:
        size = path.stat().st_size
        with path.open("rb") as file:
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
    for path in paths:
        for name, (dtype, shape) in read_safetensors_header(path).items():
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
        params=total, dtype=dominant, files=len(paths), elements_by_dtype=by_dtype
    )


# ------------------------------------------------------------------ entry point


def architecture_from_path(path: Path) -> ImportedModel:
    """Import a local ``config.json`` file, or a model folder that holds one.

    From a folder, safetensors headers (if any) give the exact stored parameter count and
    dtype. Raises :class:`HFImportError` with a one-line message naming the file and the
    field for anything missing, malformed, oversized or unsupported.
    """
    path = Path(path)
    if path.is_dir():
        folder, config_path = path, path / "config.json"
        if not config_path.is_file():
            raise HFImportError(f"{path}: no config.json in this folder")
    elif path.is_file():
        if path.suffix == ".safetensors" or path.name.endswith(".index.json"):
            raise HFImportError(
                f"{path}: give the model folder (or its config.json), not a weights file"
            )
        folder, config_path = path.parent, path
    else:
        raise HFImportError(f"{path}: no such file or folder")
    label = str(config_path)
    data = _parse_json_object(
        _read_limited(config_path, CONFIG_MAX_BYTES, "config.json"), label, "config.json"
    )
    architecture = architecture_from_config(data, label)
    notes: list[str] = []
    if data.get("num_nextn_predict_layers"):
        notes.append(
            "the multi-token-prediction module (num_nextn_predict_layers) is stored in the "
            "checkpoint but not counted in the architecture"
        )
    if data.get("model_type") == "qwen2_moe":
        notes.append("the shared expert's 1×h gate per layer is not counted in the architecture")
    torch_dtype = data.get("torch_dtype", data.get("dtype"))
    config_dtype = _TORCH_DTYPES.get(torch_dtype) if isinstance(torch_dtype, str) else None

    params: int | None = None
    dtype: str | None = None
    files: list[Path] = []
    if path.is_dir():
        files, file_notes = safetensors_files(folder)
        notes.extend(file_notes)
        if files and not file_notes:
            summary = summarize_safetensors(files)
            params, dtype = summary.params, summary.dtype
    return ImportedModel(
        architecture=architecture,
        model_type=str(data["model_type"]),
        source_path=config_path,
        safetensors_params=params,
        safetensors_dtype=dtype,
        safetensors_files=len(files),
        config_dtype=config_dtype,
        notes=tuple(notes),
    )
