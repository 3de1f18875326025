"""The command line: the headless face of ``core``.

``llm-planner`` opens the window (or, with no display, says so and prints the default
scenario's report); ``llm-planner FILE`` opens the window on a scenario file; the
subcommands print what the window shows. Options and JSON keys are a contract: scripts
depend on them. Bad arguments exit with status 2 and a one-line message.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn

from pydantic import ValidationError

from llm_planner import __version__
from llm_planner.core.primitives import units
from llm_planner.core.primitives.figures import Figure

EXIT_USAGE = 2


class UsageError(Exception):
    """A bad argument or input file: printed as one line, exit status 2."""


class _Parser(argparse.ArgumentParser):
    """argparse that reports errors on one line (no usage dump) and exits with status 2."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(message)


# ------------------------------------------------------------------ value parsers
# argparse ``type=`` callables: each turns a human quantity into SI units or raises an
# ArgumentTypeError whose text names what was wrong (argparse adds the option name).


def _typed(parse: Callable[[str], Any]) -> Callable[[str], Any]:
    def convert(text: str) -> Any:
        try:
            return parse(text)
        except (units.UnitError, ValueError) as error:
            raise argparse.ArgumentTypeError(str(error).split(": ", 1)[-1]) from None

    convert.__name__ = getattr(parse, "__name__", "value")
    return convert


def _positive_int(text: str) -> int:
    value = units.parse_int_count(text)
    if value < 1:
        raise ValueError(f"{text!r} must be at least 1")
    return value


def _fraction(text: str) -> float:
    value = float(text.rstrip("%")) / (100 if text.endswith("%") else 1)
    if not 0 < value <= 1:
        raise ValueError(f"{text!r} must be in (0, 1] (or a percentage)")
    return value


COUNT = _typed(units.parse_count)
INT = _typed(_positive_int)
BYTES = _typed(units.parse_bytes)
PRICE = _typed(units.parse_price_per_hour)
USD = _typed(units.parse_usd)
DURATION = _typed(units.parse_duration)
FRACTION = _typed(_fraction)


# ------------------------------------------------------------------ text output


def format_value(figure: Figure) -> str:
    """A figure's value as text with its unit (bytes in GB and GiB)."""
    return figure.text()


def format_report_text(report: Any) -> str:
    """The readable, aligned summary: one block per section, one line per figure."""
    lines: list[str] = []
    titles = {
        "model": "Model",
        "compute": "Compute budget",
        "inference": "Inference memory",
        "training": "Training memory (per GPU)",
        "parallelism": "Parallelism",
    }
    for name, section in report.sections().items():
        figures: list[Figure] = section.figures()
        title = f"{titles[name]}: {section.name}" if name == "model" else titles.get(name, name)
        lines.append(title)
        lines.append("-" * len(title))
        width = max((len(f.label) for f in figures), default=0)
        lines.extend(f"  {f.label:<{width}}  {format_value(f)}" for f in figures)
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def _print_json(data: Any) -> None:
    json.dump(data, sys.stdout, indent=2, sort_keys=False, allow_nan=False)
    sys.stdout.write("\n")


# ------------------------------------------------------------------ scenario options


def _set(data: dict[str, Any], path: str, value: Any) -> None:
    """Set ``data["a"]["b"] = value`` for ``path`` "a.b"."""
    *parents, leaf = path.split(".")
    node = data
    for key in parents:
        node = node.setdefault(key, {})
    node[leaf] = value


def _add_report_options(parser: argparse.ArgumentParser) -> None:
    """Options that override the scenario (file or built-in default) for report/search."""
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
    model.add_argument("--gpu", metavar="ID", help="GPU id (see `llm-planner presets gpus`)")
    model.add_argument("--num-gpus", type=INT, metavar="N", help="GPUs for training")

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
        help="weights dtype or quantized format (bf16, fp8, int4, q4_k_m...)",
    )
    inference.add_argument("--kv-dtype", metavar="D", help="KV-cache dtype")
    inference.add_argument("--batch", type=INT, metavar="N", help="concurrent sequences")
    inference.add_argument("--context", type=INT, metavar="N", help="tokens per sequence")
    inference.add_argument(
        "--inference-gpus", type=INT, metavar="N", help="GPUs serving one replica (tensor parallel)"
    )


