"""Compute budget: training FLOPs, throughput, time, cost, Chinchilla sizing, failures.

The seed method is EleutherAI's "Transformer Math 101": C ≈ τ·t ≈ 6·P·D, with P the
parameters a token passes through (active parameters for a mixture of experts) and D the
training tokens. Everything here is in SI base units: FLOP, FLOP/s, seconds, USD.

Model FLOPs vs hardware FLOPs follow PaLM (Chowdhery et al. 2022, arXiv:2204.02311,
Appendix B): *model* FLOPs are what the model needs per token whatever the
implementation (MFU divides by them); *hardware* FLOPs add what the implementation
recomputes (HFU divides by them). With full activation recomputation the forward pass is
done twice, so hardware FLOPs ≈ 8·P·D. The ratio is defined once, with the recomputation
policies, in :func:`llm_planner.core.training.hardware_flops_factor`.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Literal, NamedTuple, Self

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from llm_planner.core.architecture import Architecture
from llm_planner.core.dtypes import bytes_per_element
from llm_planner.core.failures import (
    DEFAULT_FAILURE_SOURCE,
    FailureInputs,
    estimate_failures,
)
from llm_planner.core.figures import Figure, Unit
from llm_planner.core.gpus import GPU

if TYPE_CHECKING:
    from llm_planner.core.training import TrainingInputs

__all__ = ["ComputeInputs", "ComputeReport", "FailureInputs", "estimate_compute"]

ThroughputMode = Literal["mfu", "tflops", "tokens_per_s"]
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


class ComputeInputs(BaseModel):
    """Inputs of the compute-budget tab."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    tokens: float = Field(default=15e12, gt=0, description="training tokens D")
    throughput_mode: ThroughputMode = "mfu"
    mfu: float = Field(default=0.40, gt=0, le=1, description="model FLOPs utilisation")
    achieved_flops_per_gpu: float | None = Field(default=None, gt=0, description="FLOP/s per GPU")
    tokens_per_s_per_gpu: float | None = Field(default=None, gt=0)
    compute_dtype: str = Field(default="bf16", description="dtype whose peak sets throughput")
    price_usd_per_gpu_hour: float = Field(default=2.0, ge=0)
    deadline_seconds: float | None = Field(default=None, gt=0)
    budget_usd: float | None = Field(default=None, gt=0)
    failures: FailureInputs = FailureInputs()
    budget_flops: float | None = Field(
        default=None, gt=0, description="a compute budget in FLOP for the Chinchilla sizing"
    )
    include_attention_flops: bool = Field(
        default=False,
        description="flops_total counts the attention scores too (PaLM's model FLOPs) "
        "instead of 6·P·D",
    )

    @field_validator("compute_dtype")
    @classmethod
    def _known_dtype(cls, value: str) -> str:
        bytes_per_element(value)  # ValueError names the known dtypes
        return value

    @model_validator(mode="after")
    def _mode_has_its_figure(self) -> Self:
        if self.throughput_mode == "tflops" and self.achieved_flops_per_gpu is None:
            raise ValueError("throughput_mode 'tflops' needs achieved_flops_per_gpu")
        if self.throughput_mode == "tokens_per_s" and self.tokens_per_s_per_gpu is None:
            raise ValueError("throughput_mode 'tokens_per_s' needs tokens_per_s_per_gpu")
        return self


# ------------------------------------------------------------------ FLOP counts


def training_flops_6pd(params: float, tokens: float) -> float:
    """Training FLOPs C = 6·P·D: forward 2·P·D, backward 4·P·D.

    Kaplan et al. 2020 (arXiv:2001.08361) section 2.1; EleutherAI Transformer Math 101.
    P = parameters each token passes through (active parameters for MoE). Ignores the
    attention-score FLOPs (see :func:`training_flops_with_attention`).
    """
    return 6.0 * params * tokens


def windowed_layers(arch: Architecture) -> int:
    """Layers that attend only within ``sliding_window`` tokens.

    ``all``: every layer (Mistral 7B v0.1); ``alternate``: every other layer starting
    with the first, ⌈L/2⌉ of them (Gemma 2: local and global layers alternate).
    """
    if arch.sliding_window is None:
        return 0
    if arch.sliding_window_layers == "alternate":
        return (arch.layers + 1) // 2
    return arch.layers


