"""Command-line options of the serving workload (issue 30): prompt and output tokens, the
concurrent requests (a number or ``max``: as many as KV memory and the engine allow) and
the serving engine. Each writes one field of ``scenario.inference``; the figures print
under "Inference memory" and in ``report --json`` under ``inference.serving``.
"""

from __future__ import annotations

import argparse
from typing import Any

from llm_planner.cli_common import input_type
from llm_planner.core.inputs.registry import input_at
from llm_planner.core.quantities.engines import ENGINE_IDS

OPTION_OF_FIELD = {
    "inference.batch": "--batch",
    "inference.batch_max": "--batch",
    "inference.prompt_tokens": "--prompt-tokens",
    "inference.output_tokens": "--output-tokens",
    "inference.engine": "--engine",
}


def _batch(text: str) -> int | str:
    """``max`` or a count of concurrent requests, read as the window's Batch row reads it
    (the described input's unit)."""
    if text.strip().lower() == "max":
        return "max"
    value: int = input_type(input_at("inference.batch"))(text)
    return value


def _described(flag: str, path: str) -> tuple[str, dict[str, Any]]:
    """An option read by the described input's parser (the window's row reads the same)."""
    spec = input_at(path)
    return flag, {
        "type": input_type(spec),
        "metavar": spec.unit.metavar if spec.unit else "N",
        "help": spec.help,
    }


def add_options(parser: Any) -> None:
    """The serving option group of ``report``. An option a command already defines is left
    to it (``whatif --prompt-tokens`` is the RL rollouts' prompt, which is also the
    serving workload's)."""
    group = parser
    taken = {flag for action in parser._actions for flag in action.option_strings}
    options: list[tuple[str, dict[str, Any]]] = [
        (
            "--batch",
            {
                "type": _batch,
                "metavar": "N|max",
                "help": "concurrent requests (sequences); max: as many as KV memory and the "
                "engine allow",
            },
        ),
        _described("--prompt-tokens", "inference.prompt_tokens"),
        _described("--output-tokens", "inference.output_tokens"),
        ("--engine", {"choices": ENGINE_IDS, "help": input_at("inference.engine").help}),
    ]
    for flag, spec in options:
        if flag not in taken:
            group.add_argument(flag, **spec)


def apply_options(args: argparse.Namespace, base: Any, earlier: dict[str, Any]) -> dict[str, Any]:
    """The changes the given serving options make (dotted paths)."""
    del base, earlier
    changes: dict[str, Any] = {}
    batch = getattr(args, "batch", None)
    if batch == "max":
        changes["inference.batch_max"] = True
    elif batch is not None:
        changes["inference.batch"] = batch
        changes["inference.batch_max"] = False
    for option, path in (
        ("prompt_tokens", "inference.prompt_tokens"),
        ("output_tokens", "inference.output_tokens"),
        ("engine", "inference.engine"),
    ):
        value = getattr(args, option, None)
        if value is not None:
            changes[path] = value
    return changes
