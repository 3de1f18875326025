"""Pipeline schedules: micro-batches in flight per stage (GPipe, 1F1B, interleaved) and the
schedule as drawable events."""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]


def microbatches_in_flight(
    pp: npt.ArrayLike, microbatches: npt.ArrayLike, gpipe: npt.ArrayLike, v: npt.ArrayLike
) -> FloatArray:
    """Micro-batches whose activations the first pipeline stage holds at its peak.

    GPipe: all m (every forward runs before any backward; Huang et al. 2019). 1F1B: p
    (Narayanan et al. 2021 section 2.2.1). Interleaved with v chunks: p·(1 + (p−1)/(p·v))
    stage-loads (Korthikanti et al. 2022 section 4.2.3). Never more than m.
    """
    p = np.asarray(pp, dtype=np.float64)
    m = np.asarray(microbatches, dtype=np.float64)
    v_ = np.asarray(v, dtype=np.float64)
    interleaved = np.where(v_ > 1, p * (1.0 + (p - 1.0) / (p * v_)), p)
    return np.asarray(np.where(np.asarray(gpipe, dtype=bool), m, np.minimum(interleaved, m)))


def microbatches_in_flight_last(
    pp: npt.ArrayLike, microbatches: npt.ArrayLike, gpipe: npt.ArrayLike, v: npt.ArrayLike
) -> FloatArray:
    """Micro-batches (in stage-loads of L/p layers) the *last* pipeline stage holds at its peak.

    GPipe: all m. 1F1B: 1 (the last stage runs each backward right after its forward;
    Narayanan et al. 2021 section 2.2.1). Interleaved with v chunks: Megatron-LM's schedule
    warms up (p − r − 1)·2 + (v − 1)·p chunk-forwards on rank r before its first backward
    (``megatron/core/pipeline_parallel/schedules.py``, interleaved warm-up count), so the last
    rank (r = p − 1) holds (v − 1)·p + 1 chunks of L/(p·v) layers: ((v − 1)·p + 1)/v
    stage-loads (the same rule gives the first rank's p·(1 + (p − 1)/(p·v)) of
    :func:`microbatches_in_flight`). Never more than m.
    """
    p = np.asarray(pp, dtype=np.float64)
    m = np.asarray(microbatches, dtype=np.float64)
    v_ = np.asarray(v, dtype=np.float64)
    interleaved = np.where(v_ > 1, ((v_ - 1.0) * p + 1.0) / v_, 1.0)
    return np.asarray(np.where(np.asarray(gpipe, dtype=bool), m, np.minimum(interleaved, m)))


def training_in_flight_last(
    pp: npt.ArrayLike, microbatches: npt.ArrayLike, gpipe: npt.ArrayLike, v: npt.ArrayLike
) -> FloatArray:
    """``last_stage_microbatches_in_flight`` for the training estimator, in stage-loads
    (fractional under interleaving: :func:`training_in_flight`)."""
    return np.asarray(microbatches_in_flight_last(pp, microbatches, gpipe, v), dtype=np.float64)


def training_loss_in_flight(
    pp: npt.ArrayLike, microbatches: npt.ArrayLike, gpipe: npt.ArrayLike, v: npt.ArrayLike
) -> FloatArray:
    """Micro-batches whose tensors outside the layers (final norm and output layer inputs,
    the loss's saved softmax) the last stage holds: its layers' count
    (:func:`training_in_flight_last`: 1 in 1F1B, m in GPipe), but 1 interleaved, where
    they belong to the last rank's last chunk, run forward and at once backward in the
    steady state (Megatron-LM's warm-up on the last rank covers chunks 0 … v − 2 only)."""
    last = training_in_flight_last(pp, microbatches, gpipe, v)
    interleaved = (np.asarray(v) > 1) & ~np.asarray(gpipe, dtype=bool)
    return np.asarray(np.where(interleaved, np.minimum(last, 1.0), last), dtype=np.float64)


