"""The scenario a ``report`` or ``search`` command works on: a file (or the built-in
default) with the command line's options written into it, then validated as a whole.

The options come in groups, one module per tab (:mod:`llm_planner.cli_compute`,
:mod:`llm_planner.cli_training`, :mod:`llm_planner.cli_parallel`), each exposing
``add_options(parser)``, ``apply_options(data, args)`` and ``OPTION_OF_FIELD``.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from llm_planner import cli_compute, cli_parallel, cli_training
from llm_planner.cli_common import (
    COUNT,
    FRACTION,
    INT,
    LENGTH,
    PRICE,
    UsageError,
    echo_reading,
    set_path,
)

OPTION_GROUPS = (cli_compute, cli_training, cli_parallel)
"""The per-tab option groups, in the order ``--help`` lists them."""


def add_scenario_options(parser: argparse.ArgumentParser) -> None:
    """Every option that overrides the scenario (file or built-in default)."""
    _add_basic_options(parser)
    for group in OPTION_GROUPS:
        group.add_options(parser)


def _add_basic_options(parser: argparse.ArgumentParser) -> None:
    """Model, hardware, compute-rate and inference options."""
    model = parser.add_argument_group("model and hardware")
    model.add_argument(
        "--model", metavar="ID|PATH", help="preset id, or a local config.json / model folder"
    )
    model.add_argument(
        "--params",
        type=COUNT,
        metavar="N",
        help="P exactly N in every P-based formula (e.g. 13B); shapes proposed",
    )
    model.add_argument(
        "--gpu",
        metavar="ID",
        help="GPU id (see `llm-planner presets gpus`) or a name as people type it (H100, "
        "A100-40GB, RTX 4090, 4090; echoed), or a GPU JSON file",
    )
    model.add_argument("--num-gpus", type=LENGTH, metavar="N", help="GPUs for training")

    compute = parser.add_argument_group("compute budget")
    compute.add_argument("--tokens", type=COUNT, metavar="N", help="training tokens (e.g. 1.4T)")
    rate = compute.add_mutually_exclusive_group()
    rate.add_argument("--mfu", type=FRACTION, metavar="F", help="model FLOPs utilisation, 0-1")
    rate.add_argument("--tflops", type=COUNT, metavar="F", help="measured achieved TFLOP/s per GPU")
    rate.add_argument(
        "--tokens-per-sec-per-gpu",
        type=COUNT,
        metavar="N",
        help="measured training tokens/s per GPU",
    )
    compute.add_argument(
        "--price",
        type=PRICE,
        metavar="USD_PER_GPU_HOUR",
        help="price per GPU-hour (e.g. 2.5 or $2.50/h)",
    )

    inference = parser.add_argument_group("inference memory")
    inference.add_argument(
        "--weights-dtype",
        metavar="D",
        help="weights dtype or quantized format (bf16, fp8, int4, nvfp4, q4_k_m, iq2_xxs, "
        "gptq_int3_g128...; bfloat16, awq, gptq, fp4 are read as the format they name, "
        "echoed)",
    )
    inference.add_argument("--kv-dtype", metavar="D", help="KV-cache dtype")
    inference.add_argument("--batch", type=INT, metavar="N", help="concurrent sequences")
    inference.add_argument("--context", type=LENGTH, metavar="N", help="tokens per sequence")
    inference.add_argument(
        "--inference-gpus",
        type=LENGTH,
        metavar="N",
        help="GPUs serving one replica (tensor parallel)",
    )


def _apply_gpu(data: dict[str, Any], text: str) -> None:
    """``--gpu``: a catalog id, a name as people type it (echoed), or a GPU JSON file."""
    from llm_planner.core.primitives.gpus import find_gpu

    try:
        choice = find_gpu(text)
    except KeyError as error:
        raise UsageError(f"argument --gpu: {error.args[0]}") from None
    except (OSError, ValueError) as error:  # a "path" too long for the file system
        reason = getattr(error, "strerror", None) or str(error)
        raise UsageError(f"argument --gpu: cannot read {text!r} ({reason})") from None
    data["gpu"] = choice.gpu.model_dump(mode="json")
    echo_reading("--gpu", choice.read_as)


def _apply_weights_dtype(data: dict[str, Any], text: str) -> None:
    """``--weights-dtype``: a format id, or a name the files use (echoed)."""
    from llm_planner.core.quantities.quantization import resolve_weight_format

    try:
        fmt, reading = resolve_weight_format(text)
    except ValueError as error:
        raise UsageError(f"argument --weights-dtype: {error}") from None
    set_path(data, "inference.weights_format", fmt.id)
    echo_reading("--weights-dtype", reading)


def _apply_basic_options(data: dict[str, Any], args: argparse.Namespace) -> None:
    """Write the given options into a scenario dict (validated afterwards as a whole)."""
    if args.model is not None:
        preset, arch = resolve_model(args.model)
        data["model"] = {
            "preset": preset,
            "architecture": arch.model_dump(mode="json"),
            "params_override": None,
        }
        if preset is None:  # an imported file's weights format, stored bytes and stack
            _apply_imported(data, args.model)
    if args.params is not None:
        from llm_planner.core.primitives.shapes import propose_architecture

        try:
            proposal = propose_architecture(args.params)
        except ValueError as error:
            raise UsageError(f"argument --params: {error}") from None
        data["model"] = {
            "preset": None,
            "architecture": proposal.architecture.model_dump(mode="json"),
            "params_override": args.params,
        }
    if args.gpu is not None:
        _apply_gpu(data, args.gpu)
    if args.weights_dtype is not None:
        _apply_weights_dtype(data, args.weights_dtype)
    _apply_simple(data, args)
    if args.mfu is not None:
        set_path(data, "compute.throughput_mode", "mfu")
        set_path(data, "compute.mfu", args.mfu)
    if args.tflops is not None:
        set_path(data, "compute.throughput_mode", "tflops")
        set_path(data, "compute.achieved_flops_per_gpu", args.tflops * 1e12)
    if args.tokens_per_sec_per_gpu is not None:
        set_path(data, "compute.throughput_mode", "tokens_per_s")
        set_path(data, "compute.tokens_per_s_per_gpu", args.tokens_per_sec_per_gpu)


def _apply_simple(data: dict[str, Any], args: argparse.Namespace) -> None:
    """The options that set one field each; a ``--price`` is the user's, so it stays with
    any GPU (``compute.price_follows_gpu`` off)."""
    simple = {
        "num_gpus": "num_gpus",
        "tokens": "compute.tokens",
        "price": "compute.price_usd_per_gpu_hour",
        "kv_dtype": "inference.kv_dtype",
        "batch": "inference.batch",
        "context": "inference.context",
        "inference_gpus": "inference.num_gpus",
    }
    for option, path in simple.items():
        value = getattr(args, option, None)
        if value is not None:
            set_path(data, path, value)
    if getattr(args, "price", None) is not None:
        set_path(data, "compute.price_follows_gpu", False)


_BASIC_OPTION_OF_FIELD = {
    "num_gpus": "--num-gpus",
    "compute.tokens": "--tokens",
    "compute.mfu": "--mfu",
    "compute.achieved_flops_per_gpu": "--tflops",
    "compute.tokens_per_s_per_gpu": "--tokens-per-sec-per-gpu",
    "compute.price_usd_per_gpu_hour": "--price",
    "inference.weights_format": "--weights-dtype",
    "inference.kv_dtype": "--kv-dtype",
    "inference.batch": "--batch",
    "inference.context": "--context",
    "inference.num_gpus": "--inference-gpus",
}


def resolve_model(text: str, option: str = "argument --model") -> tuple[str | None, Any]:
    """A preset id or a local config.json / model folder → (preset id or None, Architecture)."""
    from llm_planner.core.primitives.presets import get_preset, model_presets

    if text.lower() in model_presets():
        preset = get_preset(text)
        return preset.id, preset.architecture
    return None, import_model_arg(text, option).architecture


def _apply_imported(data: dict[str, Any], text: str) -> None:
    """Set in ``data`` the fields the model file ``text`` implies beyond the model itself
    (:func:`llm_planner.core.files.hf_import.imported_fields`, as the window does)."""
    from llm_planner.core.files.hf_import import imported_fields
    from llm_planner.core.inputs.training import TrainingInputs

    imported = import_model_arg(text, "--model")
    current = TrainingInputs.model_validate(data["training"])
    for path, value in imported_fields(imported, current).items():
        section, key = path.split(".", 1)
        data[section][key] = value


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
    **_BASIC_OPTION_OF_FIELD,
    **cli_compute.OPTION_OF_FIELD,
    **cli_training.OPTION_OF_FIELD,
    **cli_parallel.OPTION_OF_FIELD,
}
"""The option that sets each scenario field (validation errors name it)."""


def build_scenario(args: argparse.Namespace) -> Any:
    """The scenario a report/search command works on: the file (or default) plus options."""
    from llm_planner.core.composition.scenario import Scenario, default_scenario

    base = load_scenario_file(args.file) if getattr(args, "file", None) else default_scenario()
    data = base.model_dump(mode="json")
    _apply_basic_options(data, args)
    for group in OPTION_GROUPS:
        group.apply_options(data, args)
    try:
        return Scenario.model_validate(data)
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
