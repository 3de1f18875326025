"""The layout search's machinery: one search's fixed problem, screening, pricing in chunks,
ranking with uncertainties and re-checking rows with the training estimator
(:mod:`.search`)."""

from __future__ import annotations

import functools
import time
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from llm_planner.core.composition.ranking import Uncertainty, layout_uncertainties, ranking_factor
from llm_planner.core.composition.search_layouts import (
    MAX_CANDIDATES_PER_ROW,
    SearchOptions,
    SearchResult,
    SearchRow,
    enumerate_layouts,
    layout_rows,
    layouts_of_rows,
)
from llm_planner.core.inputs.training import TrainingInputs
from llm_planner.core.primitives.architecture import Architecture, count_parameters
from llm_planner.core.primitives.gpus import GPU
from llm_planner.core.primitives.kept import forgotten
from llm_planner.core.sections import parallelism as par

# --------------------------------------------------------------------- the search


class _Problem:
    """Everything fixed during one search: workload, cluster, training-memory terms. The
    workload, cluster and step inputs are built on first use: the fewest-GPUs search reads
    only the memory terms and the batch."""

    def __init__(
        self,
        arch: Architecture,
        gpu: GPU,
        inputs: par.ParallelInputs,
        training_inputs: TrainingInputs,
        *,
        params_override: float | None,
        compute_dtype: str = "bf16",
        include_attention_flops: bool = False,
    ) -> None:
        self.arch = arch
        self.gpu = gpu
        self.inputs = inputs
        self.training_inputs = training_inputs
        self.params_override = params_override
        self.compute_dtype = compute_dtype
        self.include_attention_flops = include_attention_flops
        # tensor parallelism up to the NVLink domain (an NVL72 rack: 72), not the tray
        self.gpus_per_node = par.nvlink_domain_of(gpu, inputs)
        self.global_batch = inputs.global_batch
        self.params = params_override or float(count_parameters(arch).total)
        self.memory = par.memory_terms(arch, training_inputs, self.params)

    @functools.cached_property
    def work(self) -> par.Workload:
        work = par.workload_of(
            self.arch,
            int(self.training_inputs.seq_len),
            self.inputs.global_batch,
            self.params,
            training_inputs=self.training_inputs,
            include_attention_flops=self.include_attention_flops,
        )
        if self.global_batch == self.inputs.global_batch:
            return work
        return par.Workload(**{**work.__dict__, "global_batch": self.global_batch})

    @functools.cached_property
    def cluster(self) -> par.Cluster:
        return par.cluster_of(self.gpu, self.inputs, self.compute_dtype)

    @functools.cached_property
    def step_inputs(self) -> par.StepInputs:
        return par.step_inputs_of(self.arch, self.training_inputs)

    def with_batch(self, global_batch: int) -> _Problem:
        clone = object.__new__(_Problem)
        clone.__dict__.update(self.__dict__)
        clone.global_batch = global_batch
        if "work" in self.__dict__:
            clone.work = par.Workload(**{**self.work.__dict__, "global_batch": global_batch})
        return clone


def _row(
    rank: int, lay: par.Layouts, out: dict[str, Any], i: int, u: Uncertainty | None
) -> SearchRow:
    v = int(lay.v[i])
    values = {k: float(a[i]) for k, a in out.items()}
    spread: dict[str, Any] = {}
    if u is not None:
        spread = {
            "measured_ratio_low": u.low,
            "measured_ratio_high": u.high,
            "uncertainty_runs": u.runs,
            "uncertainty_basis": u.basis,
        }
    return SearchRow(
        rank=rank,
        dp=int(lay.dp[i]),
        tp=int(lay.tp[i]),
        pp=int(lay.pp[i]),
        ep=int(lay.ep[i]),
        cp=int(lay.cp[i]),
        zero_stage=int(lay.zero[i]),
        micro_batch=int(lay.micro_batch[i]),
        recompute=par.RECOMPUTE_CODES[int(lay.recompute[i])],
        sequence_parallel=bool(lay.sp[i]),
        # the scenario's schedule names (pp = 1: '1f1b', the default, as in the report), so a
        # row applies to a scenario as is
        schedule="gpipe" if lay.gpipe[i] else ("interleaved" if v > 1 else "1f1b"),
        interleave_chunks=v,
        gradient_accumulation_steps=round(values["microbatches"]),
        peak_bytes=values["peak_bytes"],
        step_seconds=values["step_seconds"],
        tokens_per_s=values["tokens_per_s"],
        mfu=values["mfu"],
        hfu=values["hfu"],
        bubble_fraction=values["bubble_fraction"],
        comm_bytes_per_step=values["comm_bytes_per_step"],
        bottleneck=par.bottleneck_of(values),
        memory_checked=True,
        ranked_tokens_per_s=values["tokens_per_s"] * ranking_factor(u),
        **spread,
    )


