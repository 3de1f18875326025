"""Calibration: measured runs as data, and a bounded least-squares fit of the step-time and
memory models' few interpretable parameters to them.

The seed's method is to benchmark the architecture on the intended hardware and stack and
divide the compute by the measured throughput. This module closes that loop for the layout
model: a :class:`Measurement` is a layout plus what was measured (step time or tokens/s,
TFLOP/s or MFU with the formula the framework used, peak memory allocated and/or
reserved); :func:`calibrate` fits named fields of :class:`ParallelInputs` /
:class:`TrainingInputs` (kernel efficiency, achieved link fractions, overlaps, allocator
fragmentation…) to them, and the calibrated inputs replace the scenario's so every tab, the
search and the scaling curve use the calibrated model (:func:`calibrate_scenario`).

The fit (numpy only): residual r_i = ln(model_i / measured_i) per measured quantity (a
relative error, the same weight for a 1-GPU and a 1,000-GPU run); parameters mapped to
u ∈ [0, 1] between their bounds; Levenberg–Marquardt steps (Marquardt 1963, SIAM J. Appl.
Math. 11(2)) with the bound-active parameters frozen for the step (projected), Jacobian by
finite differences. Parameters are taken in priority order only when the data move them
and they add a new direction (rank of the Jacobian grows), never more than there are data:
one measurement fits one parameter per quantity. Uncertainty from the linearised
covariance s²·(JᵀJ)⁻¹, s² = Σr²/(n − k) (Press et al., Numerical Recipes 3rd ed. §15.5),
only when n > k; an exactly determined fit has none.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, ConfigDict, Field

from llm_planner.core.inputs.calibration import CalibrationInputs, FlopsFormula, Measurement
from llm_planner.core.inputs.parallelism import ParallelInputs
from llm_planner.core.inputs.scenario import Scenario
from llm_planner.core.inputs.training import TrainingInputs
from llm_planner.core.primitives.architecture import Architecture, count_parameters
from llm_planner.core.primitives.figures import Figure
from llm_planner.core.primitives.gpus import GPU
from llm_planner.core.sections.parallelism.layout import (
    resolve_layout,
)
from llm_planner.core.sections.parallelism.memory import training_memory
from llm_planner.core.sections.parallelism.step_time import (
    TIME_PARTS,
    evaluate_layouts,
    step_inputs_of,
)
from llm_planner.core.sections.parallelism.workload import cluster_of, workload_of

FloatArray = npt.NDArray[np.float64]


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
                value=f"{state}: {len(self.measurements)} measurement(s), {len(self.used)} used"
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


# ------------------------------------------------------------------ measured quantities


def published_flops_per_token(
    formula: FlopsFormula, arch: Architecture, seq_len: int, params: float, app_count: float
) -> float:
    """FLOPs per token of ``formula`` (:data:`FlopsFormula`)."""
    if formula == "6P":
        return 6.0 * params
    if formula == "6P_attention":
        return 6.0 * params + 12.0 * arch.layers * arch.heads * arch.head_dim * seq_len
    if formula == "megatron_hw_full":
        h, layers, vocab = float(arch.hidden_size), arch.layers, float(arch.vocab_size)
        return 96.0 * layers * h * h * (1 + seq_len / (6 * h) + vocab / (16 * layers * h))
    return app_count


def measured_tokens_per_s_per_gpu(
    m: Measurement,
    *,
    global_batch: int,
    seq_len: int,
    arch: Architecture,
    params: float,
    app_flops_per_token: float,
    gpu_peak: float,
) -> tuple[float | None, str]:
    """The run's tokens/s per GPU from whichever figure it carries, and which one.

    Order: tokens/s per GPU; total tokens/s ÷ GPUs; global batch · s ÷ step time ÷ GPUs;
    TFLOP/s (or MFU × peak) ÷ the framework's FLOPs/token. A rate without its formula is
    not turned into tokens/s (returns None with the reason)."""
    if m.tokens_per_s_per_gpu:
        return m.tokens_per_s_per_gpu, "tokens/s per GPU"
    if m.tokens_per_s:
        return m.tokens_per_s / m.gpus, "tokens/s ÷ GPUs"
    if m.step_seconds:
        return global_batch * seq_len / m.step_seconds / m.gpus, "global batch · s ÷ step time"
    rate = m.flops_per_gpu_per_s
    if rate is None and m.mfu is not None:
        rate = m.mfu * (m.mfu_peak_flops or gpu_peak)
    if rate is None:
        return None, "no step time, tokens/s, TFLOP/s or MFU"
    if m.flops_formula is None:
        return None, "TFLOP/s or MFU without the FLOP formula the framework used"
    per_token = published_flops_per_token(
        m.flops_formula, arch, seq_len, params, app_flops_per_token
    )
    return rate / per_token, f"FLOP/s ÷ {m.flops_formula} FLOPs/token"


# ------------------------------------------------------------------ the fit


@dataclass
class _Case:
    """One measurement made ready for repeated pricing."""

    index: int
    label: str
    parallel: ParallelInputs
    training: TrainingInputs
    num_gpus: int
    tokens_per_gpu: float | None
    time_note: str
    allocated: float | None
    reserved: float | None
    arrays: Any
    lay: Any
    work: Any


def _case_inputs(
    m: Measurement, parallel: ParallelInputs, training: TrainingInputs
) -> tuple[ParallelInputs, TrainingInputs]:
    par_update: dict[str, Any] = {"measured_points": []}
    for field, value in (
        ("gpus_per_node", m.gpus_per_node),
        ("dp", m.dp),
        ("tp", m.tp),
        ("pp", m.pp),
        ("expert_parallel", m.ep),
        ("zero_stage", m.zero_stage),
        ("fsdp_strategy", m.fsdp_strategy),
        ("sequence_parallel", m.sequence_parallel),
        ("global_batch", m.global_batch),
        ("schedule", m.schedule),
        ("interleave_chunks", m.interleave_chunks),
    ):
        if value is not None:
            par_update[field] = value
    if m.dp is None:
        par_update["dp"] = None  # from the run's GPUs ÷ (tp·pp)
    tr_update: dict[str, Any] = {}
    tr_given: tuple[tuple[str, object], ...] = (
        ("seq_len", m.seq_len),
        ("micro_batch", m.micro_batch),
        ("recompute", m.recompute),
    )
    for field, given in tr_given:
        if given is not None:
            tr_update[field] = given
    if m.stack is not None and "stack" in TrainingInputs.model_fields:
        tr_update["stack"] = m.stack
        try:
            TrainingInputs.model_validate({**training.model_dump(), **tr_update})
        except ValueError:
            del tr_update["stack"]  # a stack id the catalog does not know: keep the scenario's
    return (
        ParallelInputs.model_validate({**parallel.model_dump(), **par_update}),
        TrainingInputs.model_validate({**training.model_dump(), **tr_update}),
    )


def _updated(model: BaseModel, values: dict[str, float]) -> Any:
    return model.model_copy(update=values) if values else model


@dataclass(frozen=True)
class Calibration:
    """The fit's outcome: calibrated inputs and the report."""

    parallelism: ParallelInputs
    training: TrainingInputs
    report: CalibrationReport
    rates: tuple[tuple[int, float], ...]
    """(GPUs, measured tokens/s total) of the measurements, for the scaling curve."""


