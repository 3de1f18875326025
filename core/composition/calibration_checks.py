"""Sanity bands and checks: the published ranges of achieved FLOP/s per GPU by GPU
generation (:data:`RATE_BANDS`), the likely causes of a rate below its band, and the checks
of a measured, given or modeled rate against it (the plan checks every tab shows).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from llm_planner.core.composition.calibration_report import (
    CalibrationReport,
    RateCheck,
)
from llm_planner.core.primitives.gpus import GPU

# ------------------------------------------------------------------ sanity bands


@dataclass(frozen=True)
class RateBand:
    """Achieved model FLOP/s per GPU that well-tuned runs reach on one GPU generation."""

    prefixes: tuple[str, ...]
    low: float
    high: float
    threshold: float
    source: str
    above_note: str = ""


RATE_BANDS: tuple[RateBand, ...] = (
    RateBand(
        ("v100",),
        30e12,
        40e12,
        30e12,
        "seed talk: 30-40 TFLOP/s per V100; Shoeybi et al. 2019 (arXiv:1909.08053): 39 TFLOP/s "
        "on one V100, 15.1 PFLOP/s on 512 (29.5 per GPU)",
        "the step-time model prices V100 GEMMs at the large-size kernel efficiency and "
        "attention at 0.45 of the fp16 tensor-core peak (assumptions made for Ampere and "
        "Hopper kernels), where practitioners' 30-40 TFLOP/s is 24-32% of that peak "
        "(Megatron-LM 2019's own single-GPU baseline: 30%, arXiv:1909.08053); a V100 plan is "
        "optimistic by about that ratio until a measured run calibrates it",
    ),
    RateBand(
        ("a100",),
        100e12,
        180e12,
        115e12,
        "seed talk: 100-180 TFLOP/s per A100, troubleshoot below 115; Narayanan et al. 2021 "
        "(arXiv:2104.04473) Table 1: 135-163 TFLOP/s",
    ),
    RateBand(
        ("h100", "h800", "h200"),
        380e12,
        430e12,
        380e12,
        "Llama 3 405B on 16k H100s: 380-430 BF16 TFLOP/s per GPU (arXiv:2407.21783 Table 4); "
        "MosaicML MPT-7B on 8 H100s ≈ 430 (tests/validation/runs.json); H800/H200 assumed "
        "the same (same dense BF16 peak)",
        "the published H100 rates are 7-405B models with tensor and pipeline parallelism or "
        "FSDP across nodes; a layout with less communication (pure data parallelism of a "
        "small model) has none of their exposed traffic and bubble, so it can run above them "
        "(docs/ACCURACY.md, 'MFU of the defaults')",
    ),
)
"""Sanity bands by GPU generation (catalog id prefix). Rates counted as model FLOPs (the
app's MFU count); the seed's and Megatron's figures count hardware FLOPs, which are higher
with recomputation, so the band is lenient for recomputing runs."""


def band_for(gpu: GPU) -> RateBand | None:
    """The band of ``gpu``'s generation, or None (no published band)."""
    for band in RATE_BANDS:
        if gpu.id.startswith(band.prefixes):
            return band
    return None


def likely_causes(breakdown: dict[str, float], kernel_efficiency: float) -> list[str]:
    """What the model sees slowing a step: exposed communication, bubble, small kernels."""
    total = sum(breakdown.values()) or 1.0
    causes: list[tuple[float, str]] = []
    comm_parts = {
        "tensor_parallel": "tensor-parallel all-reduce",
        "pipeline_p2p": "pipeline send/receive",
        "expert_all_to_all": "MoE all-to-all",
        "data_parallel": "data-parallel gradient sync",
    }
    for key, label in comm_parts.items():
        share = breakdown.get(key, 0.0) / total
        if share >= 0.05:
            causes.append((share, f"exposed communication: {label} {100 * share:.0f}% of step"))
    bubble = breakdown.get("bubble", 0.0) / total
    if bubble >= 0.05:
        causes.append((bubble, f"pipeline bubble {100 * bubble:.0f}% of step"))
    if kernel_efficiency < 0.5:
        causes.append(
            (
                1 - kernel_efficiency,
                f"small or inefficient kernels: GEMMs at {100 * kernel_efficiency:.0f}% of peak "
                "(micro-batch × sequence per GPU too small, or un-fused kernels)",
            )
        )
    return [text for _, text in sorted(causes, reverse=True)]


def rate_check(
    gpu: GPU,
    what: str,
    flops_per_gpu_per_s: float,
    breakdown: dict[str, float],
    kernel_efficiency: float,
) -> RateCheck | None:
    """``flops_per_gpu_per_s`` against the GPU's band; causes when it is below."""
    band = band_for(gpu)
    if band is None:
        return None
    below = flops_per_gpu_per_s < band.threshold
    return RateCheck(
        what=what,
        flops_per_gpu_per_s=flops_per_gpu_per_s,
        band_low=band.low,
        band_high=band.high,
        threshold=band.threshold,
        below=below,
        above=flops_per_gpu_per_s > band.high,
        causes=likely_causes(breakdown, kernel_efficiency) if below else [],
        band_source=band.source,
        above_note=band.above_note,
    )


def modeled_check(gpu: GPU, parallelism_report: Any, kernel_efficiency: float) -> RateCheck | None:
    """The scenario's modeled rate, model FLOPs/token · tokens/s ÷ GPUs, against its band."""
    par = parallelism_report
    rate = float(par.tokens_per_s) * float(par.mfu_flops_per_token) / max(int(par.gpus), 1)
    return rate_check(
        gpu,
        "modeled: the scenario's layout",
        rate,
        dict(par.time_breakdown_seconds),
        kernel_efficiency,
    )


GIVEN_RATE_LABELS: dict[str, str] = {
    "assumed_mfu": "assumed: the MFU given",
    "measured_tflops": "measured: the TFLOP/s given",
    "measured_tokens_per_s": "measured: the tokens/s given",
}
"""How the rate checks name the one throughput when the user gave it (compute.throughput_source)."""


def plan_checks(
    gpu: GPU, compute_report: Any, parallelism_report: Any, kernel_efficiency: float
) -> list[RateCheck | None]:
    """The rules of thumb on every plan: the modeled rate (:func:`modeled_check`) and, when
    the estimate's one throughput is the user's (a measured TFLOP/s or tokens/s, an assumed
    MFU), that rate too, as model FLOP/s per GPU (``compute.flops_per_gpu_per_s``), against
    the generation's band: an A100 run at 90 TFLOP/s is flagged as below the 115 TFLOP/s
    troubleshooting threshold whichever way it was obtained. A layout that does not fit has no
    modeled rate (it is not priced), so only a given rate is checked there."""
    # a layout that does not fit is not priced, so it has no modeled rate to check
    fits = getattr(parallelism_report, "fits", None) is not False
    checks = [modeled_check(gpu, parallelism_report, kernel_efficiency)] if fits else []
    source = str(getattr(compute_report, "throughput_source", "modeled"))
    rate = getattr(compute_report, "flops_per_gpu_per_s", None)
    if source in GIVEN_RATE_LABELS and rate is not None and math.isfinite(float(rate)):
        checks.append(
            rate_check(
                gpu,
                GIVEN_RATE_LABELS[source],
                float(rate),
                dict(parallelism_report.time_breakdown_seconds),
                kernel_efficiency,
            )
        )
    return checks


def with_checks(report: CalibrationReport, checks: Sequence[RateCheck | None]) -> CalibrationReport:
    """The report with more sanity checks appended."""
    extra = [c for c in checks if c is not None]
    return report.model_copy(update={"checks": [*report.checks, *extra]})
