"""Command-line options of the compute-budget tab beyond the basic ones in
:mod:`llm_planner.cli_scenario`: deadline and budgets (the inverse questions), the
throughput dtype, attention FLOPs, and the failure model. Each writes one field of
``scenario.compute``.
"""

from __future__ import annotations

import argparse
from typing import Any

from llm_planner.cli_common import COUNT, DURATION, USD, set_path

OPTION_OF_FIELD = {
    "compute.deadline_seconds": "--deadline",
    "compute.budget_usd": "--budget-usd",
    "compute.budget_flops": "--budget-flops",
    "compute.compute_dtype": "--compute-dtype",
    "compute.include_attention_flops": "--attention-flops",
    "compute.failures.gpu_failures_per_hour": "--failure-rate",
    "compute.failures.checkpoint_write_seconds": "--checkpoint-seconds",
    "compute.failures.restart_seconds": "--restart-seconds",
}


def add_options(parser: argparse.ArgumentParser) -> None:
    """The compute-budget option group of ``report``."""

    group = parser.add_argument_group("schedule, budget and failures")
    group.add_argument(
        "--deadline",
        type=DURATION,
        metavar="TIME",
        help="time the run must finish in (e.g. 30days, 720h): the smallest "
        "deployment meeting it and the largest compute-optimal model",
    )
    group.add_argument(
        "--budget-usd",
        type=USD,
        metavar="USD",
        help="a budget in dollars: the largest compute-optimal model it buys",
    )
    group.add_argument(
        "--budget-flops",
        type=COUNT,
        metavar="FLOP",
        help="a compute budget in FLOP (e.g. 1e24) for Chinchilla sizing",
    )
    group.add_argument(
        "--compute-dtype",
        metavar="D",
        help="dtype whose peak sets the throughput (bf16, fp8, tf32, ...)",
    )
    group.add_argument(
        "--attention-flops",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="count attention-score FLOPs in compute.flops_total (PaLM model "
        "FLOPs) instead of 6·P·D",
    )
    group.add_argument(
        "--failure-rate",
        type=COUNT,
        metavar="PER_GPU_HOUR",
        help="interruptions per GPU-hour (default: Llama 3's 16k-GPU run)",
    )
    group.add_argument(
        "--checkpoint-seconds",
        type=DURATION,
        metavar="TIME",
        help="time the job pauses to write one checkpoint",
    )
    group.add_argument(
        "--restart-seconds",
        type=DURATION,
        metavar="TIME",
        help="time to detect a failure, reschedule and reload",
    )


def apply_options(data: dict[str, Any], args: argparse.Namespace) -> None:
    """Write the given options into the scenario dict (validated afterwards as a whole)."""
    values = {
        "compute.deadline_seconds": getattr(args, "deadline", None),
        "compute.budget_usd": getattr(args, "budget_usd", None),
        "compute.budget_flops": getattr(args, "budget_flops", None),
        "compute.compute_dtype": getattr(args, "compute_dtype", None),
        "compute.include_attention_flops": getattr(args, "attention_flops", None),
        "compute.failures.gpu_failures_per_hour": getattr(args, "failure_rate", None),
        "compute.failures.checkpoint_write_seconds": getattr(args, "checkpoint_seconds", None),
        "compute.failures.restart_seconds": getattr(args, "restart_seconds", None),
    }
    for path, value in values.items():
        if value is not None:
            set_path(data, path, value)