@dataclass(frozen=True)
class _Pricing:
    """What pricing a measurement needs besides its layout: model, GPU, FLOP counting."""

    arch: Architecture
    gpu: GPU
    params_override: float | None
    compute_dtype: str
    include_attention_flops: bool

    @property
    def params(self) -> float:
        return self.params_override or float(count_parameters(self.arch).total)

    def workload(self, par: ParallelInputs, tr: TrainingInputs) -> Any:
        return workload_of(
            self.arch,
            int(tr.seq_len),
            par.global_batch,
            self.params,
            None,
            training_inputs=tr,
            include_attention_flops=self.include_attention_flops,
        )

    def priced(self, values: dict[str, float], case: _Case) -> dict[str, FloatArray]:
        """evaluate_layouts at the case's layout with ``values`` in place."""
        par = _updated(case.parallel, _of_section(values, "parallelism"))
        tr_values = _of_section(values, "training")
        training = _updated(case.training, tr_values)
        work = self.workload(par, training) if tr_values else case.work
        cluster = cluster_of(self.gpu, par, self.compute_dtype)
        return evaluate_layouts(
            work, cluster, case.arrays, None, step_inputs_of(self.arch, training)
        )

    def tokens_per_gpu(self, values: dict[str, float], case: _Case) -> float:
        return float(self.priced(values, case)["tokens_per_s"][0]) / case.num_gpus

    def memory(self, values: dict[str, float], case: _Case) -> tuple[float, float]:
        """(peak allocated, peak reserved) the ledger predicts, CUDA context excluded (PyTorch's
        max_memory_allocated/reserved do not count it)."""
        tr = _updated(case.training, _of_section(values, "training"))
        rep = training_memory(
            self.arch, self.gpu, case.lay, tr, params_override=self.params_override
        )
        reserved = float(rep.peak_bytes) - float(rep.cuda_context_bytes)
        return reserved - float(rep.fragmentation_bytes), reserved

    def case(
        self, i: int, m: Measurement, par0: ParallelInputs, tr0: TrainingInputs
    ) -> _Case | str:
        """The measurement ready for pricing, or why it cannot be used."""
        name = m.label or f"measurement {i + 1}"
        try:
            par, tr = _case_inputs(m, par0, tr0)
        except ValueError as exc:
            return f"{name}: layout not valid ({str(exc).splitlines()[0]})"
        lay = resolve_layout(par, m.gpus, int(tr.micro_batch), str(tr.recompute), self.arch.layers)
        if lay.gpus != m.gpus:
            return f"{name}: {'; '.join(lay.problems) or 'layout does not give the GPUs'}"
        work = self.workload(par, tr)
        rate, why = measured_tokens_per_s_per_gpu(
            m,
            global_batch=par.global_batch,
            seq_len=int(tr.seq_len),
            arch=self.arch,
            params=self.params,
            app_flops_per_token=work.mfu_flops_per_token,
            gpu_peak=cluster_of(self.gpu, par, self.compute_dtype).peak_flops,
        )
        if rate is None and m.peak_allocated_bytes is None and m.peak_reserved_bytes is None:
            return f"{name}: {why}"
        return _Case(
            index=i,
            label=name,
            parallel=par,
            training=tr,
            num_gpus=m.gpus,
            tokens_per_gpu=rate,
            time_note="" if rate is not None else f"{name}: time not used ({why})",
            allocated=m.peak_allocated_bytes,
            reserved=m.peak_reserved_bytes,
            arrays=lay.as_arrays(),
            lay=lay,
            work=work,
        )


