"""A figure: one reported number with its label, unit, formula and source.

Every section of a report lists its figures; the text report, the Markdown/CSV export and
the window's tooltips are all made from them, so a number is explained the same way
everywhere it appears.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Literal

from pydantic import BaseModel, ConfigDict

from llm_planner.core.primitives import units

Unit = Literal[
    "bytes",
    "flop",
    "flop/s",
    "seconds",
    "usd",
    "usd/h",
    "count",
    "params",
    "tokens",
    "tokens/s",
    "ratio",
    "percent",
    "bool",
    "text",
]


class Figure(BaseModel):
    """One reported value. ``key`` is its JSON key inside its section."""

    model_config = ConfigDict(frozen=True)

    key: str
    label: str
    value: float | int | bool | str | None
    unit: Unit
    formula: str = ""
    source: str = ""

    def text(self) -> str:
        """The value with its unit, for people (see :func:`format_value`)."""
        return format_value(self.value, self.unit)


def _format_count(value: float) -> str:
    if value.is_integer() or abs(value) >= 1000:
        return f"{value:,.0f}"
    return f"{value:.3g}"


_FORMATTERS: dict[str, Callable[[float], str]] = {
    "bytes": units.format_bytes,
    "flop": units.format_flop,
    "flop/s": units.format_flops_rate,
    "seconds": units.format_duration,
    "usd": units.format_usd,
    "usd/h": lambda v: f"{units.format_usd(v)}/h",
    "params": units.format_count,
    "tokens": units.format_count,
    "tokens/s": lambda v: f"{units.format_count(v)} tokens/s",
    "ratio": lambda v: f"{v:.3g}",
    "percent": lambda v: f"{100 * v:.1f}%",
    "count": _format_count,
}


def format_value(value: float | int | bool | str | None, unit: str) -> str:
    """A value as text with its unit: bytes in GB and GiB, durations in their natural
    unit, money in $, counts with separators; ``—`` for a missing or non-finite value.
    The one formatter the text report, the exports and the window all use."""
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, str):
        return value
    number = float(value)
    if not math.isfinite(number):
        return "—"
    formatter = _FORMATTERS.get(unit)
    return formatter(number) if formatter else f"{number:g}"
