"""Text for figures: values with units (bytes in GB and GiB) and the hover explanation.

Only presentation: every number comes from ``core``; values are written by
``core.figures.format_value``, the one formatter the report, the exports and the window share.
"""

from __future__ import annotations

import html

from llm_planner.core.primitives import units
from llm_planner.core.primitives.figures import Figure
from llm_planner.core.primitives.gpus import GPU


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


def gpu_tooltip(gpu: GPU) -> str:
    """A catalog GPU's datasheet in a few lines, for the GPU picker's items: memory, HBM
    bandwidth, dense peaks per tensor dtype, the GPU-to-GPU link, board power, where it
    sustains less than its datasheet, and the source."""
    lines = [
        f"<b>{html.escape(gpu.name)}</b>",
        f"memory {units.format_bytes(gpu.memory_bytes)}, "
        f"HBM {gpu.memory_bandwidth_bytes_per_s / 1e12:.2f} TB/s",
    ]
    peaks = [
        f"{dtype.upper()} {units.format_flops_rate(value)}"
        for dtype in ("bf16", "fp8", "fp4")
        if (value := gpu.peak_flops.for_dtype(dtype))
    ]
    if peaks:
        lines.append("dense peak: " + ", ".join(peaks))
    link = f"{gpu.link_name} {gpu.link_bandwidth_bytes_per_s / 1e9:,.0f} GB/s per direction"
    if gpu.nvlink_domain_gpus:
        link += f", {gpu.nvlink_domain_gpus} GPUs in one NVLink domain"
    lines.append(html.escape(link))
    if gpu.tdp_watts:
        lines.append(f"up to {gpu.tdp_watts:,.0f} W")
    if gpu.sustained_tensor_fraction is not None:
        lines.append(
            f"priced at {gpu.tensor_rate_fraction:.1%} of its peak, the share measured runs "
            "sustain (the evidence: llm-planner presets gpus --json, its notes)"
        )
    if gpu.source:
        lines.append(f"<i>Source:</i> {html.escape(gpu.source)}")
    return "<br>".join(lines)
