"""The nanotron sweep: 1,650 measured and crashed runs of the Ultra-Scale Playbook benchmark
(nanotron on 1-64 nodes of 8×H100, 1B and 3B Llama-style models) against the app's model.

Data: ``nanotron-sweep-1b-3b.json`` next to this file, a copy of the team's
``/work/shared/data/nanotron-sweep-1b-3b.json`` (its ``source``/``what`` fields say where each
number comes from), or ``NANOTRON_SWEEP_PATH``. Every row is priced with the
app's own step-time model and memory screen (:func:`llm_planner.core.sections.parallelism.
evaluate_layouts`, the arithmetic the report and the search share), with the sweep's fixed
inputs as a scenario would state them: ``training.stack = "nanotron"``, seq 4096, no
recomputation, sequence-parallel TP, 1F1B, H100 SXM, 8 GPUs per node.

Used by ``test_nanotron_sweep.py`` (bounds) and ``scripts/gen_accuracy.py`` (the page).
"""

from __future__ import annotations

import json
import math
import os
import statistics
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from llm_planner.core.primitives.architecture import Architecture
from llm_planner.core.primitives.gpus import get_gpu
from llm_planner.core.quantities.stacks import StackProfile
from llm_planner.core.sections.parallelism import (
    Layouts,
    ParallelInputs,
    cluster_of,
    evaluate_layouts,
    memory_terms,
    step_inputs_of,
    workload_of,
)
from llm_planner.core.sections.training import TrainingInputs

DEFAULT_PATH = Path(__file__).with_name("nanotron-sweep-1b-3b.json")
"""A copy of /work/shared/data/nanotron-sweep-1b-3b.json (the team's data folder), kept here
so CI has it."""

GIB = 2.0**30

STACK_INPUTS: dict[str, Any] = {
    "stack": "nanotron",
    "seq_len": 4096,
    "recompute": "none",
}
"""The sweep's fixed training inputs (its ``fixed_inputs``): seq 4096, no recomputation;
precision and activation profile come from the nanotron stack profile."""


def data_path() -> Path:
    return Path(os.environ.get("NANOTRON_SWEEP_PATH", str(DEFAULT_PATH)))


@cache
def load_sweep() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(data_path().read_text(encoding="utf-8"))
    return data


def architecture(model: str) -> Architecture:
    """pb-1B / pb-3B from the file's ``architectures`` (nanotron scripts/scaling_benchmarks.py):
    Llama-style, SwiGLU, RMSNorm, rotary, tied embeddings, no biases."""
    spec = load_sweep()["architectures"][f"pb-{model}"]
    return Architecture(
        name=f"nanotron pb-{model}",
        layers=spec["layers"],
        hidden_size=spec["hidden"],
        heads=spec["heads"],
        kv_heads=spec["kv_heads"],
        head_dim=spec["head_dim"],
        ffn_size=spec["ffn"],
        ffn_kind="swiglu",
        vocab_size=spec["vocab"],
        max_context=4096,
        tied_embeddings=bool(spec["tied"]),
        positions="rotary",
        norm="rmsnorm",
        attention_bias="none",
        mlp_bias=False,
    )


@dataclass(frozen=True)
class SweepRow:
    """One run of the sweep with the app's prediction."""

    model: str
    nodes: int
    dp: int
    tp: int
    pp: int
    zero: int
    micro_batch: int
    grad_accum: int
    ok: bool
    measured_tokens_per_s_per_gpu: float | None
    measured_memory_gib: float | None
    predicted_tokens_per_s_per_gpu: float
    predicted_memory_gib: float
    predicted_fits: bool

    @property
    def gpus(self) -> int:
        return self.dp * self.tp * self.pp

    @property
    def error(self) -> float | None:
        m = self.measured_tokens_per_s_per_gpu
        return None if not m else self.predicted_tokens_per_s_per_gpu / m - 1.0

    @property
    def memory_error(self) -> float | None:
        m = self.measured_memory_gib
        return None if not m else self.predicted_memory_gib / m - 1.0

    @property
    def label(self) -> str:
        return (
            f"dp{self.dp} tp{self.tp} pp{self.pp} z{self.zero} "
            f"mbs{self.micro_batch} ga{self.grad_accum}"
        )