def _attention_widths(arch: Architecture) -> tuple[int, int]:
    """(query·key width, value width) summed over heads: a·d each for MHA/GQA/MQA;
    a·(d_nope + d_rope) and a·d_v for MLA (DeepSeek-V2 section 2.1)."""
    if arch.mla is not None:
        m = arch.mla
        return (
            arch.heads * (m.qk_nope_head_dim + m.qk_rope_head_dim),
            arch.heads * m.v_head_dim,
        )
    return arch.q_size, arch.q_size


def attention_forward_flops_per_token(
    arch: Architecture, context: float, causal: bool = False
) -> float:
    """Forward FLOPs per token of attention scores (Q·Kᵀ) and weighted sum (A·V).

    Per layer 2·n_ctx·d_qk + 2·n_ctx·d_v, i.e. 4·s·h for standard attention: the 4·B·s²·h
    per layer of Narayanan et al. 2021 (arXiv:2104.04473, eq. (3), the s/(6h) term) and
    PaLM's 12·L·H·Q·T for training (Appendix B) divided by 3 for the forward pass only.
    Kaplan et al. 2020, Table 1 counts half of this (2·n_layer·n_ctx·d_attn, scores only).
    ``causal=False`` counts every token against the full context, as these papers do;
    ``causal=True`` averages over positions (a prompt's token i sees i tokens). Layers
    with a sliding window see at most ``sliding_window`` tokens.
    """
    qk, v = _attention_widths(arch)
    per_context_token = 2.0 * (qk + v)
    windowed = windowed_layers(arch)

    def effective(limit: float | None) -> float:
        if limit is None or context <= limit:
            return context / 2.0 if causal else context
        if not causal:
            return limit
        return limit - limit * limit / (2.0 * context)  # mean of min(i, w) for i ≤ s

    window = float(arch.sliding_window) if arch.sliding_window is not None else None
    total = windowed * effective(window) + (arch.layers - windowed) * effective(None)
    return per_context_token * total


def training_flops_with_attention(
    params: float, tokens: float, arch: Architecture, seq_len: int
) -> float:
    """6·P·D plus the attention FLOPs: D·(6·P + 3 · attention forward per token).

    The training count PaLM uses for MFU (Appendix B: 6N + 12·L·H·Q·T per token) and
    Narayanan et al. 2021 eq. (3) without recomputation; grows with the sequence length.
    """
    return tokens * (6.0 * params + 3.0 * attention_forward_flops_per_token(arch, seq_len))


# ------------------------------------------------------------------ throughput and time


