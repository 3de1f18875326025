"""Command-line options of the compute-budget tab beyond the basic ones: deadline and
budgets (the inverse questions), the throughput dtype, attention FLOPs and the failure
model. Each is one described field (:data:`llm_planner.core.inputs.registry.INPUTS`, group
"schedule, budget and failures"), so its option, parser and help are generated there; this
module keeps the group's place among :data:`llm_planner.cli_scenario.OPTION_GROUPS`.
"""

from __future__ import annotations

import argparse
from typing import Any

OPTION_OF_FIELD: dict[str, str] = {}
"""No hand-written options: every field's option comes from its description."""


def add_options(group: Any) -> None:
    """The compute options that are not one described field each: none."""
    del group


def apply_options(args: argparse.Namespace, base: Any, earlier: dict[str, Any]) -> dict[str, Any]:
    """The changes the hand-written compute options make: none."""
    del args, base, earlier
    return {}
