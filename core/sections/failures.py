"""Failures, checkpoints and goodput: how interruptions turn compute time into wall-clock time.

A synchronous training job stops whenever any one of its GPUs (or their hosts, links,
switches) fails, so the job's mean time between interruptions shrinks as 1/N with the
number of GPUs. Each interruption costs the work done since the last checkpoint plus a
restart; checkpoints themselves cost write time. This module holds the inputs and the
three formulas: the job's mean time between failures, the optimal checkpoint interval
(Young 1974) and the expected wall-clock time under exponential failures (Daly 2006).
"""

from __future__ import annotations

import math

from pydantic import BaseModel, ConfigDict

from llm_planner.core.inputs.compute import DEFAULT_GPU_FAILURES_PER_HOUR, FailureInputs

__all__ = ["DEFAULT_GPU_FAILURES_PER_HOUR", "FailureInputs", "estimate_failures"]

SECONDS_PER_HOUR = 3600.0

DEFAULT_FAILURE_SOURCE = (
    "Llama 3 (arXiv:2407.21783, sec. 3.3.4): 419 unexpected interruptions in 54 days "
    "on 16,384 H100s"
)


NEVER_SECONDS = 1e20
"""A mean time between failures beyond this (3e12 years) counts as "never fails"."""


def job_mtbf_seconds(num_gpus: int, failures: FailureInputs) -> float | None:
    """Mean time between interruptions of a job on ``num_gpus`` GPUs, seconds.

    M = 3600 / (N · λ) with λ the per-GPU rate per hour: independent exponential failures,
    any one of which stops the synchronous job. None when λ = 0 or M exceeds
    :data:`NEVER_SECONDS` (never interrupted in practice; keeps the arithmetic finite).
    """
    rate = num_gpus * failures.rate_per_gpu_hour
    mtbf = SECONDS_PER_HOUR / rate if rate > 0 else math.inf
    return mtbf if mtbf <= NEVER_SECONDS else None


def young_checkpoint_interval(checkpoint_seconds: float, mtbf_seconds: float) -> float:
    """Optimal compute time between checkpoints, seconds: τ = √(2·δ·M).

    Young 1974, "A first order approximation to the optimum checkpoint interval"
    (CACM 17(9)); Daly 2006 (FGCS 22(3)) shows it is accurate while δ ≪ M. δ = checkpoint
    write time, M = the job's mean time between failures. With δ = 0 checkpoints are free
    and τ → 0; callers treat that as "checkpoint continuously".
    """
    return math.sqrt(2.0 * checkpoint_seconds * mtbf_seconds)


_EXP_LIMIT = 700.0  # exp(700) ≈ 1e304: beyond it the run never finishes in practice


def goodput_fraction(
    interval_seconds: float, checkpoint_seconds: float, restart_seconds: float, mtbf: float
) -> float:
    """Fraction of wall-clock time that advances training (0 < g ≤ 1).

    Daly 2006 (FGCS 22(3):303-312), expected wall-clock time for T_s of solve time with
    checkpoints every τ of compute, write time δ, restart time R and exponentially
    distributed failures of mean M:
    T_w = M · e^{R/M} · (e^{(τ+δ)/M} − 1) · T_s / τ, so g = T_s / T_w.
    For small δ/M this is ≈ 1 − δ/τ − (τ/2 + R)/M (first-order waste). Returns 0 when the
    exponent is so large that the job never completes.
    """
    if interval_seconds <= 0:
        # continuous free checkpoints: only the restarts cost time, g = e^{-R/M}
        exponent = restart_seconds / mtbf
        return math.exp(-exponent) if exponent < _EXP_LIMIT else 0.0
    exponent = (interval_seconds + checkpoint_seconds) / mtbf
    restart = restart_seconds / mtbf
    if exponent + restart > _EXP_LIMIT:
        return 0.0
    wall_per_compute = mtbf * math.exp(restart) * math.expm1(exponent) / interval_seconds
    return min(1.0, 1.0 / wall_per_compute)


class FailureEstimate(BaseModel):
    """What failures do to one run."""

    model_config = ConfigDict(frozen=True)

    gpu_failures_per_hour: float
    mtbf_seconds: float | None
    checkpoint_interval_seconds: float | None
    goodput: float
    wall_seconds: float | None
    expected_interruptions: float | None


def estimate_failures(
    compute_seconds: float, num_gpus: int, failures: FailureInputs
) -> FailureEstimate:
    """Wall-clock time, interruptions and goodput of ``compute_seconds`` of training.

    The checkpoint interval is Young's τ = √(2δM); goodput g follows Daly's model (see
    :func:`goodput_fraction`); wall time = compute time / g; expected interruptions =
    wall time / M. With no failures (λ = 0) the wall time is the compute time.
    Assumes failures are independent and exponential, and that checkpoint writes block
    training (asynchronous checkpointing makes δ smaller, not zero).
    """
    rate = failures.rate_per_gpu_hour
    mtbf = job_mtbf_seconds(num_gpus, failures)
    if mtbf is None:
        return FailureEstimate(
            gpu_failures_per_hour=rate,
            mtbf_seconds=None,
            checkpoint_interval_seconds=None,
            goodput=1.0,
            wall_seconds=compute_seconds,
            expected_interruptions=0.0,
        )
    interval = young_checkpoint_interval(failures.checkpoint_write_seconds, mtbf)
    goodput = goodput_fraction(
        interval, failures.checkpoint_write_seconds, failures.restart_seconds, mtbf
    )
    wall = compute_seconds / goodput if goodput > 0 else None
    if wall is not None and not math.isfinite(wall):
        wall = None
    return FailureEstimate(
        gpu_failures_per_hour=rate,
        mtbf_seconds=mtbf,
        checkpoint_interval_seconds=interval,
        goodput=goodput,
        wall_seconds=wall,
        expected_interruptions=None if wall is None else wall / mtbf,
    )
