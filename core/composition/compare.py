"""Scenarios side by side: the headline figures aligned, their differences, the input diff.

:func:`compare` estimates 2–4 scenarios (:func:`~llm_planner.core.composition.estimate.
estimate`, each once) and lines up the figures a choice turns on: parameters, tokens,
FLOPs, time, GPU-hours, cost, peak memory per GPU, MFU and tokens/s. The first scenario is
the baseline: each other value carries its difference (value − baseline) and its ratio
(value ÷ baseline − 1). :func:`input_diff` lists the input fields whose values differ
(dotted paths into the scenario file), so a reader sees *why* the figures moved.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from llm_planner.core.composition.estimate import Report, estimate
from llm_planner.core.composition.scenario import Scenario
from llm_planner.core.primitives.figures import Unit, format_value

MIN_SCENARIOS = 2
MAX_SCENARIOS = 4

RELATIVE_TOLERANCE = 1e-9
"""Values closer than this (relative) count as equal: not highlighted as a difference."""

NOT_INPUTS = frozenset({"schema_version", "app_version", "name", "notes", "created", "modified"})
"""Scenario fields that are not inputs of any estimate (left out of the input diff)."""

MEMORY_COMPONENTS: tuple[tuple[str, str], ...] = (
    ("weights", "weights_bytes"),
    ("gradients", "gradients_bytes"),
    ("optimizer", "optimizer_bytes"),
    ("activations", "activations_bytes"),
    ("temporaries", "temporary_bytes"),
    ("overhead", "overhead_bytes"),
)
"""Training memory per GPU by component (the training section's fields), stacking order."""


def _get(path: str) -> Callable[[Report], Any]:
    section, key = path.split(".")
    return lambda report: getattr(getattr(report, section), key)


HEADLINE: tuple[tuple[str, str, Unit, str], ...] = (
    # key, label, unit, report path
    ("params_total", "Parameters", "params", "model.params_total"),
    ("params_active", "Parameters (active)", "params", "model.params_active"),
    ("tokens", "Training tokens", "tokens", "compute.tokens"),
    ("flops_total", "Training FLOPs", "flop", "compute.flops_total"),
    ("num_gpus", "GPUs", "count", "compute.num_gpus"),
    ("wall_seconds", "Time (wall clock)", "seconds", "compute.wall_seconds"),
    ("gpu_hours", "GPU-hours", "count", "compute.gpu_hours"),
    ("cost_usd", "Cost", "usd", "compute.cost_usd"),
    ("peak_bytes", "Peak memory per GPU", "bytes", "training.peak_bytes"),
    ("mfu", "MFU", "percent", "compute.mfu"),
    ("tokens_per_s", "Tokens/s", "tokens/s", "compute.tokens_per_s"),
)
"""The aligned rows: each a figure every report has, read from its one producer."""


class CompareRow(BaseModel):
    """One headline figure across the scenarios."""

    model_config = ConfigDict(frozen=True)

    key: str
    label: str
    unit: Unit
    source: str = Field(description="where the value comes from: report section.key")
    values: list[float | None]
    differences: list[float | None] = Field(description="value − baseline (first is 0)")
    ratios: list[float | None] = Field(description="value ÷ baseline − 1 (first is 0)")
    differs: list[bool] = Field(description="differs from the baseline (beyond rounding)")

    def texts(self) -> list[str]:
        return [format_value(v, self.unit) for v in self.values]


class InputDifference(BaseModel):
    """One input field whose value is not the same in every scenario."""

    model_config = ConfigDict(frozen=True)

    path: str
    values: list[Any] = Field(description="per scenario; None where the field is absent")


class MemoryBars(BaseModel):
    """Training memory per GPU by component for one scenario, with its capacity."""

    model_config = ConfigDict(frozen=True)

    components: dict[str, float]
    peak_bytes: float
    capacity_bytes: float


class Comparison(BaseModel):
    """2–4 scenarios side by side."""

    model_config = ConfigDict(frozen=True)

    names: list[str]
    rows: list[CompareRow]
    inputs: list[InputDifference]
    memory: list[MemoryBars]
    memory_axis_bytes: float = Field(description="one shared axis: the largest peak or capacity")
    throughput_labels: list[str]
    not_priced: list[str | None] = Field(
        default_factory=list,
        description="per scenario: why time, cost and MFU are null (the throughput label: "
        "the plan does not fit, or a rate above the peak); None when priced",
    )
    fits: list[bool] = Field(
        default_factory=list, description="per scenario: the training peak fits the GPU"
    )

    def row(self, key: str) -> CompareRow:
        return next(r for r in self.rows if r.key == key)

    def as_json(self) -> dict[str, Any]:
        """The ``compare --json`` object (values in SI base units)."""
        return self.model_dump(mode="json")


def _equal(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return a is b
    return math.isclose(a, b, rel_tol=RELATIVE_TOLERANCE, abs_tol=0.0)


def _flatten(data: Any, prefix: str = "") -> dict[str, Any]:
    """A dict as dotted paths to its leaves (lists are leaves: compared whole)."""
    if not isinstance(data, dict):
        return {prefix: data}
    out: dict[str, Any] = {}
    for key, value in data.items():
        path = f"{prefix}.{key}" if prefix else str(key)
        if isinstance(value, dict) and value:
            out.update(_flatten(value, path))
        else:
            out[path] = value
    return out


def input_diff(scenarios: list[Scenario]) -> list[InputDifference]:
    """The input fields (dotted paths, as in the scenario file) that differ, in file order.

    Name, notes, dates and versions are not inputs and are left out."""
    flat = [
        _flatten({k: v for k, v in s.model_dump(mode="json").items() if k not in NOT_INPUTS})
        for s in scenarios
    ]
    paths: list[str] = []
    for f in flat:
        paths.extend(p for p in f if p not in paths)
    diffs = []
    for path in paths:
        values = [f.get(path) for f in flat]
        if any(v != values[0] for v in values[1:]):
            diffs.append(InputDifference(path=path, values=values))
    return diffs


def _memory(report: Report) -> MemoryBars:
    t = report.training
    return MemoryBars(
        components={name: float(getattr(t, field)) for name, field in MEMORY_COMPONENTS},
        peak_bytes=float(t.peak_bytes),
        capacity_bytes=float(t.capacity_bytes),
    )


def compare(scenarios: list[Scenario], reports: list[Report] | None = None) -> Comparison:
    """2–4 scenarios side by side; the first is the baseline of every difference.

    ``reports`` (one per scenario) skips re-estimating when the caller has them. Raises
    ValueError naming the count when there are fewer than 2 or more than 4.
    """
    if not MIN_SCENARIOS <= len(scenarios) <= MAX_SCENARIOS:
        raise ValueError(
            f"scenarios: compare takes {MIN_SCENARIOS} to {MAX_SCENARIOS}, got {len(scenarios)}"
        )
    reports = reports if reports is not None else [estimate(s) for s in scenarios]
    rows = []
    for key, label, unit, path in HEADLINE:
        read = _get(path)
        values = [None if (v := read(r)) is None else float(v) for r in reports]
        base = values[0]
        differences = [None if v is None or base is None else v - base for v in values]
        ratios = [None if v is None or base is None or base == 0 else v / base - 1 for v in values]
        rows.append(
            CompareRow(
                key=key,
                label=label,
                unit=unit,
                source=path,
                values=values,
                differences=differences,
                ratios=ratios,
                differs=[not _equal(v, base) for v in values],
            )
        )
    memory = [_memory(r) for r in reports]
    axis = max(max(m.peak_bytes, m.capacity_bytes) for m in memory)
    return Comparison(
        names=[s.name for s in scenarios],
        rows=rows,
        inputs=input_diff(scenarios),
        memory=memory,
        memory_axis_bytes=axis,
        throughput_labels=[r.compute.throughput_label for r in reports],
        not_priced=[
            r.compute.throughput_label if r.compute.wall_seconds is None else None for r in reports
        ],
        fits=[bool(r.training.fits) for r in reports],
    )


def duplicate_as_variant(scenario: Scenario, name: str | None = None) -> Scenario:
    """A copy of ``scenario`` to edit as a what-if: the same inputs, named ``name`` or
    ``"<name> (variant)"``."""
    return scenario.model_copy(update={"name": name or f"{scenario.name} (variant)"})


def comparison_markdown(comparison: Comparison) -> str:
    """The comparison as Markdown tables (headline figures, then the input diff)."""
    names = comparison.names
    head = "| Figure | " + " | ".join(names) + " |"
    rule = "|---|" + "---:|" * len(names)
    lines = [head, rule]
    for row in comparison.rows:
        cells = []
        for i, text in enumerate(row.texts()):
            ratio = row.ratios[i]
            marked = i and row.differs[i] and ratio is not None
            cells.append(
                f"**{text}** ({100 * ratio:+.1f}%)" if marked and ratio is not None else text
            )
        lines.append(f"| {row.label} | " + " | ".join(cells) + " |")
    lines.append("")
    lines.append("| Input | " + " | ".join(names) + " |")
    lines.append("|---|" + "---|" * len(names))
    for diff in comparison.inputs:
        lines.append(f"| `{diff.path}` | " + " | ".join(_cell(v) for v in diff.values) + " |")
    if not comparison.inputs:
        lines.append("| (no input differs) |" + " |" * len(names))
    return "\n".join(lines) + "\n"


def _cell(value: Any) -> str:
    text = "—" if value is None else str(value)
    return text if len(text) <= 60 else text[:57] + "…"


def comparison_csv_rows(comparison: Comparison) -> list[list[str]]:
    """CSV rows: a header, one row per figure (SI values, then differences), the inputs."""
    names = comparison.names
    rows = [["section", "key", "label", "unit", *names, *(f"diff {n}" for n in names[1:])]]
    for row in comparison.rows:
        rows.append(
            [
                "figure",
                row.key,
                row.label,
                row.unit,
                *("" if v is None else repr(v) for v in row.values),
                *("" if d is None else repr(d) for d in row.differences[1:]),
            ]
        )
    for diff in comparison.inputs:
        rows.append(
            ["input", diff.path, diff.path, "", *("" if v is None else str(v) for v in diff.values)]
        )
    return rows