def flops_per_gpu_per_s(
    inputs: ComputeInputs, gpu: GPU, flops_per_token: float
) -> tuple[float | None, float | None]:
    """(achieved model FLOP/s per GPU, peak FLOP/s per GPU of ``compute_dtype``).

    - ``mfu``: peak(dtype) × MFU, the catalog's dense peak (Transformer Math 101).
    - ``tflops``: the user's measured model FLOP/s per GPU, taken as counted the same way
      as ``flops_total`` (6·P per token unless attention is included).
    - ``tokens_per_s``: measured tokens/s per GPU × FLOPs per token (6·P).
    Achieved is None when the GPU has no peak for the dtype in ``mfu`` mode.
    """
    peak = gpu.peak_flops.for_dtype(inputs.compute_dtype)
    if inputs.throughput_mode == "tflops" and inputs.achieved_flops_per_gpu is not None:
        return inputs.achieved_flops_per_gpu, peak
    if inputs.throughput_mode == "tokens_per_s" and inputs.tokens_per_s_per_gpu is not None:
        return inputs.tokens_per_s_per_gpu * flops_per_token, peak
    return (None if peak is None else peak * inputs.mfu), peak


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
    flops_per_token: float
    hardware_flops: float
    hardware_flops_factor: float
    peak_flops_per_gpu: float | None
    flops_per_gpu_per_s: float | None = Field(description="achieved model FLOP/s per GPU")
    cluster_flops_per_s: float | None
    mfu: float | None
    hfu: float | None
    tokens_per_s: float | None
    tokens_per_s_per_gpu: float | None = Field(
        default=None, description="achieved FLOP/s per GPU ÷ FLOPs per token"
    )
    compute_seconds: float | None = Field(description="C/τ, no failures")
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
        flops_formula = "D·(6·P + 12·L·s·d_attn)" if self.flops_total != self.flops_6pd else "6·P·D"
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
                "Hardware FLOPs (with recompute)",
                "flop",
                "model FLOPs × recompute factor (full: 8/6)",
                PALM_SOURCE,
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
            ("hfu", "HFU", "percent", "hardware FLOP/s ÷ peak", PALM_SOURCE),
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
        return [
            Figure(key=key, label=label, value=getattr(self, key), unit=unit, formula=f, source=s)
            for key, label, unit, f, s in rows
        ]


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
) -> ComputeReport:
    """The compute-budget section.

    ``params`` is P (active parameters for MoE, or exactly the user's override);
    ``params_total`` sizes the per-instance memory bound; ``arch`` supplies the shapes of
    the attention term; ``seq_len`` is the training sequence length.
    ``hardware_flops_factor`` (hardware ÷ model FLOPs) overrides the one derived from
    the recomputation setup (:func:`llm_planner.core.training.hardware_flops_factor`,
    relative to this section's model FLOPs per token): ``training_inputs``, by default
    the training defaults with ``recompute`` ("threshold" without its byte limit is
    counted as "selective"); ``gpus_per_instance`` overrides the lower bound of
    :func:`min_gpus_per_instance`.
    """
    tokens = inputs.tokens
    flops_6pd = training_flops_6pd(params, tokens)
    flops_attn = training_flops_with_attention(params, tokens, arch, seq_len)
    flops_total = flops_attn if inputs.include_attention_flops else flops_6pd
    per_token = flops_total / tokens
    factor = hardware_flops_factor
    if factor is None:
        from llm_planner.core import training

        ti = training_inputs or training.TrainingInputs(
            seq_len=seq_len, recompute="selective" if recompute == "threshold" else recompute
        )
        factor = training.hardware_flops_factor(arch, ti, per_token)
    achieved, peak = flops_per_gpu_per_s(inputs, gpu, per_token)
    failures = inputs.failures
    seconds = wall = gpu_hours = cost = cluster = tokens_per_s = None
    mfu = hfu = None
    failure = estimate_failures(1.0, num_gpus, failures)  # rate, MTBF, interval, goodput
    if achieved is not None and achieved > 0:
        cluster = achieved * num_gpus
        tokens_per_s = cluster / per_token
        seconds = compute_seconds(flops_total, num_gpus, achieved)
        failure = estimate_failures(seconds, num_gpus, failures)
        wall = failure.wall_seconds
        if wall is not None:
            gpu_hours = num_gpus * wall / SECONDS_PER_HOUR
            cost = gpu_hours * inputs.price_usd_per_gpu_hour
        if peak:
            mfu = achieved / peak
            hfu = mfu * factor
    if gpus_per_instance is None:
        instance = min_gpus_per_instance(params_total, gpu.memory_bytes)
        lower_bound = True
    else:
        instance, lower_bound = gpus_per_instance, False

    max_flops_params = (
        largest_model_for_flops(inputs.budget_flops) if inputs.budget_flops is not None else None
    )
    max_usd_params = max_deadline_params = None
    min_gpus = min_gpus_wall = None
    if achieved is not None and achieved > 0:
        if inputs.budget_usd is not None:
            affordable = flops_for_budget_usd(
                inputs.budget_usd, inputs.price_usd_per_gpu_hour, achieved, failure.goodput
            )
            max_usd_params = None if affordable is None else largest_model_for_flops(affordable)
        if inputs.deadline_seconds is not None:
            reachable = flops_for_deadline(
                inputs.deadline_seconds, num_gpus, achieved, failure.goodput
            )
            max_deadline_params = largest_model_for_flops(reachable)
            deployment = smallest_deployment(
                flops_total, achieved, inputs.deadline_seconds, instance, failures=failures
            )
            if deployment is not None:
                min_gpus, min_gpus_wall = deployment.gpus, deployment.wall_seconds

    return ComputeReport(
        params=params,
        tokens=tokens,
        num_gpus=num_gpus,
        seq_len=seq_len,
        recompute=recompute,
        flops_total=flops_total,
        flops_6pd=flops_6pd,
        flops_with_attention=flops_attn,
        flops_per_token=per_token,
        hardware_flops=flops_total * factor,
        hardware_flops_factor=factor,
        peak_flops_per_gpu=peak,
        flops_per_gpu_per_s=achieved,
        cluster_flops_per_s=cluster,
        mfu=mfu,
        hfu=hfu,
        tokens_per_s=tokens_per_s,
        tokens_per_s_per_gpu=achieved / per_token if achieved is not None else None,
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
