"""Text for figures: values with units (bytes in GB and GiB) and the hover explanation.

Only presentation: every number comes from ``core``; values are written by
``core.figures.format_value``, the one formatter the report, the exports and the window share.
"""

from __future__ import annotations

import html

from llm_planner.core.primitives import units
from llm_planner.core.primitives.figures import Figure


def figure_text(figure: Figure) -> str:
    """The value as every face of the app writes it (``core.figures.format_value``)."""
    return figure.text()


def figure_tooltip(figure: Figure) -> str:
    """Rich-text tooltip: label, value (GB and GiB for bytes, exact count), formula, source."""
    lines = [f"<b>{html.escape(figure.label)}</b>", html.escape(figure_text(figure))]
    value = figure.value
    number = float(value) if isinstance(value, int | float) else None
    numeric = number is not None and not isinstance(value, bool)
    if figure.unit in ("params", "tokens", "count") and numeric and abs(number or 0.0) >= 1000:
        lines.append(f"= {number:,.0f}")
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
