"""``estimate(scenario) -> Report``: every figure of every tab, from one scenario.

Each section is computed by its own estimator module (:mod:`llm_planner.core.sections`);
this module only wires them together and is the one entry point the GUI and the command
line call. The flow, each step once:

1. the model section: exact parameter counts (or the ``--params`` override);
2. the layout, resolved from the parallelism inputs and the GPU count;
3. training memory per GPU under that layout;
4. the fewest GPUs one instance fits on (the layout search);
5. the parallelism section: the layout's step time, tokens/s and MFU;
6. the compute section, whose one throughput is resolved from the parallelism section's
   modeled step time (the default) or the user's measured or assumed rate;
7. inference memory.

Each step's value depends only on its own inputs, so the last few values of the costly
steps (training memory, the fewest-GPUs search, the parallelism section, the compute
section, inference) are kept by those inputs (:class:`_Memo`): a change recomputes only the
sections it invalidates (a new context length re-prices inference alone; a new price, the
compute section alone), and the same scenario estimated twice is computed once. The figures
are the same as without the memo: a hit returns the very value the same inputs computed
before.
"""

from __future__ import annotations

import math
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel, ConfigDict

from llm_planner.core.composition.calibration import (
    CalibrationReport,
    calibrate_scenario,
    plan_checks,
    with_checks,
)
from llm_planner.core.composition.fit import (
    FitSuggestion,
    Priced,
    inference_fit_suggestions,
    training_fit_suggestions,
)
from llm_planner.core.composition.scenario import Scenario
from llm_planner.core.composition.search import min_gpus_per_instance
from llm_planner.core.primitives.architecture import (
    Architecture,
    ParameterCount,
    count_parameters,
)
from llm_planner.core.primitives.figures import Figure
from llm_planner.core.primitives.kept import forget_all
from llm_planner.core.sections.compute import (
    ComputeReport,
    MemoryNeed,
    ModeledThroughput,
    estimate_compute,
)
from llm_planner.core.sections.inference import InferenceReport, estimate_inference
from llm_planner.core.sections.parallelism import (
    ParallelismReport,
    ResolvedLayout,
    parallelism_report,
    scenario_layout,
    training_layout_kwargs,
    zero_stage_comparison,
)
from llm_planner.core.sections.training import TrainingReport, estimate_training

if TYPE_CHECKING:
    from llm_planner.core.composition.whatif.report import WhatIfReport

T = TypeVar("T")

MEMO_SIZE = 16
"""Values kept per step: the scenarios a user flips between (undo/redo, two tabs' inputs)."""


_ATOMS = frozenset({int, float, str, bool, type(None)})


class _Hashed:
    """A key part with its hash worked out once: a pydantic model hashes its fields afresh
    on every ``hash()``, and a key is hashed on each lookup and store. Equal when the parts
    are (the hash first)."""

    __slots__ = ("digest", "part")

    def __init__(self, part: Hashable, digest: int) -> None:
        self.part = part
        self.digest = digest

    def __hash__(self) -> int:
        return self.digest

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, _Hashed) and self.digest == other.digest and self.part == other.part
        )


def _frozen(value: Any) -> Hashable:
    """A hashable key for a validated input: frozen models as themselves, else field by
    field (a model holding a list, as ``ParallelInputs.measured_points`` does). Types are
    part of the key, so ``1`` and ``1.0`` or ``True`` never share an entry."""
    kind = type(value)
    if kind in _ATOMS:  # most fields: no isinstance chain
        return (kind, value)
    if isinstance(value, BaseModel):
        try:
            digest = hash(value)
        except TypeError:
            return _unhashable_key(value)
        return _Hashed((kind, value), digest)
    if isinstance(value, list | tuple):
        return (type(value), tuple(_frozen(v) for v in value))
    if isinstance(value, dict):
        return (dict, tuple(sorted((k, _frozen(v)) for k, v in value.items())))
    return (type(value), value)


