"""Per-GPU training memory of many layouts (the search) and of one (the report): both the one
array-valued memory function of :mod:`llm_planner.core.sections.training_memory`, with the
micro-batches in flight that each layout's pipeline schedule keeps."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np
import numpy.typing as npt

from llm_planner.core.inputs.parallelism import ParallelInputs
from llm_planner.core.inputs.training import TrainingInputs
from llm_planner.core.primitives.architecture import Architecture
from llm_planner.core.primitives.gpus import GPU
from llm_planner.core.sections.parallelism.layout import (
    COMPUTE_KEY,
    DEGREES_KEY,
    Layouts,
    ResolvedLayout,
    priced_per_group,
    resolve_layout,
    training_layout_kwargs,
)
from llm_planner.core.sections.parallelism.schedule import (
    FloatArray,
    training_in_flight,
    training_in_flight_last,
    training_in_flight_one,
    training_loss_in_flight,
)
from llm_planner.core.sections.parallelism.workload import Workload
from llm_planner.core.sections.training import (
    TrainingReport,
    estimate_training,
)
from llm_planner.core.sections.training_memory import (
    RECOMPUTE_POLICIES,
    MemoryTerms,
    training_memory_arrays,
    zero_divisors,
)
from llm_planner.core.sections.training_memory_one import training_memory_one

# --------------------------------------------------------------------- memory arithmetic


def model_state_bytes_per_gpu(
    params: npt.ArrayLike,
    zero_stage: npt.ArrayLike,
    dp: npt.ArrayLike,
    *,
    weight_bytes_per_param: float | FloatArray = 2.0,
    grad_bytes_per_param: float | FloatArray = 2.0,
    optimizer_bytes_per_param: float | FloatArray = 12.0,
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """(weights, gradients, optimizer states) bytes per GPU under ZeRO stage 0-3.

    ``params`` is the GPU's share after tensor/pipeline splitting. Stage 1 divides the
    optimizer states by the data-parallel degree N_d, stage 2 also the gradients, stage 3
    also the parameters (Rajbhandari et al. 2019, arXiv:1910.02054 section 5, Figure 1:
    (2 + 2 + K)·Ψ, 2Ψ + 2Ψ + KΨ/N_d, 2Ψ + (2 + K)Ψ/N_d, (2 + 2 + K)Ψ/N_d with K = 12 for
    mixed-precision Adam). Bytes per parameter may be arrays (one per layout).
    """
    p = np.asarray(params, dtype=np.float64)
    w_div, g_div, o_div = zero_divisors(zero_stage, dp)
    weights = p * weight_bytes_per_param / w_div
    grads = p * grad_bytes_per_param / g_div
    optim = p * optimizer_bytes_per_param / o_div
    return np.asarray(weights), np.asarray(grads), np.asarray(optim)


# --------------------------------------------------------------------- many layouts


def memory_screen(
    work: Workload | None,
    lay: Layouts,
    terms: MemoryTerms,
    *,
    m: FloatArray,
) -> dict[str, FloatArray]:
    """Per-GPU training memory of each layout: the one memory function
    (:func:`.training_memory.training_memory_arrays`) with the micro-batches in flight of
    each layout's schedule (``m`` micro-batches per step; :mod:`.schedule`): the first stage
    holds pp of them under 1F1B (Narayanan et al. 2021, section 2.2.1), the last one."""
    del work  # the layer count is the terms'
    flights = priced_per_group(  # once per distinct (pp, v, schedule, dp, micro-batch)
        lay, DEGREES_KEY, [m], lambda g, a: _in_flight(g, a[0])
    )
    first, last, loss = flights if flights is not None else _in_flight(lay, m)
    return training_memory_arrays(
        terms,
        tp=lay.tp,
        pp=lay.pp,
        shard=lay.as_float("shard"),
        ep=lay.ep,
        cp=lay.cp,
        zero=lay.zero,
        micro_batch=lay.as_float("micro_batch"),
        sp=lay.sp,
        recompute=lay.recompute,
        first_in_flight=first,
        last_in_flight=last,
        loss_in_flight=loss,
        detail=False,
        groups=(lay.groups(DEGREES_KEY), lay.groups(COMPUTE_KEY)),
    )


def _in_flight(lay: Layouts, m: FloatArray) -> list[FloatArray]:
    """The micro-batches the first and the last stage hold at their peak, and the last
    stage's loss-side ones (:mod:`.schedule`; the first stage's default, pp)."""
    pp = lay.as_float("pp")
    v = lay.as_float("v")
    in_flight = training_in_flight(pp, m, lay.gpipe, v)
    return [
        np.asarray(np.where(in_flight > 0, in_flight, pp)),
        training_in_flight_last(pp, m, lay.gpipe, v),
        training_loss_in_flight(pp, m, lay.gpipe, v),
    ]


ONE_BY_ONE_BELOW = 12
"""Layouts up to which :func:`screen_peaks` prices each alone in Python floats
(:func:`.training_memory_one.training_memory_one`, about 6 µs a layout) rather than all
at once in numpy (about 0.08 ms whatever their number)."""


def _one_by_one(lay: Layouts, m: FloatArray) -> list[tuple[Any, ...]]:
    """Each layout's arguments to :func:`.training_memory_one.training_memory_one`, as
    :func:`memory_screen` passes them to the array function (tp, pp, shard, ep, cp, ZeRO,
    micro-batch, sp, policy, first and last stage's micro-batches in flight, the last
    stage's loss-side micro-batches)."""
    pp = lay.as_float("pp")
    v = lay.as_float("v")
    in_flight = training_in_flight(pp, m, lay.gpipe, v)
    return list(
        zip(
            lay.tp.tolist(),
            lay.pp.tolist(),
            lay.as_float("shard").tolist(),
            lay.ep.tolist(),
            lay.cp.tolist(),
            lay.zero.tolist(),
            lay.as_float("micro_batch").tolist(),
            lay.sp.tolist(),
            lay.recompute.tolist(),
            np.where(in_flight > 0, in_flight, pp).tolist(),
            training_in_flight_last(pp, m, lay.gpipe, v).tolist(),
            training_loss_in_flight(pp, m, lay.gpipe, v).tolist(),
            strict=True,
        )
    )


def _peak_one(terms: MemoryTerms, args: tuple[Any, ...]) -> float:
    tp, pp_, shard, ep, cp, zero, b, sp, rc, first, last, loss = args
    return training_memory_one(
        terms,
        tp=tp,
        pp=pp_,
        shard=shard,
        ep=ep,
        cp=cp,
        zero=zero,
        micro_batch=b,
        sp=sp,
        recompute=rc,
        first_in_flight=first,
        last_in_flight=last,
        loss_in_flight=loss,
        detail=False,
    )["peak_bytes"]


def screen_peaks(lay: Layouts, terms: MemoryTerms, *, m: FloatArray) -> FloatArray:
    """:func:`memory_screen`'s ``peak_bytes`` alone (the fewest-GPUs search asks only
    whether a layout fits): the same values, a few layouts one by one."""
    if len(lay) > ONE_BY_ONE_BELOW:
        return memory_screen(None, lay, terms, m=m)["peak_bytes"]
    return np.array([_peak_one(terms, args) for args in _one_by_one(lay, m)], dtype=np.float64)


FIRST_FIT_UP_TO = 32
"""Layouts up to which :func:`some_peak_fits` screens one by one, stopping at the first
that fits and pricing layouts with the same memory once, rather than all at once in numpy
(about 0.1 ms whatever their number; one layout in Python, about 8 µs)."""


def memory_key(terms: MemoryTerms, args: tuple[Any, ...]) -> tuple[Any, ...]:
    """What one layout's peak depends on, of its :func:`_one_by_one` arguments: all of
    them, except the ZeRO stage (set to 0) without ZeRO sharding (a shard group of one),
    offload or a head kept gathered: then every ZeRO divisor is 1 and the gradient bucket
    and the ZeRO-3 gather are priced only over a shard group > 1
    (:func:`.training_memory_one.training_memory_one`), so the stage changes nothing."""
    if args[2] <= 1 and terms.offload is None and terms.gathered_head is None:
        return (*args[:5], 0, *args[6:])
    return args


_THRESHOLD_CODE = RECOMPUTE_POLICIES.index("threshold")


def _without_sp_off_twins(
    terms: MemoryTerms, layouts: list[tuple[Any, ...]]
) -> list[tuple[Any, ...]]:
    """``layouts`` (:func:`_one_by_one` arguments) less each one with sequence parallelism
    off whose twin (every other argument equal) with it on is among them, where SP never
    raises the peak (:attr:`.training_memory.MemoryTerms.sequence_parallel_never_raises`,
    the threshold policy apart): if the SP-off layout fits, so does its twin, so whether
    some layout fits is unchanged."""
    if not terms.sequence_parallel_never_raises:
        return layouts
    with_sp = {(*a[:7], *a[8:]) for a in layouts if a[7] and a[8] != _THRESHOLD_CODE}
    if not with_sp:
        return layouts
    return [a for a in layouts if a[7] or (*a[:7], *a[8:]) not in with_sp]


def some_peak_fits(lay: Layouts, terms: MemoryTerms, *, m: FloatArray, capacity: float) -> bool:
    """Whether some layout's :func:`screen_peaks` value is at most ``capacity``: the same
    values, compared up to the first that fits, last layout first (the enumeration lists
    the most sharded layouts last, the likeliest to fit; the order changes only how many
    are priced); layouts of one :func:`memory_key` are priced once."""
    if len(lay) > FIRST_FIT_UP_TO:
        return bool(np.any(screen_peaks(lay, terms, m=m) <= capacity))
    return some_fits(terms, _one_by_one(lay, m), capacity)


LayoutRow = tuple[int, int, int, int, int, int, int, int, int, int]
"""One candidate of the fewest-GPUs search as Python integers (:func:`.search_layouts.
layout_rows`): (tp, pp, dp, micro-batch, v, ep, cp, ZeRO stage, recompute code, sequence
parallel 0/1), with a shard group of dp·cp and no GPipe, as the enumeration's arrays."""


def microbatches_per_step_one(global_batch: float, dp: float, micro_batch: float) -> float:
    """:func:`.step_time.microbatches_per_step` of one layout in Python floats, the same
    operations: replicas beyond the batch sit out, m = batch ÷ (working replicas · b)."""
    working = min(dp, max(1.0, float(math.floor(global_batch / micro_batch))))
    return global_batch / (working * micro_batch)


def row_arguments(rows: Sequence[LayoutRow], global_batch: int) -> list[tuple[Any, ...]]:
    """:func:`_one_by_one`'s arguments of each row, without arrays: the values those of
    the rows' :class:`Layouts` are, with their micro-batches per step at ``global_batch``
    (``tests/core/test_layout_rows.py``)."""
    out: list[tuple[Any, ...]] = []
    for tp, pp, dp, b, v, ep, cp, zero, rc, sp in rows:
        p = float(pp)
        m = microbatches_per_step_one(global_batch, float(dp), float(b))
        first, last, loss = training_in_flight_one(p, m, False, float(v))
        first = first if first > 0 else p
        shard = float(dp * cp)
        out.append((tp, pp, shard, ep, cp, zero, float(b), bool(sp), rc, first, last, loss))
    return out


def some_fits(terms: MemoryTerms, layouts: list[tuple[Any, ...]], capacity: float) -> bool:
    """:func:`some_peak_fits` of layouts given as :func:`_one_by_one`'s arguments (or
    :func:`row_arguments`')."""
    seen: set[tuple[Any, ...]] = set()
    for args in reversed(_without_sp_off_twins(terms, layouts)):
        key = memory_key(terms, args)
        if key in seen:
            continue
        seen.add(key)
        if _peak_one(terms, args) <= capacity:
            return True
    return False


def training_memory(
    arch: Architecture,
    gpu: GPU,
    lay: ResolvedLayout,
    training_inputs: TrainingInputs,
    *,
    params_override: float | None = None,
    gpus_per_node: int = 8,
) -> TrainingReport:
    """The training estimator's report for this layout (``gpus_per_node`` share a node's
    host RAM when state is offloaded)."""
    return estimate_training(
        arch,
        training_inputs,
        gpu,
        params_override=params_override,
        gpus_per_node=gpus_per_node,
        **training_layout_kwargs(lay),
    )


# --------------------------------------------------------------------- GUI series


def zero_stage_comparison(
    arch: Architecture,
    training_inputs: TrainingInputs,
    gpu: GPU,
    inputs: ParallelInputs,
    num_gpus: int,
    *,
    params_override: float | None = None,
) -> list[dict[str, float]]:
    """Per-GPU memory components for ZeRO stages 0-3 at the scenario's tp/pp/dp, from the
    training estimator (one source of truth)."""
    lay = resolve_layout(
        inputs,
        num_gpus,
        int(training_inputs.micro_batch),
        str(training_inputs.recompute),
        arch.layers,
    )
    rows: list[dict[str, float]] = []
    for stage in range(4):
        rep = training_memory(
            arch,
            gpu,
            replace(lay, zero_stage=stage),
            training_inputs,
            params_override=params_override,
        )
        rows.append(
            {
                "zero_stage": float(stage),
                "weights_bytes": float(rep.weights_bytes),
                "gradients_bytes": float(rep.gradients_bytes),
                "optimizer_bytes": float(rep.optimizer_bytes),
                "activations_bytes": float(rep.activations_bytes),
                "temporary_bytes": float(rep.temporary_bytes),
                "overhead_bytes": float(rep.overhead_bytes),
                "peak_bytes": float(rep.peak_bytes),
            }
        )
    return rows