def training_in_flight(
    pp: npt.ArrayLike, microbatches: npt.ArrayLike, gpipe: npt.ArrayLike, v: npt.ArrayLike
) -> FloatArray:
    """``microbatches_in_flight`` to pass to the training estimator: 0 means "its default"
    (pp on the first stage, 1 on the last: plain 1F1B with m ≥ p); otherwise the
    :func:`microbatches_in_flight` count in stage-loads, not rounded: interleaved, the
    first rank holds 2·(p − 1) + (v − 1)·p + 1 chunks of L/(p·v) layers
    (NVIDIA/Megatron-LM@d98e8a64 megatron/core/pipeline_parallel/schedules.py
    ``get_pp_rank_microbatches``: the warm-up chunk-forwards, then one forward before each
    backward), p + (p − 1)/v stage-loads, e.g. 2.125 at p = 2, v = 8 (a whole micro-batch
    more, 3, until issue 27)."""
    p = np.asarray(pp, dtype=np.float64)
    m = np.asarray(microbatches, dtype=np.float64)
    value = np.asarray(microbatches_in_flight(pp, microbatches, gpipe, v), dtype=np.float64)
    default = ~np.asarray(gpipe, dtype=bool) & (np.asarray(v) <= 1) & (m >= p)
    return np.asarray(np.where(default, 0.0, value))


def training_in_flight_one(
    pp: float, microbatches: float, gpipe: bool, v: float
) -> tuple[float, float, float]:
    """(:func:`training_in_flight`, :func:`training_in_flight_last`,
    :func:`training_loss_in_flight`) of one layout in Python floats, the same operations:
    the fewest-GPUs screen and the report's layout price one layout at a time, where
    numpy's calls on length-1 arrays cost more than the arithmetic
    (``tests/core/test_layout_rows.py`` holds them equal over random layouts)."""
    p, m = pp, microbatches
    first = p * (1.0 + (p - 1.0) / (p * v)) if v > 1 else p
    last = ((v - 1.0) * p + 1.0) / v if v > 1 else 1.0
    if gpipe:
        first = last = m
    else:
        first, last = min(first, m), min(last, m)
    default = not gpipe and v <= 1 and m >= p
    loss = min(last, 1.0) if v > 1 and not gpipe else last
    return 0.0 if default else first, last, loss


PipelineEvent = tuple[int, int, float, float, str]
"""(stage, micro-batch, start, end, "forward" | "backward"), times in forward-pass units."""

MAX_DRAWN_STAGES = 32
"""Pipeline stages a timeline draws at most (more rows than this are not readable)."""
MAX_DRAWN_CHUNKS = 8
"""Interleaved chunks per stage a timeline draws at most."""
MAX_DRAWN_OPS = 4096
"""Forward and backward blocks a timeline draws at most: its list scheduling costs
ops × stages, so this bounds one drawing to about 130k steps (tens of milliseconds)."""


