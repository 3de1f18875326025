"""Ranked layout search, scaling curve and the smallest deployment that meets a schedule.

:func:`search` enumerates every layout (tp, pp, dp, ZeRO stage, micro-batch, recompute,
sequence parallel, interleaving, expert parallel) for a model, a global batch and a GPU
count as numpy arrays, prices them all at once with
:func:`~llm_planner.core.sections.parallelism.evaluate_layouts`, drops those whose screened memory
exceeds the GPU, ranks by throughput and re-checks the returned rows with the training
estimator (the one source of truth for per-GPU memory), so a row reported as fitting has
``peak_bytes`` ≤ the GPU's memory.
"""

from __future__ import annotations

import functools
import math
import time
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, ConfigDict, Field

from llm_planner.core.composition.calibration import calibrate_scenario
from llm_planner.core.composition.ranking import Uncertainty, layout_uncertainties, ranking_factor
from llm_planner.core.inputs.training import TrainingInputs
from llm_planner.core.primitives.architecture import Architecture, count_parameters
from llm_planner.core.primitives.figures import Figure
from llm_planner.core.primitives.gpus import GPU
from llm_planner.core.sections import parallelism as par

IntArray = npt.NDArray[np.int64]

MAX_CANDIDATES_PER_ROW = 20
"""How many ranked candidates (policies that change nothing included) the search reads per
requested row."""

MAX_DEPLOYMENT_GPUS = 1 << 20
"""Upper bound of the GPU counts the deployment search tries (about a million)."""