def _run(problem: _Problem, num_gpus: int, options: SearchOptions, top: int) -> SearchResult:
    return _run_counts(problem, [num_gpus], options, top)[0]


def _run_counts(
    problem: _Problem, counts: Sequence[int], options: SearchOptions, top: int
) -> list[SearchResult]:
    """:func:`_run` at each of ``counts``, their candidates priced in one evaluation: the
    evaluation is element-wise (each layout's figures are its own), so one call spares the
    fixed cost of pricing each count's layouts apart; and only the layouts whose memory
    fits (:func:`.parallelism.memory_screen`, the ``peak_bytes`` the evaluation returns)
    are priced for step time, since only those are ranked. Each result's ``seconds`` is
    the whole evaluation's."""
    start = time.perf_counter()
    if options.max_tp is None:  # tensor parallelism inside a node (see SearchOptions.max_tp)
        options = options.model_copy(update={"max_tp": problem.gpus_per_node})
    screened = [
        _screened(
            problem.arch,
            problem.training_inputs,
            problem.params,
            num_gpus=n,
            global_batch=problem.global_batch,
            options=options,
            seq_len=int(problem.training_inputs.seq_len),
        )
        for n in counts
    ]
    each = [part for part, _ in screened]
    lay = each[0] if len(each) == 1 else _concatenated(each)
    fits = np.zeros(0, dtype=bool)
    out: dict[str, Any] = {}
    if len(lay):
        parts = [values for part, values in screened if len(part)]
        memory = parts[0] if len(parts) == 1 else _joined(parts)
        fits = memory["peak_bytes"] <= problem.cluster.memory_bytes
        kept = np.flatnonzero(fits)
        if kept.size:
            priced = lay if kept.size == len(lay) else lay.take(kept)
            out = par.evaluate_layouts(
                problem.work, problem.cluster, priced, None, problem.step_inputs
            )
            out.update({k: v if kept.size == len(lay) else v[kept] for k, v in memory.items()})
            lay = priced
    ranked: list[tuple[int, int, int, list[SearchRow]]] = []
    first = offset = 0  # where this count's priced rows, and its candidates, start
    for n, part in zip(counts, each, strict=True):
        size = len(part)
        fitting = int(np.count_nonzero(fits[offset : offset + size]))
        offset += size
        rows: list[SearchRow] = []
        if fitting:
            piece = lay if fitting == len(lay) else _sliced(lay, first, first + fitting)
            values = (
                out
                if fitting == len(lay)
                else {k: v[first : first + fitting] for k, v in out.items()}
            )
            rows = _rank(problem, piece, values, top)[1]
        ranked.append((n, size, fitting, rows))
        first += fitting
    seconds = time.perf_counter() - start
    return [
        SearchResult(num_gpus=n, candidates=size, fitting=fitting, seconds=seconds, rows=rows)
        for n, size, fitting, rows in ranked
    ]


@forgotten
@functools.lru_cache(maxsize=32)
def _screened(
    arch: Architecture,
    training_inputs: TrainingInputs,
    params: float,
    *,
    num_gpus: int,
    global_batch: int,
    options: SearchOptions,
    seq_len: int = 0,
) -> tuple[par.Layouts, dict[str, par.FloatArray]]:
    """One count's candidates and their memory (:func:`.parallelism.memory_screen` with the
    micro-batches per step the evaluation counts), kept: neither depends on the GPU, whose
    capacity is compared after, so the hardware ranking's GPU kinds share them. The arrays
    are read-only (shared between calls)."""
    lay = enumerate_layouts(arch, num_gpus, global_batch, options, seq_len)
    memory: dict[str, par.FloatArray] = {}
    if len(lay):
        m = par.microbatches_per_step(global_batch, lay)
        terms = par.memory_terms(arch, training_inputs, params)
        memory = par.memory_screen(None, lay, terms, m=m)
    for array in (*(getattr(lay, name) for name in par.LAYOUT_FIELDS), *memory.values()):
        array.flags.writeable = False
    return lay, memory


