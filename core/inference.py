"""Inference memory: weights, KV cache, overhead, fit and decode bound (stub; issue 3)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class InferenceInputs(BaseModel):
    """Inputs of the inference-memory tab."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    weights_format: str = Field(default="bf16", description="weight dtype or quantized format")
    kv_dtype: str = Field(default="bf16", description="KV-cache element dtype")
    batch: int = Field(default=1, ge=1, description="concurrent sequences")
    context: int = Field(default=8192, ge=1, description="tokens per sequence (prompt + output)")
    num_gpus: int = Field(default=1, ge=1, description="GPUs serving one replica (tensor parallel)")
