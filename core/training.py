"""Training memory per GPU (stub; issue 4 fills it in)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

Recompute = Literal["none", "selective", "full", "threshold"]


class TrainingInputs(BaseModel):
    """Inputs of the training-memory tab."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    precision: str = Field(default="mixed_bf16", description="precision recipe")
    optimizer: str = Field(default="adamw")
    seq_len: int = Field(default=4096, ge=1, description="training sequence length s")
    micro_batch: int = Field(default=1, ge=1, description="sequences per micro-batch b")
    recompute: Recompute = "selective"
    recompute_threshold_bytes: float | None = Field(default=None, gt=0)
    flash_attention: bool = True
    implementation: str = Field(default="megatron", description="activation-ledger profile")
    lora_rank: int | None = Field(default=None, ge=1)
    qlora: bool = False
