"""From plan to launch: the scenario's layout as each training stack's own config, and back.

One module per stack, each with ``export(plan) -> ExportedConfig``, ``parse(text, source)
-> ImportedConfig`` and ``looks_like(text)``:

- :mod:`.deepspeed`: the DeepSpeed config JSON;
- :mod:`.megatron`: Megatron-LM / Megatron-Core launch arguments (a bash array);
- :mod:`.torchtitan`: torchtitan's job TOML;
- :mod:`.accelerate`: Hugging Face accelerate's YAML (FSDP or DeepSpeed) + TrainingArguments;
- :mod:`.nanotron`: nanotron's config YAML.

Every file names the app version and the scenario; what the plan assumes that the stack
cannot express is listed in the file and in :attr:`ExportedConfig.unexpressed`, not dropped.
Reading is as strict as reading a scenario file: size-limited, never executed, and a bad
file raises :class:`StackConfigError` with one line naming the file and the field.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from types import ModuleType

from llm_planner.core.composition.scenario import Scenario
from llm_planner.core.files.stack_configs import (
    accelerate,
    deepspeed,
    megatron,
    nanotron,
    torchtitan,
)
from llm_planner.core.files.stack_configs.plan import (
    ExportedConfig,
    ImportedConfig,
    LaunchPlan,
    StackConfigError,
    apply_row,
    launch_plan,
    layout_of,
    with_fields,
)
from llm_planner.core.primitives.reading import FileReadError, check_structure, read_text_bounded

FORMATS: dict[str, ModuleType] = {
    "deepspeed": deepspeed,
    "megatron": megatron,
    "torchtitan": torchtitan,
    "accelerate": accelerate,
    "nanotron": nanotron,
}
"""Format id → module, in the order the help lists them."""

FORMAT_OF_STACK: dict[str, str] = {
    "megatron": "megatron",
    "deepspeed": "deepspeed",
    "torchtitan": "torchtitan",
    "hf": "accelerate",
    "nanotron": "nanotron",
}
"""The config format each ``training.stack`` id launches with."""

STACK_OF_FORMAT: dict[str, str] = {v: k for k, v in FORMAT_OF_STACK.items()}

MAX_CONFIG_BYTES = 1_000_000
"""Largest stack config read (real ones are a few kB)."""

__all__ = [
    "FORMATS",
    "FORMAT_OF_STACK",
    "ExportedConfig",
    "ImportedConfig",
    "LaunchPlan",
    "StackConfigError",
    "apply_import",
    "apply_row",
    "detect_format",
    "export_config",
    "launch_plan",
    "layout_of",
    "parse_config",
    "read_config",
    "with_fields",
]


def format_id(name: str) -> str:
    """A format id from a format or stack name ("hf" → "accelerate"); ValueError if unknown."""
    key = name.lower()
    if key in FORMATS:
        return key
    if key in FORMAT_OF_STACK:
        return FORMAT_OF_STACK[key]
    raise ValueError(f"unknown stack {name!r}: one of {', '.join(FORMATS)}")


def export_config(
    scenario: Scenario, stack: str | None = None, *, backend: str | None = None
) -> ExportedConfig:
    """The scenario's layout as a stack's launch config (default: the scenario's stack).
    ``backend`` picks accelerate's FSDP or DeepSpeed (default: FSDP unless ZeRO-1)."""
    fmt = format_id(stack or scenario.training.stack)
    plan = launch_plan(scenario)
    if fmt == "accelerate":
        return accelerate.export(plan, backend)
    exported: ExportedConfig = FORMATS[fmt].export(plan)
    return exported


def detect_format(text: str, name: str = "") -> str | None:
    """Which stack's config ``text`` is (by its suffix first, then its content), or None."""
    suffix = Path(name).suffix.lower()
    candidates = {
        ".json": ("deepspeed",),
        ".toml": ("torchtitan",),
        ".yaml": ("accelerate", "nanotron"),
        ".yml": ("accelerate", "nanotron"),
        ".sh": ("megatron",),
        ".args": ("megatron",),
    }.get(suffix, tuple(FORMATS))
    for fmt in candidates:
        if FORMATS[fmt].looks_like(text):
            return fmt
    # a suffix only one stack uses decides: its parser says what is wrong with the text
    return candidates[0] if len(candidates) == 1 else None


def read_config(path: Path, fmt: str | None = None) -> ImportedConfig:
    """Read a stack config file (its format detected unless given); accelerate's companion
    ``*.training_args.json`` beside the YAML is read with it.

    Regular files of at most :data:`MAX_CONFIG_BYTES` only (a FIFO or a device is refused
    without waiting on it); brackets nested over :data:`~.reading.MAX_NESTING` levels and
    numbers of over :data:`~.reading.MAX_DIGITS` digits are refused before parsing. Every
    failure is a :class:`StackConfigError` naming the file."""
    source = str(path)
    text = _read_text(path)
    fmt = format_id(fmt) if fmt else detect_format(text, path.name)
    if fmt is None:
        raise StackConfigError(
            f"{source}: not a DeepSpeed JSON, Megatron arguments, torchtitan TOML, "
            "accelerate YAML or nanotron YAML"
        )
    extra = None
    if fmt == "accelerate":
        companion = path.with_name(path.stem + accelerate.TRAINING_ARGS_SUFFIX)
        if companion.exists():
            extra = _read_text(companion)
    imported = parse_config(fmt, text, source, extra)
    if fmt == "accelerate":
        imported = _with_referenced_deepspeed(path, text, imported)
    return imported


def _with_referenced_deepspeed(path: Path, text: str, imported: ImportedConfig) -> ImportedConfig:
    """An accelerate config that names a DeepSpeed JSON (``deepspeed_config.
    deepspeed_config_file``, huggingface/accelerate utils/dataclasses.py
    ``DeepSpeedPlugin``: with it the plugin's own ZeRO keys must be unset, the file holds
    them) read with that file: its fields, read keys, ignored keys and "auto" keys are the
    import's too. A relative path is taken from the YAML's folder, as a launch from there
    would; a missing file is a StackConfigError naming it."""
    from llm_planner.core.files.stack_configs.textfmt import TextFormatError, load_yaml

    try:
        block = load_yaml(text).get("deepspeed_config")
    except TextFormatError:
        return imported
    name = block.get("deepspeed_config_file") if isinstance(block, dict) else None
    if not isinstance(name, str) or not name.strip():
        return imported
    referenced = Path(name).expanduser()
    if not referenced.is_absolute():
        referenced = path.parent / referenced
    if not referenced.is_file():
        raise StackConfigError(
            f"{path}: deepspeed_config.deepspeed_config_file {name!r} not found "
            f"(looked for {referenced})"
        )
    inner = parse_config("deepspeed", _read_text(referenced), str(referenced))
    key = "deepspeed_config.deepspeed_config_file"
    return replace(
        imported,
        fields={**imported.fields, **inner.fields},
        read=(*imported.read, key, *(f"{referenced.name}:{k}" for k in inner.read)),
        ignored=tuple(
            [k for k in imported.ignored if k != key]
            + [f"{referenced.name}:{k}" for k in inner.ignored]
        ),
        auto=(*imported.auto, *(f"{referenced.name}:{k}" for k in inner.auto)),
    )


def _read_text(path: Path) -> str:
    """A config file's text, bounded and checked for nesting and number sizes."""
    try:
        text = read_text_bounded(path, MAX_CONFIG_BYTES, "a stack config")
        check_structure(text, str(path))
    except FileReadError as error:
        raise StackConfigError(str(error)) from None
    return text


def parse_config(fmt: str, text: str, source: str, extra: str | None = None) -> ImportedConfig:
    """``text`` read as format ``fmt`` (``extra``: accelerate's TrainingArguments JSON).

    Whatever a crafted file makes a parser raise (a number Python will not convert, a
    document nested past the recursion limit, a value out of every range) comes out as one
    :class:`StackConfigError` line naming ``source``."""
    try:
        if fmt == "accelerate":
            return accelerate.parse(text, source, extra)
        imported: ImportedConfig = FORMATS[fmt].parse(text, source)
    except StackConfigError:
        raise
    except RecursionError:
        raise StackConfigError(f"{source}: nested too deeply to read") from None
    except (ValueError, TypeError, OverflowError, MemoryError) as error:
        detail = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise StackConfigError(f"{source}: not read ({detail[:200]})") from None
    return imported


def apply_import(base: Scenario, imported: ImportedConfig) -> Scenario:
    """``base`` with the layout and batch fields a config states, and its stack set (with
    the stack's default activation profile unless the base's was edited:
    :meth:`TrainingInputs.with_stack`)."""
    fields = dict(imported.fields)
    for key, value in base.training.with_stack(STACK_OF_FORMAT[imported.stack]).items():
        fields.setdefault(f"training.{key}", value)
    if fields.get("parallelism.fsdp_strategy") is None and "parallelism.zero_stage" not in fields:
        fields.pop("parallelism.fsdp_strategy", None)
    return with_fields(base, fields)