SWEEP_NETWORK: dict[str, Any] = {
    "inter_node_efficiency": 0.5,
    "inter_node_step_latency_seconds": 1e-04,
    "inter_node_p2p_latency_seconds": 1.4e-05,
    "kernel_efficiency": 0.55,
}
"""The sweep cluster's constants the sweep does not publish, FITTED on the 1B runs that ran
(``fit("1B", FIT_GRID)``: the grid point of least median |log error| of tokens/s per GPU);
the 3B runs are held out to check them. The network's achieved share (inter-node efficiency),
its per-step latency, the extra latency of a pipeline send between nodes, and the GEMMs'
large-size efficiency under nanotron's eager modules. Everything else is the app's default.
The same fit also chose nanotron's stack constants
``pipeline_spanning_nodes_host_seconds_per_layer_per_tp``, ``tp_network_step_latency_seconds``
and ``zero1_gather_host_seconds_per_rank_per_layer`` (core/quantities/stacks.py), which the
harness takes from the stack profile. (Refitted when the nanotron profile gained its
whole-buffer ZeRO-1 sync, its backward all-gathers and the cross-node TP step: the efficiency
went from 0.3 to 0.5, the step latency from 5e-5 to 1e-4 s, and the extra p2p latency
from 1e-4 s back to NCCL's 1.4e-5 s, the app's default; refitted again when the nanotron
profile's activation ledger became its own, ``implementation = "nanotron"``: the kernel
efficiency went from 0.6 to 0.55, the rest stayed.)"""


def parallel_inputs(**overrides: Any) -> ParallelInputs:
    """The sweep's cluster: 8 H100 per node; everything else at the app's defaults."""
    return ParallelInputs(gpus_per_node=8, sequence_parallel=True, **overrides)


def sweep_rows(**overrides: Any) -> tuple[SweepRow, ...]:
    """Every row of the sweep with the app's tokens/s per GPU, peak memory and fit;
    ``overrides``: ParallelInputs fields (the fitted network of :data:`SWEEP_NETWORK` by
    default) or StackProfile fields (replacing the nanotron profile's)."""
    return _sweep_rows(tuple(sorted({**SWEEP_NETWORK, **overrides}.items())))


@cache
def _sweep_rows(overrides: tuple[tuple[str, Any], ...]) -> tuple[SweepRow, ...]:
    data = load_sweep()
    cols = {name: i for i, name in enumerate(data["columns"])}
    rows = data["rows"]
    gpu = get_gpu("h100-sxm")
    out: list[SweepRow] = []
    for model in sorted({r[cols["model"]] for r in rows}):
        mine = [r for r in rows if r[cols["model"]] == model]
        arch = architecture(model)
        ti = TrainingInputs(**STACK_INPUTS)
        stack_fields = {k: v for k, v in overrides if k in StackProfile.model_fields}
        pi = parallel_inputs(**{k: v for k, v in overrides if k not in stack_fields})
        params = float(load_sweep()["architectures"][f"pb-{model}"]["params_total"])
        cluster = cluster_of(gpu, pi, "bf16")
        recipe = memory_terms(arch, ti, params)

        def col(name: str, rows_: list[list[Any]] = mine) -> np.ndarray:
            return np.array([r[cols[name]] for r in rows_], dtype=np.int64)

        dp, tp, pp = col("dp"), col("tp"), col("pp")
        mbs, ga, zero = col("micro_batch"), col("grad_accum"), col("zero_stage")
        n = len(mine)
        ones = np.ones(n, dtype=np.int64)
        lay = Layouts(
            tp=tp,
            pp=pp,
            dp=dp,
            ep=ones,
            zero=zero,
            shard=dp,
            micro_batch=mbs,
            v=ones,
            gpipe=np.zeros(n, dtype=bool),
            sp=tp > 1,
            recompute=np.zeros(n, dtype=np.int64),
        )
        # Each row's own batch: dp · mbs · grad_accum sequences (26 rows differ from 256).
        predicted = np.zeros(n)
        memory = np.zeros(n)
        # the figure the row logs: world rank 0 (pipeline stage 0) writes the benchmark CSV,
        # torch's max reserved memory without the CUDA context (s14's reading of
        # huggingface/nanotron@2411b022 helpers.log_throughput); fitting is judged on the
        # fullest stage's peak with the context, as the app's training tab reports it
        logged = np.zeros(n)
        for batch in sorted(set((dp * mbs * ga).tolist())):
            sel = np.flatnonzero(dp * mbs * ga == batch)
            work = workload_of(arch, 4096, int(batch), params, None, training_inputs=ti)
            if stack_fields:
                work = replace(work, stack=work.stack.model_copy(update=stack_fields))
            res = evaluate_layouts(work, cluster, lay.take(sel), recipe, step_inputs_of(arch, ti))
            predicted[sel] = res["tokens_per_s"] / (dp[sel] * tp[sel] * pp[sel])
            memory[sel] = res["peak_bytes"]
            logged[sel] = res["logged_reserved_bytes"]
        for i, r in enumerate(mine):
            ok = r[cols["status"]] == "ok"
            tok = r[cols["tokens_per_sec_per_gpu"]]
            mem = r[cols["gpu_memory_gb_label"]]
            out.append(
                SweepRow(
                    model=model,
                    nodes=int(r[cols["nodes"]]),
                    dp=int(dp[i]),
                    tp=int(tp[i]),
                    pp=int(pp[i]),
                    zero=int(zero[i]),
                    micro_batch=int(mbs[i]),
                    grad_accum=int(ga[i]),
                    ok=ok,
                    measured_tokens_per_s_per_gpu=float(tok) if ok and tok else None,
                    measured_memory_gib=float(mem) if ok and mem else None,
                    predicted_tokens_per_s_per_gpu=float(predicted[i]),
                    predicted_memory_gib=float(logged[i]) / GIB,
                    predicted_fits=bool(memory[i] <= gpu.memory_bytes),
                )
            )
    return tuple(out)


