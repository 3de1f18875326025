"""A report's figures as Markdown, CSV or JSON, for pasting into a design doc or a sheet.

All three are made from the same place the window and ``llm-planner report`` use: each
section's ``figures()`` (label, value, unit, formula, source) and, for JSON,
:func:`llm_planner.core.composition.estimate.report_json` (the ``report --json`` object).

- **Markdown**: a title (the scenario's name, model, GPUs), then one table per section:
  figure, value in readable units, formula, source; the what-ifs the scenario plans
  (``Report.whatif``) come last, in Markdown and CSV alike.
- **CSV**: one row per figure, values in SI base units (machine-readable): ``section, key,
  label, value, unit, formula, source``. Text cells that a spreadsheet would run as a
  formula (starting with ``= + - @``, tab or carriage return) are prefixed with ``'``,
  since names and notes can come from a file someone sent.
- **JSON**: exactly the ``report --json`` object, indented.
"""

from __future__ import annotations

import csv
import io
import json
import math
from pathlib import Path
from typing import Literal

from llm_planner.core.composition.estimate import Report, report_json
from llm_planner.core.composition.scenario import Scenario
from llm_planner.core.primitives.figures import Figure

ReportFormat = Literal["markdown", "csv", "json"]

SECTION_TITLES = {
    "model": "Model",
    "compute": "Compute budget",
    "inference": "Inference memory",
    "training": "Training memory (per GPU)",
    "parallelism": "Parallelism",
    "calibration": "Calibration (measured runs)",
    "whatif": "What if",
}

_SUFFIXES: dict[str, ReportFormat] = {
    ".md": "markdown",
    ".markdown": "markdown",
    ".csv": "csv",
    ".json": "json",
}


def readable_value(figure: Figure) -> str:
    """A figure's value with its unit, for people (bytes show GB and GiB)."""
    return figure.text()


def _sections(report: Report) -> dict[str, list[Figure]]:
    """Each section's figures in display order, the planned what-ifs last."""
    out = {name: list(section.figures()) for name, section in report.sections().items()}
    if report.whatif is not None:
        out["whatif"] = report.whatif.figures()
    return out


def _md_cell(text: str) -> str:
    """Text safe inside a Markdown table cell (one line, pipes escaped).

    Leading spaces (labels of sub-items are indented) become no-break spaces, which
    Markdown keeps, so the hierarchy still shows.
    """
    text = str(text)
    indent = len(text) - len(text.lstrip(" "))
    flat = " ".join(text.split())
    return "\u00a0" * indent + flat.replace("\\", "\\\\").replace("|", "\\|")


def _title(scenario: Scenario | None, report: Report) -> str:
    if scenario is None:
        return f"LLM Planner report: {report.model.name}"
    return f"LLM Planner report: {scenario.name}"


def report_markdown(report: Report, scenario: Scenario | None = None) -> str:
    """The report as Markdown: a heading, a summary line, one table per section."""
    lines = [f"# {_md_cell(_title(scenario, report))}", ""]
    if scenario is not None:
        lines.append(
            f"Model **{_md_cell(report.model.name)}** on {scenario.num_gpus} × "
            f"{_md_cell(scenario.gpu.name)}; scenario schema v{scenario.schema_version}."
        )
        if scenario.notes.strip():
            lines += ["", "> " + _md_cell(scenario.notes)]
        lines.append("")
    for name, figures in _sections(report).items():
        lines += [f"## {SECTION_TITLES.get(name, name)}", ""]
        lines += ["| Figure | Value | Formula | Source |", "|---|---:|---|---|"]
        lines += [
            f"| {_md_cell(f.label)} | {_md_cell(readable_value(f))} | "
            f"{_md_cell(f.formula)} | {_md_cell(f.source)} |"
            for f in figures
        ]
        lines.append("")
    lines += _serving_curve_markdown(report)
    return "\n".join(lines).rstrip() + "\n"


def _serving_curve_markdown(report: Report) -> list[str]:
    """The serving curve (tokens/s per GPU against per user as concurrency grows)."""
    serving = report.inference.serving
    if serving is None or not serving.curve:
        return []
    lines = [
        f"## Serving curve ({_md_cell(serving.engine_name)}, {serving.prompt_tokens} prompt "
        f"+ {serving.output_tokens} output tokens)",
        "",
        "| Concurrent requests | Output tokens/s per GPU | Per user | TTFT | TPOT |",
        "|---:|---:|---:|---:|---:|",
    ]
    lines += [
        f"| {p.concurrency} | {p.output_tokens_per_s_per_gpu:,.0f} | "
        f"{p.output_tokens_per_s_per_user:,.1f} | {1e3 * p.ttft_seconds:,.1f} ms | "
        f"{1e3 * p.tpot_seconds:,.2f} ms |"
        for p in serving.curve
    ]
    return [*lines, ""]


def _csv_text(value: str) -> str:
    """Neutralise spreadsheet formula injection in a text cell."""
    return "'" + value if value[:1] in ("=", "+", "-", "@", "\t", "\r") else value


def _csv_value(value: float | int | bool | str | None) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return _csv_text(value)
    if isinstance(value, float) and not math.isfinite(value):
        return ""
    return repr(value)  # full precision, SI base units


def report_csv(report: Report) -> str:
    """The report as CSV: one row per figure, values in SI base units."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["section", "key", "label", "value", "unit", "formula", "source"])
    for name, figures in _sections(report).items():
        for f in figures:
            writer.writerow(
                [
                    name,
                    _csv_text(f.key),
                    _csv_text(f.label),
                    _csv_value(f.value),
                    f.unit,
                    _csv_text(f.formula),
                    _csv_text(f.source),
                ]
            )
    return buffer.getvalue()


def report_json_text(report: Report) -> str:
    """The ``report --json`` object as indented JSON text."""
    return json.dumps(report_json(report), indent=2, allow_nan=False) + "\n"


def render_report(report: Report, fmt: ReportFormat, scenario: Scenario | None = None) -> str:
    """The report in ``fmt`` ("markdown", "csv" or "json")."""
    if fmt == "markdown":
        return report_markdown(report, scenario)
    if fmt == "csv":
        return report_csv(report)
    return report_json_text(report)


def format_for_path(path: Path) -> ReportFormat:
    """The format a file name asks for (.md, .markdown, .csv, .json); ValueError otherwise."""
    fmt = _SUFFIXES.get(Path(path).suffix.lower())
    if fmt is None:
        raise ValueError(f"{path}: use a .md, .csv or .json file name for a report")
    return fmt


def export_report(
    report: Report, path: Path, scenario: Scenario | None = None, fmt: ReportFormat | None = None
) -> Path:
    """Write the report to ``path`` (atomic), in ``fmt`` or the format its suffix names."""
    from llm_planner.core.files.store import atomic_write_bytes

    chosen = fmt or format_for_path(path)
    atomic_write_bytes(Path(path), render_report(report, chosen, scenario).encode("utf-8"))
    return Path(path)
