"""Compute budget: training FLOPs, throughput, time, cost, Chinchilla sizing, failures.

The seed method is EleutherAI's "Transformer Math 101": C ≈ τ·t ≈ 6·P·D, with P the
parameters a token passes through (active parameters for a mixture of experts) and D the
training tokens. Everything here is in SI base units: FLOP, FLOP/s, seconds, USD.

Model FLOPs vs hardware FLOPs follow PaLM (Chowdhery et al. 2022, arXiv:2204.02311,
Appendix B): *model* FLOPs are what the model needs per token whatever the
implementation (MFU divides by them); *hardware* FLOPs add what the implementation
recomputes (HFU divides by them). With full activation recomputation the forward pass is
done twice, so hardware FLOPs ≈ 8·P·D. ``estimate`` passes the parallelism section's
executed-per-model ratio (matmuls, attention, recomputation), so "HFU (executed FLOPs)" is
one figure on every tab; without it the ratio comes from the recomputation policies
(:func:`llm_planner.core.sections.training.hardware_flops_factor`).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Literal, NamedTuple

from pydantic import BaseModel, ConfigDict, Field

from llm_planner.core.inputs.compute import ComputeInputs, FailureInputs
from llm_planner.core.primitives.architecture import Architecture
from llm_planner.core.primitives.figures import Figure, Unit
from llm_planner.core.primitives.gpus import GPU
from llm_planner.core.primitives.units import format_gb
from llm_planner.core.quantities.flops import (
    mfu_flops_per_token,
    mtp_flops_per_token,
    training_flops_6pd,
    training_flops_with_attention,
)
from llm_planner.core.sections.failures import (
    DEFAULT_FAILURE_SOURCE,
    estimate_failures,
)

if TYPE_CHECKING:
    from llm_planner.core.inputs.training import TrainingInputs

__all__ = ["ComputeInputs", "ComputeReport", "FailureInputs", "estimate_compute"]

ThroughputSource = Literal["modeled", "assumed_mfu", "measured_tflops", "measured_tokens_per_s"]
THROUGHPUT_SOURCES: dict[str, ThroughputSource] = {
    "modeled": "modeled",
    "mfu": "assumed_mfu",
    "tflops": "measured_tflops",
    "tokens_per_s": "measured_tokens_per_s",
}
"""``compute.throughput_source`` of each ``throughput_mode``."""
RecomputePolicy = Literal["none", "selective", "full", "threshold"]

SECONDS_PER_HOUR = 3600.0
SECONDS_PER_DAY = 86_400.0

SEED_SOURCE = "EleutherAI, Transformer Math 101 (C ≈ 6·P·D; t = C/τ)"
PALM_SOURCE = "Chowdhery et al. 2022 (PaLM, arXiv:2204.02311), Appendix B"
NARAYANAN_SOURCE = "Narayanan et al. 2021 (arXiv:2104.04473), eq. (3)"
CHINCHILLA_SOURCE = "Hoffmann et al. 2022 (Chinchilla, arXiv:2203.15556)"

CHINCHILLA_TOKENS_PER_PARAM = 20.0
"""D_opt ≈ 20·N: Hoffmann et al. 2022, Table 3 (Approach 1) gives 20.0 tokens per
parameter at 400M and 20.2 at 1B, drifting to ≈ 21 at 175B–1T; 20 is the usual rounding."""

CHINCHILLA_E = 1.69
CHINCHILLA_A = 406.4
CHINCHILLA_B = 410.7
CHINCHILLA_ALPHA = 0.34
CHINCHILLA_BETA = 0.28
"""Constants of the parametric loss L(N, D) = E + A/N^α + B/D^β fitted by Hoffmann et al.
2022, section 3.3 (Approach 3) and Appendix D.2 (eq. (10) in the arXiv version)."""


# ------------------------------------------------------------------ throughput and time


class ModeledThroughput(NamedTuple):
    """What the parallelism section modeled for the scenario's layout."""

    tokens_per_s: float
    """Training tokens/s of the whole layout."""
    gpus: int
    """GPUs of the layout (tp·pp·dp)."""
    mfu: float
    """Counted as this section counts (:func:`.flops.mfu_flops_per_token`)."""
    layout: str