class SearchOptions(BaseModel):
    """The space the search enumerates (each value a documented, editable choice)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    zero_stages: tuple[int, ...] = (0, 1, 2, 3)
    recompute: tuple[str, ...] = par.RECOMPUTE_CODES
    sequence_parallel: tuple[bool, ...] = (False, True)
    micro_batches: tuple[int, ...] = (1, 2, 4, 8, 16)
    interleave: tuple[int, ...] = (1, 2, 4)
    """Virtual stages per GPU tried when pp > 1 (1 = plain 1F1B)."""
    max_tp: int | None = None
    """Largest tensor-parallel degree; None: the cluster's GPUs per node.

    Narayanan et al. 2021 (arXiv:2104.04473, section 3.3, takeaway #1): tensor parallelism
    should be used up to the GPUs of one server and pipeline parallelism across servers,
    because its all-reduces on the critical path are latency-bound across nodes, which the
    bandwidth-only link model here does not see. Set it higher to explore anyway."""
    zero_with_pipeline: bool = False
    """Allow ZeRO-2/3 with pp > 1 (DeepSpeed's pipeline engine supports ZeRO-1 only)."""
    context_parallel: tuple[int, ...] | None = None
    """Context-parallel degrees tried; None: 1, and 2, 4, 8 too when a sequence holds at
    least :data:`LONG_CONTEXT_TOKENS` tokens (context parallelism is Megatron-Core's answer
    to long-context activation memory: NVIDIA/Megatron-LM@d98e8a64
    docs/user-guide/features/context_parallel.md)."""


LONG_CONTEXT_TOKENS = 16384
"""Sequence length from which the search tries context parallelism by default (a choice:
below it activations rarely decide the layout, and every cp multiplies the candidates)."""


class SearchRow(BaseModel):
    """One ranked layout."""

    model_config = ConfigDict(frozen=True)

    rank: int
    dp: int
    tp: int
    pp: int
    ep: int
    zero_stage: int
    cp: int = Field(default=1, description="context-parallel degree (GPUs = tp·cp·pp·dp)")
    micro_batch: int
    recompute: str
    sequence_parallel: bool
    schedule: str
    interleave_chunks: int
    gradient_accumulation_steps: int
    peak_bytes: float
    step_seconds: float
    tokens_per_s: float
    mfu: float
    hfu: float
    bubble_fraction: float
    comm_bytes_per_step: float
    bottleneck: str
    memory_checked: bool = Field(
        description="peak_bytes from the training-memory function the report uses "
        "(always true: the search and the report share it)"
    )
    ranked_tokens_per_s: float = Field(
        description="the figure the search ranks by: tokens_per_s × the low percentile of "
        "measured ÷ modeled throughput over measured runs of the same mechanisms "
        "(core/composition/ranking.py); = tokens_per_s where none were measured"
    )
    measured_ratio_low: float | None = Field(
        default=None,
        description="25th percentile of measured ÷ modeled tokens/s over the measured runs "
        "of this layout's mechanism class (None: none measured)",
    )
    measured_ratio_high: float | None = Field(
        default=None, description="75th percentile of the same ratio"
    )
    uncertainty_runs: int = Field(default=0, description="measured runs the spread rests on")
    uncertainty_basis: str = Field(
        default="no measured runs of these mechanisms: ranked by the modeled figure",
        description="the mechanism class and node count the spread comes from",
    )


class SearchResult(BaseModel):
    """The ranked rows and what the search did to find them."""

    model_config = ConfigDict(frozen=True)

    num_gpus: int
    candidates: int
    fitting: int
    seconds: float
    rows: list[SearchRow]

    def figures(self) -> list[Figure]:
        return [
            Figure(key="candidates", label="Layouts tried", value=self.candidates, unit="count"),
            Figure(key="fitting", label="Layouts that fit", value=self.fitting, unit="count"),
            Figure(key="seconds", label="Search time", value=self.seconds, unit="seconds"),
        ]


# --------------------------------------------------------------------- enumeration


def _divisors(n: int) -> list[int]:
    small = [d for d in range(1, math.isqrt(n) + 1) if n % d == 0]
    return sorted({*small, *(n // d for d in small)})


def _tp_allowed(arch: Architecture, tp: int, max_tp: int | None) -> bool:
    """Heads split evenly; key/value heads split or are replicated (Megatron GQA)."""
    if max_tp is not None and tp > max_tp:
        return False
    return arch.heads % tp == 0 and (arch.kv_heads % tp == 0 or tp % arch.kv_heads == 0)


def enumerate_layouts(
    arch: Architecture,
    num_gpus: int,
    global_batch: int,
    options: SearchOptions,
    seq_len: int = 0,
) -> par.Layouts:
    """Every valid layout for ``num_gpus`` GPUs and ``global_batch`` sequences, as arrays.

    dp = GPUs/(tp·pp) must divide the global batch, the micro-batch must divide the
    per-replica batch, interleaving needs pp > 1, v·pp ≤ L and m a multiple of pp (Megatron),
    sequence parallelism needs tp > 1, expert parallelism (MoE) divides dp and the experts.
    Context parallelism (``options.context_parallel``; ``seq_len`` picks the default): dp =
    GPUs/(tp·cp·pp), the sequence splits into 2·cp chunks (Megatron-Core's causal load
    balance), ep divides dp·cp (the experts' data parallelism includes cp).
    """
    base: list[tuple[int, int, int, int, int, int, int]] = []
    experts = arch.moe.num_experts if arch.moe else 1
    cps = options.context_parallel or ((1, 2, 4, 8) if seq_len >= LONG_CONTEXT_TOKENS else (1,))
    # the sequence splits into 2·cp chunks; tp·cp divides the GPUs
    pairs = [
        (tp, cp)
        for tp in _divisors(num_gpus)
        if _tp_allowed(arch, tp, options.max_tp)
        for cp in cps
        if num_gpus % (tp * cp) == 0 and (cp == 1 or seq_len % (2 * cp) == 0)
    ]
    for tp, cp in pairs:
        for pp in _divisors(num_gpus // (tp * cp)):
            if pp > arch.layers:
                continue
            dp = num_gpus // (tp * cp * pp)
            if global_batch % dp:
                continue
            per_replica = global_batch // dp
            eps = [e for e in _divisors(dp * cp) if experts % e == 0] if arch.moe else [1]
            for b in options.micro_batches:
                if per_replica % b:
                    continue
                m = per_replica // b
                for v in options.interleave:
                    if v > 1 and (pp == 1 or m % pp or pp * v > arch.layers):
                        continue
                    base.extend((tp, pp, dp, b, v, e, cp) for e in eps)
    if not base:
        return _empty_layouts()
    table = np.array(base, dtype=np.int64)
    combos = np.array(
        [
            (z, rc, sp)
            for z in options.zero_stages
            for rc in range(len(par.RECOMPUTE_CODES))
            if par.RECOMPUTE_CODES[rc] in options.recompute
            for sp in options.sequence_parallel
        ],
        dtype=np.int64,
    )
    rows = np.repeat(table, len(combos), axis=0)
    extra = np.tile(combos, (len(table), 1))
    tp_, pp_, dp_, b_, v_, ep_, cp_ = (rows[:, i] for i in range(7))
    zero, rc, sp = extra[:, 0], extra[:, 1], extra[:, 2].astype(bool)
    keep = ~(sp & (tp_ == 1))
    if not options.zero_with_pipeline:
        keep &= ~((zero >= 2) & (pp_ > 1))
    lay = par.Layouts(
        tp=tp_,
        pp=pp_,
        dp=dp_,
        ep=ep_,
        zero=zero,
        shard=dp_ * cp_,
        micro_batch=b_,
        v=v_,
        gpipe=np.zeros(len(rows), dtype=bool),
        sp=sp,
        recompute=rc,
        cp=cp_,
    )
    return lay.take(np.flatnonzero(keep))


def _empty_layouts() -> par.Layouts:
    z = np.zeros(0, dtype=np.int64)
    return par.Layouts(
        tp=z,
        pp=z,
        dp=z,
        ep=z,
        zero=z,
        shard=z,
        micro_batch=z,
        v=z,
        gpipe=np.zeros(0, dtype=bool),
        sp=np.zeros(0, dtype=bool),
        recompute=z,
    )


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
    screen is evaluated (:func:`.parallelism.memory.memory_screen`, the very array
    :func:`.parallelism.evaluate_layouts` returns as ``peak_bytes``, with the same
    micro-batches per step), not the step time that orders the rows; the counts' candidates
    in one call (the screen is element-wise, each with its own batch's micro-batches)."""
    if options.max_tp is None:  # as _run: tensor parallelism inside a node
        options = options.model_copy(update={"max_tp": problem.gpus_per_node})
    each = [enumerate_layouts(problem.arch, n, batch, options) for n, batch in counts]
    parts = [(part, batch) for part, (_, batch) in zip(each, counts, strict=True) if len(part)]
    if not parts:
        return None
    lay = parts[0][0] if len(parts) == 1 else _concatenated([part for part, _ in parts])
    m = np.concatenate([par.microbatches_per_step(batch, part) for part, batch in parts])
    fits = par.memory_screen(None, lay, problem.memory, m=m)["peak_bytes"] <= (
        problem.cluster.memory_bytes
    )
    offset = 0
    for (n, _), part in zip(counts, each, strict=True):
        if np.any(fits[offset : offset + len(part)]):
            return n
        offset += len(part)
    return None


def search(
    arch: Architecture,
    gpu: GPU,
    num_gpus: int,
    inputs: par.ParallelInputs,
    training_inputs: TrainingInputs,
    *,
    params_override: float | None = None,
    options: SearchOptions | None = None,
    top: int = 10,
    compute_dtype: str = "bf16",
    include_attention_flops: bool = False,
) -> SearchResult:
    """The ``top`` fastest layouts of ``num_gpus`` GPUs that fit, best first.

    ``compute_dtype`` and ``include_attention_flops`` are the compute section's (the peak
    the step time runs at, and the FLOPs MFU counts), so a row applied to the scenario
    reports the same step time and MFU as the row."""
    problem = _Problem(
        arch,
        gpu,
        inputs,
        training_inputs,
        params_override=params_override,
        compute_dtype=compute_dtype,
        include_attention_flops=include_attention_flops,
    )
    return _run(problem, num_gpus, options or SearchOptions(), top)


def search_counts(
    arch: Architecture,
    gpu: GPU,
    counts: Sequence[int],
    inputs: par.ParallelInputs,
    training_inputs: TrainingInputs,
    *,
    params_override: float | None = None,
    top: int = 10,
    compute_dtype: str = "bf16",
    include_attention_flops: bool = False,
) -> list[SearchResult]:
    """:func:`search` at each GPU count of ``counts`` (the same results, in that order), the
    global batch raised to the count where it is below it (one sequence per GPU at least,
    as the hardware ranking asks). The counts that share a batch are priced together
    (:func:`_run_counts`)."""
    batches = [inputs.global_batch if n <= inputs.global_batch else n for n in counts]
    results: dict[int, SearchResult] = {}
    for batch in dict.fromkeys(batches):
        group = [n for n, b in zip(counts, batches, strict=True) if b == batch]
        problem = _Problem(
            arch,
            gpu,
            inputs.model_copy(update={"global_batch": batch}),
            training_inputs,
            params_override=params_override,
            compute_dtype=compute_dtype,
            include_attention_flops=include_attention_flops,
        )
        results.update(zip(group, _run_counts(problem, group, SearchOptions(), top), strict=True))
    return [results[n] for n in counts]


def search_scenario(
    scenario: Any, *, options: SearchOptions | None = None, top: int = 10
) -> SearchResult:
    """:func:`search` on a scenario's model, GPU, GPU count, layout inputs and training, with
    the scenario's measurements calibrating the step-time model first (the ranking is the
    calibrated model's)."""
    scenario = calibrate_scenario(scenario)[0]
    return search(
        scenario.model.architecture,
        scenario.gpu,
        scenario.num_gpus,
        scenario.parallelism,
        scenario.training,
        params_override=scenario.model.params_override,
        options=options,
        top=top,
        compute_dtype=scenario.compute.compute_dtype,
        include_attention_flops=scenario.compute.include_attention_flops,
    )


ROW_FIELDS: dict[str, str] = {
    "tp": "tp",
    "pp": "pp",
    "dp": "dp",
    "ep": "expert_parallel",
    "cp": "cp",
    "zero_stage": "zero_stage",
    "sequence_parallel": "sequence_parallel",
    "schedule": "schedule",
    "interleave_chunks": "interleave_chunks",
}
"""Search-row field → the parallelism input it sets (micro-batch and recompute are
training's)."""


def apply_row(scenario: Any, row: SearchRow) -> Any:
    """``scenario`` with a search row's layout: the parallelism inputs of :data:`ROW_FIELDS`,
    the micro-batch and the recomputation policy; an FSDP name is dropped, since the row
    states its ZeRO stage. dp is left unset (GPUs ÷ (tp·pp)) where that is the row's.
    Validated as a whole (a row always applies to the scenario it was searched for)."""
    data = scenario.model_dump()
    parallel = data["parallelism"]
    for key, name in ROW_FIELDS.items():
        parallel[name] = getattr(row, key)
    if row.dp * row.tp * row.cp * row.pp == scenario.num_gpus:
        # dp is what the GPU count leaves: kept as "from the GPU count", it follows a later
        # change of the count instead of contradicting it
        parallel["dp"] = None
    parallel["fsdp_strategy"] = None
    data["training"]["micro_batch"] = row.micro_batch
    data["training"]["recompute"] = row.recompute
    return type(scenario).model_validate(data)


# --------------------------------------------------------------------- deployment

FRUGAL_OPTIONS = SearchOptions(micro_batches=(1,), recompute=("full",), interleave=(1,))
"""Only the least memory-hungry choices (one sequence per micro-batch, full recompute, no
interleaving): whether *some* layout fits is decided by these alone, since a larger
micro-batch, less recomputation or more virtual stages never lowers memory."""


def min_gpus_per_instance(
    arch: Architecture,
    gpu: GPU,
    inputs: par.ParallelInputs,
    training_inputs: TrainingInputs,
    *,
    params_override: float | None = None,
    options: SearchOptions | None = None,
    max_gpus: int = MAX_DEPLOYMENT_GPUS,
) -> int | None:
    """Fewest GPUs (a power of two) on which one model instance fits in some layout.

    The search starts at the smallest power of two not below (model state ÷ GPU memory):
    on fewer GPUs even full ZeRO-3 sharding cannot hold the weights, gradients and optimizer.
    The instance may use tensor, pipeline and ZeRO/FSDP sharding over its GPUs; the global
    batch is set to the GPU count (one sequence per data-parallel rank at least) so batch
    divisibility never rules a count out. None if nothing fits up to ``max_gpus``.
    """
    problem = _Problem(arch, gpu, inputs, training_inputs, params_override=params_override)
    opts = options or FRUGAL_OPTIONS
    # no layout fits below the fully sharded model state: on n GPUs one holds at least
    # state / n (every parameter's weights, gradient and optimizer state live somewhere;
    # replication only adds), so n ≥ state ÷ memory: start at the power of two above it
    state = problem.memory.model_state_bytes
    n = 1 << max(0, math.ceil(math.log2(max(1.0, state / gpu.memory_bytes))))
    # two counts screened per call: the first fitting one is most often one of the first two
    while n <= max_gpus:
        counts = [(c, math.ceil(max(c, inputs.global_batch) / c) * c) for c in (n, 2 * n)]
        found = _first_that_fits(problem, counts if 2 * n <= max_gpus else counts[:1], opts)
        if found is not None:
            return found
        n *= 4
    return None


class DeploymentPlan(BaseModel):
    """The smallest deployment meeting a deadline: instance size, replicas, layout, cost."""

    model_config = ConfigDict(frozen=True)

    gpus_per_instance: int
    replicas: int
    total_gpus: int
    layout: SearchRow | None
    tokens: float
    time_seconds: float | None
    deadline_seconds: float | None
    meets_deadline: bool
    gpu_hours: float | None
    cost_usd: float | None

    def figures(self) -> list[Figure]:
        return [
            Figure(
                key="gpus_per_instance",
                label="GPUs for one instance",
                value=self.gpus_per_instance,
                unit="count",
            ),
            Figure(key="replicas", label="Replicas", value=self.replicas, unit="count"),
            Figure(key="total_gpus", label="Total GPUs", value=self.total_gpus, unit="count"),
            Figure(
                key="time_seconds",
                label="Time to train",
                value=self.time_seconds,
                unit="seconds",
                formula="tokens ÷ searched best tokens/s",
            ),
            Figure(key="cost_usd", label="Cost", value=self.cost_usd, unit="usd"),
        ]


def smallest_deployment(
    arch: Architecture,
    gpu: GPU,
    inputs: par.ParallelInputs,
    training_inputs: TrainingInputs,
    *,
    tokens: float,
    deadline_seconds: float | None,
    price_usd_per_gpu_hour: float,
    params_override: float | None = None,
    options: SearchOptions | None = None,
) -> DeploymentPlan | None:
    """Fewest GPUs for one instance, then replicas until the best layout meets the deadline.

    Replicas double until the estimated time (tokens ÷ the searched best tokens/s at
    instance × replicas GPUs, same global batch) meets the deadline, then bisect between
    the last two counts. Cost = GPUs × time ÷ 3600 × price. None when no instance fits.
    Where the GPUs outnumber the global batch, the batch grows to one sequence per GPU.
    """
    instance = min_gpus_per_instance(
        arch, gpu, inputs, training_inputs, params_override=params_override, options=options
    )
    if instance is None:
        return None
    problem = _Problem(arch, gpu, inputs, training_inputs, params_override=params_override)
    opts = options or SearchOptions()

    def best(replicas: int) -> SearchRow | None:
        n = instance * replicas
        batch = inputs.global_batch if n <= inputs.global_batch else n
        rows = _run(problem.with_batch(batch), n, opts, 1).rows
        return rows[0] if rows else None

    def seconds(row: SearchRow | None) -> float:
        return tokens / row.tokens_per_s if row is not None else math.inf

    replicas, row = 1, best(1)
    low = 0
    if deadline_seconds is not None:
        while seconds(row) > deadline_seconds and instance * replicas * 2 <= MAX_DEPLOYMENT_GPUS:
            low = replicas
            replicas *= 2
            row = best(replicas)
        if seconds(row) <= deadline_seconds:
            while replicas - low > 1:
                mid = (low + replicas) // 2
                mid_row = best(mid)
                if seconds(mid_row) <= deadline_seconds:
                    replicas, row = mid, mid_row
                else:
                    low = mid
    time_s = seconds(row)
    total = instance * replicas
    finite = math.isfinite(time_s)
    hours = total * time_s / 3600.0 if finite else None
    return DeploymentPlan(
        gpus_per_instance=instance,
        replicas=replicas,
        total_gpus=total,
        layout=row,
        tokens=tokens,
        time_seconds=time_s if finite else None,
        deadline_seconds=deadline_seconds,
        meets_deadline=finite and (deadline_seconds is None or time_s <= deadline_seconds),
        gpu_hours=hours,
        cost_usd=hours * price_usd_per_gpu_hour if hours is not None else None,
    )


# --------------------------------------------------------------------- scaling


class ScalingPoint(BaseModel):
    """One GPU count of a layout family, or one user measurement (``measured=True``)."""

    model_config = ConfigDict(frozen=True)

    gpus: int
    tokens_per_s: float
    time_to_train_seconds: float
    ideal_time_seconds: float | None
    """Time if throughput grew linearly from the family's smallest point."""
    scaling_efficiency: float | None
    measured: bool = False


def scaling_curve(
    arch: Architecture,
    gpu: GPU,
    inputs: par.ParallelInputs,
    training_inputs: TrainingInputs,
    *,
    tokens: float,
    params_override: float | None = None,
    max_points: int = 16,
    compute_dtype: str = "bf16",
) -> list[ScalingPoint]:
    """Time to train against GPU count for the scenario's layout family, plus measurements.

    The family keeps tp, pp, ZeRO stage, micro-batch, schedule and recompute, and the
    global batch; dp doubles from 1 while it divides the batch. With a fixed global batch
    more replicas mean fewer micro-batches each, so the pipeline bubble (p−1)/(v·m) grows
    and the data-parallel sync is hidden behind less compute: doubling GPUs need not halve
    time. ``inputs.measured_points`` (GPUs, tokens/s) come back with ``measured=True``.
    """
    problem = _Problem(
        arch,
        gpu,
        inputs,
        training_inputs,
        params_override=params_override,
        compute_dtype=compute_dtype,
    )
    b = int(training_inputs.micro_batch)
    dps: list[int] = []
    dp = 1
    while len(dps) < max_points and dp * b <= inputs.global_batch:
        if inputs.global_batch % (dp * b) == 0:
            dps.append(dp)
        dp *= 2
    points: list[ScalingPoint] = []
    if dps:
        base = par.resolve_layout(
            inputs,
            inputs.tp * inputs.cp * inputs.pp,
            b,
            str(training_inputs.recompute),
            arch.layers,
        ).as_arrays()
        n = len(dps)
        lay = par.Layouts(**{name: np.repeat(getattr(base, name), n) for name in par.LAYOUT_FIELDS})
        dp_arr = np.array(dps, dtype=np.int64)
        lay = par.Layouts(**{**lay.__dict__, "dp": dp_arr, "shard": dp_arr * inputs.cp})
        out = par.evaluate_layouts(problem.work, problem.cluster, lay, None, problem.step_inputs)
        first_time = tokens / float(out["tokens_per_s"][0])
        first_gpus = inputs.tp * inputs.pp * dps[0]
        for k, d in enumerate(dps):
            gpus = inputs.tp * inputs.pp * d
            rate = float(out["tokens_per_s"][k])
            ideal = first_time * first_gpus / gpus
            actual = tokens / rate
            points.append(
                ScalingPoint(
                    gpus=gpus,
                    tokens_per_s=rate,
                    time_to_train_seconds=actual,
                    ideal_time_seconds=ideal,
                    scaling_efficiency=ideal / actual,
                )
            )
    points.extend(
        ScalingPoint(
            gpus=g,
            tokens_per_s=rate,
            time_to_train_seconds=tokens / rate,
            ideal_time_seconds=None,
            scaling_efficiency=None,
            measured=True,
        )
        for g, rate in inputs.measured_points
        if rate > 0
    )
    return points