def _joined(parts: list[dict[str, par.FloatArray]]) -> dict[str, par.FloatArray]:
    return {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}


def _sliced(lay: par.Layouts, start: int, stop: int) -> par.Layouts:
    return par.Layouts(**{name: getattr(lay, name)[start:stop] for name in par.LAYOUT_FIELDS})


def _as_layouts(part: par.Layouts | list[par.LayoutRow]) -> par.Layouts:
    return layouts_of_rows(part) if isinstance(part, list) else part


def _concatenated(parts: list[par.Layouts]) -> par.Layouts:
    return par.Layouts(
        **{name: np.concatenate([getattr(p, name) for p in parts]) for name in par.LAYOUT_FIELDS}
    )


def _first_of_lexsort(index: npt.NDArray[np.int64], keys: tuple[par.FloatArray, ...]) -> int:
    """``index[np.lexsort(keys)[0]]``, by narrowing to the least of the last key, then of
    the one before, and so on (lexsort is stable: the earliest of the remaining ties);
    O(n) where the sort is O(n log n). A NaN key (which lexsort puts last) takes the sort."""
    if any(np.isnan(k).any() for k in keys):
        return int(index[np.lexsort(keys)[0]])
    at = np.arange(index.size)
    for key in reversed(keys):
        values = key[at]
        at = at[values == values.min()]
        if at.size == 1:
            break
    return int(index[at[0]])


def _rank(
    problem: _Problem, lay: par.Layouts, out: dict[str, Any], top: int
) -> tuple[int, list[SearchRow]]:
    """(layouts that fit, the ``top`` first of them as rows): fastest first by the ranking
    figure (modeled tokens/s × what measured runs of the same mechanisms reached:
    core/composition/ranking.py); among equals, less traffic (robust to the overlap
    model), then memory."""
    rows: list[SearchRow] = []
    capacity = problem.cluster.memory_bytes
    fit = np.flatnonzero(out["peak_bytes"] <= capacity)
    spreads, which = _uncertainties(problem, lay, fit)
    factor = np.array([ranking_factor(u) for u in spreads], dtype=np.float64)[which]
    ranked = out["tokens_per_s"][fit] * factor
    keys = (out["peak_bytes"][fit], out["comm_bytes_per_step"][fit], -ranked)
    if top == 1 and fit.size:  # the first of the order below, without sorting every layout
        best = _first_of_lexsort(np.arange(fit.size), keys)
        return int(fit.size), [_row(1, lay, out, int(fit[best]), spreads[which[best]])]
    order = np.lexsort(keys)  # positions in fit
    budget = max(top, 1) * MAX_CANDIDATES_PER_ROW
    seen: set[tuple[Any, ...]] = set()
    for at in order[:budget]:
        if len(rows) >= top:
            break
        i = int(fit[at])
        # policies that change nothing here (selective = none with flash attention) → one row
        same = (
            *(int(getattr(lay, name)[i]) for name in ("tp", "pp", "dp", "ep", "zero")),
            *(int(getattr(lay, name)[i]) for name in ("micro_batch", "v", "sp")),
            round(float(out["peak_bytes"][i])),
            round(float(out["step_seconds"][i]), 9),
        )
        if same in seen:
            continue
        seen.add(same)
        rows.append(_row(len(rows) + 1, lay, out, i, spreads[which[at]]))
    return int(fit.size), rows


def _uncertainties(
    problem: _Problem, lay: par.Layouts, fit: npt.NDArray[np.int64]
) -> tuple[list[Uncertainty | None], npt.NDArray[np.int64]]:
    """(:func:`.ranking.layout_uncertainties` of each distinct (tp, pp, dp, ZeRO) among the
    layouts ``fit``, each fitting layout's index among them): the spread depends on those
    four alone, so the hardware ranking's hundreds of thousands of layouts look up a few
    dozen."""
    tp, pp, dp, zero = (getattr(lay, name)[fit] for name in ("tp", "pp", "dp", "zero"))
    code = ((tp * (int(pp.max(initial=0)) + 1) + pp) * (int(dp.max(initial=0)) + 1) + dp) * 4
    _, first, which = np.unique(code + zero, return_index=True, return_inverse=True)
    spreads = layout_uncertainties(
        problem.training_inputs.stack,
        tp[first],
        pp[first],
        dp[first],
        zero[first],
        gpus_per_node=problem.gpus_per_node,
    )
    return spreads, which.reshape(-1)