class MemoryNeed(NamedTuple):
    """The training peak per GPU of the scenario's plan and the GPU's memory (bytes)."""

    peak_bytes: float
    capacity_bytes: float


def does_not_fit(memory: MemoryNeed | None) -> str | None:
    """Why a plan cannot run for lack of memory (one phrase), or None when it fits: a
    training peak per GPU above the GPU's memory is an out-of-memory error at the first
    step, so no time, cost or MFU describes it."""
    if memory is None or not memory.peak_bytes > memory.capacity_bytes:
        return None
    return (
        f"needs {format_gb(memory.peak_bytes)} per GPU of {format_gb(memory.capacity_bytes)}"
        "; not priced"
    )


class Throughput(NamedTuple):
    """The one throughput of an estimate, resolved once; every face reads it."""

    source: ThroughputSource
    tokens_per_s_per_gpu: float | None
    """None: no rate (no peak FLOP/s for the dtype with an assumed MFU)."""
    mfu: float | None
    """Model FLOPs per token (MFU's count) × tokens/s per GPU ÷ peak."""
    model_flops_per_gpu_per_s: float | None
    """In MFU's count: model FLOPs per token × tokens/s per GPU."""
    cluster_tokens_per_s: float | None
    """Tokens/s of the scenario's GPUs (the layout's own figure when modeled)."""
    label: str


def resolve_throughput(
    inputs: ComputeInputs,
    peak: float | None,
    num_gpus: int,
    mfu_flops_per_token: float,
    modeled: ModeledThroughput | None,
    *,
    hardware_flops_factor: float = 1.0,
    memory: MemoryNeed | None = None,
) -> Throughput:
    """The estimate's one throughput, from the source ``inputs.throughput_mode`` names.

    - ``modeled`` (default): the parallel layout's step time (:mod:`.parallelism`), its
      tokens/s and MFU taken as they are, so the compute and parallelism sections agree to
      the last digit; per GPU = layout tokens/s ÷ its GPUs.
    - ``mfu`` (assumed): tokens/s per GPU = MFU · peak ÷ model FLOPs per token.
    - ``tflops`` (measured): the benchmark's model FLOP/s per GPU ÷ FLOPs per token, taken
      as counted like ``flops_total`` (6·P per token unless attention is included).
    - ``tokens_per_s`` (measured): as given, per GPU.

    One definition of MFU for every source: ``mfu_flops_per_token`` (the budget's count,
    :func:`llm_planner.core.quantities.flops.mfu_flops_per_token`) × tokens/s ÷ (GPUs ·
    peak), so an assumed MFU equal to the modeled one gives the same time and t = C/τ
    holds (Transformer Math 101). The seed's method (benchmark, then divide) is the
    measured sources.

    A rate no GPU can run is not priced: a measured or assumed rate whose MFU exceeds 1
    (model FLOP/s above the dtype's peak), or whose hardware FLOP/s (MFU ×
    ``hardware_flops_factor``, recomputation and attention included) exceed the peak, gives
    no rate, and the label says why, so time and cost read "—" with the reason.

    A plan that cannot run is not priced either, whatever the source: a training peak per
    GPU (``memory``) above the GPU's memory gives no rate, and the label says what it needs
    (:func:`does_not_fit`).
    """
    source = THROUGHPUT_SOURCES[inputs.throughput_mode]
    f = mfu_flops_per_token
    per_gpu: float | None
    cluster: float | None = None
    mfu: float | None = None
    if source == "modeled" and modeled is not None and modeled.gpus > 0:
        per_gpu = modeled.tokens_per_s / modeled.gpus
        cluster = modeled.tokens_per_s if modeled.gpus == num_gpus else per_gpu * num_gpus
        mfu = modeled.mfu
        label = f"modeled: {modeled.layout} step time"
    elif source == "measured_tflops" and inputs.achieved_flops_per_gpu is not None:
        per_gpu = inputs.achieved_flops_per_gpu / f
        label = "measured: TFLOP/s per GPU"
    elif source == "measured_tokens_per_s" and inputs.tokens_per_s_per_gpu is not None:
        per_gpu = inputs.tokens_per_s_per_gpu
        label = "measured: tokens/s per GPU"
    else:
        source = "assumed_mfu"
        per_gpu = None if peak is None else inputs.mfu * peak / f
        mfu = None if peak is None else inputs.mfu
        label = f"assumed: MFU {100 * inputs.mfu:.4g}%"
    if per_gpu is None or not per_gpu > 0:
        return Throughput(source, None, None, None, None, label)
    out_of_memory = does_not_fit(memory)
    if out_of_memory is not None:
        return Throughput(source, None, None, None, None, f"{label}: {out_of_memory}")
    if cluster is None:
        cluster = per_gpu * num_gpus
    if mfu is None and peak:
        mfu = per_gpu * f / peak
    if source != "modeled" and peak and mfu is not None:
        impossible = _impossible_rate(per_gpu * f, peak, mfu, hardware_flops_factor)
        if impossible is not None:
            return Throughput(source, None, None, None, None, f"{label}: {impossible}")
    return Throughput(source, per_gpu, mfu, per_gpu * f, cluster, label)


