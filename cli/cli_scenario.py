"""The scenario a ``report`` or ``search`` command works on: a file (or the built-in
default) with the command line's options applied through
:func:`llm_planner.core.inputs.scenario.with_changes`, validated as a whole.

Most options are generated from the one description of each input
(:data:`llm_planner.core.inputs.registry.INPUTS`: flag, parser, help), the same the window's
form rows parse with. The few that are not one field each (``--model``, ``--params``,
``--gpu`` here; ``--recompute``, ``--lora-targets``, ``--stack`` in
:mod:`llm_planner.cli_training`; ``--zero``, ``--fsdp``, ``--schedule`` in
:mod:`llm_planner.cli_parallel`) are written by hand, each group module exposing
``add_options(group)``, ``apply_options(changes, args, base)`` and ``OPTION_OF_FIELD``.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from llm_planner import cli_compute, cli_parallel, cli_serving, cli_training
from llm_planner.cli_common import (
    UsageError,
    add_inputs,
    echo_reading,
    input_changes,
    input_options,
    input_type,
)
from llm_planner.core.inputs import registry

OPTION_GROUPS = (cli_compute, cli_training, cli_parallel, cli_serving)
"""The per-tab option groups after the model's, compute's and inference's, in the order
``--help`` lists them."""

_GROUP_OF = {
    cli_compute: registry.SCHEDULE,
    cli_training: registry.TRAINING,
    cli_parallel: registry.PARALLEL,
    cli_serving: "serving workload",
}


def add_scenario_options(parser: argparse.ArgumentParser) -> None:
    """Every option that overrides the scenario (file or built-in default)."""
    model = parser.add_argument_group(registry.MODEL)
    model.add_argument(
        "--model", metavar="ID|PATH", help="preset id, or a local config.json / model folder"
    )
    model.add_argument(
        "--params",
        type=input_type(registry.input_at("model.params_override")),
        metavar="N",
        help="P exactly N in every P-based formula (e.g. 13B); shapes proposed",
    )
    model.add_argument(
        "--gpu",
        metavar="ID",
        help="GPU id (see `llm-planner presets gpus`) or a name as people type it (H100, "
        "A100-40GB, RTX 4090, 4090; echoed), or a GPU JSON file",
    )
    add_inputs(model, registry.MODEL)
    for title in (registry.COMPUTE, registry.INFERENCE):
        add_inputs(parser.add_argument_group(title), title)
    for module in OPTION_GROUPS:
        group = parser.add_argument_group(_GROUP_OF[module])
        add_inputs(group, _GROUP_OF[module])
        module.add_options(group)


def _model_changes(args: argparse.Namespace, base: Any) -> dict[str, Any]:
    """The changes ``--model``, ``--params`` and ``--gpu`` make (the GPU before
    ``--gpu-memory``, which edits it). ``--gpu`` takes a catalog id, a name as people type
    it (echoed on stderr) or a GPU JSON file."""
    from llm_planner.core.primitives.gpus import find_gpu

    changes: dict[str, Any] = {}
    if args.model is not None:
        preset, arch = resolve_model(args.model)
        changes["model"] = {
            "preset": preset,
            "architecture": arch.model_dump(mode="json"),
            "params_override": None,
        }
        if preset is None:  # an imported file's weights format, stored bytes and stack
            changes.update(_imported_changes(base, args.model))
    if args.params is not None:
        from llm_planner.core.primitives.shapes import propose_architecture

        try:
            proposal = propose_architecture(args.params)
        except ValueError as error:
            raise UsageError(f"argument --params: {error}") from None
        changes["model"] = {
            "preset": None,
            "architecture": proposal.architecture.model_dump(mode="json"),
            "params_override": args.params,
        }
    if args.gpu is not None:
        try:
            choice = find_gpu(args.gpu)
        except KeyError as error:
            raise UsageError(f"argument --gpu: {error.args[0]}") from None
        except (OSError, ValueError) as error:  # a "path" too long for the file system
            reason = getattr(error, "strerror", None) or str(error)
            raise UsageError(f"argument --gpu: cannot read {args.gpu!r} ({reason})") from None
        changes["gpu"] = choice.gpu.model_dump(mode="json")
        echo_reading("--gpu", choice.read_as)
    return changes


def _echo_readings(changes: dict[str, Any]) -> None:
    """The names a precision or weights format was given by (``bf16-mixed``, ``bfloat16``,
    ``awq``...), replaced by the id they mean and echoed on stderr: the scenario's own
    validators read them the same way, this only says so."""
    from llm_planner.core.quantities.optimizers import resolve_precision
    from llm_planner.core.quantities.quantization import resolve_weight_format

    readers: dict[str, tuple[str, Any]] = {
        "training.precision": ("--precision", resolve_precision),
        "inference.weights_format": ("--weights-dtype", resolve_weight_format),
    }
    for path, (option, resolve) in readers.items():
        text = changes.get(path)
        if not isinstance(text, str):
            continue
        try:
            entry, reading = resolve(text)
        except ValueError as error:
            raise UsageError(f"argument {option}: {error}") from None
        changes[path] = entry.id
        echo_reading(option, reading)


def resolve_model(text: str, option: str = "argument --model") -> tuple[str | None, Any]:
    """A preset id or a local config.json / model folder → (preset id or None, Architecture)."""
    from llm_planner.core.primitives.presets import get_preset, model_presets

    if text.lower() in model_presets():
        preset = get_preset(text)
        return preset.id, preset.architecture
    return None, import_model_arg(text, option).architecture


def _imported_changes(base: Any, text: str) -> dict[str, Any]:
    """The fields the model file ``text`` implies beyond the model itself
    (:func:`llm_planner.core.files.hf_import.imported_fields`, as the window does)."""
    from llm_planner.core.files.hf_import import imported_fields

    return dict(imported_fields(import_model_arg(text, "--model"), base.training))


def import_model_arg(text: str, option: str) -> Any:
    """A local folder, config.json or .gguf file, or a Hub id found in the local cache
    (``core.files.hf_import.import_model``) → ImportedModel; one-line UsageError else."""
    from llm_planner.core.files.hf_import import HFImportError, import_model
    from llm_planner.core.files.hub_cache import looks_like_hub_id
    from llm_planner.core.primitives.presets import model_presets

    try:
        exists = len(text) < 4096 and Path(text).exists()
    except (OSError, ValueError):  # a name too long for the file system, a NUL byte
        exists = False
    if not exists and not looks_like_hub_id(text):
        known = ", ".join(model_presets())
        raise UsageError(f"{option}: {text!r} is neither a preset ({known}) nor a path")
    try:
        return import_model(text)
    except HFImportError as error:  # its message names the file and the field
        raise UsageError(str(error)) from None


OPTION_OF_FIELD: dict[str, str] = {
    **input_options(),
    **cli_compute.OPTION_OF_FIELD,
    **cli_training.OPTION_OF_FIELD,
    **cli_parallel.OPTION_OF_FIELD,
    **cli_serving.OPTION_OF_FIELD,
}
"""The option that sets each scenario field (validation errors name it)."""


def build_scenario(args: argparse.Namespace) -> Any:
    """The scenario a report/search command works on: the file (or default) plus options."""
    from llm_planner.core.inputs.scenario import default_scenario, with_changes

    base = load_scenario_file(args.file) if getattr(args, "file", None) else default_scenario()
    changes = _model_changes(args, base)
    for group in OPTION_GROUPS:  # --stack first: an --implementation given overrides it
        changes.update(group.apply_options(args, base, changes))
    changes.update(input_changes(args))
    _echo_readings(changes)
    try:
        return with_changes(base, changes)
    except ValidationError as error:
        from llm_planner.core.primitives.limits import describe_error

        field, message = describe_error(error.errors()[0])
        option = OPTION_OF_FIELD.get(field)
        where = f"argument {option}" if option else field
        raise UsageError(f"{where}: {message}") from None


def load_scenario_file(path_text: str) -> Any:
    """Read a scenario file; every failure becomes a one-line UsageError naming the file."""
    from llm_planner.core.files import store

    try:
        return store.load_scenario_file(Path(path_text))
    except store.ScenarioFileError as error:
        raise UsageError(str(error)) from None