def _apply_report_options(data: dict[str, Any], args: argparse.Namespace) -> None:
    """Write the given options into a scenario dict (validated afterwards as a whole)."""
    from llm_planner.core.primitives.gpus import get_gpu

    if args.model is not None:
        preset, arch = _resolve_model(args.model)
        data["model"] = {
            "preset": preset,
            "architecture": arch.model_dump(mode="json"),
            "params_override": None,
        }
        if preset is None:  # an imported file's weights format and stored bytes
            from llm_planner.core.files.hf_import import inference_fields

            data["inference"].update(inference_fields(_import_model(args.model, "--model")))
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
        try:
            data["gpu"] = get_gpu(args.gpu).model_dump(mode="json")
        except KeyError as error:
            raise UsageError(f"argument --gpu: {error.args[0]}") from None
    simple = {
        "num_gpus": "num_gpus",
        "tokens": "compute.tokens",
        "price": "compute.price_usd_per_gpu_hour",
        "weights_dtype": "inference.weights_format",
        "kv_dtype": "inference.kv_dtype",
        "batch": "inference.batch",
        "context": "inference.context",
        "inference_gpus": "inference.num_gpus",
    }
    for option, path in simple.items():
        value = getattr(args, option, None)
        if value is not None:
            _set(data, path, value)
    if args.mfu is not None:
        _set(data, "compute.throughput_mode", "mfu")
        _set(data, "compute.mfu", args.mfu)
    if args.tflops is not None:
        _set(data, "compute.throughput_mode", "tflops")
        _set(data, "compute.achieved_flops_per_gpu", args.tflops * 1e12)
    if args.tokens_per_sec_per_gpu is not None:
        _set(data, "compute.throughput_mode", "tokens_per_s")
        _set(data, "compute.tokens_per_s_per_gpu", args.tokens_per_sec_per_gpu)


