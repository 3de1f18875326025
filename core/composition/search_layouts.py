"""The layout search's options, rows and results, and the enumeration of every candidate
layout as numpy arrays (:mod:`.search`)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import lru_cache

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, ConfigDict, Field

from llm_planner.core.primitives import units
from llm_planner.core.primitives.architecture import Architecture
from llm_planner.core.primitives.figures import Figure
from llm_planner.core.sections import parallelism as par

IntArray = npt.NDArray[np.int64]

MAX_CANDIDATES_PER_ROW = 20
"""How many ranked candidates (policies that change nothing included) the search reads per
requested row."""


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

    model_config = ConfigDict(frozen=True, defer_build=True)  # built on first use

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


class PrecisionAlternative(BaseModel):
    """The stack's FP8 recipe proposed beside a 16-bit plan: the best layout under it."""

    model_config = ConfigDict(frozen=True, defer_build=True)  # built on first use

    precision: str = Field(description="the recipe's precision id (--precision)")
    name: str
    stack: str
    row: SearchRow | None = Field(description="its fastest layout that fits (None: none fits)")
    speedup: float | None = Field(
        description="its tokens/s ÷ the 16-bit search's best row's (None: either has no row)"
    )
    source: str = Field(description="where the stack's recipe is read from")

    def describe(self) -> str:
        """One line for both faces: the recipe, its best layout and its figures."""
        head = f"{self.name} ({self.stack}, --precision {self.precision})"
        r = self.row
        if r is None:
            return f"{head}: no layout fits"
        layout = f"tp {r.tp}, pp {r.pp}, cp {r.cp}, dp {r.dp}, ep {r.ep}, ZeRO {r.zero_stage}"
        layout += f", micro-batch {r.micro_batch}, recompute {r.recompute}"
        gain = "" if self.speedup is None else f", {self.speedup:.2f}× the best 16-bit row"
        return (
            f"{head}: {units.format_count(r.tokens_per_s)} tokens/s ({layout}), "
            f"{units.format_gb(r.peak_bytes)} per GPU, MFU {100 * r.mfu:.1f}%{gain}"
        )


class SearchResult(BaseModel):
    """The ranked rows and what the search did to find them."""

    model_config = ConfigDict(frozen=True, defer_build=True)  # built on first use

    num_gpus: int
    candidates: int
    fitting: int
    seconds: float
    rows: list[SearchRow]
    low_precision: PrecisionAlternative | None = Field(
        default=None,
        description="the stack's FP8 recipe searched too, where the plan is 16-bit and the GPU "
        "and stack run FP8 (:func:`.search.fp8_recipe_for`); None: not proposed",
    )

    def figures(self) -> list[Figure]:
        return [
            Figure(key="candidates", label="Layouts tried", value=self.candidates, unit="count"),
            Figure(key="fitting", label="Layouts that fit", value=self.fitting, unit="count"),
            Figure(key="seconds", label="Search time", value=self.seconds, unit="seconds"),
        ]


# --------------------------------------------------------------------- enumeration


@lru_cache(maxsize=256)  # arithmetic on n alone (no input enters it): a table, not a memo
def _divisors(n: int) -> tuple[int, ...]:
    small = [d for d in range(1, math.isqrt(n) + 1) if n % d == 0]
    return tuple(sorted({*small, *(n // d for d in small)}))


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
    base, combo_list = _candidates(arch, num_gpus, global_batch, options, seq_len)
    if not base:
        return _empty_layouts()
    if 0 < len(base) * len(combo_list) <= ENUMERATED_IN_PYTHON_BELOW:
        rows = _few_rows(base, combo_list, zero_with_pipeline=options.zero_with_pipeline)
        if rows:
            return layouts_of_rows(rows)
    table = np.array(base, dtype=np.int64)
    combos = np.array(combo_list, dtype=np.int64)
    rows_ = np.repeat(table, len(combos), axis=0)
    extra = np.tile(combos, (len(table), 1))
    tp_, pp_, dp_, b_, v_, ep_, cp_ = (rows_[:, i] for i in range(7))
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
        gpipe=np.zeros(len(rows_), dtype=bool),
        sp=sp,
        recompute=rc,
        cp=cp_,
    )
    return lay.take(np.flatnonzero(keep))


def layout_rows(
    arch: Architecture,
    num_gpus: int,
    global_batch: int,
    options: SearchOptions,
    seq_len: int = 0,
) -> list[par.LayoutRow] | None:
    """:func:`enumerate_layouts`' layouts as Python tuples (:data:`.parallelism.LayoutRow`),
    in its order, where they are few (at most :data:`ENUMERATED_IN_PYTHON_BELOW` candidates
    before filtering); None where they are many. The fewest-GPUs screen prices a few of a
    dozen one by one: it needs no arrays."""
    base, combo_list = _candidates(arch, num_gpus, global_batch, options, seq_len)
    if len(base) * len(combo_list) > ENUMERATED_IN_PYTHON_BELOW:
        return None
    return _few_rows(base, combo_list, zero_with_pipeline=options.zero_with_pipeline)


def _candidates(
    arch: Architecture,
    num_gpus: int,
    global_batch: int,
    options: SearchOptions,
    seq_len: int,
) -> tuple[list[tuple[int, int, int, int, int, int, int]], list[tuple[int, int, int]]]:
    """(every (tp, pp, dp, micro-batch, v, ep, cp), every (ZeRO stage, recompute code, SP))
    :func:`enumerate_layouts` combines, before its filters on SP and ZeRO with a pipeline."""
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
        return base, []
    combo_list = [
        (z, rc, int(sp))
        for z in options.zero_stages
        for rc in range(len(par.RECOMPUTE_CODES))
        if par.RECOMPUTE_CODES[rc] in options.recompute
        for sp in options.sequence_parallel
    ]
    return base, combo_list


ENUMERATED_IN_PYTHON_BELOW = 512
"""Candidates up to which :func:`enumerate_layouts` filters them in Python (the fewest-GPUs
search's few dozen: cheaper than a dozen array operations); the same layouts either way."""


def _few_rows(
    base: list[tuple[int, int, int, int, int, int, int]],
    combos: list[tuple[int, int, int]],
    *,
    zero_with_pipeline: bool,
) -> list[par.LayoutRow]:
    """Every (layout, ZeRO stage, recompute, sequence parallel) in :func:`enumerate_layouts`'
    order, without sequence parallelism at tp 1 or ZeRO-2/3 with a pipeline unless allowed."""
    return [
        (*row, z, rc, sp)
        for row in base
        for z, rc, sp in combos
        if not (sp and row[0] == 1) and (zero_with_pipeline or not (z >= 2 and row[1] > 1))
    ]


def layouts_of_rows(rows: Sequence[par.LayoutRow]) -> par.Layouts:
    """The :class:`.parallelism.Layouts` of some :func:`layout_rows` (at least one)."""
    tp_, pp_, dp_, b_, v_, ep_, cp_, zero, rc, sp = np.array(rows, dtype=np.int64).T.copy()
    return par.Layouts(
        tp=tp_,
        pp=pp_,
        dp=dp_,
        ep=ep_,
        zero=zero,
        shard=dp_ * cp_,
        micro_batch=b_,
        v=v_,
        gpipe=np.zeros(len(rows), dtype=bool),
        sp=sp.astype(bool),
        recompute=rc,
        cp=cp_,
    )


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
