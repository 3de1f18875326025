"""The calibration's parameters (which fields of :class:`ParallelInputs` /
:class:`TrainingInputs` a fit may move, within which bounds) and what a calibration reports:
fitted values, residuals per measurement, rate checks, measurements set aside
(:mod:`.calibration` fits them).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from llm_planner.core.inputs.calibration import Measurement
from llm_planner.core.inputs.parallelism import ParallelInputs
from llm_planner.core.inputs.training import TrainingInputs
from llm_planner.core.primitives.architecture import Architecture
from llm_planner.core.primitives.figures import Figure
from llm_planner.core.primitives.gpus import GPU
from llm_planner.core.primitives.units import count_of


@dataclass(frozen=True)
class ParameterSpec:
    """A fitted field: which inputs it lives on, its bounds, and why it is there."""

    name: str
    section: Literal["parallelism", "training"]
    lower: float
    upper: float
    meaning: str


PARAMETERS: dict[str, ParameterSpec] = {
    spec.name: spec
    for spec in (
        ParameterSpec(
            "kernel_efficiency", "parallelism", 0.05, 1.0, "achieved share of peak FLOP/s"
        ),
        ParameterSpec(
            "inter_node_efficiency", "parallelism", 0.05, 1.0, "achieved share of the network"
        ),
        ParameterSpec(
            "intra_node_efficiency", "parallelism", 0.05, 1.0, "achieved share of NVLink/PCIe"
        ),
        ParameterSpec("dp_overlap", "parallelism", 0.0, 1.0, "backward share hiding DP comm"),
        ParameterSpec("tp_overlap", "parallelism", 0.0, 0.95, "share of TP comm hidden"),
        ParameterSpec(
            "fragmentation_fraction",
            "training",
            0.0,
            1.0,
            "allocator reserve above allocated bytes",
        ),
    )
}
"""Parameters the fit knows. Any other float field of ParallelInputs / TrainingInputs can be
named too (:func:`parameter_spec` gives it bounds from the field's own constraints)."""

DEFAULT_TIME_PARAMETERS: tuple[str, ...] = (
    "kernel_efficiency",
    "inter_node_efficiency",
    "intra_node_efficiency",
    "dp_overlap",
    "tp_overlap",
)
"""Step-time parameters in the order they are taken: kernel efficiency first (it moves
every step), then the network, NVLink and the overlaps, each only when the data move it."""

DEFAULT_MEMORY_PARAMETERS: tuple[str, ...] = ("fragmentation_fraction",)
"""Peak reserved − allocated is the allocator's share; allocated bytes have no free
parameter in the ledger (a residual there is the ledger's error, shown, not fitted)."""


def parameter_spec(name: str) -> ParameterSpec:
    """The spec of ``name``: a known one, or bounds from the pydantic field's ge/gt/le."""
    if name in PARAMETERS:
        return PARAMETERS[name]
    for section, model in (("parallelism", ParallelInputs), ("training", TrainingInputs)):
        field = model.model_fields.get(name)
        if field is None:
            continue
        lower, upper = 0.0, math.inf
        for meta in field.metadata:
            for attr in ("ge", "gt"):
                if getattr(meta, attr, None) is not None:
                    lower = float(getattr(meta, attr))
            if getattr(meta, "le", None) is not None:
                upper = float(meta.le)
        default = field.default if isinstance(field.default, int | float) else 1.0
        if not math.isfinite(upper):
            upper = max(4.0 * float(default), lower + 1.0)
        if lower == 0.0 and any(getattr(m, "gt", None) is not None for m in field.metadata):
            lower = 1e-3 * upper
        return ParameterSpec(name, section, lower, upper, field.description or name)  # type: ignore[arg-type]
    raise ValueError(f"calibration: no parameter {name!r} on ParallelInputs or TrainingInputs")


# ------------------------------------------------------------------ the report


class FittedParameter(BaseModel):
    """One fitted value, where it started, its 1-σ uncertainty when the data allow one."""

    model_config = ConfigDict(frozen=True)

    name: str
    quantity: Literal["time", "memory"]
    default: float
    value: float
    uncertainty: float | None
    lower: float
    upper: float
    at_bound: bool
    meaning: str


class MeasurementResidual(BaseModel):
    """One measured quantity against the model, before and after calibration."""

    model_config = ConfigDict(frozen=True)

    index: int
    label: str
    quantity: Literal["tokens_per_s_per_gpu", "peak_allocated_bytes", "peak_reserved_bytes"]
    measured: float
    model_before: float
    model_after: float

    @property
    def error_before(self) -> float:
        return self.model_before / self.measured - 1.0

    @property
    def error_after(self) -> float:
        return self.model_after / self.measured - 1.0


class RateCheck(BaseModel):
    """A rate against the sanity band of its GPU generation, with the likely causes."""

    model_config = ConfigDict(frozen=True)

    what: str
    flops_per_gpu_per_s: float
    band_low: float
    band_high: float
    threshold: float
    below: bool
    above: bool = False
    """Above the band's top: faster than the published runs (optimistic inputs?)."""
    causes: list[str]
    band_source: str
    above_note: str = ""
    """Why a plan on this generation prices above the band (the model's assumptions there)."""

    def sentence(self) -> str:
        """The check as one line: the rate, where it sits, the likely causes or the reason."""
        rate = f"{self.what}: {self.flops_per_gpu_per_s / 1e12:.0f} TFLOP/s per GPU"
        band = f"{self.band_low / 1e12:.0f}-{self.band_high / 1e12:.0f}"
        causes = f"; likely: {'; '.join(self.causes)}" if self.causes else ""
        if self.below and self.threshold > self.band_low:
            return (
                f"{rate}, below the {self.threshold / 1e12:.0f} TFLOP/s troubleshooting "
                f"threshold (published band {band}){causes}"
            )
        if self.below:
            return f"{rate}, below the {band} band{causes}"
        note = self.above_note or "faster than the published runs (optimistic efficiencies?)"
        return f"{rate}, above the {band} band: {note}"


class SetAside(BaseModel):
    """A measured run calibration did not use because it ran another model or GPU."""

    model_config = ConfigDict(frozen=True)

    index: int
    reason: str


def belongs_to(m: Measurement, arch: Architecture, gpu: GPU) -> str | None:
    """Why ``m`` is not a run of this model on this GPU (one phrase), or None when it is.

    A step time measured on one model says nothing about another one's kernels and
    communication (the fitted efficiencies are per model and GPU), so a run of another model
    or GPU is set aside rather than fitted."""
    if m.model is not None and m.model != arch.name:
        return f"measured on {m.model}, not this scenario's {arch.name}"
    if m.gpu is not None and m.gpu != gpu.id:
        return f"measured on GPU {m.gpu}, not this scenario's {gpu.id}"
    return None


class CalibrationReport(BaseModel):
    """The ``calibration.*`` keys: parameters, residuals, which measurements, sanity checks."""

    model_config = ConfigDict(frozen=True)

    enabled: bool
    applied: bool
    measurements: list[str]
    """One line per measurement (label, layout, what was measured)."""
    used: list[int]
    """Indices of the measurements the fit used."""
    skipped: list[str]
    """Measurements (or parts) left out, each with why."""
    set_aside: list[SetAside] = Field(default_factory=list)
    """Measurements of another model or GPU, by index, each with why."""
    parameters: list[FittedParameter]
    residuals: list[dict[str, Any]]
    rms_error_before: float | None
    rms_error_after: float | None
    checks: list[RateCheck] = Field(default_factory=list)

    def figures(self) -> list[Figure]:
        """The calibration as report lines: state, each parameter, errors, band checks."""
        src = "bounded least squares on ln(model ÷ measured) (core.composition.calibration)"
        state = "off" if not self.enabled else ("applied" if self.applied else "nothing to fit")
        out = [
            Figure(
                key="state",
                label="Calibration",
                value=f"{state}: {count_of(len(self.measurements), 'measurement')}, "
                f"{len(self.used)} used"
                + (
                    f", {len(self.set_aside)} set aside (another model or GPU)"
                    if self.set_aside
                    else ""
                ),
                unit="text",
            )
        ]
        for p in self.parameters:
            sigma = f" ± {p.uncertainty:.3g}" if p.uncertainty is not None else ""
            out.append(
                Figure(
                    key=f"parameter_{p.name}",
                    label=f"  {p.name}",
                    value=f"{p.default:.3g} → {p.value:.3g}{sigma}",
                    unit="text",
                    formula=p.meaning,
                    source=src,
                )
            )
        for key, label, value in (
            ("rms_error_before", "RMS error before", self.rms_error_before),
            ("rms_error_after", "RMS error after", self.rms_error_after),
        ):
            if value is not None:
                out.append(Figure(key=key, label=label, value=value, unit="percent", source=src))
        out.extend(
            Figure(
                key="rate_check",
                label="Achieved rate",
                value=check.sentence(),
                unit="text",
                source=check.band_source,
            )
            for check in self.checks
            if check.below or check.above
        )
        out.extend(
            Figure(key="skipped", label="Not used", value=text, unit="text")
            for text in self.skipped
        )
        return out
