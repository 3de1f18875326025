"""Import a Hugging Face ``config.json`` (and safetensors headers) into an :class:`Architecture`.

Offline and read-only: the file or folder is local, nothing is downloaded, no code from the
model folder is ever executed (``auto_map`` / ``trust_remote_code`` are ignored), and every
input is size-limited and validated field by field. Field names and their defaults follow
the ``configuration_*.py`` files of Hugging Face transformers for each supported
``model_type``; a field the config leaves out takes that class's default, except the shape
fields (layers, width, heads, FFN, vocabulary), which are required.

This module is the importer (a file or folder in, :class:`ImportedModel` out) and keeps
every public name of the parts it is built from importable: :mod:`.hf_config` (limits,
the bounded JSON reader, typed field access), :mod:`.hf_families` (the transformer
families' mappers), :mod:`.hf_model_types` (recurrent and hybrid families, the table of
mappers, class names, aliases, the generic reader), :mod:`.hf_safetensors` (headers: the
exact parameter count and stored dtype without loading a weight) and
:mod:`.hf_quantization` (the weight format a ``quantization_config`` implies).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, ValidationError

from llm_planner.core.files.hf_config import (
    _M,
    CONFIG_MAX_BYTES,
    MAX_DIMENSION,
    MAX_LAYERS,
    Fields,
    HFImportError,
    _Config,
    _parse_json_object,
    _read_limited,
)
from llm_planner.core.files.hf_model_types import (
    _GENERIC_MAPPERS,
    _MAPPERS,
    _TEXT_CONFIG_TYPES,
    ARCHITECTURE_CLASSES,
    GENERIC_ASSUMED,
    MODEL_TYPE_ALIASES,
    SUPPORTED_MODEL_TYPES,
    _generic_family,
    _is_shape_field,
)
from llm_planner.core.files.hf_quantization import (
    HF_QUANT_CONFIG_MAX_BYTES,
    modelopt_quant_config,
    quantization_format,
)
from llm_planner.core.files.hf_safetensors import (
    INDEX_MAX_BYTES,
    NON_PARAMETER_SUFFIXES,
    SAFETENSORS_DTYPES,
    SAFETENSORS_HEADER_MAX_BYTES,
    SAFETENSORS_MAX_FILES,
    SafetensorsSummary,
    read_safetensors_header,
    safetensors_files,
    summarize_safetensors,
)
from llm_planner.core.primitives.architecture import (
    Architecture,
    MLAConfig,
    MoEConfig,
    RecurrentConfig,
    count_parameters,
)

if TYPE_CHECKING:
    from llm_planner.core.inputs.training import TrainingInputs


__all__ = [
    "ARCHITECTURE_CLASSES",
    "CONFIG_MAX_BYTES",
    "GENERIC_ASSUMED",
    "HF_QUANT_CONFIG_MAX_BYTES",
    "IMPORTED_STACK",
    "INDEX_MAX_BYTES",
    "MAX_DIMENSION",
    "MAX_LAYERS",
    "MODEL_TYPE_ALIASES",
    "NON_PARAMETER_SUFFIXES",
    "SAFETENSORS_DTYPES",
    "SAFETENSORS_HEADER_MAX_BYTES",
    "SAFETENSORS_MAX_FILES",
    "SUPPORTED_MODEL_TYPES",
    "Fields",
    "HFImportError",
    "ImportedModel",
    "ModelTypeReading",
    "SafetensorsSummary",
    "architecture_from_config",
    "architecture_from_path",
    "import_gguf",
    "import_model",
    "imported_fields",
    "inference_fields",
    "modelopt_quant_config",
    "quantization_format",
    "read_config",
    "read_model_type",
    "read_safetensors_header",
    "safetensors_files",
    "summarize_safetensors",
    "training_fields",
]

_TORCH_DTYPES = {
    "bfloat16": "bf16",
    "float16": "fp16",
    "half": "fp16",
    "float32": "fp32",
    "float": "fp32",
    "float8_e4m3fn": "fp8",
}


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


def _mtp_field(data: dict[str, Any]) -> str | None:
    """The field that says the checkpoint holds multi-token-prediction layers, which
    transformers' causal LM does not build (DeepSeek-V3 ``num_nextn_predict_layers``,
    Qwen3.5 ``mtp_num_hidden_layers``, also inside ``text_config``)."""
    text = data.get("text_config")
    for where in (data, text if isinstance(text, dict) else {}):
        for name in ("num_nextn_predict_layers", "mtp_num_hidden_layers"):
            if where.get(name):
                return name
    return None


_ACT_FIELDS = ("hidden_activation", "hidden_act", "activation_function", "mlp_hidden_act")
"""Where configs name the MLP activation (Gemma's hidden_activation wins over hidden_act,
as in transformers' modeling_gemma.py; GPT-2, GPT-J and GPTBigCode say activation_function;
Nemotron-H mlp_hidden_act)."""

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
    "gemma4_text": "gelu_pytorch_tanh",
    "nemotron_h": "relu2",
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
    mtp_field = _mtp_field(data)
    if mtp_field:
        notes.append(
            f"the multi-token-prediction module ({mtp_field}) is stored in the "
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
    extra = " (includes the multi-token-prediction layers)" if _mtp_field(data) else ""
    return [
        f"warning: config.json describes {counted:,} parameters but the safetensors headers "
        f"hold {stored:,}{extra}; the estimates use config.json's architecture"
    ]


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
