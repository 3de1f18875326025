"""Choosing between options on the command line.

- ``llm-planner compare A B [C D] [--json|--markdown|--csv]``: 2–4 scenario files side by
  side (the headline figures, the differences from the first, the input fields that differ);
- ``llm-planner hardware [FILE] [options] [--objective cost|time|gpu_hours]
  [--tier on_demand|reserved] [--max-gpus N] [--max-counts N] [--prices FILE]
  [--top N] [--json|--csv]``: the cheapest hardware for the scenario's model, tokens and
  deadline;
- ``llm-planner sensitivity [FILE] [options] [--json]``: how time and cost move with the
  inputs that matter most (the tornado's figures);
- ``llm-planner prices [--prices FILE] [--json]``: the price list, its sources and dates,
  and what in it is out of date.
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import sys
from pathlib import Path
from typing import Any

from llm_planner.cli_common import INT, UsageError, print_json
from llm_planner.cli_scenario import add_scenario_options, build_scenario, load_scenario_file
from llm_planner.core.primitives import units
from llm_planner.core.primitives.figures import format_value

HARDWARE_COLUMNS = (
    "rank",
    "gpu_id",
    "gpu_name",
    "num_gpus",
    "status",
    "layout_label",
    "tokens_per_s",
    "time_seconds",
    "gpu_hours",
    "price_usd_per_gpu_hour",
    "cost_usd",
    "pareto",
    "price_source",
)


# ------------------------------------------------------------------ compare


def cmd_compare(args: argparse.Namespace) -> int:
    from llm_planner.core.composition.compare import (
        compare,
        comparison_csv_rows,
        comparison_markdown,
    )

    if not 2 <= len(args.files) <= 4:
        raise UsageError(f"compare takes 2 to 4 scenario files, got {len(args.files)}")
    scenarios = [load_scenario_file(path) for path in args.files]
    comparison = compare(scenarios)
    if args.json:
        print_json(comparison.as_json())
    elif args.markdown:
        sys.stdout.write(comparison_markdown(comparison))
    elif args.csv:
        csv.writer(sys.stdout).writerows(comparison_csv_rows(comparison))
    else:
        sys.stdout.write(format_comparison_text(comparison))
    return 0


def format_comparison_text(comparison: Any) -> str:
    """Aligned columns; a value that differs from the first is followed by its change."""
    names = comparison.names
    cells = [["", *names]]
    for row in comparison.rows:
        line = [row.label]
        for i, text in enumerate(row.texts()):
            ratio = row.ratios[i]
            if not (i and row.differs[i]):
                line.append(text)
            elif ratio is None:
                line.append(f"{text} *")
            else:
                line.append(f"{text} ({100 * ratio:+.1f}%)")
        cells.append(line)
    widths = [max(len(r[c]) for r in cells) for c in range(len(cells[0]))]
    lines = ["  ".join(cell.ljust(widths[c]) for c, cell in enumerate(r)).rstrip() for r in cells]
    lines.insert(1, "-" * len(lines[0]))
    lines.append("")
    lines.append("Throughput: " + " | ".join(comparison.throughput_labels))
    lines.append("")
    if comparison.inputs:
        lines.append("Inputs that differ:")
        for diff in comparison.inputs:
            lines.append(f"  {diff.path}: " + " | ".join(_short(v) for v in diff.values))
    else:
        lines.append("No input differs.")
    return "\n".join(lines) + "\n"


def _short(value: Any) -> str:
    text = "—" if value is None else str(value)
    return text if len(text) <= 40 else text[:37] + "…"


# ------------------------------------------------------------------ hardware


def _price_list(args: argparse.Namespace) -> Any:
    from llm_planner.core.composition.hardware import PriceListError, load_price_list

    try:
        return load_price_list(Path(args.prices) if args.prices else None)
    except PriceListError as error:
        raise UsageError(f"argument --prices: {error}") from None


def cmd_hardware(args: argparse.Namespace) -> int:
    from llm_planner.core.composition.hardware import rank_hardware

    scenario = build_scenario(args)
    if args.price_for:
        overrides = {**scenario.price_overrides, **dict(args.price_for)}
        scenario = scenario.model_copy(update={"price_overrides": overrides})
    ranking = rank_hardware(
        scenario,
        objective=args.objective,
        tier=args.tier,
        prices=_price_list(args),
        max_gpus=args.max_gpus,
        max_counts=args.max_counts,
    )
    options = ranking.options[: args.top] if args.top else ranking.options
    if args.json:
        data = ranking.model_dump(mode="json")
        data["options"] = [o.model_dump(mode="json") for o in options]
        print_json(data)
        return 0
    if args.csv:
        writer = csv.DictWriter(
            sys.stdout, fieldnames=list(HARDWARE_COLUMNS), extrasaction="ignore"
        )
        writer.writeheader()
        writer.writerows(o.model_dump(mode="json") for o in options)
        return 0
    sys.stdout.write(format_hardware_text(scenario, ranking, options))
    return 0


def format_hardware_text(scenario: Any, ranking: Any, options: list[Any]) -> str:
    deadline = (
        units.format_duration(ranking.deadline_seconds) if ranking.deadline_seconds else "none"
    )
    lines = [
        f"{scenario.model.architecture.name}, {units.format_count(ranking.tokens)} tokens, "
        f"deadline {deadline}: {len(ranking.options)} options ranked by "
        f"{ranking.objective.replace('_', '-')} ({ranking.tier.replace('_', '-')} prices, "
        f"{ranking.seconds:.1f} s)",
        f"GPU counts: {ranking.gpu_counts_rule}.",
        f"Horizon: {ranking.horizon_rule}.",
        f"Prices: resources/prices.json of {ranking.price_list_updated.isoformat()}"
        + (f" — OUT OF DATE: {ranking.price_list_warning}" if ranking.price_list_warning else ""),
        "",
        f"{'#':>3} {'GPU':<28} {'GPUs':>6} {'time':>10} {'GPU-hours':>11} {'$/GPU-h':>8} "
        f"{'cost':>12} {'P':<1}  status / layout",
    ]
    for o in options:
        price = f"{o.price_usd_per_gpu_hour:.2f}" if o.price_usd_per_gpu_hour is not None else "—"
        lines.append(
            f"{o.rank:>3} {o.gpu_name[:28]:<28} {o.num_gpus:>6} "
            f"{format_value(o.time_seconds, 'seconds'):>10} "
            f"{format_value(o.gpu_hours, 'count'):>11} {price:>8} "
            f"{format_value(o.cost_usd, 'usd'):>12} {'*' if o.pareto else ' '}  "
            f"{o.status}: {o.layout_label}"
            + (" (price out of date)" if o.price_stale else "")
            + (f" [{'; '.join(o.flags)}]" if o.flags and o.status != "ok" else "")
        )
    lines.append("")
    lines.append("P: * on the Pareto front (no option both cheaper and faster).")
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------ sensitivity


def cmd_sensitivity(args: argparse.Namespace) -> int:
    from llm_planner.core.composition.sensitivity import sensitivity

    result = sensitivity(build_scenario(args))
    if args.json:
        print_json(result.model_dump(mode="json"))
        return 0
    lines = [
        f"Throughput: {result.throughput_source}",
        f"As is: {format_value(result.base_time_seconds, 'seconds')}, "
        f"{format_value(result.base_cost_usd, 'usd')}",
        "",
    ]
    cells = [["Input", "low → high", "time (low … high)", "cost (low … high)"]]
    for bar in result.bars:
        low, high = format_value(bar.low_value, bar.unit), format_value(bar.high_value, bar.unit)
        cost_low = format_value(bar.cost_low_usd, "usd")
        cost_high = format_value(bar.cost_high_usd, "usd")
        cells.append(
            [
                bar.label,
                f"{low} → {high}",
                f"{format_value(bar.time_low_seconds, 'seconds')} … "
                f"{format_value(bar.time_high_seconds, 'seconds')}",
                f"{cost_low} … {cost_high}" + (f"  ({bar.note})" if bar.note else ""),
            ]
        )
    widths = [max(len(r[c]) for r in cells) for c in range(4)]
    lines.extend("  ".join(x.ljust(widths[c]) for c, x in enumerate(r)).rstrip() for r in cells)
    sys.stdout.write("\n".join(lines) + "\n")
    return 0


# ------------------------------------------------------------------ prices


def cmd_prices(args: argparse.Namespace) -> int:
    prices = _price_list(args)
    today = dt.date.today()
    if args.json:
        data = prices.model_dump(mode="json")
        data["out_of_date"] = prices.staleness_message(today)
        print_json(data)
        return 0
    lines = [f"Price list updated {prices.updated.isoformat()}"]
    warning = prices.staleness_message(today)
    if warning:
        lines.append(f"OUT OF DATE: {warning}")
    lines.append("")
    for o in sorted(prices.offers, key=lambda o: (o.gpu, o.tier, o.usd_per_gpu_hour)):
        stale = "  (older than a year)" if o.is_stale(today) else ""
        lines.append(
            f"  {o.gpu:<16} {o.tier:<9} ${o.usd_per_gpu_hour:>7.3f}/GPU-h  {o.provider:<24} "
            f"{o.date.isoformat()}  {o.source}{stale}"
        )
    for gpu, why in prices.unpriced.items():
        lines.append(f"  {gpu:<16} no price: {why}")
    sys.stdout.write("\n".join(lines) + "\n")
    return 0


# ------------------------------------------------------------------ parsers


def _gpu_price(text: str) -> tuple[str, float]:
    """``GPU=PRICE``: the GPU as a catalog id or a name people type (``H100=2.10``, read as
    ``h100-sxm``), or a custom GPU's id (``custom-...``)."""
    from llm_planner.core.primitives.gpus import find_gpu

    gpu, sep, price = text.partition("=")
    gpu = gpu.strip()
    if not sep or not gpu:
        raise argparse.ArgumentTypeError(f"{text!r}: expected GPU=PRICE, e.g. h100-sxm=2.10")
    if not gpu.lower().startswith("custom"):
        try:
            gpu = find_gpu(gpu).gpu.id
        except KeyError as error:
            raise argparse.ArgumentTypeError(f"{text!r}: {error}") from None
    try:
        return gpu, units.parse_price_per_hour(price)
    except (units.UnitError, ValueError) as error:
        raise argparse.ArgumentTypeError(f"{text!r}: {error}") from None