def _of_section(values: dict[str, float], section: str) -> dict[str, float]:
    return {k: v for k, v in values.items() if parameter_spec(k).section == section}


def calibrate(
    arch: Architecture,
    gpu: GPU,
    parallelism: ParallelInputs,
    training: TrainingInputs,
    measurements: Sequence[Measurement],
    *,
    inputs: CalibrationInputs | None = None,
    params_override: float | None = None,
    compute_dtype: str = "bf16",
    include_attention_flops: bool = False,
) -> Calibration:
    """Fit the step-time and memory parameters to ``measurements`` (cached on the inputs).

    ``parallelism.measured_points`` (GPUs, tokens/s) join as measurements of the scenario's
    layout family (its tp, pp, batch; dp = GPUs ÷ (tp·pp))."""
    inputs = inputs or CalibrationInputs()
    entries: list[Any] = []
    for i, m in enumerate(all_measurements(parallelism, measurements)):
        other = belongs_to(m, arch, gpu)
        if other is not None:
            entries.append({"set_aside": f"{m.label or f'measurement {i + 1}'}: {other}"})
            continue
        try:
            par_i, tr_i = _case_inputs(m, parallelism, training)
        except ValueError as exc:
            name = m.label or f"measurement {i + 1}"
            entries.append(f"{name}: layout not valid ({str(exc).splitlines()[0]})")
            continue
        entries.append(
            [m.model_dump(mode="json"), par_i.model_dump(mode="json"), tr_i.model_dump(mode="json")]
        )
    names = [
        *(inputs.time_parameters or DEFAULT_TIME_PARAMETERS),
        *(inputs.memory_parameters or DEFAULT_MEMORY_PARAMETERS),
    ]
    base = {
        n: float(
            getattr(parallelism if parameter_spec(n).section == "parallelism" else training, n)
        )
        for n in names
    }
    # keyed on what each measurement is priced with, not on the scenario's own layout: an edit
    # elsewhere in the scenario does not refit
    key = json.dumps(
        [
            arch.model_dump(mode="json"),
            gpu.model_dump(mode="json"),
            entries,
            base,
            inputs.model_dump(mode="json"),
            params_override,
            compute_dtype,
            include_attention_flops,
        ],
        sort_keys=True,
        default=str,
    )
    fit, report, rates = _calibrate_cached(key)
    applied = report.applied
    return Calibration(
        parallelism=_updated(parallelism, _of_section(fit, "parallelism"))
        if applied
        else parallelism,
        training=_updated(training, _of_section(fit, "training")) if applied else training,
        report=report,
        rates=rates,
    )


@lru_cache(maxsize=64)
def _calibrate_cached(
    key: str,
) -> tuple[dict[str, float], CalibrationReport, tuple[tuple[int, float], ...]]:
    arch_d, gpu_d, entries, base, inp_d, override, dtype, attn = json.loads(key)
    pricing = _Pricing(
        Architecture.model_validate(arch_d),
        GPU.model_validate(gpu_d),
        override,
        str(dtype),
        bool(attn),
    )
    resolved: list[tuple[Measurement, ParallelInputs, TrainingInputs] | str | dict[str, str]] = [
        e
        if isinstance(e, str | dict)
        else (
            Measurement.model_validate(e[0]),
            ParallelInputs.model_validate(e[1]),
            TrainingInputs.model_validate(e[2]),
        )
        for e in entries
    ]
    return _calibrate(pricing, resolved, base, CalibrationInputs.model_validate(inp_d))


