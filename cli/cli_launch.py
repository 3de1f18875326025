"""From plan to launch: ``export-config``, ``import-config`` and ``check``.

``llm-planner export-config [FILE] [options] [--stack S] [--row N] [--out PATH]`` writes the
scenario's layout (or the search's N-th row) as a stack's own config;
``llm-planner import-config CONFIG [options] [--save FILE] [--json]`` reads one into a
scenario and says which of its keys were read and which ignored;
``llm-planner check CONFIG --model M --gpu G --num-gpus N [--json]`` is the pre-flight for
a launch script or a CI job: exit 0 when the planned run fits, 1 when it does not, 2 when
the config cannot be read (one line on stderr).
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from llm_planner.cli_common import INT, UsageError, print_json
from llm_planner.cli_scenario import (
    OPTION_OF_FIELD,
    add_scenario_options,
    build_scenario,
    resolve_model,
)
from llm_planner.cli_store import save_to
from llm_planner.core.primitives import units
from llm_planner.core.primitives.units import clean_text

EXIT_FITS = 0
EXIT_DOES_NOT_FIT = 1
FORMAT_CHOICES = ("deepspeed", "megatron", "torchtitan", "accelerate", "nanotron")
SUGGESTIONS = 3
"""Fitting layouts listed when the planned one does not fit."""


# ------------------------------------------------------------------ export-config


def cmd_export_config(args: argparse.Namespace) -> int:
    from llm_planner.core.files import stack_configs
    from llm_planner.core.files.store import atomic_write_bytes

    scenario = build_scenario(args)
    if args.row is not None:
        from llm_planner.core.composition.search import search_scenario

        rows = search_scenario(scenario, top=args.row).rows
        if len(rows) < args.row:
            raise UsageError(
                f"argument --row: the search found {len(rows)} fitting layouts, not {args.row}"
            )
        scenario = stack_configs.apply_row(scenario, rows[args.row - 1])
    stack = getattr(args, "config_stack", None)
    try:
        exported = stack_configs.export_config(scenario, stack, backend=args.backend)
    except ValueError as error:
        raise UsageError(f"argument --stack: {error}") from None
    if args.out is None:
        sys.stdout.write(exported.text)
        for suffix, text in exported.companions.items():
            sys.stdout.write(f"\n# ---- companion file *{suffix} ----\n{text}")
    else:
        out = Path(args.out)
        stem = out.name[: -len(out.suffix)] if out.suffix else out.name
        try:
            atomic_write_bytes(out, exported.text.encode("utf-8"))
            for suffix, text in exported.companions.items():
                atomic_write_bytes(out.with_name(stem + suffix), text.encode("utf-8"))
        except OSError as error:
            raise UsageError(f"argument --out: {error.strerror or error}") from None
        written = [str(out)] + [str(out.with_name(stem + s)) for s in exported.companions]
        sys.stderr.write(f"wrote {clean_text(', '.join(written))}\n")
    for note in exported.unexpressed:
        sys.stderr.write(f"not expressible in {exported.stack}: {note}\n")
    return 0


# ------------------------------------------------------------------ import-config / check


def _option_given(args: argparse.Namespace, field: str) -> bool:
    option = OPTION_OF_FIELD.get(field)
    return (
        option is not None and getattr(args, option.lstrip("-").replace("-", "_"), None) is not None
    )


def imported_scenario(args: argparse.Namespace) -> tuple[Any, Any, str]:
    """(scenario, imported config, a sentence on the model) for import-config and check:
    the config's fields over the default scenario, the command line's options over both."""
    from llm_planner.core.files import stack_configs

    try:
        imported = stack_configs.read_config(Path(args.config), args.format)
    except stack_configs.StackConfigError as error:
        raise UsageError(str(error)) from None
    base = build_scenario(args)
    fields = {k: v for k, v in imported.fields.items() if not _option_given(args, k)}
    if args.model is not None or args.params is not None:
        model_note = "model from the command line"
    elif imported.model is not None:
        try:
            preset, arch = resolve_model(imported.model, option=f"{args.config}: model")
        except UsageError:
            model_note = (
                f"the config names model {imported.model!r}, not a preset or a path: "
                f"using {base.model.architecture.name} (pass --model)"
            )
        else:
            fields["model"] = {
                "preset": preset,
                "architecture": arch.model_dump(mode="json"),
                "params_override": None,
            }
            how = (
                "matched by the shape in the config"
                if imported.arch_hint
                else "named in the config"
            )
            model_note = f"model {imported.model} ({how})"
    else:
        model_note = (
            f"the config names no model: using {base.model.architecture.name} (pass --model)"
        )
    try:
        scenario = stack_configs.apply_import(base, replace(imported, fields=fields))
    except ValueError as error:
        raise UsageError(f"{args.config}: {error}") from None
    return scenario, imported, model_note


def cmd_import_config(args: argparse.Namespace) -> int:
    scenario, imported, model_note = imported_scenario(args)
    if args.save is not None:
        save_to(scenario, args.save)
    if args.json:
        from llm_planner.core.files.store import scenario_document

        print_json(
            {
                "format": imported.stack,
                "read": list(imported.read),
                "ignored": list(imported.ignored),
                "auto": list(imported.auto),
                "model": model_note,
                "scenario": scenario_document(scenario),
            }
        )
        return 0
    lines = [
        f"{clean_text(str(args.config))}: {imported.stack} config; {model_note}",
        f"  read ({len(imported.read)}): {', '.join(imported.read) or '-'}",
        f"  ignored ({len(imported.ignored)}): {', '.join(imported.ignored) or '-'}",
        *_auto_lines(imported),
        f"  layout: {_layout_text(scenario)}",
    ]
    if args.save:
        lines.append(f"  saved as {args.save}")
    sys.stdout.write("\n".join(lines) + "\n")
    return 0


def _auto_lines(imported: Any) -> list[str]:
    """The keys the config leaves to the launcher ("auto"), whose values come from the
    scenario (and the command line's options) instead."""
    if not imported.auto:
        return []
    return [
        f"  auto ({len(imported.auto)}, the scenario's value stands): " + ", ".join(imported.auto)
    ]


def _layout_text(scenario: Any) -> str:
    from llm_planner.core.files.stack_configs import layout_of

    lay = layout_of(scenario)
    virtual = f" v={lay['v']}" if lay["v"] > 1 else ""
    return (
        f"{lay['num_gpus']} GPUs = dp {lay['dp']} × tp {lay['tp']} × pp {lay['pp']}, ep "
        f"{lay['ep']}, ZeRO-{lay['zero_stage']}, {lay['schedule']}{virtual}, micro-batch "
        f"{lay['micro_batch']} × {lay['accumulation']} steps, global batch "
        f"{lay['global_batch']}, seq {lay['seq_len']}, recompute {lay['recompute']}"
    )


def _offload_json(training: Any, parallelism: Any) -> dict[str, Any] | None:
    """The offload part of ``check --json`` (None when nothing is offloaded): devices, host
    and NVMe bytes, the exposed time per step."""
    off = training.offload
    if off is None:
        return None
    return {
        "optimizer": off.optimizer,
        "params": off.params,
        "host_bytes_per_gpu": off.host_bytes,
        "host_bytes_per_node": off.host_bytes_per_node,
        "host_capacity_bytes_per_node": off.host_capacity_bytes_per_node,
        "host_fits": off.host_fits,
        "nvme_bytes_per_gpu": off.nvme_bytes,
        "step_seconds": parallelism.time_breakdown_seconds.get("offload", 0.0),
        "notes": list(off.notes),
    }


def _offload_lines(training: Any, parallelism: Any) -> list[str]:
    """What ZeRO offload moves and costs, when the plan offloads."""
    off = training.offload
    if off is None:
        return []
    lines = [
        f"  offload: optimizer {off.optimizer}, parameters {off.params}; host RAM "
        f"{units.format_gb(off.host_bytes_per_node)} per node of "
        f"{units.format_gb(off.host_capacity_bytes_per_node)}"
        + ("" if off.host_fits else " (DOES NOT FIT in host RAM)"),
        f"  offload adds {parallelism.time_breakdown_seconds.get('offload', 0.0):.3g} s per "
        "step (host-link copies not hidden, CPU Adam step)",
    ]
    if off.nvme_bytes:
        lines.append(f"  on NVMe per GPU: {units.format_gb(off.nvme_bytes)}")
    lines += [f"  offload: {note}" for note in off.notes]
    return lines


def cmd_check(args: argparse.Namespace) -> int:
    from llm_planner.core.composition.estimate import estimate

    scenario, imported, model_note = imported_scenario(args)
    report = estimate(scenario)
    training = report.training
    peak, capacity = training.peak_bytes, training.capacity_bytes
    fits = bool(training.fits)
    suggestions: list[Any] = []
    if not fits:
        from llm_planner.core.composition.search import search_scenario

        suggestions = list(search_scenario(scenario, top=SUGGESTIONS).rows)
    problems = list(report.parallelism.problems)
    if args.json:
        print_json(
            {
                "fits": fits,
                "format": imported.stack,
                "config": str(args.config),
                "model": model_note,
                "gpu": scenario.gpu.id,
                "num_gpus": scenario.num_gpus,
                "peak_bytes": peak,
                "capacity_bytes": capacity,
                "headroom_bytes": capacity - peak,
                "step_seconds": report.parallelism.step_seconds,
                "offload": _offload_json(training, report.parallelism),
                "problems": problems,
                "read": list(imported.read),
                "ignored": list(imported.ignored),
                "auto": list(imported.auto),
                "suggestions": [row.model_dump(mode="json") for row in suggestions],
            }
        )
        return EXIT_FITS if fits else EXIT_DOES_NOT_FIT
    verdict = "fits" if fits else "DOES NOT FIT"
    lines = [
        f"{clean_text(str(args.config))} ({imported.stack}) on {scenario.num_gpus} × "
        f"{scenario.gpu.name}: {verdict}",
        f"  {model_note}",
        *_auto_lines(imported),
        f"  layout: {_layout_text(scenario)}",
        f"  peak per GPU {units.format_gb(peak)} of {units.format_gb(capacity)}; headroom "
        f"{units.format_gb(capacity - peak)}",
        f"  step time {report.parallelism.step_seconds:.3g} s",
    ]
    lines += _offload_lines(training, report.parallelism)
    lines += [f"  problem: {p}" for p in problems]
    if not fits:
        if suggestions:
            lines.append(
                "  layouts that fit (the search's fastest; `llm-planner export-config "
                "--row N` writes one):"
            )
            for row in suggestions:
                lines.append(
                    f"    {row.rank}. dp {row.dp} × tp {row.tp} × pp {row.pp}, ZeRO-"
                    f"{row.zero_stage}, micro-batch {row.micro_batch}, recompute "
                    f"{row.recompute}: peak {units.format_gb(row.peak_bytes)}"
                )
        else:
            lines.append("  no layout of these GPUs fits: more GPUs or a smaller model needed")
    sys.stdout.write("\n".join(lines) + "\n")
    return EXIT_FITS if fits else EXIT_DOES_NOT_FIT


# ------------------------------------------------------------------ parser


def _add_stack_option(parser: argparse.ArgumentParser) -> None:
    with contextlib.suppress(argparse.ArgumentError):  # scenario options set training.stack
        parser.add_argument(
            "--stack",
            dest="config_stack",
            choices=(*FORMAT_CHOICES, "hf"),
            help="the config format (default: the scenario's training stack; hf = accelerate)",
        )


def _add_config_input(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("config", metavar="CONFIG", help="a stack config file")
    parser.add_argument(
        "--format", choices=FORMAT_CHOICES, help="the config's format (default: detected)"
    )
    parser.set_defaults(file=None)


def add_commands(commands: Any) -> None:
    """Add the ``export-config``, ``import-config`` and ``check`` subcommands."""
    export = commands.add_parser(
        "export-config",
        help="write the layout as a training stack's own config",
        description="Write the scenario's parallel layout (or the search's N-th fitting "
        "layout) as a DeepSpeed JSON, Megatron-LM arguments, a torchtitan TOML, an "
        "accelerate YAML (+ TrainingArguments JSON) or a nanotron YAML. What the plan "
        "assumes and the stack cannot express is listed in the file and on stderr.",
    )
    export.add_argument("file", nargs="?", metavar="SCENARIO_FILE")
    add_scenario_options(export)
    out = export.add_argument_group("export")
    _add_stack_option(export)
    out.add_argument(
        "--backend", choices=("fsdp", "deepspeed"), help="accelerate: FSDP or DeepSpeed plugin"
    )
    out.add_argument("--row", type=INT, metavar="N", help="export the search's N-th row")
    out.add_argument("--out", metavar="PATH", help="write here (default: standard output)")
    export.set_defaults(handler=cmd_export_config)

    imp = commands.add_parser(
        "import-config",
        help="read a training stack's config into a scenario",
        description="Read a DeepSpeed JSON, Megatron-LM arguments, torchtitan TOML, "
        "accelerate YAML or nanotron YAML: its layout and batch fields over the default "
        "scenario, the options over both; says which keys were read and which ignored.",
    )
    _add_config_input(imp)
    imp.add_argument("--save", metavar="FILE", help="save the scenario file here")
    imp.add_argument("--json", action="store_true", help="one JSON object")
    add_scenario_options(imp)
    imp.set_defaults(handler=cmd_import_config)

    check = commands.add_parser(
        "check",
        help="pre-flight: does a stack config's run fit? (exit 0 fits, 1 not, 2 unreadable)",
        description="Read a stack config, estimate the run it launches and exit 0 when it "
        "fits in GPU memory, 1 when it does not (with layouts that fit), 2 when the config "
        "cannot be read. For launch scripts and CI jobs before a cluster is booked.",
    )
    _add_config_input(check)
    check.add_argument("--json", action="store_true", help="one JSON object")
    add_scenario_options(check)
    check.set_defaults(handler=cmd_check)