def _impossible_rate(
    model_flops_per_s: float, peak: float, mfu: float, factor: float
) -> str | None:
    """Why a user's rate cannot run on the GPU (one phrase), or None when it can: MFU ≤ 1
    and HFU = MFU × hardware/model FLOPs ≤ 1 (PaLM's definitions, Chowdhery et al. 2022
    Appendix B: both are shares of the peak)."""
    if mfu > 1.0:
        return (
            f"{model_flops_per_s / 1e12:,.4g} TFLOP/s of model FLOPs is above the GPU's "
            f"{peak / 1e12:,.4g} TFLOP/s peak (MFU {100 * mfu:,.4g}%); not priced"
        )
    if mfu * factor > 1.0:
        return (
            f"with recomputation and attention the GPU would run {factor:,.4g}× these FLOPs, "
            f"{100 * mfu * factor:,.4g}% of its peak (HFU); not priced"
        )
    return None


def compute_seconds(flops: float, num_gpus: int, per_gpu_flops_per_s: float) -> float:
    """Failure-free time t = C / τ with τ = N × achieved FLOP/s per GPU (perfect scaling)."""
    return flops / (num_gpus * per_gpu_flops_per_s)


class SeriesPoint(NamedTuple):
    """One point of :func:`time_and_cost_vs_gpus`."""

    gpus: int
    seconds: float
    usd: float


def time_and_cost_vs_gpus(
    flops: float,
    per_gpu_flops_per_s: float,
    price_usd_per_gpu_hour: float,
    gpu_counts: list[int],
    failures: FailureInputs | None = None,
) -> list[SeriesPoint]:
    """(GPUs, seconds, USD) for each GPU count: the GUI's time-and-cost chart.

    seconds = C/(N·f), divided by the goodput at N GPUs when ``failures`` is given;
    USD = N × seconds / 3600 × price. Counts whose run never finishes (goodput 0) are
    left out. Assumes per-GPU throughput does not change with N (perfect data-parallel
    scaling; the parallelism estimator refines this).
    """
    points: list[SeriesPoint] = []
    for gpus in gpu_counts:
        if gpus < 1:
            continue
        seconds: float | None = compute_seconds(flops, gpus, per_gpu_flops_per_s)
        if failures is not None and seconds is not None:
            seconds = estimate_failures(seconds, gpus, failures).wall_seconds
        if seconds is None:
            continue
        points.append(
            SeriesPoint(gpus, seconds, gpus * seconds / SECONDS_PER_HOUR * price_usd_per_gpu_hour)
        )
    return points


# ------------------------------------------------------------------ Chinchilla


def chinchilla_tokens(params: float) -> float:
    """Compute-optimal training tokens D ≈ 20·N (Hoffmann et al. 2022, Table 3)."""
    return CHINCHILLA_TOKENS_PER_PARAM * params


def chinchilla_optimal(flops: float) -> tuple[float, float]:
    """Compute-optimal (N, D) for a budget C: C = 6·N·D with D = 20·N, so C = 120·N²,
    N = √(C/120), D = 20·N (Hoffmann et al. 2022; Transformer Math 101)."""
    params = math.sqrt(flops / (6.0 * CHINCHILLA_TOKENS_PER_PARAM))
    return params, CHINCHILLA_TOKENS_PER_PARAM * params


