"""Benchmark of the layout search (a script, not a timed test).

Reports candidate layouts priced per second by the vectorised evaluator, and the wall
time of whole searches, including Llama-3.1-405B on 16,384 H100s (global batch 2,048
sequences of 8,192 tokens, as in the Llama 3 paper, arXiv:2407.21783 section 3.3).

Run: ``.venv/bin/python benchmarks/bench_search.py`` (``python -m benchmarks`` runs it
with every other figure).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from llm_planner.core.composition import search as srch
from llm_planner.core.primitives.architecture import count_parameters
from llm_planner.core.primitives.gpus import get_gpu
from llm_planner.core.primitives.presets import get_preset
from llm_planner.core.sections import parallelism as par
from llm_planner.core.sections.training import TrainingInputs


def timed(fn: Callable[[], object], repeats: int) -> list[float]:
    """Wall seconds of ``repeats`` calls of ``fn``."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return times


def evaluator_rates(n: int = 2_000_000, repeats: int = 3) -> list[float]:
    """Candidates/s of pricing n random layouts of Llama-3.1-405B in one call (memory
    screen included), once per repeat."""
    arch = get_preset("llama-3.1-405b").architecture
    gpu = get_gpu("h100-sxm")
    ti = TrainingInputs(seq_len=8192)
    params = float(count_parameters(arch).total)
    work = par.workload_of(arch, 8192, 2048, params)
    cluster = par.cluster_of(gpu, par.ParallelInputs())
    recipe = par.memory_terms(arch, ti, params)
    rng = np.random.default_rng(0)
    pick = lambda values: rng.choice(np.array(values, dtype=np.int64), n)  # noqa: E731
    tp = pick([1, 2, 4, 8, 16])
    dp = pick([1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024])
    lay = par.Layouts(
        tp=tp,
        pp=pick([1, 2, 4, 8, 16]),
        dp=dp,
        ep=np.ones(n, dtype=np.int64),
        zero=pick([0, 1, 2, 3]),
        shard=dp,
        micro_batch=pick([1, 2]),
        v=pick([1, 2]),
        gpipe=np.zeros(n, dtype=bool),
        sp=(tp > 1) & (rng.random(n) < 0.5),
        recompute=pick([0, 1, 2]),
    )
    fields = {name: getattr(lay, name) for name in par.LAYOUT_FIELDS}

    def run() -> None:  # a fresh Layouts each time: no float conversions cached across runs
        par.evaluate_layouts(work, cluster, par.Layouts(**fields), recipe)

    run()  # warm: the first call pays the page faults of its fresh arrays
    return [n / seconds for seconds in timed(run, repeats)]


def search_times(
    model: str, gpus: int, batch: int, seq_len: int, *, gpu_id: str = "h100-sxm", repeats: int = 5
) -> tuple[list[float], Any]:
    """Wall seconds of whole in-process searches, and the last result."""
    arch = get_preset(model).architecture
    gpu = get_gpu(gpu_id)
    inputs = par.ParallelInputs(global_batch=batch)
    ti = TrainingInputs(seq_len=seq_len)
    holder: list[srch.SearchResult] = []

    def run() -> None:
        holder.append(srch.search(arch, gpu, gpus, inputs, ti, top=10))

    return timed(run, repeats), holder[-1]


def bench_evaluator(n: int = 2_000_000) -> None:
    rates = evaluator_rates(n)
    print(f"evaluate_layouts: {n:,} candidates per call")
    print(f"  → {max(rates):,.0f} candidates/s (best), {statistics.median(rates):,.0f} (median)")


def bench_search(model: str, gpus: int, batch: int, seq_len: int, gpu_id: str = "h100-sxm") -> None:
    times, result = search_times(model, gpus, batch, seq_len, gpu_id=gpu_id)
    best, median = min(times), statistics.median(times)
    rate = result.candidates / best
    print(
        f"search {model} on {gpus:,} × {gpu_id}, batch {batch} × {seq_len}: "
        f"{result.candidates:,} candidates, {result.fitting:,} fit; "
        f"wall {best * 1000:.1f} ms best / {median * 1000:.1f} ms median "
        f"({rate:,.0f} candidates/s end to end)"
    )
    if result.rows:
        r = result.rows[0]
        print(
            f"  best: dp {r.dp} tp {r.tp} pp {r.pp} ZeRO {r.zero_stage} b {r.micro_batch} "
            f"{r.recompute} SP {r.sequence_parallel} v {r.interleave_chunks}: "
            f"{r.peak_bytes / 1e9:.1f} GB, MFU {100 * r.mfu:.1f}%, {r.bottleneck}"
        )


def main() -> None:
    bench_evaluator()
    bench_search("llama-3.1-405b", 16_384, 2048, 8192)
    bench_search("llama-3.1-70b", 4_096, 4096, 4096)
    bench_search("llama-3.1-8b", 16_384, 16_384, 4096)
    bench_search("deepseek-v3", 2_048, 4096, 4096, "h200")


if __name__ == "__main__":
    main()