_UNHASHABLE: OrderedDict[int, tuple[BaseModel, Hashable]] = OrderedDict()
"""Keys of the last few models that cannot be hashed, by identity (the model itself kept
beside its key, so its id is not reused while the entry lives): a frozen model holding a
list (``ParallelInputs.measured_points``) is keyed field by field, and one estimate keys it
for four sections. Frozen models are not changed in place, lists inside them included."""
_UNHASHABLE_SIZE = 32
_UNHASHABLE_LOCK = threading.Lock()


def _unhashable_key(value: BaseModel) -> Hashable:
    """``value``'s key field by field, worked out once per model object."""
    with _UNHASHABLE_LOCK:
        known = _UNHASHABLE.get(id(value))
        if known is not None and known[0] is value:
            return known[1]
    key = _Hashed(
        key := (type(value), tuple((k, _frozen(v)) for k, v in value.__dict__.items())),
        hash(key),
    )
    with _UNHASHABLE_LOCK:
        _UNHASHABLE[id(value)] = (value, key)
        while len(_UNHASHABLE) > _UNHASHABLE_SIZE:
            _UNHASHABLE.popitem(last=False)
    return key


class _Memo:
    """The last ``MEMO_SIZE`` values of one pure step, by its inputs (thread-safe: the
    window may estimate in a worker thread while the command line or a test does too)."""

    def __init__(self) -> None:
        self._values: OrderedDict[Hashable, Any] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: tuple[Any, ...], compute: Callable[[], T]) -> T:
        frozen = _frozen(key)
        frozen = _Hashed(frozen, hash(frozen))  # hashed once for the lookup and the store
        with self._lock:
            if frozen in self._values:
                self._values.move_to_end(frozen)
                hit: T = self._values[frozen]
                return hit
        value = compute()
        with self._lock:
            self._values[frozen] = value
            while len(self._values) > MEMO_SIZE:
                self._values.popitem(last=False)
        return value

    def clear(self) -> None:
        with self._lock:
            self._values.clear()


_TRAINING = _Memo()
_GPUS_PER_INSTANCE = _Memo()
_PARALLELISM = _Memo()
_INFERENCE = _Memo()
_ZERO_STAGES = _Memo()
_COMPUTE = _Memo()


def clear_memo() -> None:
    """Forget every kept value (benchmarks time the estimate from scratch with it)."""
    forget_all()  # the kept values of pure functions (parameter counts, training FLOPs)
    for memo in (_TRAINING, _GPUS_PER_INSTANCE, _PARALLELISM, _INFERENCE, _ZERO_STAGES, _COMPUTE):
        memo.clear()
    with _UNHASHABLE_LOCK:
        _UNHASHABLE.clear()


def zero_stages(scenario: Scenario) -> list[dict[str, float]]:
    """:func:`.parallelism.memory.zero_stage_comparison` for ``scenario`` (ZeRO 0-3 at its
    tp/pp/dp), kept by its inputs like the sections: the parallelism tab draws it on every
    edit, and four training estimates are most of that edit's cost. The rows are the
    comparison's own (shared: do not modify them)."""
    arch, training, gpu, inputs, num_gpus, override = (
        scenario.model.architecture,
        scenario.training,
        scenario.gpu,
        scenario.parallelism,
        scenario.num_gpus,
        scenario.model.params_override,
    )
    return _ZERO_STAGES.get(
        (arch, training, gpu, inputs, num_gpus, override),
        lambda: zero_stage_comparison(
            arch, training, gpu, inputs, num_gpus, params_override=override
        ),
    )