def chinchilla_loss(params: float, tokens: float) -> float:
    """Predicted final pre-training loss (nats/token on MassiveText):
    L(N, D) = E + A/N^α + B/D^β with E = 1.69, A = 406.4, B = 410.7, α = 0.34, β = 0.28
    (Hoffmann et al. 2022, section 3.3 and D.2). Fitted on dense models up to 16B;
    indicative only for other data, tokenizers or MoE."""
    return (
        CHINCHILLA_E
        + CHINCHILLA_A / math.pow(params, CHINCHILLA_ALPHA)
        + CHINCHILLA_B / math.pow(tokens, CHINCHILLA_BETA)
    )


def flops_for_budget_usd(
    budget_usd: float,
    price_usd_per_gpu_hour: float,
    per_gpu_flops_per_s: float,
    goodput: float = 1.0,
) -> float | None:
    """Model FLOPs a dollar budget buys: budget/price GPU-hours × 3600 × f × goodput.
    None when the price is 0 (unbounded)."""
    if price_usd_per_gpu_hour <= 0:
        return None
    return budget_usd / price_usd_per_gpu_hour * SECONDS_PER_HOUR * per_gpu_flops_per_s * goodput


def flops_for_deadline(
    deadline_seconds: float, num_gpus: int, per_gpu_flops_per_s: float, goodput: float = 1.0
) -> float:
    """Model FLOPs ``num_gpus`` GPUs deliver before a deadline: t × N × f × goodput."""
    return deadline_seconds * num_gpus * per_gpu_flops_per_s * goodput


def largest_model_for_flops(flops: float) -> float:
    """The largest compute-optimal model a budget of ``flops`` allows: √(C/120)."""
    return chinchilla_optimal(flops)[0]


def min_gpus_per_instance(
    params_total: float, gpu_memory_bytes: float, bytes_per_param: float = 16.0
) -> int:
    """Lower bound on the GPUs one model instance needs for training, a power of two.

    ⌈bytes_per_param · P / GPU memory⌉ rounded up to a power of two, with 16 bytes per
    parameter for mixed-precision Adam (2 weights + 2 gradients + 12 fp32 master weights
    and moments; Rajbhandari et al. 2020, ZeRO, section 3.1), fully sharded and with no
    activations: any real layout needs at least this many. Used until the training and
    parallelism estimators supply the real figure.
    """
    needed = max(1, math.ceil(bytes_per_param * params_total / gpu_memory_bytes))
    return 1 << (needed - 1).bit_length()


class Deployment(NamedTuple):
    """The smallest deployment meeting a deadline."""

    gpus_per_instance: int
    replicas: int
    gpus: int
    wall_seconds: float


def smallest_deployment(
    flops: float,
    per_gpu_flops_per_s: float,
    deadline_seconds: float,
    gpus_per_instance: int,
    *,
    failures: FailureInputs | None = None,
    max_gpus: int = 10_000_000,
) -> Deployment | None:
    """Fewest data-parallel replicas of a ``gpus_per_instance``-GPU instance that finish
    ``flops`` within ``deadline_seconds``; None if no count up to ``max_gpus`` does.

    Time at N GPUs is C/(N·f), divided by the goodput at N when ``failures`` is given
    (more GPUs fail more often, so the wall time may stop improving). Starts at the
    failure-free lower bound ⌈C/(deadline·g·f)⌉ replicas and grows; assumes perfect
    data-parallel scaling of per-GPU throughput.
    """

    def wall(replicas: int) -> float:
        gpus = replicas * gpus_per_instance
        seconds = compute_seconds(flops, gpus, per_gpu_flops_per_s)
        if failures is None:
            return seconds
        result = estimate_failures(seconds, gpus, failures).wall_seconds
        return math.inf if result is None else result

    first = max(1, math.ceil(flops / (deadline_seconds * gpus_per_instance * per_gpu_flops_per_s)))
    failed = first - 1
    replicas = first
    while replicas * gpus_per_instance <= max_gpus:
        if wall(replicas) <= deadline_seconds:
            break
        failed = replicas
        replicas = max(replicas + 1, int(replicas * 1.05))
    else:
        return None
    low, high = failed + 1, replicas  # high meets the deadline; bisect the last step
    while low < high:
        middle = (low + high) // 2
        if wall(middle) <= deadline_seconds:
            high = middle
        else:
            low = middle + 1
    return Deployment(gpus_per_instance, high, high * gpus_per_instance, wall(high))


