"""Measured runs as scenario inputs, and which parameters they calibrate (the fit itself is
:mod:`llm_planner.core.composition.calibration`)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from llm_planner.core.inputs.parallelism import FSDPStrategy, Schedule
from llm_planner.core.primitives import limits

FlopsFormula = Literal["6P", "6P_attention", "megatron_hw_full", "app"]
"""How a framework counted the FLOPs behind its TFLOP/s or MFU (needed to turn them into
tokens/s):

- ``6P``: 6·P per token (Kaplan et al. 2020 §2.1), P the model's total parameters;
- ``6P_attention``: 6·P + 12·L·H·Q·T (PaLM, Chowdhery et al. 2022 Appendix B; torchtitan's
  ``get_num_flop_per_token`` and nanotron's MFU use this shape);
- ``megatron_hw_full``: 96·l·h²·(1 + s/(6h) + V/(16·l·h)) per token, Narayanan et al. 2021
  (arXiv:2104.04473) eq. (3), hardware FLOPs with full recomputation;
- ``app``: this app's own MFU count (:func:`.quantities.flops.mfu_flops_per_token`).
"""


class Measurement(BaseModel):
    """One measured run: the model, GPU, stack and layout it ran, and what was measured.

    A run belongs to its model and GPU: calibration uses it only for a scenario of the same
    model (architecture name) and GPU (id), and sets it aside otherwise, saying why
    (:func:`belongs_to`). ``model`` or ``gpu`` None (a run typed through the API, the
    scenario's own ``measured_points``) means the scenario's; runs added in the window or by
    ``llm-planner calibrate`` record both. Layout fields left None take the scenario's value.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    label: str = Field(default="", max_length=200)
    source: str = Field(default="typed", max_length=500, description="log file and line, or typed")
    model: str | None = Field(
        default=None,
        max_length=200,
        description="the model the run trained (architecture name); None: the scenario's",
    )
    gpu: str | None = Field(
        default=None, max_length=200, description="GPU id the run ran on; None: the scenario's"
    )
    stack: str | None = Field(default=None, description="framework that printed it")
    gpus: int = Field(description="GPUs of the run", **limits.bounds("measurements.gpus"))
    gpus_per_node: int | None = Field(default=None, **limits.bounds("measurements.gpus_per_node"))
    dp: int | None = Field(default=None, **limits.bounds("measurements.dp"))
    tp: int | None = Field(default=None, **limits.bounds("measurements.tp"))
    pp: int | None = Field(default=None, **limits.bounds("measurements.pp"))
    ep: int | None = Field(
        default=None, description="expert-parallel degree", **limits.bounds("measurements.ep")
    )
    zero_stage: Literal[0, 1, 2, 3] | None = None
    fsdp_strategy: FSDPStrategy | None = None
    sequence_parallel: bool | None = None
    micro_batch: int | None = Field(default=None, **limits.bounds("measurements.micro_batch"))
    global_batch: int | None = Field(
        default=None, description="sequences per step", **limits.bounds("measurements.global_batch")
    )
    seq_len: int | None = Field(default=None, **limits.bounds("measurements.seq_len"))
    recompute: Literal["none", "selective", "full"] | None = None
    schedule: Schedule | None = None
    interleave_chunks: int | None = Field(
        default=None, **limits.bounds("measurements.interleave_chunks")
    )
    # what was measured
    step_seconds: float | None = Field(
        default=None, description="one optimizer step", **limits.bounds("measurements.step_seconds")
    )
    tokens_per_s: float | None = Field(
        default=None, description="all GPUs together", **limits.bounds("measurements.tokens_per_s")
    )
    tokens_per_s_per_gpu: float | None = Field(
        default=None, **limits.bounds("measurements.tokens_per_s_per_gpu")
    )
    flops_per_gpu_per_s: float | None = Field(
        default=None, description="as counted", **limits.bounds("measurements.flops_per_gpu_per_s")
    )
    mfu: float | None = Field(
        default=None, description="fraction, as counted", **limits.bounds("measurements.mfu")
    )
    flops_formula: FlopsFormula | None = Field(
        default=None, description="FLOP count behind flops_per_gpu_per_s / mfu"
    )
    mfu_peak_flops: float | None = Field(
        default=None,
        description="peak the framework divided by; None: the GPU's",
        **limits.bounds("measurements.mfu_peak_flops"),
    )
    peak_allocated_bytes: float | None = Field(
        default=None, **limits.bounds("measurements.peak_allocated_bytes")
    )
    peak_reserved_bytes: float | None = Field(
        default=None, **limits.bounds("measurements.peak_reserved_bytes")
    )


class CalibrationInputs(BaseModel):
    """Whether the scenario's measurements calibrate the model, and which parameters."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    enabled: bool = Field(default=True, description="False: the uncalibrated model")
    time_parameters: tuple[str, ...] | None = Field(
        default=None, description="fields fitted to step times, in priority order; None: default"
    )
    memory_parameters: tuple[str, ...] | None = Field(
        default=None, description="fields fitted to peak memory; None: default"
    )
