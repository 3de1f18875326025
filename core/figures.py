"""A figure: one reported number with its label, unit, formula and source.

Every section of a report lists its figures; the text report, the Markdown/CSV export and
the window's tooltips are all made from them, so a number is explained the same way
everywhere it appears.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

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
