"""Parallel layout, communication and step time (stub; issue 5 fills it in)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

Schedule = Literal["gpipe", "1f1b", "interleaved"]


class ParallelInputs(BaseModel):
    """Inputs of the parallelism tab: cluster shape and layout."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    gpus_per_node: int = Field(default=8, ge=1)
    tp: int = Field(default=1, ge=1, description="tensor-parallel degree")
    pp: int = Field(default=1, ge=1, description="pipeline-parallel degree")
    dp: int | None = Field(
        default=None, ge=1, description="data-parallel degree; None: GPUs/(tp·pp)"
    )
    zero_stage: Literal[0, 1, 2, 3] = 1
    sequence_parallel: bool = False
    global_batch: int = Field(default=1024, ge=1, description="sequences per optimizer step")
    schedule: Schedule = "1f1b"
    interleave_chunks: int = Field(default=1, ge=1, description="virtual stages v (interleaved)")