# ------------------------------------------------------------------ statistics


def _quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return math.nan
    k = (len(ordered) - 1) * q
    lo, hi = math.floor(k), math.ceil(k)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


def spearman(x: list[float], y: list[float]) -> float:
    """Spearman's rank correlation (average ranks for ties)."""

    def ranks(v: list[float]) -> list[float]:
        order = sorted(range(len(v)), key=lambda i: v[i])
        r = [0.0] * len(v)
        i = 0
        while i < len(v):
            j = i
            while j + 1 < len(v) and v[order[j + 1]] == v[order[i]]:
                j += 1
            for k in range(i, j + 1):
                r[order[k]] = (i + j) / 2.0
            i = j + 1
        return r

    rx, ry = ranks(x), ranks(y)
    if len(x) < 3:
        return math.nan
    return float(np.corrcoef(rx, ry)[0, 1])


@dataclass(frozen=True)
class GroupStats:
    model: str
    nodes: int
    runs: int
    spearman: float
    best_measured: SweepRow
    best_predicted: SweepRow

    @property
    def best_shortfall(self) -> float:
        """How far below the best measured run the predicted-best layout measures."""
        m = self.best_predicted.measured_tokens_per_s_per_gpu or 0.0
        b = self.best_measured.measured_tokens_per_s_per_gpu or 1.0
        return 1.0 - m / b


def group_stats(rows: tuple[SweepRow, ...] | None = None) -> list[GroupStats]:
    """Per (model, nodes): Spearman of predicted vs measured tokens/s over the runs that ran,
    and the measured throughput of the layout the app ranks first."""
    rows = sweep_rows() if rows is None else rows
    out = []
    for key in sorted({(r.model, r.nodes) for r in rows}):
        g = [r for r in rows if (r.model, r.nodes) == key and r.error is not None]
        if len(g) < 3:
            continue
        rho = spearman(
            [r.predicted_tokens_per_s_per_gpu for r in g],
            [r.measured_tokens_per_s_per_gpu or 0.0 for r in g],
        )
        best_m = max(g, key=lambda r: r.measured_tokens_per_s_per_gpu or 0.0)
        best_p = max(g, key=lambda r: r.predicted_tokens_per_s_per_gpu)
        out.append(GroupStats(key[0], key[1], len(g), rho, best_m, best_p))
    return out


def spearman_without_tail(rows: tuple[SweepRow, ...] | None = None) -> list[float]:
    """Per (model, nodes) group, in :func:`group_stats`' order: the Spearman correlation over
    the runs that measure at least half the predicted throughput (error ≤ +100%), i.e.
    without the tail the page describes. Reported, not a target: it selects rows by the
    prediction."""
    rows = sweep_rows() if rows is None else rows
    out = []
    for g in group_stats(rows):
        kept = [
            r
            for r in rows
            if (r.model, r.nodes) == (g.model, g.nodes) and r.error is not None and r.error <= 1.0
        ]
        out.append(
            spearman(
                [r.predicted_tokens_per_s_per_gpu for r in kept],
                [r.measured_tokens_per_s_per_gpu or 0.0 for r in kept],
            )
        )
    return out


@dataclass(frozen=True)
class Summary:
    runs_ok: int
    runs_crashed: int
    median_abs_error: float
    p90_abs_error: float
    median_signed_error: float
    optimistic: int
    median_spearman: float
    min_spearman: float
    worst_best_shortfall: float
    median_best_shortfall: float
    memory_median_abs_error: float
    memory_median_signed_error: float
    memory_p90_abs_error: float
    fit_ok_share: float
    crashed_predicted_not_fit_share: float


