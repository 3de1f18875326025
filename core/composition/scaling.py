"""Time and cost to train against the GPU count: the compute tab's two charts, from the one
throughput of the estimate.

Three series share one basis (wall-clock time with the failure model, GPU-hours × price):

- *perfect scaling*: every GPU at the best per-GPU rate anyone has shown for this run — the
  estimate's own throughput and every point of its layout family — so t(N) = D ÷ (N · r*),
  a lower bound no layout can beat;
- *this layout family* (modeled): the scenario's tp, pp, ZeRO stage, micro-batch, schedule
  and recompute with dp doubling at the same global batch (:func:`.search.scaling_curve`);
  fewer micro-batches per replica grow the bubble and expose more of the data-parallel sync,
  so doubling GPUs need not halve the time;
- the user's measured points.

Because r* is the largest per-GPU rate of all of them, no family or measured point can lie
below the perfect-scaling line (t = D ÷ (N · r) ≥ D ÷ (N · r*) for r ≤ r*).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from llm_planner.core.composition.calibration import calibrate_scenario
from llm_planner.core.composition.estimate import Report
from llm_planner.core.composition.scenario import Scenario
from llm_planner.core.composition.search import scaling_curve
from llm_planner.core.sections.compute import SECONDS_PER_HOUR
from llm_planner.core.sections.failures import estimate_failures

GPU_COUNTS: tuple[int, ...] = tuple(2**k for k in range(3, 15))
"""8 … 16,384 GPUs: the charts' grid (the scenario's own count and the family's are added)."""


class TimePoint(BaseModel):
    """One point of a time/cost series."""

    model_config = ConfigDict(frozen=True)

    gpus: int
    tokens_per_s_per_gpu: float
    wall_seconds: float
    cost_usd: float


class TimeVsGpus(BaseModel):
    """The charts' series; every time is wall-clock (÷ goodput at that GPU count)."""

    model_config = ConfigDict(frozen=True)

    best_tokens_per_s_per_gpu: float
    """r*: the rate the perfect-scaling line holds at every GPU count."""
    perfect: list[TimePoint]
    family: list[TimePoint]
    measured: list[TimePoint]
    source: str
    """The estimate's throughput source, in words (its per-GPU rate is one of r*'s)."""


def _point(scenario: Scenario, gpus: int, per_gpu: float) -> TimePoint | None:
    seconds = scenario.compute.tokens / (gpus * per_gpu)
    wall = estimate_failures(seconds, gpus, scenario.compute.failures).wall_seconds
    if wall is None:
        return None
    cost = gpus * wall / SECONDS_PER_HOUR * scenario.compute.price_usd_per_gpu_hour
    return TimePoint(gpus=gpus, tokens_per_s_per_gpu=per_gpu, wall_seconds=wall, cost_usd=cost)


def time_vs_gpus(scenario: Scenario, report: Report) -> TimeVsGpus | None:
    """The perfect-scaling, layout-family and measured series for ``scenario``.

    None when the estimate has no throughput (no peak FLOP/s for the dtype). Runs the
    family's layouts through the step-time model (a few ms): call it off the UI thread.
    """
    own = report.compute.tokens_per_s_per_gpu
    if own is None or not own > 0:
        return None
    scenario = calibrate_scenario(scenario)[0]  # the calibrated family, measurements drawn
    curve = scaling_curve(
        scenario.model.architecture,
        scenario.gpu,
        scenario.parallelism,
        scenario.training,
        tokens=scenario.compute.tokens,
        params_override=scenario.model.params_override,
        compute_dtype=scenario.compute.compute_dtype,
    )
    family: list[TimePoint] = []
    measured: list[TimePoint] = []
    for p in curve:
        if p.gpus < 1 or not p.tokens_per_s > 0:
            continue
        point = _point(scenario, p.gpus, p.tokens_per_s / p.gpus)
        if point is not None:
            (measured if p.measured else family).append(point)
    best = max([own, *(p.tokens_per_s_per_gpu for p in family + measured)])
    counts = sorted({*GPU_COUNTS, scenario.num_gpus, *(p.gpus for p in family)})
    perfect = [q for n in counts if (q := _point(scenario, n, best)) is not None]
    return TimeVsGpus(
        best_tokens_per_s_per_gpu=best,
        perfect=perfect,
        family=family,
        measured=measured,
        source=report.compute.throughput_label,
    )