_OPTION_OF_FIELD = {
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


def _resolve_model(text: str, option: str = "argument --model") -> tuple[str | None, Any]:
    """A preset id or a local config.json / model folder → (preset id or None, Architecture)."""
    from llm_planner.core.primitives.presets import get_preset, model_presets

    if text.lower() in model_presets():
        preset = get_preset(text)
        return preset.id, preset.architecture
    return None, _import_model(text, option).architecture


def _import_model(text: str, option: str) -> Any:
    """A local folder, config.json or .gguf file, or a Hub id in the local cache."""
    from llm_planner.core.files.hf_import import HFImportError, import_model
    from llm_planner.core.files.hub_cache import looks_like_hub_id
    from llm_planner.core.primitives.presets import model_presets

    if not Path(text).exists() and not looks_like_hub_id(text):
        known = ", ".join(model_presets())
        raise UsageError(f"{option}: {text!r} is neither a preset ({known}) nor a path")
    try:
        return import_model(text)
    except HFImportError as error:  # its message names the file and the field
        raise UsageError(str(error)) from None


def build_scenario(args: argparse.Namespace) -> Any:
    """The scenario a report/search command works on: the file (or default) plus options."""
    from llm_planner.core.composition.scenario import Scenario, default_scenario

    base = _load_scenario_file(args.file) if getattr(args, "file", None) else default_scenario()
    data = base.model_dump(mode="json")
    _apply_report_options(data, args)
    for apply in _EXTRA_OPTION_APPLIERS:
        apply(data, args)
    try:
        return Scenario.model_validate(data)
    except ValidationError as error:
        first = error.errors()[0]
        field = ".".join(str(part) for part in first["loc"])
        option = _OPTION_OF_FIELD.get(field)
        where = f"argument {option}" if option else field
        raise UsageError(f"{where}: {first['msg']}") from None


def _load_scenario_file(path_text: str) -> Any:
    """Read a scenario file; every failure becomes a one-line UsageError naming the file."""
    from llm_planner.core.files import store

    try:
        return store.load_scenario_file(Path(path_text))
    except store.ScenarioFileError as error:
        raise UsageError(str(error)) from None


_EXTRA_OPTION_APPLIERS: list[Callable[[dict[str, Any], argparse.Namespace], None]] = []
"""Appliers registered by later option groups (training, parallelism) in this module."""


# ------------------------------------------------------------------ commands


def cmd_report(args: argparse.Namespace) -> int:
    from llm_planner.core.composition.estimate import estimate, report_json

    scenario = build_scenario(args)
    report = estimate(scenario)
    from llm_planner.cli_store import report_output

    if report_output(args, scenario, report):  # --save, --markdown, --csv
        return 0
    if args.json:
        _print_json(report_json(report))
    else:
        sys.stdout.write(format_report_text(report))
    return 0


def cmd_presets(args: argparse.Namespace) -> int:
    from llm_planner.core.primitives.architecture import count_parameters
    from llm_planner.core.primitives.gpus import gpu_catalog
    from llm_planner.core.primitives.presets import model_presets

    if args.kind == "models":
        rows: list[dict[str, Any]] = []
        for preset in model_presets().values():
            counts = count_parameters(preset.architecture)
            rows.append(
                {
                    "id": preset.id,
                    "name": preset.architecture.name,
                    "params_total": counts.total,
                    "params_active": counts.active,
                    "source": preset.source,
                }
            )
        if args.json:
            _print_json(rows)
        else:
            for row in rows:
                print(
                    f"{row['id']:<16} {row['name']:<20} "
                    f"{units.format_count(row['params_total']):>7}"
                    f"  (active {units.format_count(row['params_active'])})"
                )
        return 0
    gpus = list(gpu_catalog().values())
    if args.json:
        _print_json([gpu.model_dump(mode="json") for gpu in gpus])
    else:
        for gpu in gpus:
            bf16 = gpu.peak_flops.for_dtype("bf16")
            peak = units.format_flops_rate(bf16) if bf16 else "—"
            print(
                f"{gpu.id:<16} {gpu.name:<28} {units.format_gb(gpu.memory_bytes):>8}"
                f"  {gpu.memory_bandwidth_bytes_per_s / 1e12:.2f} TB/s  bf16 {peak}"
            )
    return 0


def cmd_model(args: argparse.Namespace) -> int:
    from llm_planner.core.primitives.architecture import count_parameters

    preset, arch = _resolve_model(args.model, "argument ID_OR_PATH")
    counts = count_parameters(arch)
    row: dict[str, Any] = {
        "id": preset or arch.name,
        "name": arch.name,
        "params_total": counts.total,
        "params_active": counts.active,
        "params_active_compute": counts.active_compute,
        "layers": arch.layers,
        "hidden_size": arch.hidden_size,
        "heads": arch.heads,
        "kv_heads": arch.kv_heads,
        "head_dim": arch.head_dim,
        "ffn_size": arch.ffn_size,
        "ffn_kind": arch.ffn_kind,
        "vocab_size": arch.vocab_size,
        "max_context": arch.max_context,
        "breakdown": counts.model_dump(mode="json"),
        "architecture": arch.model_dump(mode="json"),
    }
    if preset is None:  # a local config.json / folder: what its safetensors headers say
        imported = _import_model(args.model, "argument ID_OR_PATH")
        row["model_type"] = imported.model_type
        row["params_safetensors"] = imported.safetensors_params
        row["safetensors_dtype"] = imported.safetensors_dtype
        row["params_file"] = imported.file_params
        row["weights_format"] = imported.weights_format
        row["weights_bytes"] = imported.weights_bytes
        row["import_notes"] = list(imported.notes)
        row["import_warnings"] = list(imported.warnings)
    if args.json:
        _print_json(row)
        return 0
    print(f"{arch.name}  ({row['id']})")
    shape = (
        f"  layers {arch.layers}, hidden {arch.hidden_size}, heads {arch.heads} "
        f"(kv {arch.kv_heads}, head dim {arch.head_dim}), FFN {arch.ffn_size} {arch.ffn_kind}, "
        f"vocab {arch.vocab_size}, context {arch.max_context}"
    )
    print(shape)
    if arch.moe is not None:
        moe = arch.moe
        print(
            f"  MoE: {moe.num_experts} experts of {moe.expert_ffn_size}, "
            f"top-{moe.experts_per_token}"
            f", {moe.num_shared_experts} shared, {moe.first_dense_layers} dense layers first"
        )
    print(f"  parameters: {counts.total:,} total, {counts.active:,} active per token")
    if row.get("params_safetensors") is not None:
        print(
            f"  safetensors: {row['params_safetensors']:,} parameters stored "
            f"as {row['safetensors_dtype']}"
        )
    if row.get("params_file") is not None:
        print(f"  file: {row['params_file']:,} parameters stored")
    if row.get("weights_bytes") is not None:
        print(f"  weights: {row['weights_format']}, {units.format_gb(row['weights_bytes'])}")
    for note in row.get("import_notes", []) + row.get("import_warnings", []):
        print(f"  note: {note}")
    for name in (
        "embedding",
        "positions",
        "attention",
        "recurrent",
        "mlp",
        "experts",
        "shared_experts",
        "router",
        "norms",
        "head",
    ):
        value = getattr(counts, name)
        if value:
            print(f"    {name:<15} {value:>18,}  {100 * value / counts.total:5.1f}%")
    return 0


def _has_display() -> bool:
    """Whether a Qt window can be shown: on Linux/BSD an X11 or Wayland display must exist."""
    if os.environ.get("QT_QPA_PLATFORM"):
        return True
    if sys.platform.startswith(("linux", "freebsd", "openbsd", "netbsd")):
        return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))
    return True


