"""Inputs of the "What if" tab: the seed's four open problems, each off until asked for.

Every part is optional (``None``: not planned); the scenario's model, training setup and
layout are the base every part starts from.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from llm_planner.core.primitives import limits
from llm_planner.core.primitives.gpus import gpu_catalog

CommKind = Literal["data_parallel", "tensor_parallel", "pipeline_p2p", "expert_all_to_all"]
"""The collectives a compression what-if can act on (the step-time breakdown's names)."""


MIN_IMAGES_PER_SEQUENCE = 1e-3
"""The smallest non-zero share of images per sequence (one image per 1,000 sequences)."""


class NodeGroup(BaseModel):
    """Nodes of one kind: the same GPU, GPUs per node, intra-node link and network."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(default="group", min_length=1, max_length=60)
    gpu: str = Field(description="GPU catalog id")
    memory_bytes: float | None = Field(
        default=None,
        description="GPU memory if not the catalog's (e.g. 16 GB V100)",
        **limits.bounds("whatif.mixed_cluster.groups.memory_bytes"),
    )
    nodes: int = Field(ge=1, le=1_000_000)
    gpus_per_node: int = Field(ge=1, le=64)
    intra_node_bandwidth_bytes_per_s: float | None = Field(
        default=None,
        description="per GPU, one direction; None: the GPU's link",
        **limits.bounds("whatif.mixed_cluster.groups.intra_node_bandwidth_bytes_per_s"),
    )
    inter_node_bandwidth_bytes_per_s: float = Field(
        description="network per node, one direction",
        **limits.bounds("whatif.mixed_cluster.groups.inter_node_bandwidth_bytes_per_s"),
    )

    @field_validator("gpu")
    @classmethod
    def _catalog_gpu(cls, value: str) -> str:
        """A GPU catalog id, resolved now (case-insensitive): a file naming a GPU the catalog
        lacks, or a path (which the planner would open), is refused when it is read, not
        when ``report`` or ``whatif`` prices the group."""
        catalog = gpu_catalog()
        key = value.strip().lower()
        if key not in catalog:
            shown = value if len(value) <= 40 else value[:39] + "…"
            raise ValueError(
                f"unknown GPU {shown!r}: not in the GPU catalog (llm-planner presets gpus)"
            )
        return key

    @property
    def gpus(self) -> int:
        return self.nodes * self.gpus_per_node


class MixedClusterInputs(BaseModel):
    """A cluster as node groups; the scenario's tp, pp, ZeRO stage and batch are its layout."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    groups: list[NodeGroup] = Field(min_length=1, max_length=8)


class RLInputs(BaseModel):
    """One RL step: rollouts (generation) of the current policy, then training on them."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    num_gpus: int = Field(default=64, ge=2, le=1_000_000, description="GPUs for the whole loop")
    prompts_per_step: int = Field(default=512, ge=1, le=10_000_000)
    samples_per_prompt: int = Field(default=8, ge=1, le=1024, description="responses per prompt")
    prompt_tokens: int = Field(default=1024, ge=1, le=10_000_000)
    response_tokens: int = Field(default=2048, ge=1, le=10_000_000)
    engine_gpus: int = Field(default=1, ge=1, le=64, description="GPUs of one inference engine")
    placement: Literal["separate", "colocated"] = "separate"
    overlap: bool = Field(
        default=False,
        description="separate pools run the next rollout while training (one step off-policy)",
    )
    reshard_seconds: float | None = Field(
        default=None, ge=0, le=1e6, description="colocated: weight resharding per phase change"
    )


class MultimodalInputs(BaseModel):
    """A vision (or audio) encoder feeding the text model."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    encoder_params: float = Field(
        default=0.6e9, **limits.bounds("whatif.multimodal.encoder_params")
    )
    tokens_per_image: int = Field(default=576, ge=1, le=1_000_000, description="encoder tokens")
    images_per_sequence: float = Field(default=1.0, ge=0, le=10_000)
    encoder_trained: bool = Field(default=True, description="False: frozen (forward only)")
    encoder_gpus: int | None = Field(
        default=None, ge=1, le=1_000_000, description="own-GPUs placement; None: the best split"
    )

    @field_validator("images_per_sequence")
    @classmethod
    def _none_or_a_real_share(cls, value: float) -> float:
        """0 (text only) or at least one image per 1,000 sequences: 1e-300 was accepted
        and echoed as a plan."""
        if 0 < value < MIN_IMAGES_PER_SEQUENCE:
            raise ValueError(f"must be 0 or at least {MIN_IMAGES_PER_SEQUENCE}")
        return value


class CompressionInputs(BaseModel):
    """Compressing one kind of collective on the fly."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: CommKind = "data_parallel"
    ratio: float = Field(default=4.0, ge=1, le=1000, description="bytes on the wire ÷ this")
    kernel_bytes_per_s: float | None = Field(
        default=None,
        description="compress + decompress rate per GPU; None: free",
        **limits.bounds("whatif.compression.kernel_bytes_per_s"),
    )


class WhatIfInputs(BaseModel):
    """The four what-ifs; each ``None`` until the user plans it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    mixed_cluster: MixedClusterInputs | None = None
    rl: RLInputs | None = None
    multimodal: MultimodalInputs | None = None
    compression: CompressionInputs | None = None

    @property
    def any(self) -> bool:
        return any(
            part is not None
            for part in (self.mixed_cluster, self.rl, self.multimodal, self.compression)
        )