def drawn_pipeline_shape(pp: int, microbatches: int, schedule: str, v: int) -> tuple[int, int, int]:
    """(stages, micro-batches, chunks) :func:`pipeline_timeline` draws for a pipeline of
    ``pp`` stages, ``microbatches`` micro-batches and ``v`` chunks: the same schedule cut to
    what is readable (at most :data:`MAX_DRAWN_STAGES` stages, :data:`MAX_DRAWN_CHUNKS`
    chunks and :data:`MAX_DRAWN_OPS` blocks). The figures (bubble, step time) never come
    from the drawing but from the closed forms of ``step_time``."""
    stages = max(1, min(pp, MAX_DRAWN_STAGES))
    chunks = max(1, min(v, MAX_DRAWN_CHUNKS)) if schedule == "interleaved" else 1
    most = max(1, MAX_DRAWN_OPS // (2 * stages * chunks))
    drawn = max(1, min(microbatches, most))
    if chunks > 1 and drawn >= stages:  # Megatron: m a multiple of p when interleaving
        drawn -= drawn % stages
    return stages, drawn, chunks


def pipeline_timeline(
    pp: int,
    microbatches: int,
    schedule: str = "1f1b",
    v: int = 1,
    *,
    forward_time: float = 1.0,
    backward_time: float = 2.0,
) -> list[PipelineEvent]:
    """The pipeline schedule as events for drawing, by list scheduling of its dependencies.

    Forward of micro-batch i on (virtual) stage k waits for stage k−1's forward; its
    backward waits for stage k+1's backward (or its own forward on the last stage). GPipe
    runs every forward first (Huang et al. 2019); 1F1B starts p − s forwards on stage s and
    then alternates one forward, one backward (Narayanan et al. 2021 section 2.2.1);
    interleaved splits each stage into v chunks (device d holds chunks d, d+p, ...), each
    1/v of the time, with Megatron-LM's warm-up of 2·(p − d − 1) + (v − 1)·p chunk-forwards
    (section 2.2.2). Makespan of GPipe and 1F1B: (m + p − 1)·(t_f + t_b).

    Work is bounded whatever the degrees: a pipeline larger than is readable is drawn cut
    to :func:`drawn_pipeline_shape` (the first stages and micro-batches of the same
    schedule).
    """
    if pp < 1 or microbatches < 1 or v < 1:
        raise ValueError("pp, microbatches and v must be at least 1")
    pp, microbatches, v = drawn_pipeline_shape(pp, microbatches, schedule, v)
    v = v if schedule == "interleaved" else 1
    chunks = pp * v
    tf, tb = forward_time / v, backward_time / v
    fwd_done: dict[tuple[int, int], float] = {}
    bwd_done: dict[tuple[int, int], float] = {}
    events: list[PipelineEvent] = []
    free = [0.0] * pp
    order = _device_orders(pp, microbatches, schedule, v)
    nxt = [0] * pp
    remaining = sum(len(ops) for ops in order)
    while remaining:
        # list scheduling: among the devices' next ops, the one that can start earliest runs
        best: tuple[float, int] | None = None
        for d in range(pp):
            if nxt[d] == len(order[d]):
                continue
            kind, k, i = order[d][nxt[d]]
            if kind == "forward":
                ready = 0.0 if k == 0 else fwd_done.get((k - 1, i), math.inf)
            elif k == chunks - 1:
                ready = fwd_done.get((k, i), math.inf)
            else:
                ready = bwd_done.get((k + 1, i), math.inf)
            start = max(ready, free[d])
            if math.isfinite(start) and (best is None or (start, d) < best):
                best = (start, d)
        if best is None:
            raise RuntimeError("pipeline schedule deadlocked")  # pragma: no cover
        start, d = best
        kind, k, i = order[d][nxt[d]]
        end = start + (tf if kind == "forward" else tb)
        free[d] = end
        (fwd_done if kind == "forward" else bwd_done)[(k, i)] = end
        events.append((d, i, start, end, kind))
        nxt[d] += 1
        remaining -= 1
    events.sort(key=lambda e: (e[0], e[2]))
    return events


def _device_orders(
    pp: int, microbatches: int, schedule: str, v: int
) -> list[list[tuple[str, int, int]]]:
    """Each device's ops in issue order: (kind, virtual stage, micro-batch)."""
    fwd_queue: list[list[tuple[int, int]]] = [[] for _ in range(pp)]
    bwd_queue: list[list[tuple[int, int]]] = [[] for _ in range(pp)]
    group = pp if v > 1 else microbatches  # Megatron issues interleaved chunks p at a time
    for d in range(pp):
        for start in range(0, microbatches, group):
            block = range(start, min(start + group, microbatches))
            for c in range(v):
                fwd_queue[d].extend((c * pp + d, i) for i in block)
            for c in reversed(range(v)):
                bwd_queue[d].extend((c * pp + d, i) for i in block)
    order: list[list[tuple[str, int, int]]] = []
    for d in range(pp):
        n = len(fwd_queue[d])
        if schedule == "gpipe":
            warmup = n
        elif v > 1:
            warmup = min(n, 2 * (pp - d - 1) + (v - 1) * pp)
        else:
            warmup = min(n, pp - d - 1)
        ops = [("forward", *fwd_queue[d][j]) for j in range(warmup)]
        for j in range(warmup, n):  # steady state: one forward, one backward
            ops.append(("forward", *fwd_queue[d][j]))
            ops.append(("backward", *bwd_queue[d][j - warmup]))
        ops.extend(("backward", *bwd_queue[d][j]) for j in range(n - warmup, n))
        order.append(ops)
    return order
