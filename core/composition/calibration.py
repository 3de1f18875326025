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

Its parts: :mod:`.calibration_report` (the parameters a fit may move, the report),
:mod:`.calibration_fit` (the least-squares steps and uncertainties) and
:mod:`.calibration_checks` (sanity bands and rate checks); this module selects and prices
the measured runs, drives the fit and applies it to a scenario, and keeps every public name
of its parts importable.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel

from llm_planner.core.composition.calibration_checks import (
    GIVEN_RATE_LABELS,
    RATE_BANDS,
    RateBand,
    band_for,
    likely_causes,
    modeled_check,
    plan_checks,
    rate_check,
    with_checks,
)
from llm_planner.core.composition.calibration_fit import (
    UNDETERMINED_SIGMA,
    FloatArray,
    _choose,
    _levenberg_marquardt,
    _unit_sigma,
    fun_of,
)
from llm_planner.core.composition.calibration_report import (
    DEFAULT_MEMORY_PARAMETERS,
    DEFAULT_TIME_PARAMETERS,
    PARAMETERS,
    CalibrationReport,
    FittedParameter,
    MeasurementResidual,
    ParameterSpec,
    RateCheck,
    SetAside,
    belongs_to,
    parameter_spec,
)
from llm_planner.core.inputs.calibration import CalibrationInputs, FlopsFormula, Measurement
from llm_planner.core.inputs.parallelism import ParallelInputs
from llm_planner.core.inputs.scenario import Scenario
from llm_planner.core.inputs.training import TrainingInputs
from llm_planner.core.primitives.architecture import Architecture, count_parameters
from llm_planner.core.primitives.gpus import GPU
from llm_planner.core.primitives.kept import forgotten
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

__all__ = [
    "DEFAULT_MEMORY_PARAMETERS",
    "DEFAULT_TIME_PARAMETERS",
    "GIVEN_RATE_LABELS",
    "PARAMETERS",
    "RATE_BANDS",
    "UNDETERMINED_SIGMA",
    "Calibration",
    "CalibrationInputs",
    "CalibrationReport",
    "FittedParameter",
    "FloatArray",
    "FlopsFormula",
    "Measurement",
    "MeasurementResidual",
    "ParameterSpec",
    "RateBand",
    "RateCheck",
    "SetAside",
    "all_measurements",
    "band_for",
    "belongs_to",
    "calibrate",
    "calibrate_scenario",
    "describe",
    "fun_of",
    "likely_causes",
    "measured_tokens_per_s_per_gpu",
    "modeled_check",
    "parameter_spec",
    "plan_checks",
    "predict_tokens_per_s_per_gpu",
    "published_flops_per_token",
    "rate_check",
    "with_checks",
]


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
    if not entries:  # nothing measured: no pricing, no fit (the report lists the inputs alone)
        pricing = _Pricing(arch, gpu, params_override, compute_dtype, include_attention_flops)
        fit, report, rates = _calibrate(pricing, [], base, inputs)
        return Calibration(parallelism=parallelism, training=training, report=report, rates=rates)
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


@forgotten
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
    """log(model ÷ measured) of each datum at ``values``. Runs measured at the same layout
    (the same parallel and training inputs on the same GPUs) have the same model value: it
    is priced once per layout and quantity, so a file of 1,000 points at 16 GPU counts costs
    16 pricings per step of the fit, not 1,000 (issue 29, item 6: 10 s for one report)."""
    keys = [
        (
            d.quantity,
            d.case.parallel.model_dump_json(),  # inputs hold lists: compared as JSON
            d.case.training.model_dump_json(),
            d.case.num_gpus,
        )
        for d in data
    ]

    def fun(values: dict[str, float]) -> FloatArray:
        modeled: dict[tuple[str, str, str, int], float] = {}
        out = np.empty(len(data))
        for i, (d, key) in enumerate(zip(data, keys, strict=True)):
            if key not in modeled:
                modeled[key] = d.model(pricing, values)
            out[i] = math.log(modeled[key] / d.measured)
        return out

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
    # no new point: the calibrated inputs as they are (the very object when nothing was
    # fitted, so the estimate's memo keys it once)
    par = (
        cal.parallelism.model_copy(update={"measured_points": points + extra})
        if extra
        else cal.parallelism
    )
    update: dict[str, Any] = {
        "parallelism": par,
        "training": cal.training,
        "calibration": cal_inputs.model_copy(update={"enabled": False}),
    }
    return scenario.model_copy(update=update), cal
