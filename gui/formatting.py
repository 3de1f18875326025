"""Text for figures: values with units (bytes in GB and GiB) and the hover explanation.

Only presentation: every number comes from ``core``; conversion goes through
``core.units``.
"""

from __future__ import annotations

import html
from collections.abc import Callable
from typing import Any

from llm_planner.core import units
from llm_planner.core.figures import Figure

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
    "count": lambda v: f"{v:,.0f}" if v.is_integer() else f"{v:,.3g}",
}


def format_value(value: Any, unit: str) -> str:
    """A value as text with its unit; bytes show GB and GiB."""
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, str):
        return value
    number = float(value)
    formatter = _FORMATTERS.get(unit)
    return formatter(number) if formatter else f"{number:g}"


def figure_text(figure: Figure) -> str:
    return format_value(figure.value, figure.unit)


def figure_tooltip(figure: Figure) -> str:
    """Rich-text tooltip: label, value (GB and GiB for bytes, exact count), formula, source."""
    lines = [f"<b>{html.escape(figure.label)}</b>", html.escape(figure_text(figure))]
    value = figure.value
    numeric = isinstance(value, int | float) and not isinstance(value, bool)
    if figure.unit in ("params", "tokens", "count") and numeric and abs(float(value)) >= 1000:
        lines.append(f"= {float(value):,.0f}")
    if figure.unit == "bytes" and isinstance(value, int | float) and not isinstance(value, bool):
        number = float(value)
        lines.append(
            f"= {number / units.GB:,.3f} GB = {number / units.GiB:,.3f} GiB = {number:,.0f} bytes"
        )
    if figure.formula:
        lines.append(f"<i>Formula:</i> {html.escape(figure.formula)}")
    if figure.source:
        lines.append(f"<i>Source:</i> {html.escape(figure.source)}")
    return "<br>".join(lines)


def bytes_tooltip(label: str, value: float, formula: str = "", source: str = "") -> str:
    """Tooltip for a bar segment of ``value`` bytes."""
    return figure_tooltip(
        Figure(key=label, label=label, value=value, unit="bytes", formula=formula, source=source)
    )