def all_measurements(
    parallelism: ParallelInputs, measurements: Sequence[Measurement]
) -> list[Measurement]:
    """The scenario's measurements plus its ``measured_points`` as measurements."""
    points = [
        Measurement(
            label=f"measured point {g} GPUs",
            source="parallelism.measured_points",
            gpus=int(g),
            tokens_per_s=float(rate),
        )
        for g, rate in parallelism.measured_points
        if rate > 0
    ]
    return [*measurements, *points]


def describe(m: Measurement) -> str:
    """One line: label, model and GPU, layout given, what was measured."""
    layout = [f"{m.gpus} GPUs" + (f" {m.gpu}" if m.gpu else "")]
    if m.model:
        layout.insert(0, m.model)
    if m.stack:
        layout.append(m.stack)
    for name in ("dp", "tp", "pp", "ep", "zero_stage", "micro_batch", "global_batch", "seq_len"):
        value = getattr(m, name)
        if value is not None:
            layout.append(f"{name} {value}")
    measured = [
        f"{name} {getattr(m, name):.6g}"
        for name in (
            "step_seconds",
            "tokens_per_s",
            "tokens_per_s_per_gpu",
            "flops_per_gpu_per_s",
            "mfu",
            "peak_allocated_bytes",
            "peak_reserved_bytes",
        )
        if getattr(m, name) is not None
    ]
    head = f"{m.label} ({m.source})" if m.label else m.source
    return f"{head}: {', '.join(layout)}; measured {', '.join(measured) or 'nothing'}"


@dataclass(frozen=True)
class _Datum:
    """One measured number: its case and which quantity (time, allocated, reserved)."""

    case: _Case
    quantity: Literal["tokens_per_s_per_gpu", "peak_allocated_bytes", "peak_reserved_bytes"]

    @property
    def measured(self) -> float:
        value = {
            "tokens_per_s_per_gpu": self.case.tokens_per_gpu,
            "peak_allocated_bytes": self.case.allocated,
            "peak_reserved_bytes": self.case.reserved,
        }[self.quantity]
        return float(value or 1.0)

    def model(self, pricing: _Pricing, values: dict[str, float]) -> float:
        if self.quantity == "tokens_per_s_per_gpu":
            return pricing.tokens_per_gpu(values, self.case)
        allocated, reserved = pricing.memory(values, self.case)
        return max(allocated if self.quantity == "peak_allocated_bytes" else reserved, 1.0)


def _residuals(pricing: _Pricing, data: list[_Datum]) -> Callable[[dict[str, float]], FloatArray]:
    def fun(values: dict[str, float]) -> FloatArray:
        return np.array([math.log(d.model(pricing, values) / d.measured) for d in data])

    return fun


def _calibrate(
    pricing: _Pricing,
    entries: list[tuple[Measurement, ParallelInputs, TrainingInputs] | str | dict[str, str]],
    base: dict[str, float],
    inputs: CalibrationInputs,
) -> tuple[dict[str, float], CalibrationReport, tuple[tuple[int, float], ...]]:
    """The fit on resolved measurements: fitted values, the report, (GPUs, tokens/s) pairs.

    An entry is a priced run, a string (a run whose layout is not valid) or
    ``{"set_aside": why}`` (a run of another model or GPU)."""
    cases: list[_Case] = []
    skipped: list[str] = []
    described: list[str] = []
    set_aside: list[SetAside] = []
    for i, entry in enumerate(entries):
        if isinstance(entry, dict):
            why = entry["set_aside"]
            set_aside.append(SetAside(index=i, reason=why))
            skipped.append(f"set aside: {why}")
            described.append(why)
            continue
        if isinstance(entry, str):
            skipped.append(entry)
            described.append(entry)
            continue
        m, par_i, tr_i = entry
        described.append(describe(m))
        case = pricing.case(i, m, par_i, tr_i)
        if isinstance(case, str):
            skipped.append(case)
            continue
        cases.append(case)
        if case.time_note:
            skipped.append(case.time_note)
    time_data = [_Datum(c, "tokens_per_s_per_gpu") for c in cases if c.tokens_per_gpu]
    memory_data = [_Datum(c, "peak_allocated_bytes") for c in cases if c.allocated] + [
        _Datum(c, "peak_reserved_bytes") for c in cases if c.reserved
    ]
    time_specs = [parameter_spec(n) for n in inputs.time_parameters or DEFAULT_TIME_PARAMETERS]
    memory_specs = [
        parameter_spec(n) for n in inputs.memory_parameters or DEFAULT_MEMORY_PARAMETERS
    ]
    fit: dict[str, float] = {}
    fitted: list[FittedParameter] = []
    quantities: tuple[tuple[Literal["time", "memory"], list[ParameterSpec], list[_Datum]], ...]
    quantities = (("time", time_specs, time_data), ("memory", memory_specs, memory_data))
    for quantity, specs, data in quantities:
        if inputs.enabled and data:
            values, params = _fit_quantity(quantity, specs, base, _residuals(pricing, data))
            fit.update(values)
            fitted.extend(params)
    after = {**base, **fit}
    residuals = [
        _residual_row(d, d.model(pricing, base), d.model(pricing, after))
        for d in [*time_data, *memory_data]
    ]
    applied = inputs.enabled and bool(fit)
    report = CalibrationReport(
        enabled=inputs.enabled,
        applied=applied,
        measurements=described,
        used=sorted({c.index for c in cases}),
        skipped=skipped,
        set_aside=set_aside,
        parameters=fitted,
        residuals=residuals,
        rms_error_before=_rms([r["error_before"] for r in residuals]),
        rms_error_after=_rms([r["error_after"] for r in residuals]),
        checks=[
            check
            for d in time_data
            if (check := _measured_check(pricing, d.case, after)) is not None
        ],
    )
    rates = tuple((d.case.num_gpus, d.measured * d.case.num_gpus) for d in time_data)
    return fit, report, rates