def summary(rows: tuple[SweepRow, ...] | None = None) -> Summary:
    rows = sweep_rows() if rows is None else rows
    ran = [r for r in rows if r.ok]
    crashed = [r for r in rows if not r.ok]
    errs = [r.error for r in ran if r.error is not None]
    mem = [r.memory_error for r in ran if r.memory_error is not None]
    groups = group_stats(rows)
    rhos = [g.spearman for g in groups if not math.isnan(g.spearman)]
    shortfalls = [g.best_shortfall for g in groups]
    return Summary(
        runs_ok=len(ran),
        runs_crashed=len(crashed),
        median_abs_error=statistics.median(abs(e) for e in errs),
        p90_abs_error=_quantile([abs(e) for e in errs], 0.9),
        median_signed_error=statistics.median(errs),
        optimistic=sum(e > 0 for e in errs),
        median_spearman=statistics.median(rhos),
        min_spearman=min(rhos),
        worst_best_shortfall=max(shortfalls),
        median_best_shortfall=statistics.median(shortfalls),
        memory_median_abs_error=statistics.median(abs(e) for e in mem),
        memory_median_signed_error=statistics.median(mem),
        memory_p90_abs_error=_quantile([abs(e) for e in mem], 0.9),
        fit_ok_share=sum(r.predicted_fits for r in ran) / len(ran),
        crashed_predicted_not_fit_share=sum(not r.predicted_fits for r in crashed) / len(crashed),
    )


def category(row: SweepRow) -> str:
    """Where a run's groups sit: TP inside a node or across, pipeline inside or across."""
    tp = "TP across nodes" if row.tp > 8 else ("TP in a node" if row.tp > 1 else "no TP")
    inside = "PP in a node" if row.gpus <= 8 else "PP across nodes"
    pp = "no PP" if row.pp == 1 else inside
    return f"{tp}, {pp}"


def category_errors(rows: tuple[SweepRow, ...] | None = None) -> list[tuple[str, int, float]]:
    """(category, runs that ran, median signed error) for each category of :func:`category`."""
    rows = sweep_rows() if rows is None else rows
    out = []
    for name in sorted({category(r) for r in rows}):
        errs = [r.error for r in rows if category(r) == name and r.error is not None]
        if errs:
            out.append((name, len(errs), statistics.median(errs)))
    return out


def median_abs_error_of(model: str, rows: tuple[SweepRow, ...] | None = None) -> float:
    """Median |error| of tokens/s per GPU over ``model``'s runs that ran."""
    rows = sweep_rows() if rows is None else rows
    return statistics.median(abs(r.error) for r in rows if r.model == model and r.error is not None)


def uncertainty_table(rows: tuple[SweepRow, ...] | None = None) -> dict[str, Any]:
    """The table ``resources/ranking_uncertainty.json`` holds (``scripts/
    gen_ranking_uncertainty.py`` writes it): per model, node count and mechanism class
    (:func:`llm_planner.core.composition.ranking.mechanism_class`), the ratio measured ÷
    modeled tokens/s of every run that ran, rounded to 4 significant digits."""
    from llm_planner.core.composition.ranking import mechanism_class

    rows = sweep_rows() if rows is None else rows
    groups: dict[tuple[Any, ...], list[float]] = {}
    for r in rows:
        if r.error is None:
            continue
        c = mechanism_class(r.tp, r.pp, r.zero, 8)
        key = (r.model, r.nodes, c.zero, c.pipelined, c.pipeline_across_nodes, c.tp_across_nodes)
        groups.setdefault(key, []).append(float(f"{1.0 / (1.0 + r.error):.4g}"))
    names = ("model", "nodes", "zero", "pipelined", "pipeline_across_nodes", "tp_across_nodes")
    return {
        "what": "measured ÷ modeled tokens/s per GPU of every nanotron sweep run that ran, by "
        "model, node count and mechanism class (core/composition/ranking.py); written by "
        "scripts/gen_ranking_uncertainty.py from tests/validation/nanotron_sweep.py",
        "source": load_sweep().get("source", "nanotron-sweep-1b-3b.json"),
        "stack": "nanotron",
        "gpus_per_node": 8,
        "classes": [
            {**dict(zip(names, key, strict=True)), "ratios": sorted(v)}
            for key, v in sorted(groups.items())
        ],
    }


