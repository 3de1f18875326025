"""``llm-planner serve-plan``: the cheapest GPU and replica size serving N concurrent users
at a latency target (issue 30), from :mod:`llm_planner.core.composition.serving_plan`, on
the scenario's serving workload (the options of :mod:`llm_planner.cli_serving`). The
window's Compare-and-choose "Cheapest serving" tab shows the same plan.
"""

from __future__ import annotations

import argparse
import csv
import sys
from typing import Any

from llm_planner.cli_common import INT, _typed, print_json
from llm_planner.cli_compare import _gpu_price, _price_list
from llm_planner.cli_scenario import add_scenario_options, build_scenario

SERVE_PLAN_COLUMNS = (
    "gpu_id",
    "gpu_name",
    "gpus_per_replica",
    "status",
    "concurrency_per_replica",
    "replicas",
    "total_gpus",
    "tpot_seconds",
    "ttft_seconds",
    "usd_per_hour",
    "usd_per_million_output_tokens",
    "price_source",
)


def _users(text: str) -> int:
    from llm_planner.core.composition.serving_plan import parse_users

    return parse_users(text)


def _latency(text: str) -> float:
    from llm_planner.core.composition.serving_plan import parse_latency

    return parse_latency(text)


def cmd_serve_plan(args: argparse.Namespace) -> int:
    from llm_planner.core.composition.serving_plan import plan_serving

    scenario = build_scenario(args)
    if args.price_for:
        overrides = {**scenario.price_overrides, **dict(args.price_for)}
        scenario = scenario.model_copy(update={"price_overrides": overrides})
    plan = plan_serving(
        scenario,
        args.users,
        args.tpot,
        ttft_target_seconds=args.ttft,
        tier=args.tier,
        prices=_price_list(args),
    )
    options = plan.options[: args.top] if args.top else plan.options
    if args.json:
        data = plan.model_dump(mode="json")
        data["options"] = [o.model_dump(mode="json") for o in options]
        print_json(data)
        return 0
    if args.csv:
        writer = csv.DictWriter(sys.stdout, fieldnames=list(SERVE_PLAN_COLUMNS))
        writer.writeheader()
        writer.writerows(o.model_dump(mode="json") for o in options)
        return 0
    sys.stdout.write(format_serve_plan_text(scenario, plan, options))
    return 0


def _ms(seconds: float | None) -> str:
    return "—" if seconds is None else f"{1e3 * seconds:,.1f} ms"


def _usd(value: float | None, digits: int = 2) -> str:
    return "—" if value is None else f"{value:,.{digits}f}"


def format_serve_plan_text(scenario: Any, plan: Any, options: list[Any]) -> str:
    from llm_planner.core.quantities.engines import get_engine

    ttft = f", TTFT ≤ {_ms(plan.ttft_target_seconds)}" if plan.ttft_target_seconds else ""
    lines = [
        f"{scenario.model.architecture.name} on {get_engine(plan.engine).name}: "
        f"{plan.users:,} concurrent users of {plan.prompt_tokens:,} + "
        f"{plan.output_tokens:,} tokens at TPOT ≤ {_ms(plan.tpot_target_seconds)}{ttft}; "
        f"{len(plan.options)} options, cheapest first",
        "",
        f"{'#':>3} {'GPU':<28} {'GPUs/rep':>8} {'users/rep':>9} {'replicas':>8} "
        f"{'GPUs':>6} {'TPOT':>10} {'TTFT':>10} {'$/hour':>10} {'$/M out':>8}  status",
    ]
    for rank, o in enumerate(options, 1):
        fits = o.status in {"ok", "no price"}
        lines.append(
            f"{rank:>3} {o.gpu_name[:28]:<28} {o.gpus_per_replica:>8} "
            f"{o.concurrency_per_replica if fits else '—':>9} "
            f"{o.replicas if fits else '—':>8} {o.total_gpus if fits else '—':>6} "
            f"{_ms(o.tpot_seconds):>10} {_ms(o.ttft_seconds):>10} "
            f"{_usd(o.usd_per_hour):>10} {_usd(o.usd_per_million_output_tokens, 3):>8}  "
            f"{o.status}"
        )
    lines.append("")
    if plan.best is None:
        lines.append("No priced option meets the targets.")
    else:
        b = plan.best
        lines.append(
            f"Cheapest: {b.replicas:,} replica{'' if b.replicas == 1 else 's'} of "
            f"{b.gpus_per_replica} × {b.gpu_name}, "
            f"{b.concurrency_per_replica:,} users each: ${_usd(b.usd_per_hour)}/h, "
            f"${_usd(b.usd_per_million_output_tokens, 3)} per million output tokens "
            f"({b.price_source})."
        )
    lines.append(
        "users/rep: the most concurrent requests one replica serves within the targets; "
        "$/M out: $ per million output tokens."
    )
    return "\n".join(lines) + "\n"


def add_commands(commands: Any) -> None:
    """Add ``serve-plan``."""
    from llm_planner.core.composition.hardware import TIERS

    plan = commands.add_parser(
        "serve-plan",
        help="the cheapest GPU and replica size serving N users at a latency target",
        description="Every GPU kind of the catalog (and the scenario's custom GPU) at 1, 2, "
        "4 and 8 GPUs per replica: the most concurrent requests one replica serves within "
        "the time-per-output-token target (and time to first token, if given) under the "
        "scenario's engine and workload (--engine, --prompt-tokens, --output-tokens), the "
        "replicas N users need, $ per hour and $ per million output tokens; cheapest "
        "first, those that miss the target, do not fit or have no price marked.",
    )
    plan.add_argument("file", nargs="?", metavar="SCENARIO_FILE")
    plan.add_argument(
        "--users",
        type=_typed(_users),
        required=True,
        metavar="N",
        help="concurrent users (requests)",
    )
    plan.add_argument(
        "--tpot",
        type=_typed(_latency),
        required=True,
        metavar="TIME",
        help="time per output token at most (e.g. 50ms; a bare number is seconds)",
    )
    plan.add_argument(
        "--ttft",
        type=_typed(_latency),
        metavar="TIME",
        help="time to first token at most (e.g. 2s)",
    )
    plan.add_argument(
        "--tier", choices=TIERS, default="on_demand", help="which prices (default on_demand)"
    )
    plan.add_argument("--top", type=INT, metavar="N", help="print only the first N")
    plan.add_argument("--prices", metavar="FILE", help="a price list instead of the shipped")
    plan.add_argument(
        "--price-for",
        type=_gpu_price,
        action="append",
        metavar="GPU=PRICE",
        help="this GPU's price per GPU-hour (e.g. h100-sxm=2.10); repeatable",
    )
    out = plan.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="one JSON object, SI units")
    out.add_argument("--csv", action="store_true", help="CSV with a header row")
    add_scenario_options(plan)
    plan.set_defaults(handler=cmd_serve_plan)