def _rms(errors: list[float]) -> float | None:
    return math.sqrt(sum(e * e for e in errors) / len(errors)) if errors else None


def _residual_row(d: _Datum, before: float, after: float) -> dict[str, Any]:
    measured = d.measured
    return {
        "index": d.case.index,
        "label": d.case.label,
        "quantity": d.quantity,
        "measured": measured,
        "model_before": before,
        "model_after": after,
        "error_before": before / measured - 1.0,
        "error_after": after / measured - 1.0,
    }


def _fit_quantity(
    quantity: Literal["time", "memory"],
    specs: list[ParameterSpec],
    base: dict[str, float],
    residuals: Callable[[dict[str, float]], FloatArray],
) -> tuple[dict[str, float], list[FittedParameter]]:
    """Choose the parameters the data can fix, fit them, report each with uncertainty."""
    r0 = residuals(base)
    n = len(r0)
    if n == 0:
        return {}, []
    lo = np.array([s.lower for s in specs])
    hi = np.array([s.upper for s in specs])
    u_base = np.clip((np.array([base[s.name] for s in specs]) - lo) / (hi - lo), 0.0, 1.0)

    def values_of(u: FloatArray, chosen: list[int]) -> dict[str, float]:
        values = dict(base)
        for j, k in enumerate(chosen):
            values[specs[k].name] = float(lo[k] + u[j] * (hi[k] - lo[k]))
        return values

    chosen = _choose(specs, u_base, n, lambda u: residuals(values_of(u, list(range(len(specs))))))
    if not chosen:
        return {}, []

    def fun(u: FloatArray) -> FloatArray:
        return residuals(values_of(u, chosen))

    # several starts: a hidden collective (exposed = max(0, comm − overlap)) gives a flat
    # direction at the default that a start inside the exposed region does not have
    # (started only when the first fit is stuck on such a flat direction)
    fits = [_levenberg_marquardt(fun, u_base[chosen])]
    if any(float(np.max(np.abs(fits[0][1][:, j]))) <= 1e-6 for j in range(len(chosen))):
        fits += [_levenberg_marquardt(fun, np.full(len(chosen), x)) for x in (0.2, 0.5, 0.8)]
    u, jac, r = min(fits, key=lambda f: float(f[2] @ f[2]))
    # a parameter the data do not move at the solution is not determined: back to default
    moved = [j for j in range(len(chosen)) if float(np.max(np.abs(jac[:, j]))) > 1e-6]
    if len(moved) < len(chosen):
        chosen = [chosen[j] for j in moved]
        if not chosen:
            return {}, []
        u, jac, r = _levenberg_marquardt(fun_of(residuals, values_of, chosen), u[moved])
    sigma_u = _unit_sigma(jac, r, n - len(chosen))
    # a parameter whose 1-σ spans more than UNDETERMINED_SIGMA of its range is not fixed by
    # the data (it trades off against another): hold it at its default and refit the rest
    while sigma_u is not None and len(chosen) > 1:
        keep = [j for j in range(len(chosen)) if sigma_u[j] <= UNDETERMINED_SIGMA]
        if len(keep) == len(chosen) or not keep:
            break
        chosen = [chosen[j] for j in keep]
        u, jac, r = _levenberg_marquardt(fun_of(residuals, values_of, chosen), u_base[chosen])
        sigma_u = _unit_sigma(jac, r, n - len(chosen))
    values = values_of(u, chosen)
    out: list[FittedParameter] = []
    for j, k in enumerate(chosen):
        spec = specs[k]
        at_bound = bool(u[j] <= 1e-9 or u[j] >= 1 - 1e-9)
        sigma = None if sigma_u is None else float(sigma_u[j] * (hi[k] - lo[k]))
        out.append(
            FittedParameter(
                name=spec.name,
                quantity=quantity,
                default=base[spec.name],
                value=values[spec.name],
                uncertainty=sigma,
                lower=spec.lower,
                upper=spec.upper,
                at_bound=at_bound,
                meaning=spec.meaning,
            )
        )
    return {specs[k].name: values[specs[k].name] for k in chosen}, out


