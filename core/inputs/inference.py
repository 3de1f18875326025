"""Inputs of the inference-memory tab: weights format, KV dtype, batch, context, GPUs per
replica and runtime allowances (estimated by :mod:`llm_planner.core.sections.inference`)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator

from llm_planner.core.primitives.dtypes import canonical_dtype
from llm_planner.core.primitives.gpus import CUDA_CONTEXT_BYTES
from llm_planner.core.primitives.limits import bounds
from llm_planner.core.quantities.engines import get_engine
from llm_planner.core.quantities.quantization import WeightFormat, get_weight_format

DEFAULT_CUDA_CONTEXT_BYTES = CUDA_CONTEXT_BYTES

DEFAULT_PREFILL_CHUNK_TOKENS = 8192
"""Tokens processed in one forward step at most. Serving engines split long prompts and
batches into chunks (vLLM's ``max_num_batched_tokens``); the step with the most tokens
sets the activation peak. An assumption, adjustable."""


class StoredWeights(BaseModel):
    """Weight bytes a model file states exactly (a GGUF file's tensor sum, a checkpoint's
    safetensors data), used instead of P × bits while ``weights_format`` is ``format``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    format: str = Field(description="the weights format these bytes are stored in")
    bytes: float = Field(
        description="the whole model's weight bytes", **bounds("inference.stored_weights.bytes")
    )
    source: str = Field(default="", max_length=500, description="the file the bytes come from")


class InferenceInputs(BaseModel):
    """Inputs of the inference-memory tab."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    weights_format: str = Field(default="bf16", description="weight dtype or quantized format")
    kv_dtype: str = Field(default="bf16", description="KV-cache element dtype")
    batch: int = Field(default=1, description="concurrent sequences", **bounds("inference.batch"))
    context: int = Field(
        default=8192,
        description="tokens per sequence (prompt + output)",
        **bounds("inference.context"),
    )
    num_gpus: int = Field(
        default=1,
        description="GPUs serving one replica (tensor parallel)",
        **bounds("inference.num_gpus"),
    )
    cuda_context_bytes: float = Field(
        default=DEFAULT_CUDA_CONTEXT_BYTES,
        description="per-GPU runtime baseline, bytes",
        **bounds("inference.cuda_context_bytes"),
    )
    prefill_chunk_tokens: int = Field(
        default=DEFAULT_PREFILL_CHUNK_TOKENS,
        description="most tokens in one step",
        **bounds("inference.prefill_chunk_tokens"),
    )
    activation_dtype: str = Field(default="bf16", description="dtype of activations")
    logits_dtype: str = Field(default="fp32", description="dtype the logits are kept in")
    stored_weights: StoredWeights | None = Field(
        default=None, description="exact weight bytes from the model's files, if imported"
    )
    # serving workload (core.sections.serving): ``batch`` is the concurrent requests
    engine: str = Field(default="vllm", description="serving engine (core.quantities.engines)")
    prompt_tokens: int = Field(
        default=1024, description="prompt tokens per request", **bounds("inference.prompt_tokens")
    )
    output_tokens: int = Field(
        default=256, description="output tokens per request", **bounds("inference.output_tokens")
    )
    batch_max: bool = Field(
        default=False, description="serve as many requests as KV memory and the engine allow"
    )

    @field_validator("engine")
    @classmethod
    def _known_engine(cls, value: str) -> str:
        return get_engine(value).id  # ValueError names the known engines

    @field_validator("weights_format")
    @classmethod
    def _known_weight_format(cls, value: str) -> str:
        return get_weight_format(value).id  # ValueError names the known formats

    @field_validator("kv_dtype", "activation_dtype", "logits_dtype")
    @classmethod
    def _known_dtype(cls, value: str) -> str:
        return canonical_dtype(value)  # bfloat16 → bf16; ValueError names the known dtypes

    @property
    def weight_format(self) -> WeightFormat:
        return get_weight_format(self.weights_format)

    def stored_weights_bytes(self) -> float | None:
        """The file's own weight bytes when they are for the chosen format, else None."""
        stored = self.stored_weights
        if stored is None or stored.format.lower().replace("-", "_") != self.weights_format:
            return None
        return stored.bytes
