"""Compute budget: training FLOPs, throughput, time and cost (stub; issue 3 fills it in)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

ThroughputMode = Literal["mfu", "tflops", "tokens_per_s"]


class FailureInputs(BaseModel):
    """Failure and checkpoint settings that turn compute time into wall-clock time."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    gpu_failures_per_hour: float | None = Field(
        default=None, ge=0, description="per-GPU interruption rate; None: the cited default"
    )
    checkpoint_write_seconds: float = Field(default=60.0, ge=0)
    restart_seconds: float = Field(default=600.0, ge=0)


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