UNDETERMINED_SIGMA = 0.5
"""A fitted parameter whose 1-σ exceeds half its range is held at its default instead."""


def _unit_sigma(jac: FloatArray, r: FloatArray, dof: int) -> FloatArray | None:
    """1-σ of each parameter in unit coordinates (its range = 1), from the Gauss–Newton
    covariance s²·(JᵀJ)⁻¹ with s² = residual² ÷ degrees of freedom; None without them."""
    if dof <= 0:
        return None
    s2 = float(r @ r) / dof
    try:
        cov = s2 * np.linalg.inv(jac.T @ jac)
    except np.linalg.LinAlgError:
        return None
    return np.asarray(np.sqrt(np.maximum(np.diag(cov), 0.0)))


def fun_of(
    residuals: Callable[[dict[str, float]], FloatArray],
    values_of: Callable[[FloatArray, list[int]], dict[str, float]],
    chosen: list[int],
) -> Callable[[FloatArray], FloatArray]:
    """Residuals as a function of the chosen parameters' unit coordinates."""
    return lambda u: residuals(values_of(u, chosen))


def _choose(
    specs: list[ParameterSpec],
    u_base: FloatArray,
    n: int,
    fun: Callable[[FloatArray], FloatArray],
) -> list[int]:
    """In priority order, the parameters the data move across their range (secant from
    u = 0.15 to 0.85, the others at their defaults) that add a new direction (the secant
    matrix's smallest singular value stays above 1e-3 of the largest), at most n."""
    columns = []
    for k in range(len(specs)):
        low, high = u_base.copy(), u_base.copy()
        low[k], high[k] = 0.15, 0.85
        columns.append(fun(high) - fun(low))
    secants = np.array(columns).T
    chosen: list[int] = []
    for k in range(len(specs)):
        if len(chosen) >= n:
            break
        if float(np.max(np.abs(secants[:, k]))) < 1e-3:
            continue
        singular = np.linalg.svd(secants[:, [*chosen, k]], compute_uv=False)
        if singular[-1] > 1e-3 * singular[0]:
            chosen.append(k)
    return chosen


def _jacobian(fun: Callable[[FloatArray], FloatArray], u: FloatArray, r: FloatArray) -> FloatArray:
    """Forward differences in u ∈ [0, 1] (backward at the upper bound)."""
    h = 1e-5
    jac = np.zeros((len(r), len(u)))
    for k in range(len(u)):
        step = h if u[k] + h <= 1.0 else -h
        v = u.copy()
        v[k] += step
        jac[:, k] = (fun(v) - r) / step
    return jac


