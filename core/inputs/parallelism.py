"""Inputs of the parallelism tab: cluster shape, network, layout, schedule and the
step-time model's calibratable constants (resolved and priced by
:mod:`llm_planner.core.sections.parallelism`)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from llm_planner.core.primitives.limits import MAX_MEASURED_POINTS, bounds
from llm_planner.core.quantities import comm

Schedule = Literal["gpipe", "1f1b", "interleaved"]
FSDPStrategy = Literal["NO_SHARD", "SHARD_GRAD_OP", "FULL_SHARD", "HYBRID_SHARD"]


class ParallelInputs(BaseModel):
    """Inputs of the parallelism tab: cluster shape, network, layout and schedule."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    gpus_per_node: int = Field(default=8, **bounds("parallelism.gpus_per_node"))
    nvlink_domain: int | None = Field(
        default=None,
        description="GPUs one NVLink fabric joins (NVL72 rack: 72); None: the GPU's "
        "(catalog), else a node",
        **bounds("parallelism.nvlink_domain"),
    )
    tp: int = Field(default=1, description="tensor-parallel degree", **bounds("parallelism.tp"))
    pp: int = Field(default=1, description="pipeline-parallel degree", **bounds("parallelism.pp"))
    cp: int = Field(
        default=1,
        description="context-parallel degree: each sequence split over cp GPUs",
        **bounds("parallelism.cp"),
    )
    dp: int | None = Field(
        default=None,
        description="data-parallel degree; None: GPUs/(tp·pp·cp)",
        **bounds("parallelism.dp"),
    )
    zero_stage: Literal[0, 1, 2, 3] = 1
    sequence_parallel: bool = False
    global_batch: int = Field(
        default=1024,
        description="sequences per optimizer step",
        **bounds("parallelism.global_batch"),
    )
    schedule: Schedule = "1f1b"
    interleave_chunks: int = Field(
        default=1,
        description="virtual stages v (interleaved)",
        **bounds("parallelism.interleave_chunks"),
    )
    # --- added by issue 5
    fsdp_strategy: FSDPStrategy | None = Field(
        default=None, description="FSDP name; when set it overrides zero_stage (see FSDP_TO_ZERO)"
    )
    expert_parallel: int = Field(
        default=1,
        description="expert-parallel degree ep (MoE; divides dp)",
        **bounds("parallelism.expert_parallel"),
    )
    intra_node_bandwidth_bytes_per_s: float | None = Field(
        default=None,
        description="GPU-to-GPU link per GPU, one direction; None: the GPU's",
        **bounds("parallelism.intra_node_bandwidth_bytes_per_s"),
    )
    inter_node_bandwidth_bytes_per_s: float | None = Field(
        default=None,
        **bounds("parallelism.inter_node_bandwidth_bytes_per_s"),
        description="network per node, one direction; None: the GPU's network per GPU × GPUs "
        "per node (8 × 400 Gb/s InfiniBand = 400e9 B/s on an HGX H100 node, 4 × 400 Gb/s on a "
        "GB200 NVL72 compute tray)",
    )
    intra_node_efficiency: float = Field(
        default=comm.INTRA_NODE_ACHIEVED_FRACTION,
        description="achieved fraction",
        **bounds("parallelism.intra_node_efficiency"),
    )
    inter_node_efficiency: float = Field(
        default=comm.INTER_NODE_ACHIEVED_FRACTION,
        description="achieved fraction",
        **bounds("parallelism.inter_node_efficiency"),
    )
    kernel_efficiency: float = Field(
        default=comm.KERNEL_EFFICIENCY,
        description="achieved share of peak FLOP/s",
        **bounds("parallelism.kernel_efficiency"),
    )
    dp_overlap: float = Field(
        default=comm.DP_OVERLAP_FRACTION,
        description="backward share hiding DP comm",
        **bounds("parallelism.dp_overlap"),
    )
    tp_overlap: float = Field(
        default=comm.TP_OVERLAP_FRACTION,
        description="share of TP comm hidden",
        **bounds("parallelism.tp_overlap"),
    )
    # --- added by issue 14: the step-time model's calibratable constants
    intra_node_step_latency_seconds: float = Field(
        default=comm.NVLINK_STEP_LATENCY_SECONDS,
        **bounds("parallelism.intra_node_step_latency_seconds"),
        description="latency of one collective step on NVLink (NCCL tuning.cc: 3.4 µs)",
    )
    inter_node_step_latency_seconds: float = Field(
        default=comm.NETWORK_STEP_LATENCY_SECONDS,
        **bounds("parallelism.inter_node_step_latency_seconds"),
        description="latency of one collective step across the network (NCCL: 14 µs)",
    )
    ep_overlap: float = Field(
        default=0.0,
        **bounds("parallelism.ep_overlap"),
        description="share of the MoE all-to-all hidden behind compute (DeepSeek's DualPipe: ~1)",
    )
    balance_pipeline_head: bool | None = Field(
        default=None,
        description="pipeline stages balanced with the output head counted (fewer layers on "
        "the last stage); None: the stack's split",
    )
    inter_node_p2p_latency_seconds: float = Field(
        default=comm.NETWORK_STEP_LATENCY_SECONDS,
        **bounds("parallelism.inter_node_p2p_latency_seconds"),
        description="latency a pipeline send pays on top of NCCL's base when stages sit on "
        "different nodes (NCCL: one network step, 14 µs)",
    )
    gemm_ramp_seconds: float = Field(
        default=comm.GEMM_RAMP_SECONDS,
        **bounds("parallelism.gemm_ramp_seconds"),
        description="fixed time per GEMM kernel: small GEMMs run below the large-size rate",
    )
    attention_efficiency: float | None = Field(
        default=None,
        **bounds("parallelism.attention_efficiency"),
        description="attention kernel's share of peak; None: FlashAttention's for the GPU",
    )
    host_seconds_per_layer: float | None = Field(
        default=None,
        **bounds("parallelism.host_seconds_per_layer"),
        description="CPU launch time per layer per micro-batch (fwd+bwd); None: the stack's",
    )
    dp_bucket_bytes: float | None = Field(
        default=None,
        description="gradient bucket bytes; None: the stack's",
        **bounds("parallelism.dp_bucket_bytes"),
    )
    measured_points: list[
        tuple[
            Annotated[int, Field(**bounds("parallelism.measured_points.gpus"))],
            Annotated[float, Field(**bounds("parallelism.measured_points.tokens_per_s"))],
        ]
    ] = Field(
        default_factory=list,
        max_length=MAX_MEASURED_POINTS,
        description="user measurements: (GPUs, tokens/s)",
    )