# ------------------------------------------------------------------ the report section


class ComputeReport(BaseModel):
    """The compute-budget section of the report (SI units)."""

    model_config = ConfigDict(frozen=True)

    params: float = Field(description="P in every P-based formula (active for MoE)")
    tokens: float
    num_gpus: int
    seq_len: int
    recompute: str
    flops_total: float = Field(description="model FLOPs: 6·P·D (or with attention if chosen)")
    flops_6pd: float
    flops_with_attention: float
    mtp_flops: float = Field(
        default=0.0,
        description="of flops_total, the multi-token prediction depths' (MTP FLOPs per token · D)",
    )
    flops_per_token: float
    hardware_flops: float
    hardware_flops_factor: float
    peak_flops_per_gpu: float | None
    throughput_source: ThroughputSource = Field(
        description="modeled, assumed_mfu, measured_tflops or measured_tokens_per_s"
    )
    throughput_label: str = Field(description="the source in words, shown on every face")
    mfu_flops_per_token: float = Field(
        description="model FLOPs per token MFU counts: 6·N + attention (PaLM Appendix B)"
    )
    flops_per_gpu_per_s: float | None = Field(
        description="achieved model FLOP/s per GPU, in MFU's count"
    )
    cluster_flops_per_s: float | None
    mfu: float | None
    hfu: float | None
    tokens_per_s: float | None
    tokens_per_s_per_gpu: float | None = Field(
        default=None, description="the one throughput, per GPU"
    )
    compute_seconds: float | None = Field(description="D ÷ tokens/s (C/τ), no failures")
    wall_seconds: float | None = Field(description="compute time / goodput")
    gpu_hours: float | None = Field(description="N × wall time, what is paid for")
    price_usd_per_gpu_hour: float
    cost_usd: float | None
    gpu_failures_per_hour: float
    mtbf_seconds: float | None
    checkpoint_interval_seconds: float | None
    goodput: float
    expected_interruptions: float | None
    chinchilla_tokens: float
    chinchilla_params: float = Field(description="compute-optimal N for flops_total")
    tokens_per_param: float
    predicted_loss: float
    budget_flops: float | None
    max_params_for_budget_flops: float | None
    budget_usd: float | None
    max_params_for_budget_usd: float | None
    deadline_seconds: float | None
    max_params_for_deadline: float | None
    gpus_per_instance: int
    gpus_per_instance_is_lower_bound: bool
    min_gpus_for_deadline: int | None
    min_gpus_wall_seconds: float | None

    def figures(self) -> list[Figure]:
        """Every figure with its formula and source, in display order."""
        with_attention = self.flops_total - self.mtp_flops != self.flops_6pd
        flops_formula = "D·(6·P + 12·L·s·d_attn)" if with_attention else "6·P·D"
        flops_formula += " + D·MTP" if self.mtp_flops else ""
        rows: list[tuple[str, str, Unit, str, str]] = [
            ("params", "P (active parameters)", "params", "P", "model section"),
            ("tokens", "Training tokens D", "tokens", "D", "input"),
            ("flops_total", "Training FLOPs (model)", "flop", flops_formula, SEED_SOURCE),
            (
                "flops_with_attention",
                "FLOPs incl. attention",
                "flop",
                "D·(6·P + 3·Σ_layers 2·s·(d_qk + d_v))",
                f"{PALM_SOURCE}; {NARAYANAN_SOURCE}",
            ),
            (
                "hardware_flops",
                "Hardware FLOPs (executed)",
                "flop",
                "model FLOPs × executed ÷ model FLOPs per token (matmuls, attention, "
                "recomputation)",
                f"{PALM_SOURCE}; Korthikanti et al. 2022, arXiv:2205.05198 section 6",
            ),
            ("peak_flops_per_gpu", "Peak per GPU", "flop/s", "catalog, dense", "GPU datasheet"),
            (
                "flops_per_gpu_per_s",
                "Achieved per GPU",
                "flop/s",
                "peak × MFU, or measured",
                SEED_SOURCE,
            ),
            ("cluster_flops_per_s", "Cluster throughput τ", "flop/s", "N × per GPU", SEED_SOURCE),
            ("mfu", "MFU", "percent", "model FLOP/s ÷ peak", PALM_SOURCE),
            (
                "hfu",
                "HFU (executed FLOPs)",
                "percent",
                "MFU × executed ÷ model FLOPs per token: the FLOPs the step executes (the "
                "matmuls of the parameters that multiply, attention, recomputation) ÷ peak, "
                "the Parallelism tab's HFU for every throughput source",
                f"{PALM_SOURCE}; Korthikanti et al. 2022, arXiv:2205.05198 section 6",
            ),
            ("tokens_per_s", "Training tokens/s", "tokens/s", "τ ÷ FLOPs per token", ""),
            (
                "tokens_per_s_per_gpu",
                "Training tokens/s per GPU",
                "tokens/s",
                "achieved per GPU ÷ FLOPs per token",
                "",
            ),
            ("compute_seconds", "Compute time (no failures)", "seconds", "C / τ", SEED_SOURCE),
            ("goodput", "Goodput", "percent", "T_s / T_w (Daly 2006)", "Daly 2006, FGCS 22(3)"),
            (
                "wall_seconds",
                "Wall-clock time",
                "seconds",
                "compute time / goodput",
                "Daly 2006, FGCS 22(3)",
            ),
            ("gpu_hours", "GPU-hours", "count", "N × wall time / 3600", SEED_SOURCE),
            ("cost_usd", "Cost", "usd", "GPU-hours × price", SEED_SOURCE),
            (
                "gpu_failures_per_hour",
                "Failures per GPU-hour",
                "count",
                "λ = 419 / (16,384 × 54 × 24 h) by default",
                DEFAULT_FAILURE_SOURCE,
            ),
            ("mtbf_seconds", "Job MTBF", "seconds", "M = 1 / (N·λ)", ""),
            (
                "checkpoint_interval_seconds",
                "Checkpoint interval",
                "seconds",
                "τ = √(2·δ·M)",
                "Young 1974, CACM 17(9)",
            ),
            ("expected_interruptions", "Expected interruptions", "count", "wall time / M", ""),
            ("chinchilla_tokens", "Chinchilla tokens for P", "tokens", "20·P", CHINCHILLA_SOURCE),
            (
                "chinchilla_params",
                "Compute-optimal P for C",
                "params",
                "√(C / 120)",
                CHINCHILLA_SOURCE,
            ),
            ("tokens_per_param", "Tokens per parameter", "ratio", "D / P", ""),
            (
                "predicted_loss",
                "Predicted loss (Chinchilla fit)",
                "ratio",
                "1.69 + 406.4/P^0.34 + 410.7/D^0.28",
                CHINCHILLA_SOURCE + ", sec. 3.3 / D.2",
            ),
            (
                "max_params_for_budget_flops",
                "Largest optimal P for FLOP budget",
                "params",
                "√(C / 120)",
                CHINCHILLA_SOURCE,
            ),
            (
                "max_params_for_budget_usd",
                "Largest optimal P for $ budget",
                "params",
                "√(budget/price·3600·f·goodput / 120)",
                CHINCHILLA_SOURCE,
            ),
            (
                "max_params_for_deadline",
                "Largest optimal P for deadline",
                "params",
                "√(deadline·N·f·goodput / 120)",
                CHINCHILLA_SOURCE,
            ),
            (
                "gpus_per_instance",
                "GPUs per model instance",
                "count",
                "≥ 16 B·P / GPU memory, power of two"
                if self.gpus_per_instance_is_lower_bound
                else "training/parallelism estimate",
                "ZeRO (Rajbhandari et al. 2020) sec. 3.1: 16 bytes/param",
            ),
            (
                "min_gpus_for_deadline",
                "Fewest GPUs meeting deadline",
                "count",
                "instance × fewest replicas with wall time ≤ deadline",
                "",
            ),
        ]
        source = Figure(
            key="throughput_source",
            label="Throughput from",
            value=self.throughput_label,
            unit="text",
            formula="modeled (the layout's step time), assumed MFU, or measured",
            source=SEED_SOURCE,
        )
        return [source] + [
            Figure(key=key, label=label, value=getattr(self, key), unit=unit, formula=f, source=s)
            for key, label, unit, f, s in rows
        ]