def _levenberg_marquardt(
    fun: Callable[[FloatArray], FloatArray], u0: FloatArray, iterations: int = 60
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Minimise ‖fun(u)‖² over the unit box; returns (u, Jacobian at u, residuals at u)."""
    u = np.clip(u0.astype(np.float64), 0.0, 1.0)
    r = fun(u)
    cost = float(r @ r)
    lam = 1e-3
    jac = _jacobian(fun, u, r)
    for _ in range(iterations):
        g = jac.T @ r
        free = ~(((u <= 0.0) & (g > 0)) | ((u >= 1.0) & (g < 0)))
        if not np.any(free):
            break
        a = jac[:, free].T @ jac[:, free]
        improved = False
        for _ in range(12):
            damp = a + lam * np.diag(np.diag(a) + 1e-12)
            try:
                step = np.linalg.solve(damp, -g[free])
            except np.linalg.LinAlgError:
                lam *= 10
                continue
            trial = u.copy()
            trial[free] = np.clip(u[free] + step, 0.0, 1.0)
            r_trial = fun(trial)
            c_trial = float(r_trial @ r_trial)
            if c_trial < cost:
                done = cost - c_trial < 1e-12 * max(cost, 1e-30)
                u, r, cost = trial, r_trial, c_trial
                lam = max(lam / 3, 1e-9)
                improved = True
                break
            lam *= 10
        if not improved:
            break
        jac = _jacobian(fun, u, r)
        if done or cost < 1e-20:
            break
    return u, jac, r


def predict_tokens_per_s_per_gpu(
    arch: Architecture,
    gpu: GPU,
    parallelism: ParallelInputs,
    training: TrainingInputs,
    measurements: Sequence[Measurement],
    *,
    params_override: float | None = None,
    compute_dtype: str = "bf16",
    include_attention_flops: bool = False,
) -> list[float | None]:
    """The step-time model's tokens/s per GPU at each measurement's layout (None: the layout
    cannot be priced). The same pricing the fit uses: calibrated inputs in, held-back runs'
    predictions out."""
    pricing = _Pricing(arch, gpu, params_override, compute_dtype, include_attention_flops)
    out: list[float | None] = []
    for i, m in enumerate(measurements):
        case = pricing.case(i, m.model_copy(update={"tokens_per_s": 1.0}), parallelism, training)
        out.append(None if isinstance(case, str) else pricing.tokens_per_gpu({}, case))
    return out


# ------------------------------------------------------------------ sanity bands


@dataclass(frozen=True)
class RateBand:
    """Achieved model FLOP/s per GPU that well-tuned runs reach on one GPU generation."""

    prefixes: tuple[str, ...]
    low: float
    high: float
    threshold: float
    source: str
    above_note: str = ""


RATE_BANDS: tuple[RateBand, ...] = (
    RateBand(
        ("v100",),
        30e12,
        40e12,
        30e12,
        "seed talk: 30-40 TFLOP/s per V100; Shoeybi et al. 2019 (arXiv:1909.08053): 39 TFLOP/s "
        "on one V100, 15.1 PFLOP/s on 512 (29.5 per GPU)",
        "the step-time model prices V100 GEMMs at the large-size kernel efficiency and "
        "attention at 0.45 of the fp16 tensor-core peak (assumptions made for Ampere and "
        "Hopper kernels), where practitioners' 30-40 TFLOP/s is 24-32% of that peak "
        "(Megatron-LM 2019's own single-GPU baseline: 30%, arXiv:1909.08053); a V100 plan is "
        "optimistic by about that ratio until a measured run calibrates it",
    ),
    RateBand(
        ("a100",),
        100e12,
        180e12,
        115e12,
        "seed talk: 100-180 TFLOP/s per A100, troubleshoot below 115; Narayanan et al. 2021 "
        "(arXiv:2104.04473) Table 1: 135-163 TFLOP/s",
    ),
    RateBand(
        ("h100", "h800", "h200"),
        380e12,
        430e12,
        380e12,
        "Llama 3 405B on 16k H100s: 380-430 BF16 TFLOP/s per GPU (arXiv:2407.21783 Table 4); "
        "MosaicML MPT-7B on 8 H100s ≈ 430 (tests/validation/runs.json); H800/H200 assumed "
        "the same (same dense BF16 peak)",
        "the published H100 rates are 7-405B models with tensor and pipeline parallelism or "
        "FSDP across nodes; a layout with less communication (pure data parallelism of a "
        "small model) has none of their exposed traffic and bubble, so it can run above them "
        "(docs/ACCURACY.md, 'MFU of the defaults')",
    ),
)
"""Sanity bands by GPU generation (catalog id prefix). Rates counted as model FLOPs (the
app's MFU count); the seed's and Megatron's figures count hardware FLOPs, which are higher
with recomputation, so the band is lenient for recomputing runs."""


def band_for(gpu: GPU) -> RateBand | None:
    """The band of ``gpu``'s generation, or None (no published band)."""
    for band in RATE_BANDS:
        if gpu.id.startswith(band.prefixes):
            return band
    return None


def likely_causes(breakdown: dict[str, float], kernel_efficiency: float) -> list[str]:
    """What the model sees slowing a step: exposed communication, bubble, small kernels."""
    total = sum(breakdown.values()) or 1.0
    causes: list[tuple[float, str]] = []
    comm_parts = {
        "tensor_parallel": "tensor-parallel all-reduce",
        "pipeline_p2p": "pipeline send/receive",
        "expert_all_to_all": "MoE all-to-all",
        "data_parallel": "data-parallel gradient sync",
    }
    for key, label in comm_parts.items():
        share = breakdown.get(key, 0.0) / total
        if share >= 0.05:
            causes.append((share, f"exposed communication: {label} {100 * share:.0f}% of step"))
    bubble = breakdown.get("bubble", 0.0) / total
    if bubble >= 0.05:
        causes.append((bubble, f"pipeline bubble {100 * bubble:.0f}% of step"))
    if kernel_efficiency < 0.5:
        causes.append(
            (
                1 - kernel_efficiency,
                f"small or inefficient kernels: GEMMs at {100 * kernel_efficiency:.0f}% of peak "
                "(micro-batch × sequence per GPU too small, or un-fused kernels)",
            )
        )
    return [text for _, text in sorted(causes, reverse=True)]


def rate_check(
    gpu: GPU,
    what: str,
    flops_per_gpu_per_s: float,
    breakdown: dict[str, float],
    kernel_efficiency: float,
) -> RateCheck | None:
    """``flops_per_gpu_per_s`` against the GPU's band; causes when it is below."""
    band = band_for(gpu)
    if band is None:
        return None
    below = flops_per_gpu_per_s < band.threshold
    return RateCheck(
        what=what,
        flops_per_gpu_per_s=flops_per_gpu_per_s,
        band_low=band.low,
        band_high=band.high,
        threshold=band.threshold,
        below=below,
        above=flops_per_gpu_per_s > band.high,
        causes=likely_causes(breakdown, kernel_efficiency) if below else [],
        band_source=band.source,
        above_note=band.above_note,
    )


def _measured_check(pricing: _Pricing, c: _Case, values: dict[str, float]) -> RateCheck | None:
    """The measured rate (the app's model FLOPs/token × measured tokens/s per GPU) against the
    band, with the causes the calibrated model sees at that layout."""
    out = pricing.priced(values, c)
    breakdown = {p: float(out[f"time_{p}"][0]) for p in TIME_PARTS}
    rate = c.work.mfu_flops_per_token * float(c.tokens_per_gpu or 0.0)
    efficiency = values.get("kernel_efficiency", c.parallel.kernel_efficiency)
    return rate_check(pricing.gpu, f"measured: {c.label}", rate, breakdown, efficiency)


# ------------------------------------------------------------------ the scenario


def calibrate_scenario(scenario: Scenario) -> tuple[Scenario, Calibration]:
    """The scenario with calibrated parallelism/training inputs, and the calibration.

    The calibrated copy has calibration switched off (applying it twice changes nothing)
    and carries the measurements' (GPUs, tokens/s) in ``measured_points`` so the scaling
    curve draws them. With calibration switched off the scenario comes back unchanged (the
    report still lists the measurements and the residuals of the uncalibrated model)."""
    cal_inputs = scenario.calibration
    cal = calibrate(
        scenario.model.architecture,
        scenario.gpu,
        scenario.parallelism,
        scenario.training,
        list(scenario.measurements),
        inputs=cal_inputs,
        params_override=scenario.model.params_override,
        compute_dtype=scenario.compute.compute_dtype,
        include_attention_flops=scenario.compute.include_attention_flops,
    )
    if not cal_inputs.enabled:
        return scenario, cal
    points = list(scenario.parallelism.measured_points)
    extra = [(g, r) for g, r in cal.rates if (g, r) not in points]
    par = cal.parallelism.model_copy(update={"measured_points": points + extra})
    update: dict[str, Any] = {
        "parallelism": par,
        "training": cal.training,
        "calibration": cal_inputs.model_copy(update={"enabled": False}),
    }
    return scenario.model_copy(update=update), cal


def modeled_check(gpu: GPU, parallelism_report: Any, kernel_efficiency: float) -> RateCheck | None:
    """The scenario's modeled rate, model FLOPs/token · tokens/s ÷ GPUs, against its band."""
    par = parallelism_report
    rate = float(par.tokens_per_s) * float(par.mfu_flops_per_token) / max(int(par.gpus), 1)
    return rate_check(
        gpu,
        "modeled: the scenario's layout",
        rate,
        dict(par.time_breakdown_seconds),
        kernel_efficiency,
    )


GIVEN_RATE_LABELS: dict[str, str] = {
    "assumed_mfu": "assumed: the MFU given",
    "measured_tflops": "measured: the TFLOP/s given",
    "measured_tokens_per_s": "measured: the tokens/s given",
}
"""How the rate checks name the one throughput when the user gave it (compute.throughput_source)."""


def plan_checks(
    gpu: GPU, compute_report: Any, parallelism_report: Any, kernel_efficiency: float
) -> list[RateCheck | None]:
    """The rules of thumb on every plan: the modeled rate (:func:`modeled_check`) and, when
    the estimate's one throughput is the user's (a measured TFLOP/s or tokens/s, an assumed
    MFU), that rate too, as model FLOP/s per GPU (``compute.flops_per_gpu_per_s``), against
    the generation's band: an A100 run at 90 TFLOP/s is flagged as below the 115 TFLOP/s
    troubleshooting threshold whichever way it was obtained."""
    checks = [modeled_check(gpu, parallelism_report, kernel_efficiency)]
    source = str(getattr(compute_report, "throughput_source", "modeled"))
    rate = getattr(compute_report, "flops_per_gpu_per_s", None)
    if source in GIVEN_RATE_LABELS and rate is not None and math.isfinite(float(rate)):
        checks.append(
            rate_check(
                gpu,
                GIVEN_RATE_LABELS[source],
                float(rate),
                dict(parallelism_report.time_breakdown_seconds),
                kernel_efficiency,
            )
        )
    return checks


def with_checks(report: CalibrationReport, checks: Sequence[RateCheck | None]) -> CalibrationReport:
    """The report with more sanity checks appended."""
    extra = [c for c in checks if c is not None]
    return report.model_copy(update={"checks": [*report.checks, *extra]})
