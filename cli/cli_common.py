"""What every part of the command line shares: the one-line usage error, argparse that
reports on one line, the value parsers (human quantities into SI units), JSON and text output.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, NoReturn

from llm_planner.core.primitives import units
from llm_planner.core.primitives.figures import Figure

if TYPE_CHECKING:
    from llm_planner.core.inputs.registry import Input

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
# ArgumentTypeError whose text names what was wrong (argparse adds the option name). The
# scenario's inputs use their described parsers (:func:`input_type`); these are for the
# options of other commands (what-if, search, compare).


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


# ------------------------------------------------------------------ described inputs


class NamesHelp(str):
    """A help text ending in a catalog's names, looked up only when the help is printed.

    argparse expands a help text with ``help % params`` when it prints it; the names come
    from modules (the activation profiles import numpy) that ``--version``, ``presets`` or
    ``list`` have no use for, so building the parser must not import them.
    """

    names: Callable[[], Iterable[str]]

    def __new__(cls, text: str, names: Callable[[], Iterable[str]]) -> NamesHelp:
        help_text = super().__new__(cls, text)
        help_text.names = names
        return help_text

    def __mod__(self, params: Any) -> str:
        text: str = f"{self}: {', '.join(self.names())}" % params
        return text


def input_type(spec: Input) -> Callable[[str], Any]:
    """argparse ``type=`` for a described input: its one parser, errors on one line."""
    return _typed(spec.parse)


def add_inputs(group: Any, title: str) -> None:
    """Add the options of the described inputs (:data:`.inputs.registry.INPUTS`) listed
    under ``title``, in their order; options sharing ``exclusive`` exclude each other."""
    from llm_planner.core.inputs.registry import INPUTS

    exclusive: dict[str, Any] = {}
    for spec in INPUTS:
        if spec.flag is None or spec.group != title:
            continue
        target = group
        if spec.exclusive:
            if spec.exclusive not in exclusive:
                exclusive[spec.exclusive] = group.add_mutually_exclusive_group()
            target = exclusive[spec.exclusive]
        escaped = spec.help.replace("%", "%%")  # argparse expands help with "%"
        help_text: str = NamesHelp(escaped, spec.names) if spec.names else escaped
        if spec.kind == "switch":
            action: Any = argparse.BooleanOptionalAction if spec.negatable else "store_true"
            target.add_argument(spec.flag, action=action, default=None, help=help_text)
        elif spec.kind == "choice":
            target.add_argument(spec.flag, metavar=spec.metavar or "ID", help=help_text)
        else:
            assert spec.unit is not None  # a typed input has a unit
            target.add_argument(
                spec.flag,
                type=input_type(spec),
                metavar=spec.metavar or spec.unit.metavar,
                action="append" if spec.repeat else "store",
                help=help_text,
            )


def input_changes(args: argparse.Namespace) -> dict[str, Any]:
    """``{path: value}`` for every described input given on the command line (and the
    fields each sets with it), for :func:`.inputs.scenario.with_changes`."""
    from llm_planner.core.inputs.registry import INPUTS

    changes: dict[str, Any] = {}
    for spec in INPUTS:
        value = getattr(args, spec.dest, None) if spec.flag else None
        if value is None:
            continue
        if spec.repeat:  # one list from every time the option was given
            value = [item for given in value for item in given]
        changes.update(spec.also)
        changes[spec.path] = value
    return changes


def input_options() -> dict[str, str]:
    """The option that sets each described field (validation errors name it)."""
    from llm_planner.core.inputs.registry import INPUTS

    out: dict[str, str] = {}
    for spec in INPUTS:
        option = spec.flag or spec.cli.split(" ", 1)[0]
        if option:
            out[spec.path] = option
    return out


def echo_reading(option: str, reading: str | None) -> None:
    """Say on stderr how an option's value was read when it was not taken literally
    (``--gpu H100`` → ``h100-sxm``; ``--precision bf16`` → ``mixed_bf16``), so a name
    people type never silently picks an entry; stdout (the report, ``--json``) is left
    as it is."""
    if reading:
        sys.stderr.write(f"llm-planner: {option}: {reading}\n")