def _first_that_fits(
    problem: _Problem, counts: list[tuple[int, int]], options: SearchOptions
) -> int | None:
    """The first GPU count of ``counts`` ((count, global batch) pairs) on which :func:`_run`
    would find a row, i.e. some candidate's peak memory fits; None if none. Only the memory
    screen is evaluated (:func:`.parallelism.memory_screen`, the very array
    :func:`.parallelism.evaluate_layouts` returns as ``peak_bytes``, with the same
    micro-batches per step), not the step time that orders the rows.

    Count by count, each count's layouts without tensor parallelism first, then the rest:
    every (tp, sequence parallel) pair prices its activations once
    (:attr:`.training_memory.MemoryTerms.activations`), so a count that fits without tp
    (most models on their first count that fits) never prices the larger tp degrees. The
    rest of one count and the next count's layouts without tp go to :func:`_fitting_count`
    together (a few layouts: piece by piece up to the first that fits; many: one call),
    and the answer is the first count, in order, with a layout that fits."""
    if options.max_tp is None:  # as _run: tensor parallelism inside a node
        options = options.model_copy(update={"max_tp": problem.gpus_per_node})
    pieces: list[_Piece] = []  # (count, its global batch, layouts)
    for i, (n, batch) in enumerate(counts):
        rows = layout_rows(problem.arch, n, batch, options)
        split: list[par.Layouts] | list[list[par.LayoutRow]]
        if rows is not None:  # a few: as Python tuples, split in the arrays' order
            plain_rows = [r for r in rows if r[0] == 1]
            split = (
                [plain_rows, [r for r in rows if r[0] != 1]]
                if 0 < len(plain_rows) < len(rows)
                else [rows]
            )
        else:
            lay = enumerate_layouts(problem.arch, n, batch, options)
            plain = lay.tp == 1
            split = [lay.take(plain), lay.take(~plain)] if 0 < plain.sum() < len(lay) else [lay]
        pieces += [(n, batch, part) for part in split if len(part)]
        if i == 0 and pieces and _fitting_count(problem, pieces[:1]) is not None:
            return n  # the first count's layouts without tp: no other count enumerated
    # the rest two at a time: (rest of n, plain of 2n), ...
    start = 1 if pieces and pieces[0][0] == counts[0][0] else 0
    batches = [pieces[i : i + 2] for i in range(start, len(pieces), 2)]
    for group in batches:
        found = _fitting_count(problem, group)
        if found is not None:
            return found
    return None


_Piece = tuple[int, int, par.Layouts | list[par.LayoutRow]]
"""(count, its global batch, some of its layouts: as arrays, or as Python tuples where the
enumeration gave few, :func:`.search_layouts.layout_rows`)."""


def _fitting_count(problem: _Problem, group: list[_Piece]) -> int | None:
    """The first count of ``group`` ((count, global batch, layouts) pieces) with a layout
    whose peak fits the GPU; None if none. A few layouts: piece by piece, each up to its
    first layout that fits (:func:`.parallelism.some_peak_fits`; layouts given as tuples
    without arrays, :func:`.parallelism.row_arguments`); many: screened in one call (the
    screen is element-wise: a layout's peak is the same screened alone or among others)."""
    capacity = problem.gpu.memory_bytes  # the cluster's (not built for a screen alone)
    if sum(len(part) for *_, part in group) <= par.FIRST_FIT_UP_TO:
        for n, batch, part in group:
            if isinstance(part, list):
                some = par.some_fits(problem.memory, par.row_arguments(part, batch), capacity)
            else:
                m = par.microbatches_per_step(batch, part)
                some = par.some_peak_fits(part, problem.memory, m=m, capacity=capacity)
            if some:
                return n
        return None
    parts = [_as_layouts(part) for *_, part in group]
    lay = parts[0] if len(parts) == 1 else _concatenated(parts)
    m = np.concatenate(
        [
            par.microbatches_per_step(batch, part)
            for (_, batch, _), part in zip(group, parts, strict=True)
        ]
    )
    fits = par.screen_peaks(lay, problem.memory, m=m) <= capacity
    offset = 0
    for n, _, part in group:
        if np.any(fits[offset : offset + len(part)]):
            return n
        offset += len(part)
    return None