def ranked_first(
    group: list[SweepRow], *, exclude_model: str | None
) -> tuple[SweepRow, float | None]:
    """The row the search's ranking figure puts first in ``group`` (modeled tokens/s × the
    low percentile of its class, :mod:`llm_planner.core.composition.ranking`), with the other
    model's runs only (``exclude_model``: the group's own model, held out)."""
    from llm_planner.core.composition.ranking import (
        mechanism_class,
        ranking_factor,
        uncertainty,
    )

    def figure(r: SweepRow) -> float:
        u = uncertainty(
            "nanotron",
            mechanism_class(r.tp, r.pp, r.zero, 8),
            r.nodes,
            exclude_model=exclude_model,
        )
        return r.predicted_tokens_per_s_per_gpu * ranking_factor(u)

    best = max(group, key=figure)
    return best, figure(best)


@dataclass(frozen=True)
class RankedGroup:
    """Per (model, nodes): the shortfall of the layout the modeled figure ranks first and of
    the one the uncertainty-aware figure ranks first (the other model's runs only)."""

    model: str
    nodes: int
    runs: int
    best_measured: SweepRow
    modeled_first: SweepRow
    ranked_first: SweepRow

    @staticmethod
    def _short(row: SweepRow, best: SweepRow) -> float:
        return 1.0 - (row.measured_tokens_per_s_per_gpu or 0.0) / (
            best.measured_tokens_per_s_per_gpu or 1.0
        )

    @property
    def modeled_shortfall(self) -> float:
        return self._short(self.modeled_first, self.best_measured)

    @property
    def ranked_shortfall(self) -> float:
        return self._short(self.ranked_first, self.best_measured)


def ranked_groups(rows: tuple[SweepRow, ...] | None = None) -> list[RankedGroup]:
    rows = sweep_rows() if rows is None else rows
    out = []
    for key in sorted({(r.model, r.nodes) for r in rows}):
        g = [r for r in rows if (r.model, r.nodes) == key and r.error is not None]
        if len(g) < 3:
            continue
        best_m = max(g, key=lambda r: r.measured_tokens_per_s_per_gpu or 0.0)
        best_p = max(g, key=lambda r: r.predicted_tokens_per_s_per_gpu)
        ranked, _ = ranked_first(g, exclude_model=key[0])
        out.append(RankedGroup(key[0], key[1], len(g), best_m, best_p, ranked))
    return out


FIT_GRID: dict[str, list[float]] = {
    "inter_node_efficiency": [0.3, 0.4, 0.5, 0.6],
    "inter_node_step_latency_seconds": [5e-5, 1e-4, 1.5e-4],
    "inter_node_p2p_latency_seconds": [1.4e-5, 1e-4],
    "kernel_efficiency": [0.55, 0.6, 0.65],
    "pipeline_spanning_nodes_host_seconds_per_layer_per_tp": [2.75e-3, 3e-3, 3.25e-3],
    "tp_network_step_latency_seconds": [4e-4, 5e-4, 6e-4, 7e-4],
    "zero1_gather_host_seconds_per_rank_per_layer": [0.0, 1e-5, 2e-5, 3e-5, 5e-5, 8e-5],
}
"""The grid :data:`SWEEP_NETWORK` and the nanotron stack's fitted constants were chosen on
(``fit("1B", FIT_GRID)``, 5,184 points, ~4 min on one core); a key that is a StackProfile
field overrides the nanotron profile, the others are ParallelInputs fields."""


def log_error_median(rows: tuple[SweepRow, ...]) -> float:
    return statistics.median(abs(math.log(1.0 + r.error)) for r in rows if r.error is not None)


def fit(model: str = "1B", grid: dict[str, list[float]] | None = None) -> dict[str, float]:
    """Grid search of the ParallelInputs (or nanotron StackProfile) fields in ``grid``
    minimising the median |log error| of tokens/s per GPU over the runs of ``model`` that
    ran."""
    import itertools

    grid = grid or {}
    names = list(grid)
    best: tuple[float, dict[str, float]] = (math.inf, {})
    for values in itertools.product(*(grid[n] for n in names)):
        point = dict(zip(names, values, strict=True))
        rows = tuple(r for r in sweep_rows(**point) if r.model == model and r.ok)
        score = log_error_median(rows)
        if score < best[0]:
            best = (score, point)
    return best[1]


if __name__ == "__main__":
    import time

    t0 = time.perf_counter()
    s = summary()
    print(f"{time.perf_counter() - t0:.1f}s")
    for k, v in s.__dict__.items():
        print(f"{k:35s} {v:.4g}" if isinstance(v, float) else f"{k:35s} {v}")
    for g in group_stats():
        print(
            f"{g.model} {g.nodes:3d} n={g.runs:4d} rho={g.spearman:+.2f} "
            f"best {g.best_measured.label} pred-best {g.best_predicted.label} "
            f"short {g.best_shortfall:.1%}"
        )