QT_PROBE_FLAG = "--qt-probe"
"""Hidden argument: start Qt's GUI platform and exit 0 (run in a child process)."""


def _qt_probe() -> int:
    from PySide6.QtGui import QGuiApplication

    QGuiApplication(sys.argv[:1])
    return 0


_QT_PROBE_CODE = "from PySide6.QtGui import QGuiApplication; QGuiApplication([])"


def _start_qt_probe() -> subprocess.Popen[str] | None:
    """Start a child process that opens Qt's GUI platform, or None where none is needed.

    Qt aborts the whole process when its platform plugin cannot start (an X display that
    is set but unreachable, or a missing system library such as libxcb-cursor0), which no
    ``try`` can catch; so a child tries first, while this process imports the window's
    modules (the two overlap: about 0.35 s on an X server here), and the window opens only
    if the child succeeded. Skipped where the platform is forced (QT_QPA_PLATFORM) and on
    macOS and Windows, whose platform plugins do not depend on a display server.
    """
    if os.environ.get("QT_QPA_PLATFORM") or not sys.platform.startswith(
        ("linux", "freebsd", "openbsd", "netbsd")
    ):
        return None
    if getattr(sys, "frozen", False):
        command = [sys.executable, QT_PROBE_FLAG]
    else:
        command = [sys.executable, "-c", _QT_PROBE_CODE]
    try:
        return subprocess.Popen(
            command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
        )
    except OSError:
        return None  # cannot even start a child: let Qt try in this process


def _qt_probe_problem(probe: subprocess.Popen[str] | None) -> str | None:
    """Why Qt cannot open a window here (from the probe child), or None if it can."""
    if probe is None:
        return None
    try:
        _, stderr = probe.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        probe.kill()
        probe.communicate()
        return "Qt did not start within 30 s"
    if probe.returncode == 0:
        return None
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    reason = next((line for line in lines if "xcb" in line or "display" in line), None)
    return f"Qt could not start on this display ({reason or f'exit status {probe.returncode}'})"


def _print_report_instead(file: str | None, why: str) -> int:
    sys.stderr.write(
        f"llm-planner: {why}, so the window cannot open; printing the "
        + ("scenario's" if file else "default scenario's")
        + " report instead. Set QT_QPA_PLATFORM=offscreen to force Qt.\n"
    )
    from llm_planner.core.composition.estimate import estimate
    from llm_planner.core.composition.scenario import default_scenario

    scenario = _load_scenario_file(file) if file else default_scenario()
    sys.stdout.write(format_report_text(estimate(scenario)))
    return 0


