"""The parallel layout: the tab's inputs, a layout resolved from them (dp from the GPU count,
FSDP names as ZeRO stages, accumulation steps, the problems found) and candidate layouts as
numpy arrays for the search."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Annotated, Any, Literal

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, ConfigDict, Field

from llm_planner.core.primitives.limits import MAX_MEASURED_POINTS, bounds
from llm_planner.core.quantities import comm
from llm_planner.core.sections.parallelism.schedule import (
    FloatArray,
    training_in_flight,
    training_in_flight_last,
)

Schedule = Literal["gpipe", "1f1b", "interleaved"]
FSDPStrategy = Literal["NO_SHARD", "SHARD_GRAD_OP", "FULL_SHARD", "HYBRID_SHARD"]

FSDP_TO_ZERO: dict[str, int] = {
    "NO_SHARD": 0,
    "SHARD_GRAD_OP": 2,
    "FULL_SHARD": 3,
    "HYBRID_SHARD": 3,
}
"""PyTorch FSDP sharding strategies as ZeRO stages (PyTorch FSDP docs, ShardingStrategy):
NO_SHARD is DDP, SHARD_GRAD_OP shards gradients and optimizer states (ZeRO-2), FULL_SHARD
also parameters (ZeRO-3), HYBRID_SHARD is FULL_SHARD inside a node and replication
(all-reduce) across nodes (Zhao et al. 2023, arXiv:2304.11277 section 3.2.2)."""

RECOMPUTE_CODES: tuple[str, ...] = ("none", "selective", "full")
"""Recomputation policies the search enumerates, by integer code (index)."""


class ParallelInputs(BaseModel):
    """Inputs of the parallelism tab: cluster shape, network, layout and schedule."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    gpus_per_node: int = Field(default=8, **bounds("parallelism.gpus_per_node"))
    tp: int = Field(default=1, description="tensor-parallel degree", **bounds("parallelism.tp"))
    pp: int = Field(default=1, description="pipeline-parallel degree", **bounds("parallelism.pp"))
    dp: int | None = Field(
        default=None,
        description="data-parallel degree; None: GPUs/(tp·pp)",
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
    inter_node_bandwidth_bytes_per_s: float = Field(
        default=comm.INTER_NODE_BANDWIDTH_BYTES_PER_S_PER_NODE,
        **bounds("parallelism.inter_node_bandwidth_bytes_per_s"),
        description="network per node, one direction (8 × 400 Gb/s InfiniBand = 400e9 B/s)",
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


# --------------------------------------------------------------------- vectorised pricing


@dataclass(frozen=True)
class Layouts:
    """Candidate layouts as parallel numpy arrays (one entry per candidate)."""

    tp: npt.NDArray[np.int64]
    pp: npt.NDArray[np.int64]
    dp: npt.NDArray[np.int64]
    ep: npt.NDArray[np.int64]
    zero: npt.NDArray[np.int64]
    shard: npt.NDArray[np.int64]
    """ZeRO shard-group size: dp, or the in-node part of dp for HYBRID_SHARD."""
    micro_batch: npt.NDArray[np.int64]
    v: npt.NDArray[np.int64]
    gpipe: npt.NDArray[np.bool_]
    sp: npt.NDArray[np.bool_]
    recompute: npt.NDArray[np.int64]
    """Index into RECOMPUTE_CODES."""

    def __len__(self) -> int:
        return int(self.tp.shape[0])

    def as_float(self, name: str) -> FloatArray:
        """A field as float64, converted once per Layouts (the evaluator reads each often)."""
        cache: dict[str, FloatArray] = self.__dict__.setdefault("_float_cache", {})
        if name not in cache:
            cache[name] = getattr(self, name).astype(np.float64)
        return cache[name]

    def take(self, index: npt.NDArray[np.int64] | npt.NDArray[np.bool_]) -> Layouts:
        return Layouts(**{name: getattr(self, name)[index] for name in LAYOUT_FIELDS})

    def resolved(self, i: int, microbatches: float) -> ResolvedLayout:
        """Candidate ``i`` as a :class:`ResolvedLayout`; ``microbatches`` is its m per step
        (a whole number for the layouts the search enumerates)."""
        v = int(self.v[i])
        return ResolvedLayout(
            tp=int(self.tp[i]),
            pp=int(self.pp[i]),
            dp=int(self.dp[i]),
            ep=int(self.ep[i]),
            zero_stage=int(self.zero[i]),
            shard=int(self.shard[i]),
            micro_batch=int(self.micro_batch[i]),
            v=v,
            schedule="gpipe" if self.gpipe[i] else ("interleaved" if v > 1 else "1f1b"),
            sequence_parallel=bool(self.sp[i]),
            recompute=RECOMPUTE_CODES[int(self.recompute[i])],
            gradient_accumulation_steps=round(microbatches),
            problems=(),
        )


LAYOUT_FIELDS: tuple[str, ...] = (
    "tp",
    "pp",
    "dp",
    "ep",
    "zero",
    "shard",
    "micro_batch",
    "v",
    "gpipe",
    "sp",
    "recompute",
)


# --------------------------------------------------------------------- one layout (report)


@dataclass(frozen=True)
class ResolvedLayout:
    """A layout with every degree decided and the problems found while deciding."""

    tp: int
    pp: int
    dp: int
    ep: int
    zero_stage: int
    shard: int
    micro_batch: int
    v: int
    schedule: str
    sequence_parallel: bool
    recompute: str
    gradient_accumulation_steps: int
    problems: tuple[str, ...]

    @property
    def gpus(self) -> int:
        return self.tp * self.pp * self.dp

    def as_arrays(self) -> Layouts:
        def i(x: int) -> npt.NDArray[np.int64]:
            return np.array([x], dtype=np.int64)

        rc = RECOMPUTE_CODES.index(self.recompute) if self.recompute in RECOMPUTE_CODES else 1
        return Layouts(
            tp=i(self.tp),
            pp=i(self.pp),
            dp=i(self.dp),
            ep=i(self.ep),
            zero=i(self.zero_stage),
            shard=i(self.shard),
            micro_batch=i(self.micro_batch),
            v=i(self.v),
            gpipe=np.array([self.schedule == "gpipe"]),
            sp=np.array([self.sequence_parallel]),
            recompute=i(rc),
        )


def resolve_layout(
    inputs: ParallelInputs, num_gpus: int, micro_batch: int, recompute: str, layers: int
) -> ResolvedLayout:
    """Decide dp, ZeRO stage, shard group, v and accumulation steps; list inconsistencies."""
    problems: list[str] = []
    tp, pp = inputs.tp, inputs.pp
    if inputs.dp is not None:
        dp = inputs.dp
        if dp * tp * pp != num_gpus:
            problems.append(
                f"dp·tp·pp = {dp}·{tp}·{pp} = {dp * tp * pp} GPUs, not the scenario's {num_gpus}"
            )
    else:
        dp = max(1, num_gpus // (tp * pp))
        if num_gpus % (tp * pp):
            problems.append(f"{num_gpus} GPUs are not a multiple of tp·pp = {tp * pp}")
    zero: int = inputs.zero_stage
    shard = dp
    if inputs.fsdp_strategy is not None:
        zero = FSDP_TO_ZERO[inputs.fsdp_strategy]
        if inputs.fsdp_strategy == "HYBRID_SHARD":
            in_node = max(1, inputs.gpus_per_node // tp)
            shard = math.gcd(dp, in_node)
    ep = inputs.expert_parallel
    if dp % ep:
        problems.append(f"expert parallel {ep} does not divide dp = {dp}")
    per_step = dp * micro_batch
    accumulation = max(1, math.ceil(inputs.global_batch / per_step))
    if inputs.global_batch % per_step:
        problems.append(
            f"global batch {inputs.global_batch} is not a multiple of dp·micro-batch = {per_step}"
        )
    v = inputs.interleave_chunks if inputs.schedule == "interleaved" else 1
    if pp > layers:
        problems.append(f"pp = {pp} exceeds the model's {layers} layers")
    elif layers % (pp * v):
        problems.append(f"{layers} layers do not split evenly into pp·v = {pp * v} chunks")
    if v > 1 and accumulation % pp:
        problems.append(
            f"the interleaved schedule needs micro-batches ({accumulation}) to be a multiple "
            f"of pp = {pp} (Megatron-LM)"
        )
    if inputs.sequence_parallel and tp == 1:
        problems.append("sequence parallelism has no effect with tp = 1")
    return ResolvedLayout(
        tp=tp,
        pp=pp,
        dp=dp,
        ep=ep,
        zero_stage=zero,
        shard=shard,
        micro_batch=micro_batch,
        v=v,
        schedule=inputs.schedule,
        sequence_parallel=inputs.sequence_parallel,
        recompute=recompute,
        gradient_accumulation_steps=accumulation,
        problems=tuple(problems),
    )


def training_layout_kwargs(lay: ResolvedLayout) -> dict[str, Any]:
    """Keyword arguments of ``estimate_training`` for a resolved layout: the ZeRO stage
    (FSDP names mapped), the shard group as dp (HYBRID_SHARD shards inside a node only),
    the micro-batches in flight of the schedule (None: the estimator's 1F1B default) and
    the expert-parallel degree ep (routed experts ÷ ep, ZeRO-sharded over dp/ep)."""
    return {
        "tp": lay.tp,
        "pp": lay.pp,
        "dp": lay.shard,
        "zero_stage": lay.zero_stage,
        "sequence_parallel": lay.sequence_parallel,
        "microbatches_in_flight": in_flight_for(lay),
        "last_stage_microbatches_in_flight": int(
            training_in_flight_last(
                lay.pp, lay.gradient_accumulation_steps, lay.schedule == "gpipe", lay.v
            )
        ),
        "ep": lay.ep,
    }


def scenario_layout(scenario: Any) -> ResolvedLayout:
    """The scenario's resolved layout (what the training section should pass on)."""
    return resolve_layout(
        scenario.parallelism,
        scenario.num_gpus,
        int(scenario.training.micro_batch),
        str(scenario.training.recompute),
        scenario.model.architecture.layers,
    )


def in_flight_for(lay: ResolvedLayout) -> int | None:
    """The training estimator's ``microbatches_in_flight`` for a layout (None: its default)."""
    m = lay.gradient_accumulation_steps
    value = float(training_in_flight(lay.pp, m, lay.schedule == "gpipe", lay.v))
    return int(value) if value > 0 else None
