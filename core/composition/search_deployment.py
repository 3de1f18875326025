"""The fewest GPUs per instance, the smallest deployment that meets a schedule, and the
scaling curve of a layout family (:mod:`.search`)."""

from __future__ import annotations

import math

import numpy as np
from pydantic import BaseModel, ConfigDict

from llm_planner.core.composition.search_engine import (
    _first_that_fits,
    _Problem,
    _run,
)
from llm_planner.core.composition.search_layouts import (
    SearchOptions,
    SearchRow,
)
from llm_planner.core.inputs.training import TrainingInputs
from llm_planner.core.primitives.architecture import Architecture
from llm_planner.core.primitives.figures import Figure
from llm_planner.core.primitives.gpus import GPU
from llm_planner.core.sections import parallelism as par

MAX_DEPLOYMENT_GPUS = 1 << 20
"""Upper bound of the GPU counts the deployment search tries (about a million)."""


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
    # (ZeRO offload keeps part of that state in host memory or on NVMe, so with any
    # offload the bound does not hold and the search starts at one GPU)
    state = problem.memory.model_state_bytes
    offloaded = (training_inputs.offload_optimizer, training_inputs.offload_params) != (
        "none",
        "none",
    )
    n = 1 if offloaded else 1 << max(0, math.ceil(math.log2(max(1.0, state / gpu.memory_bytes))))
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

    model_config = ConfigDict(frozen=True, defer_build=True)  # built on first use

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

    model_config = ConfigDict(frozen=True, defer_build=True)  # built on first use

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