class ModelReport(BaseModel):
    """The model section: architecture summary and exact parameter breakdown."""

    model_config = ConfigDict(frozen=True)

    id: str
    name: str
    params_total: float
    params_active: float
    params_exact_total: int
    params_exact_active: int
    params_overridden: bool
    layers: int
    hidden_size: int
    heads: int
    kv_heads: int
    head_dim: int
    ffn_size: int
    vocab_size: int
    max_context: int
    breakdown: ParameterCount

    def figures(self) -> list[Figure]:
        src = "exact count, term by term (core.architecture.count_parameters)"
        figures = [
            Figure(
                key="params_total",
                label="Parameters (total)",
                value=self.params_total,
                unit="params",
                formula="embedding + layers·(attention + FFN + norms) + head",
                source=src,
            ),
            Figure(
                key="params_active",
                label="Parameters (active per token)",
                value=self.params_active,
                unit="params",
                formula="total − routed experts a token skips (MoE)",
                source=src,
            ),
        ]
        if self.params_overridden:
            figures.append(
                Figure(
                    key="params_exact_total",
                    label="Parameters of the shapes",
                    value=self.params_exact_total,
                    unit="params",
                    formula="the proposed architecture's own exact count",
                )
            )
        return figures


class Report(BaseModel):
    """Everything the window shows and ``llm-planner report`` prints."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    model: ModelReport
    compute: ComputeReport
    inference: InferenceReport
    training: TrainingReport
    parallelism: ParallelismReport
    calibration: CalibrationReport | None = None
    training_fit_suggestions: list[FitSuggestion] = []
    """When training does not fit: the few smallest changes that would (``composition.fit``)."""
    inference_fit_suggestions: list[FitSuggestion] = []
    """When inference does not fit: the few smallest changes that would."""
    if TYPE_CHECKING:
        whatif: WhatIfReport | None = None
    else:  # set by model_copy, never validated: the what-if modules load only when planned
        whatif: Any = None
    """The what-ifs the scenario plans (``scenario.whatif``), priced on this estimate; None
    when it plans none. Not one of :meth:`sections`: ``report --json`` writes it under
    ``whatif`` with only the planned parts (:func:`.whatif.report.whatif_json`). Typed
    ``Any`` for pydantic: its schema would import the what-if modules (their models, the
    RL split's tables), which a report without a what-if never runs."""

    def sections(self) -> dict[str, Any]:
        """The sections that exist, in display order."""
        names = ("model", "compute", "inference", "training", "parallelism", "calibration")
        return {name: getattr(self, name) for name in names if getattr(self, name) is not None}


def model_section(scenario: Scenario) -> ModelReport:
    """Parameter counts; ``params_override`` (``--params``) replaces P, not the shapes."""
    arch: Architecture = scenario.model.architecture
    counts = count_parameters(arch)
    override = scenario.model.params_override
    total = float(override) if override is not None else float(counts.total)
    active = total * counts.active / counts.total if override is not None else float(counts.active)
    return ModelReport(
        id=scenario.model.preset or arch.name,
        name=arch.name,
        params_total=total,
        params_active=active,
        params_exact_total=counts.total,
        params_exact_active=counts.active,
        params_overridden=override is not None,
        layers=arch.layers,
        hidden_size=arch.hidden_size,
        heads=arch.heads,
        kv_heads=arch.kv_heads,
        head_dim=arch.head_dim,
        ffn_size=arch.ffn_size,
        vocab_size=arch.vocab_size,
        max_context=arch.max_context,
        breakdown=counts,
    )


def _training_section(scenario: Scenario, model: ModelReport, layout: ResolvedLayout) -> Any:
    """Training memory per GPU under the scenario's resolved layout.

    The layout is resolved once (:func:`.parallelism.layout.scenario_layout`: dp from the GPU
    count, FSDP names mapped to ZeRO stages, HYBRID_SHARD's shard group, the schedule's
    micro-batches in flight), so ``training.*`` and ``parallelism.peak_bytes`` describe the
    same GPU.
    """
    arch, training, gpu, override = (
        scenario.model.architecture,
        scenario.training,
        scenario.gpu,
        _override(model),
    )
    node = min(scenario.num_gpus, scenario.parallelism.gpus_per_node)
    return _TRAINING.get(
        (arch, training, gpu, override, layout, node),
        lambda: estimate_training(
            arch,
            training,
            gpu,
            params_override=override,
            gpus_per_node=node,
            **training_layout_kwargs(layout),
        ),
    )


def _override(model: ModelReport) -> float | None:
    return model.params_total if model.params_overridden else None


def _gpus_per_instance(scenario: Scenario, model: ModelReport) -> int | None:
    """Fewest GPUs one model instance fits on, from the layout search (feeds both the
    parallelism and the compute section)."""
    arch, gpu, inputs, training, override = (
        scenario.model.architecture,
        scenario.gpu,
        scenario.parallelism,
        scenario.training,
        _override(model),
    )
    return _GPUS_PER_INSTANCE.get(
        (arch, gpu, inputs, training, override),
        lambda: min_gpus_per_instance(
            arch, gpu, inputs, training, params_override=override, max_gpus=1 << 16
        ),
    )


def _parallelism_section(
    scenario: Scenario,
    model: ModelReport,
    gpus_per_instance: int | None,
    training_report: TrainingReport | None = None,
) -> ParallelismReport:
    """Layout, communication, step time and MFU; the per-GPU peak is the training
    section's (``training_report``: the same estimator on the same resolved layout)."""
    arch, gpu, num_gpus, inputs, training, override = (
        scenario.model.architecture,
        scenario.gpu,
        scenario.num_gpus,
        scenario.parallelism,
        scenario.training,
        _override(model),
    )
    dtype, attention = scenario.compute.compute_dtype, scenario.compute.include_attention_flops
    return _PARALLELISM.get(
        (arch, gpu, num_gpus, inputs, training, override, dtype, attention, gpus_per_instance),
        lambda: parallelism_report(
            arch,
            gpu,
            num_gpus,
            inputs,
            training,
            params_override=override,
            compute_dtype=dtype,
            gpus_per_instance=gpus_per_instance,
            include_attention_flops=attention,
            training_report=training_report,
        ),
    )


def _compute_section(
    scenario: Scenario,
    model: ModelReport,
    parallelism: ParallelismReport,
    gpus_per_instance: int | None,
    training_report: TrainingReport,
) -> ComputeReport:
    """Compute budget: FLOPs, the one throughput, time, cost, Chinchilla, failures.

    The throughput is resolved here, once (:func:`.compute.resolve_throughput`): the
    parallelism section's modeled step time by default, else the user's measured or assumed
    rate; every face (time, cost, deadline and budget questions, charts) reads it. A plan
    whose training peak per GPU (``training_report``) exceeds the GPU gets no rate, so no
    time, cost or MFU, and the label says what it needs.
    """
    memory = MemoryNeed(
        peak_bytes=float(training_report.peak_bytes),
        capacity_bytes=float(training_report.capacity_bytes),
    )
    # one HFU: the FLOPs the step executes (the parallelism section's count: matmuls of the
    # parameters that multiply, attention, recomputation) per MFU's model FLOP, so the
    # compute tab's HFU is the parallelism tab's for every throughput source
    executed = parallelism.hfu / parallelism.mfu if parallelism.mfu > 0 else None
    modeled = ModeledThroughput(
        tokens_per_s=parallelism.tokens_per_s,
        gpus=parallelism.gpus,
        mfu=parallelism.mfu,
        layout=parallelism.layout_label,
    )
    arch, active, total, gpu, num_gpus, inputs, training = (
        scenario.model.architecture,
        model.params_active,
        model.params_total,
        scenario.gpu,
        scenario.num_gpus,
        scenario.compute,
        scenario.training,
    )
    return _COMPUTE.get(
        (
            arch,
            active,
            total,
            gpu,
            num_gpus,
            inputs,
            training,
            gpus_per_instance,
            modeled,
            memory,
            executed,
        ),
        lambda: estimate_compute(
            arch,
            active,
            total,
            gpu,
            num_gpus,
            inputs=inputs,
            seq_len=training.seq_len,
            recompute=training.recompute,
            training_inputs=training,
            hardware_flops_factor=executed,
            gpus_per_instance=gpus_per_instance,
            modeled=modeled,
            memory=memory,
        ),
    )


def _inference_section(scenario: Scenario, model: ModelReport) -> InferenceReport:
    """Inference memory, fit, largest batch/context, decode bound."""
    arch, total, active, gpu, inputs = (
        scenario.model.architecture,
        model.params_total,
        model.params_active,
        scenario.gpu,
        scenario.inference,
    )
    price = scenario.compute.price_usd_per_gpu_hour  # prices the serving section's tokens
    return _INFERENCE.get(
        (arch, total, active, gpu, inputs, price),
        lambda: estimate_inference(arch, total, active, gpu, inputs, price_usd_per_gpu_hour=price),
    )


def estimate(scenario: Scenario, *, suggest: bool = True) -> Report:
    """Every figure for ``scenario``. Pure: no I/O, same input → same output (the memo
    only spares recomputing a section whose inputs did not change).

    The scenario's measurements first calibrate the model (:func:`.calibration.calibrate_scenario`;
    ``scenario.calibration.enabled`` off: the uncalibrated model); every section below is
    computed on the calibrated inputs.

    The what-ifs the scenario plans are priced on the sections (``Report.whatif``), once.

    ``suggest=False`` leaves the fit suggestions empty (the window asks for them with
    :func:`with_fit_suggestions` off the keystroke's path); the figures are the same.
    """
    planned = scenario
    scenario, calibration = calibrate_scenario(scenario)
    model = model_section(scenario)
    layout = scenario_layout(scenario)
    training = _training_section(scenario, model, layout)
    instance = _gpus_per_instance(scenario, model)
    parallelism = _parallelism_section(scenario, model, instance, training)
    compute = _compute_section(scenario, model, parallelism, instance, training)
    inference = _inference_section(scenario, model)
    report = Report(
        model=model,
        compute=compute,
        inference=inference,
        training=training,
        parallelism=parallelism,
        calibration=with_checks(
            calibration.report,
            plan_checks(scenario.gpu, compute, parallelism, scenario.parallelism.kernel_efficiency),
        ),
    )
    if planned.whatif.any:  # priced once here; every face and exporter reads it
        from llm_planner.core.composition.whatif.report import estimate_whatif

        report = report.model_copy(update={"whatif": estimate_whatif(planned, report)})
    return with_fit_suggestions(scenario, report) if suggest else report


def with_fit_suggestions(scenario: Scenario, report: Report) -> Report:
    """``report`` with the few smallest changes that would make it fit (empty when it fits;
    bounded work: ``composition.fit.MAX_CANDIDATES`` section estimates per side)."""
    training, inference = report.training, report.inference
    return report.model_copy(
        update={
            "training_fit_suggestions": training_fit_suggestions(
                scenario,
                training.peak_bytes,
                training.capacity_bytes,
                _training_peak,
                _priced,
            ),
            "inference_fit_suggestions": inference_fit_suggestions(
                scenario,
                inference.per_gpu_total_bytes,
                inference.gpu_memory_bytes,
                inference.max_batch,
                lambda s: _inference_section(s, model_section(s)).per_gpu_total_bytes,
            ),
        }
    )


def _training_peak(scenario: Scenario) -> float:
    """The training peak per GPU exactly as :func:`estimate` computes it (for ``fit``); a
    plan whose offloaded state overflows the host RAM fits no GPU (infinite)."""
    training = _training_section(scenario, model_section(scenario), scenario_layout(scenario))
    return float(training.peak_bytes) if training.host_fits else math.inf


def _priced(scenario: Scenario) -> Priced:
    """Time, cost and MFU of a changed plan, from its own estimate (for ``fit``)."""
    compute = estimate(scenario, suggest=False).compute
    return Priced(compute.wall_seconds, compute.cost_usd, compute.mfu)


def report_json(report: Report) -> dict[str, Any]:
    """The ``report --json`` object: one key per section, values in SI base units."""
    out = {name: section.model_dump(mode="json") for name, section in report.sections().items()}
    for name in ("training", "inference"):
        if name in out:
            suggestions = getattr(report, f"{name}_fit_suggestions")
            out[name]["fit_suggestions"] = [s.model_dump(mode="json") for s in suggestions]
    if report.whatif is not None:
        from llm_planner.core.composition.whatif.report import whatif_json

        out["whatif"] = whatif_json(report.whatif)
    return out
