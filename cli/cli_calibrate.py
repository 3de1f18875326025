"""``llm-planner calibrate LOG... [SCENARIO_FILE] [options] [--save FILE] [--json]``: read
training logs, turn them into measurements of the run the options describe, fit the
step-time and memory parameters to them, print the fitted values, their uncertainty and
the residual per measurement (JSON: the report's ``calibration`` object plus
``modeled_before`` / ``modeled_after``). ``--save`` writes the scenario with the
measurements added; every later ``report``, ``search`` and the window use them.

A path ending in ``.json`` is the scenario; every other path is a log. The run's layout is
the scenario's (``--num-gpus``, ``--tp``, ``--pp``, ``--global-batch``, ``--seq-len``,
``--micro-batch``… as on ``report``): logs do not carry it.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from llm_planner.cli_common import UsageError, print_json
from llm_planner.cli_scenario import add_scenario_options, build_scenario
from llm_planner.cli_store import save_to
from llm_planner.core.primitives import units


def _split_paths(paths: list[str]) -> tuple[str | None, list[Path]]:
    scenarios = [p for p in paths if p.endswith(".json")]
    if len(scenarios) > 1:
        raise UsageError(f"argument PATH: one scenario file at most, got {', '.join(scenarios)}")
    logs_ = [Path(p) for p in paths if not p.endswith(".json")]
    if not logs_:
        raise UsageError("argument LOG: give at least one training log")
    return (scenarios[0] if scenarios else None), logs_


def measurements_from_logs(paths: list[Path], scenario: Any) -> tuple[list[Any], list[str]]:
    """One measurement per log (the scenario's layout), and the lines that were not read."""
    from llm_planner.core.files import logs

    measurements: list[Any] = []
    problems: list[str] = []
    for path in paths:
        try:
            measurement, unread = logs.measurement_from_file(path, scenario)
        except logs.LogError as error:
            raise UsageError(str(error)) from None
        measurements.append(measurement)
        problems.extend(unread)
    return measurements, problems


def cmd_calibrate(args: argparse.Namespace) -> int:
    from llm_planner.core.composition.estimate import estimate

    scenario_file, log_paths = _split_paths(args.paths)
    args.file = scenario_file
    scenario = build_scenario(args)
    measurements, problems = measurements_from_logs(log_paths, scenario)
    calibrated = scenario.model_copy(
        update={"measurements": [*scenario.measurements, *measurements]}
    )
    if args.off:
        calibrated = calibrated.model_copy(
            update={"calibration": calibrated.calibration.model_copy(update={"enabled": False})}
        )
    before = estimate(scenario.model_copy(update={"measurements": []}))
    after = estimate(calibrated)
    if args.save is not None:
        save_to(calibrated, args.save)
    cal = after.calibration
    assert cal is not None
    if args.json:
        data = cal.model_dump(mode="json")
        data["unread_lines"] = problems
        data["modeled_before"] = {
            "tokens_per_s": before.parallelism.tokens_per_s,
            "mfu": before.parallelism.mfu,
        }
        data["modeled_after"] = {
            "tokens_per_s": after.parallelism.tokens_per_s,
            "mfu": after.parallelism.mfu,
        }
        print_json(data)
        return 0
    sys.stdout.write(format_calibration_text(cal, before, after, problems, args.save))
    return 0


def format_calibration_text(
    cal: Any, before: Any, after: Any, problems: list[str], saved: str | None
) -> str:
    """The calibration as a few aligned lines."""
    lines = [f"Measurements ({len(cal.measurements)}):"]
    lines += [f"  {m}" for m in cal.measurements]
    if cal.parameters:
        lines += ["", "Fitted parameters (default → fitted ± 1σ):"]
        for p in cal.parameters:
            sigma = f" ± {p.uncertainty:.3g}" if p.uncertainty is not None else ""
            bound = " (at bound)" if p.at_bound else ""
            lines.append(
                f"  {p.name:<24} {p.default:.3g} → {p.value:.3g}{sigma}{bound}   {p.meaning}"
            )
    else:
        lines += ["", "No parameter fitted" + ("" if cal.enabled else " (calibration off)") + "."]
    if cal.residuals:
        lines += ["", "Residuals (model ÷ measured − 1):"]
        for r in cal.residuals:
            fmt = units.format_count if r["quantity"] == "tokens_per_s_per_gpu" else units.format_gb
            lines.append(
                f"  {r['label']:<28} {r['quantity']:<22} measured {fmt(r['measured']):>9}   "
                f"before {100 * r['error_before']:+6.1f}%   after {100 * r['error_after']:+6.1f}%"
            )
    for check in cal.checks:
        if check.below or check.above:
            where = "below" if check.below else "above"
            lines.append(
                f"  {check.what}: {check.flops_per_gpu_per_s / 1e12:.0f} TFLOP/s per GPU is "
                f"{where} the {check.band_low / 1e12:.0f}-{check.band_high / 1e12:.0f} band"
                + (f"; likely: {'; '.join(check.causes)}" if check.causes else "")
            )
    for text in cal.skipped:
        lines.append(f"  not used: {text}")
    for text in problems:
        lines.append(f"  unread: {text}")
    lines += [
        "",
        f"Modeled throughput: {units.format_count(before.parallelism.tokens_per_s)} → "
        f"{units.format_count(after.parallelism.tokens_per_s)} tokens/s "
        f"(MFU {100 * before.parallelism.mfu:.1f}% → {100 * after.parallelism.mfu:.1f}%)",
    ]
    if saved:
        lines.append(f"Saved the scenario with its measurements to {saved}")
    return "\n".join(lines) + "\n"


def add_commands(commands: Any) -> None:
    """Add the ``calibrate`` subcommand."""
    parser = commands.add_parser(
        "calibrate",
        help="fit the model to your own training logs",
        description="Read Megatron-LM, torchtitan, DeepSpeed, Hugging Face Trainer or "
        "nanotron logs of a run whose layout the options describe; fit the step-time and "
        "memory parameters; print them with the residual per measurement.",
    )
    parser.add_argument(
        "paths",
        nargs="+",
        metavar="LOG",
        help="training logs; a path ending in .json is the scenario file",
    )
    parser.add_argument("--json", action="store_true", help="the calibration as JSON")
    parser.add_argument(
        "--save", metavar="FILE", help="write the scenario with the measurements to FILE"
    )
    parser.add_argument(
        "--off",
        action="store_true",
        help="keep the measurements but switch calibration off (the uncalibrated model)",
    )
    add_scenario_options(parser)
    parser.set_defaults(handler=cmd_calibrate)