def cmd_window(file: str | None, smoke_test: bool = False) -> int:
    """Open the window; with no display, say so and print the default report instead."""
    probe = None
    if not smoke_test:
        if not _has_display():
            return _print_report_instead(
                file, "no display available (neither DISPLAY nor WAYLAND_DISPLAY is set)"
            )
        probe = _start_qt_probe()
    try:
        from llm_planner.gui.app import run_app

        if probe is not None:  # import the window's modules while the probe runs
            import llm_planner.gui.main_window  # noqa: F401
    except ImportError as error:
        sys.stderr.write(f"llm-planner: the window is not available ({error}).\n")
        return 1
    problem = _qt_probe_problem(probe)
    if problem is not None:
        return _print_report_instead(file, problem)
    return int(run_app(file=file, smoke_test=smoke_test))


# ------------------------------------------------------------------ parser


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="llm-planner",
        description=(
            "Plan a large-model training or inference run offline: compute, time, cost, "
            "memory and parallel layout. With no command, opens the window."
        ),
        epilog="Run `llm-planner COMMAND --help` for a command's options. "
        "`llm-planner FILE` opens the window on a scenario file.",
    )
    parser.add_argument("--version", action="version", version=f"llm-planner {__version__}")
    parser.add_argument(
        "--smoke-test",
        action="store_true",
        help="open the window, visit every tab, change an input, exit 0",
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    report = commands.add_parser(
        "report",
        help="print every figure of all tabs",
        description="Print every figure the window shows for a "
        "scenario (a file or the built-in default) with options applied.",
    )
    report.add_argument("file", nargs="?", metavar="SCENARIO_FILE")
    report.add_argument(
        "--json", action="store_true", help="one JSON object, values in SI base units"
    )
    _add_report_options(report)
    for add in _EXTRA_OPTION_ADDERS:
        add(report)
    report.set_defaults(handler=cmd_report)

    presets = commands.add_parser(
        "presets",
        help="list the model or GPU catalog",
        description="List the model presets or the GPU catalog.",
    )
    presets.add_argument("kind", choices=["models", "gpus"])
    presets.add_argument("--json", action="store_true")
    presets.set_defaults(handler=cmd_presets)

    model = commands.add_parser(
        "model",
        help="print an architecture and its parameters",
        description="Print a model's architecture and its exact parameter breakdown.",
    )
    model.add_argument(
        "model", metavar="ID_OR_PATH", help="preset id, or a local config.json / model folder"
    )
    model.add_argument("--json", action="store_true")
    model.set_defaults(handler=cmd_model)

    for register in _EXTRA_COMMANDS:
        register(commands)
    return parser


_EXTRA_OPTION_ADDERS: list[Callable[[argparse.ArgumentParser], None]] = []
_EXTRA_COMMANDS: list[Callable[[Any], None]] = []

from llm_planner import cli_store  # noqa: E402  (scenario files and library, issue 6)

_EXTRA_OPTION_ADDERS.append(cli_store.add_report_options)
_EXTRA_OPTION_APPLIERS.append(cli_store.apply_report_options)
_EXTRA_COMMANDS.append(cli_store.register_commands)

from llm_planner import cli_training  # noqa: E402  (training memory options, issue 4)

cli_training.register()

from llm_planner import cli_parallel  # noqa: E402  (parallelism options and search, issue 5)

cli_parallel.register()

from llm_planner import cli_compute  # noqa: E402  (deadline, budgets, failures: issue 3)

cli_compute.register()


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``llm-planner``. Returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv == [QT_PROBE_FLAG]:
        return _qt_probe()
    parser = build_parser()
    known = {"report", "presets", "model", "search", "list", "import", "export"}
    try:
        # `llm-planner FILE` (a path, not a command): open the window on that file
        positional = [a for a in argv if not a.startswith("-")]
        if positional and positional[0] not in known and argv and argv[0] == positional[0]:
            return cmd_window(positional[0], smoke_test="--smoke-test" in argv)
        args = parser.parse_args(argv)
        if args.command is None:
            return cmd_window(None, smoke_test=args.smoke_test)
        return int(args.handler(args))
    except UsageError as error:
        sys.stderr.write(f"llm-planner: error: {error}\n")
        return EXIT_USAGE
    except BrokenPipeError:  # `llm-planner report | head`
        return 0


def gui_main() -> int:
    """Entry point for launchers (no console): always tries the window."""
    return cmd_window(sys.argv[1] if len(sys.argv) > 1 else None)