class _BudgetAnswers(NamedTuple):
    max_params_for_budget_flops: float | None
    max_params_for_budget_usd: float | None
    max_params_for_deadline: float | None
    min_gpus_for_deadline: int | None
    min_gpus_wall_seconds: float | None


def _budget_questions(
    inputs: ComputeInputs,
    *,
    num_gpus: int,
    achieved: float | None,
    goodput: float,
    instance: int,
    mfu_flops_total: float,
) -> _BudgetAnswers:
    """The inverse questions: the largest compute-optimal model for a FLOP, dollar or time
    budget (holding the achieved FLOP/s per GPU, i.e. the same MFU, for another model size)
    and the fewest GPUs meeting the deadline (whole instances, the same per-GPU rate)."""
    max_flops_params = (
        largest_model_for_flops(inputs.budget_flops) if inputs.budget_flops is not None else None
    )
    max_usd_params = max_deadline_params = None
    min_gpus = min_gpus_wall = None
    if achieved is not None:
        if inputs.budget_usd is not None:
            affordable = flops_for_budget_usd(
                inputs.budget_usd, inputs.price_usd_per_gpu_hour, achieved, goodput
            )
            max_usd_params = None if affordable is None else largest_model_for_flops(affordable)
        if inputs.deadline_seconds is not None:
            reachable = flops_for_deadline(inputs.deadline_seconds, num_gpus, achieved, goodput)
            max_deadline_params = largest_model_for_flops(reachable)
            deployment = smallest_deployment(
                mfu_flops_total,
                achieved,
                inputs.deadline_seconds,
                instance,
                failures=inputs.failures,
            )
            if deployment is not None:
                min_gpus, min_gpus_wall = deployment.gpus, deployment.wall_seconds
    return _BudgetAnswers(
        max_flops_params, max_usd_params, max_deadline_params, min_gpus, min_gpus_wall
    )