def _objective(parser: argparse.ArgumentParser) -> None:
    from llm_planner.core.composition.hardware import OBJECTIVES, TIERS

    parser.add_argument(
        "--objective", choices=OBJECTIVES, default="cost", help="rank by (default cost)"
    )
    parser.add_argument(
        "--tier", choices=TIERS, default="on_demand", help="which prices (default on_demand)"
    )


def add_commands(commands: Any) -> None:
    """Add ``compare``, ``hardware``, ``sensitivity`` and ``prices``."""
    from llm_planner.core.composition.hardware import DEFAULT_MAX_COUNTS, DEFAULT_MAX_GPUS

    compare = commands.add_parser(
        "compare",
        help="2-4 scenarios side by side",
        description="The headline figures of 2 to 4 scenario files side by side, the "
        "differences from the first, and the input fields that differ.",
    )
    compare.add_argument("files", nargs="+", metavar="SCENARIO_FILE")
    out = compare.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="one JSON object, SI units")
    out.add_argument("--markdown", action="store_true", help="Markdown tables")
    out.add_argument("--csv", action="store_true", help="CSV, SI units")
    compare.set_defaults(handler=cmd_compare)

    hardware = commands.add_parser(
        "hardware",
        help="the cheapest hardware for the run",
        description="Every GPU kind of the catalog (and the scenario's custom GPU) at "
        "powers-of-two GPU counts, each with its fastest fitting layout from the search, "
        "priced from the price list; ranked, with those that miss the deadline or do not "
        "fit marked.",
    )
    hardware.add_argument("file", nargs="?", metavar="SCENARIO_FILE")
    _objective(hardware)
    hardware.add_argument(
        "--max-gpus",
        type=INT,
        default=DEFAULT_MAX_GPUS,
        metavar="N",
        help=f"largest GPU count tried (default {DEFAULT_MAX_GPUS:,})",
    )
    hardware.add_argument(
        "--max-counts",
        type=INT,
        default=DEFAULT_MAX_COUNTS,
        metavar="N",
        help=f"most GPU counts per GPU kind (default {DEFAULT_MAX_COUNTS})",
    )
    hardware.add_argument("--top", type=INT, metavar="N", help="print only the first N")
    hardware.add_argument("--prices", metavar="FILE", help="a price list instead of the shipped")
    hardware.add_argument(
        "--price-for",
        type=_gpu_price,
        action="append",
        metavar="GPU=PRICE",
        help="this GPU's price per GPU-hour (e.g. h100-sxm=2.10), as the scenario's "
        "price_overrides; repeatable",
    )
    hout = hardware.add_mutually_exclusive_group()
    hout.add_argument("--json", action="store_true", help="one JSON object, SI units")
    hout.add_argument("--csv", action="store_true", help="CSV with a header row")
    add_scenario_options(hardware)
    hardware.set_defaults(handler=cmd_hardware)

    sens = commands.add_parser(
        "sensitivity",
        help="how time and cost move with the main inputs",
        description="Each of the inputs that matter most moved down and up (±20%%, GPUs "
        "×½ and ×2), the scenario re-estimated: the tornado chart's figures.",
    )
    sens.add_argument("file", nargs="?", metavar="SCENARIO_FILE")
    sens.add_argument("--json", action="store_true", help="one JSON object, SI units")
    add_scenario_options(sens)
    sens.set_defaults(handler=cmd_sensitivity)

    prices = commands.add_parser(
        "prices",
        help="the price list, its sources and dates",
        description="Every price per GPU-hour with its provider, tier, source and date; "
        "flags a list or a price older than a year.",
    )
    prices.add_argument("--prices", metavar="FILE", help="a price list instead of the shipped")
    prices.add_argument("--json", action="store_true", help="the list as JSON")
    prices.set_defaults(handler=cmd_prices)
