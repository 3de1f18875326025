"""What every part of the command line shares: the one-line usage error, argparse that
reports on one line, the value parsers (human quantities into SI units), JSON and text output.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from typing import Any, NoReturn

from llm_planner.core.primitives import units
from llm_planner.core.primitives.figures import Figure

EXIT_USAGE = 2


class UsageError(Exception):
    """A bad argument or input file: printed as one line, exit status 2.

    The message is flattened to one line of printable characters (a name or value from a
    received file must not rewrite the terminal) and shortened to 400 characters.
    """

    def __init__(self, message: object = "") -> None:
        text = units.clean_text(str(message))
        super().__init__(text if len(text) <= 400 else text[:399] + "…")


class Parser(argparse.ArgumentParser):
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


def _positive_length(text: str) -> int:
    value = units.parse_length(text)
    if value < 1:
        raise ValueError(f"{text!r} must be at least 1")
    return value


COUNT = _typed(units.parse_count)
INT = _typed(_positive_int)
LENGTH = _typed(_positive_length)
"""A sequence length, context or GPU count: ``k`` = 1024 (``8k`` → 8192)."""
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


def print_json(data: Any) -> None:
    json.dump(data, sys.stdout, indent=2, sort_keys=False, allow_nan=False)
    sys.stdout.write("\n")


def set_path(data: dict[str, Any], path: str, value: Any) -> None:
    """Set ``data["a"]["b"] = value`` for ``path`` "a.b"."""
    *parents, leaf = path.split(".")
    node = data
    for key in parents:
        node = node.setdefault(key, {})
    node[leaf] = value


def echo_reading(option: str, reading: str | None) -> None:
    """Say on stderr how an option's value was read when it was not taken literally
    (``--gpu H100`` → ``h100-sxm``; ``--precision bf16`` → ``mixed_bf16``), so a name
    people type never silently picks an entry; stdout (the report, ``--json``) is left
    as it is."""
    if reading:
        sys.stderr.write(f"llm-planner: {option}: {reading}\n")