def estimate_compute(
    arch: Architecture,
    params: float,
    params_total: float,
    gpu: GPU,
    num_gpus: int,
    *,
    inputs: ComputeInputs,
    seq_len: int,
    recompute: RecomputePolicy = "selective",
    hardware_flops_factor: float | None = None,
    gpus_per_instance: int | None = None,
    training_inputs: TrainingInputs | None = None,
    modeled: ModeledThroughput | None = None,
    memory: MemoryNeed | None = None,
) -> ComputeReport:
    """The compute-budget section.

    ``params`` is P (active parameters for MoE, or exactly the user's override);
    ``params_total`` sizes the per-instance memory bound; ``arch`` supplies the shapes of
    the attention term; ``seq_len`` is the training sequence length. ``modeled`` is the
    parallelism section's figures for the scenario's layout, the default source of the
    one throughput (:func:`resolve_throughput`); without it a ``modeled`` mode falls back
    to the assumed MFU. ``hardware_flops_factor`` (hardware ÷ model FLOPs) overrides the
    one derived from the recomputation setup
    (:func:`llm_planner.core.sections.training.hardware_flops_factor`, relative to MFU's
    model FLOPs per token): ``training_inputs``, by default the training defaults with
    ``recompute`` ("threshold" without its byte limit is counted as "selective");
    ``gpus_per_instance`` overrides the lower bound of :func:`min_gpus_per_instance`.
    ``memory`` (the training section's peak per GPU and capacity) refuses to price a plan
    that does not fit (:func:`resolve_throughput`).

    Time t = D ÷ tokens/s (failure-free), the seed's C/τ with C and τ counted alike;
    wall time divides by the goodput; GPU-hours = N · wall; cost = GPU-hours × price.
    """
    tokens = inputs.tokens
    flops_6pd = training_flops_6pd(params, tokens)
    flops_attn = training_flops_with_attention(params, tokens, arch, seq_len)
    depths = training_inputs.mtp_layers if training_inputs is not None else 0
    attention = inputs.include_attention_flops
    mtp_flops = tokens * mtp_flops_per_token(arch, seq_len, depths, include_attention=attention)
    flops_total = (flops_attn if attention else flops_6pd) + mtp_flops
    per_token = flops_total / tokens
    mfu_per_token = mfu_flops_per_token(
        arch, seq_len, params, include_attention=attention, mtp_layers=depths
    )
    factor = hardware_flops_factor
    if factor is None:
        from llm_planner.core.inputs.training import TrainingInputs
        from llm_planner.core.sections import training

        ti = training_inputs or TrainingInputs(
            seq_len=seq_len, recompute="selective" if recompute == "threshold" else recompute
        )
        factor = training.hardware_flops_factor(arch, ti, mfu_per_token)
    peak = gpu.peak_flops.for_dtype(inputs.compute_dtype)
    rate = resolve_throughput(
        inputs,
        peak,
        num_gpus,
        mfu_per_token,
        modeled,
        hardware_flops_factor=factor,
        memory=memory,
    )
    achieved = rate.model_flops_per_gpu_per_s
    failures = inputs.failures
    seconds = wall = gpu_hours = cost = cluster = tokens_per_s = None
    mfu = hfu = None
    failure = estimate_failures(1.0, num_gpus, failures)  # rate, MTBF, interval, goodput
    if achieved is not None and rate.cluster_tokens_per_s is not None:
        tokens_per_s = rate.cluster_tokens_per_s
        cluster = achieved * num_gpus
        seconds = tokens / tokens_per_s
        failure = estimate_failures(seconds, num_gpus, failures)
        wall = failure.wall_seconds
        if wall is not None:
            gpu_hours = num_gpus * wall / SECONDS_PER_HOUR
            cost = gpu_hours * inputs.price_usd_per_gpu_hour
        mfu = rate.mfu
        if mfu is not None:
            hfu = mfu * factor
    if gpus_per_instance is None:
        instance = min_gpus_per_instance(params_total, gpu.memory_bytes)
        lower_bound = True
    else:
        instance, lower_bound = gpus_per_instance, False

    questions = _budget_questions(
        inputs,
        num_gpus=num_gpus,
        achieved=achieved,
        goodput=failure.goodput,
        instance=instance,
        mfu_flops_total=tokens * mfu_per_token,
    )
    max_flops_params, max_usd_params, max_deadline_params, min_gpus, min_gpus_wall = questions

    return ComputeReport(
        params=params,
        tokens=tokens,
        num_gpus=num_gpus,
        seq_len=seq_len,
        recompute=recompute,
        flops_total=flops_total,
        flops_6pd=flops_6pd,
        flops_with_attention=flops_attn,
        mtp_flops=mtp_flops,
        flops_per_token=per_token,
        hardware_flops=flops_total * factor,
        hardware_flops_factor=factor,
        peak_flops_per_gpu=peak,
        throughput_source=rate.source,
        throughput_label=rate.label,
        mfu_flops_per_token=mfu_per_token,
        flops_per_gpu_per_s=achieved,
        cluster_flops_per_s=cluster,
        mfu=mfu,
        hfu=hfu,
        tokens_per_s=tokens_per_s,
        tokens_per_s_per_gpu=rate.tokens_per_s_per_gpu,
        compute_seconds=seconds,
        wall_seconds=wall,
        gpu_hours=gpu_hours,
        price_usd_per_gpu_hour=inputs.price_usd_per_gpu_hour,
        cost_usd=cost,
        gpu_failures_per_hour=failure.gpu_failures_per_hour,
        mtbf_seconds=failure.mtbf_seconds,
        checkpoint_interval_seconds=failure.checkpoint_interval_seconds,
        goodput=failure.goodput,
        expected_interruptions=failure.expected_interruptions if seconds is not None else None,
        chinchilla_tokens=chinchilla_tokens(params),
        chinchilla_params=largest_model_for_flops(flops_total),
        tokens_per_param=tokens / params,
        predicted_loss=chinchilla_loss(params, tokens),
        budget_flops=inputs.budget_flops,
        max_params_for_budget_flops=max_flops_params,
        budget_usd=inputs.budget_usd,
        max_params_for_budget_usd=max_usd_params,
        deadline_seconds=inputs.deadline_seconds,
        max_params_for_deadline=max_deadline_params,
        gpus_per_instance=instance,
        gpus_per_instance_is_lower_bound=lower_bound,
        min_gpus_for_deadline=min_gpus,
        min_gpus_wall_seconds=min_gpus_wall,
    )
