"""Inputs of the compute-budget tab: tokens, the throughput source, price, deadline and
budgets, and the failure model (estimated by :mod:`llm_planner.core.sections.compute` and
:mod:`llm_planner.core.sections.failures`)."""

from __future__ import annotations

from typing import Literal, Self

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from llm_planner.core.primitives.dtypes import bytes_per_element
from llm_planner.core.primitives.limits import MIN_PRICE_USD_PER_GPU_HOUR, bounds

ThroughputMode = Literal["modeled", "mfu", "tflops", "tokens_per_s"]
"""Where the one throughput comes from: the parallel layout's modeled step time, an assumed
MFU, or a measured TFLOP/s or tokens/s per GPU."""


LLAMA3_UNEXPECTED_INTERRUPTIONS = 419
LLAMA3_GPUS = 16_384
LLAMA3_DAYS = 54
DEFAULT_GPU_FAILURES_PER_HOUR = LLAMA3_UNEXPECTED_INTERRUPTIONS / (LLAMA3_GPUS * LLAMA3_DAYS * 24.0)
"""Default interruption rate per GPU-hour, ≈ 1.97e-5 (one per ≈ 50,700 GPU-hours).

Derived from the Llama 3 report (Dubey et al. 2024, arXiv:2407.21783, section 3.3.4):
419 unexpected interruptions in a 54-day snapshot of pre-training on 16,384 H100 GPUs
(466 in all; the 47 planned ones are maintenance, not failures). All unexpected causes
(GPU, HBM, host, network, software) are charged to the GPUs, since the job sees them the
same way. Rate = 419 / (16,384 × 54 × 24 h)."""


class FailureInputs(BaseModel):
    """Failure and checkpoint settings that turn compute time into wall-clock time."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    gpu_failures_per_hour: float | None = Field(
        default=None,
        description="per-GPU interruption rate; None: the cited default",
        **bounds("compute.failures.gpu_failures_per_hour"),
    )
    checkpoint_write_seconds: float = Field(
        default=60.0,
        description="time the job is paused writing one checkpoint (δ)",
        **bounds("compute.failures.checkpoint_write_seconds"),
    )
    restart_seconds: float = Field(
        default=600.0,
        description="detect, reschedule, reload a checkpoint (R)",
        **bounds("compute.failures.restart_seconds"),
    )

    @property
    def rate_per_gpu_hour(self) -> float:
        """The per-GPU rate in use: the user's, or :data:`DEFAULT_GPU_FAILURES_PER_HOUR`."""
        if self.gpu_failures_per_hour is None:
            return DEFAULT_GPU_FAILURES_PER_HOUR
        return self.gpu_failures_per_hour


class ComputeInputs(BaseModel):
    """Inputs of the compute-budget tab."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    tokens: float = Field(
        default=15e12, description="training tokens D", **bounds("compute.tokens")
    )
    throughput_mode: ThroughputMode = Field(
        default="modeled",
        description="modeled (the layout's step time), mfu (assumed), tflops or tokens_per_s "
        "(measured per GPU)",
    )
    mfu: float = Field(
        default=0.40,
        description="assumed model FLOPs utilisation (mode 'mfu')",
        **bounds("compute.mfu"),
    )
    achieved_flops_per_gpu: float | None = Field(
        default=None, description="FLOP/s per GPU", **bounds("compute.achieved_flops_per_gpu")
    )
    tokens_per_s_per_gpu: float | None = Field(
        default=None, **bounds("compute.tokens_per_s_per_gpu")
    )
    compute_dtype: str = Field(default="bf16", description="dtype whose peak sets throughput")
    price_usd_per_gpu_hour: float = Field(default=2.0, **bounds("compute.price_usd_per_gpu_hour"))
    price_follows_gpu: bool = Field(
        default=False,
        description="the price is the price list's for the scenario's GPU (its cheapest "
        "on-demand offer, or the scenario's price_overrides entry) and follows when the GPU "
        "changes; False: the price the user set",
    )
    deadline_seconds: float | None = Field(default=None, **bounds("compute.deadline_seconds"))
    budget_usd: float | None = Field(default=None, **bounds("compute.budget_usd"))
    failures: FailureInputs = FailureInputs()
    budget_flops: float | None = Field(
        default=None,
        description="a compute budget in FLOP for the Chinchilla sizing",
        **bounds("compute.budget_flops"),
    )
    include_attention_flops: bool = Field(
        default=False,
        description="flops_total counts the attention scores too (PaLM's model FLOPs) "
        "instead of 6·P·D",
    )

    @field_validator("price_usd_per_gpu_hour")
    @classmethod
    def _free_or_a_real_price(cls, value: float) -> float:
        """0 (free: no cost figures) or at least $0.0001 per GPU-hour: a subnormal price
        would turn a budget into an infinite GPU-hour count."""
        if 0 < value < MIN_PRICE_USD_PER_GPU_HOUR:
            raise ValueError(
                f"must be 0 (free) or at least {MIN_PRICE_USD_PER_GPU_HOUR} USD per GPU-hour"
            )
        return value

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
