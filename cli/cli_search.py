"""``llm-planner search [FILE] [options] [--top N] [--json|--csv]``: the ranked layouts that
fit (JSON: a list of objects with the layout, ``peak_bytes``, ``step_seconds``,
``tokens_per_s``, ``mfu``, ``bottleneck``, and the uncertainty the ranking accounts for:
``ranked_tokens_per_s``, ``measured_ratio_low``/``high``, ``uncertainty_runs``,
``uncertainty_basis``; core/composition/ranking.py)."""

from __future__ import annotations

import argparse
import csv
import sys
from typing import Any

from llm_planner.cli_common import INT, print_json
from llm_planner.cli_scenario import add_scenario_options, build_scenario
from llm_planner.core.primitives import units

SEARCH_COLUMNS = (
    "rank",
    "dp",
    "tp",
    "pp",
    "cp",
    "ep",
    "zero_stage",
    "micro_batch",
    "recompute",
    "sequence_parallel",
    "schedule",
    "interleave_chunks",
    "gradient_accumulation_steps",
    "peak_bytes",
    "step_seconds",
    "tokens_per_s",
    "mfu",
    "hfu",
    "bubble_fraction",
    "comm_bytes_per_step",
    "bottleneck",
    "ranked_tokens_per_s",
    "measured_ratio_low",
    "measured_ratio_high",
    "uncertainty_runs",
    "uncertainty_basis",
)


def cmd_search(args: argparse.Namespace) -> int:
    from llm_planner.core.composition.search import SearchOptions, search_scenario

    scenario = build_scenario(args)
    options = SearchOptions(max_tp=args.max_tp) if args.max_tp else SearchOptions()
    result = search_scenario(scenario, options=options, top=args.top)
    rows = [row.model_dump(mode="json") for row in result.rows]
    if args.json:
        print_json(rows)
        return 0
    if args.csv:
        writer = csv.DictWriter(sys.stdout, fieldnames=list(SEARCH_COLUMNS), extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
        return 0
    sys.stdout.write(format_search_text(scenario, result))
    return 0


def format_search_text(scenario: Any, result: Any) -> str:
    """The ranked layouts as an aligned table, one line per layout."""
    head = (
        f"{scenario.model.architecture.name} on {scenario.num_gpus} × {scenario.gpu.name}, "
        f"global batch {scenario.parallelism.global_batch} × {scenario.training.seq_len} tokens: "
        f"{result.candidates:,} layouts tried, {result.fitting:,} fit "
        f"({result.seconds * 1000:.0f} ms)"
    )
    lines = [head, ""]
    if not result.rows:
        lines.append("No layout fits: more GPUs, a smaller micro-batch or more sharding needed.")
        if result.low_precision is not None:
            lines += ["", f"FP8 on this GPU and stack: {result.low_precision.describe()}"]
        return "\n".join(lines) + "\n"
    header = (
        f"{'#':>3} {'dp':>5} {'tp':>3} {'pp':>3} {'cp':>3} {'ep':>3} {'ZeRO':>4} {'b':>3} "
        f"{'recompute':<9} {'SP':<3} {'sched':<11} {'peak/GPU':>9} {'step':>8} "
        f"{'tokens/s':>9} {'MFU':>6} {'measured÷model':>15}  bottleneck"
    )
    lines.append(header)
    for r in result.rows:
        sched = f"interl:{r.interleave_chunks}" if r.interleave_chunks > 1 else r.schedule
        lines.append(
            f"{r.rank:>3} {r.dp:>5} {r.tp:>3} {r.pp:>3} {r.cp:>3} {r.ep:>3} {r.zero_stage:>4} "
            f"{r.micro_batch:>3} {r.recompute:<9} {'yes' if r.sequence_parallel else 'no':<3} "
            f"{sched:<11} {units.format_gb(r.peak_bytes):>9} "
            f"{units.format_duration(r.step_seconds):>8} "
            f"{units.format_count(r.tokens_per_s):>9} {100 * r.mfu:5.1f}% "
            f"{_spread(r):>15}  {r.bottleneck}"
        )
    if result.low_precision is not None:
        lines += ["", f"FP8 on this GPU and stack: {result.low_precision.describe()}"]
    if any(r.uncertainty_runs for r in result.rows):
        lines += [
            "",
            "Ranked by tokens/s × the low end of measured÷model: the 25th-75th percentile of "
            "measured ÷ modeled throughput over measured runs with the same mechanisms (ZeRO "
            "stage, pipeline and TP inside or across nodes, node count), n runs.",
        ]
    return "\n".join(lines) + "\n"


def _spread(row: Any) -> str:
    """'0.81-1.02 n=12', or '—' where no run of the row's mechanisms was measured."""
    if row.measured_ratio_low is None or row.measured_ratio_high is None:
        return "—"
    return f"{row.measured_ratio_low:.2f}-{row.measured_ratio_high:.2f} n={row.uncertainty_runs}"


def add_commands(commands: Any) -> None:
    """Add the ``search`` subcommand."""
    parser = commands.add_parser(
        "search",
        help="rank the parallel layouts that fit",
        description="Enumerate every layout (tp, pp, cp, dp, ep, ZeRO stage, micro-batch, "
        "recompute, sequence parallel, interleaving) for the scenario's model, GPU count and "
        "global batch; drop those that do not fit; print the fastest first. A 16-bit plan on "
        "a GPU and stack that run FP8 also gets the stack's FP8 recipe's best layout.",
    )
    parser.add_argument("file", nargs="?", metavar="SCENARIO_FILE")
    parser.add_argument("--top", type=INT, default=10, metavar="N", help="rows (default 10)")
    parser.add_argument(
        "--max-tp",
        type=INT,
        metavar="N",
        help="largest tensor-parallel degree tried (default: GPUs per node, "
        "so tensor parallelism stays inside a node)",
    )
    out = parser.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="a JSON list, values in SI units")
    out.add_argument("--csv", action="store_true", help="CSV with a header row")
    add_scenario_options(parser)
    parser.set_defaults(handler=cmd_search)
