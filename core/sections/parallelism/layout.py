"""The parallel layout: the tab's inputs, a layout resolved from them (dp from the GPU count,
FSDP names as ZeRO stages, accumulation steps, the problems found) and candidate layouts as
numpy arrays for the search."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from llm_planner.core.inputs.parallelism import ParallelInputs
from llm_planner.core.primitives.groups import GROUP_FROM, Groups, IntArray, distinct, group_by
from llm_planner.core.sections.parallelism.schedule import FloatArray, training_in_flight_one

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
    cp: npt.NDArray[np.int64] = None  # type: ignore[assignment]
    """Context-parallel degree (each sequence split over cp GPUs); None: 1 everywhere."""

    def __post_init__(self) -> None:
        if self.__dict__.get("cp") is None:  # the callers that predate cp pass none
            object.__setattr__(self, "cp", np.ones_like(self.tp))

    def __len__(self) -> int:
        return int(self.tp.shape[0])

    def as_float(self, name: str) -> FloatArray:
        """A field as float64, converted once per Layouts (the evaluator reads each often)."""
        cache: dict[str, FloatArray] = self.__dict__.setdefault("_float_cache", {})
        if name not in cache:
            cache[name] = getattr(self, name).astype(np.float64)
        return cache[name]

    def codes(self, name: str) -> tuple[IntArray, int]:
        """A field's :func:`.groups.distinct` codes, found once per Layouts."""
        cache: dict[str, tuple[IntArray, int]] = self.__dict__.setdefault("_code_cache", {})
        if name not in cache:
            cache[name] = distinct(getattr(self, name))
        return cache[name]

    def groups(self, names: tuple[str, ...]) -> Groups | None:
        """The layouts grouped by equal ``names`` fields (what a term reads of them), found
        once per Layouts; None when few (below :data:`.groups.GROUP_FROM`) or with too few
        repeats: price them all."""
        cache: dict[tuple[str, ...], Groups | None] = self.__dict__.setdefault("_group_cache", {})
        if names not in cache:
            n = len(self)
            cache[names] = (
                group_by([self.codes(name) for name in names], n) if n >= GROUP_FROM else None
            )
        return cache[names]

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
            cp=int(self.cp[i]),
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


def priced_per_group(
    lay: Layouts,
    key: tuple[str, ...],
    per_layout: Sequence[FloatArray],
    price: Callable[[Layouts, list[FloatArray]], Sequence[FloatArray]],
) -> list[FloatArray] | None:
    """``price(layouts, per_layout)`` evaluated once per group of layouts with equal ``key``
    fields (every field ``price`` reads) and spread back to every layout: the same values,
    element by element. ``per_layout``: arrays ``price`` reads beside the layouts; grouping
    needs each to be equal over its group (checked). None when the layouts are few or
    barely repeat, or an array differs within a group: price them all."""
    groups = lay.groups(key)
    if groups is None:
        return None
    picked = [groups.members_agree(x) for x in per_layout]
    agreed = [x for x in picked if x is not None]
    if len(agreed) < len(picked):
        return None
    return [groups.spread(np.asarray(x)) for x in price(lay.take(groups.first), agreed)]


DEGREES_KEY = ("tp", "pp", "dp", "ep", "cp", "shard", "zero", "micro_batch", "v", "gpipe")
"""The layout fields the data-parallel, pipeline and in-flight terms read between them (all
but sequence parallelism and the recompute policy): one grouping serves the three."""

COMPUTE_KEY = ("tp", "pp", "ep", "cp", "micro_batch", "v", "sp", "recompute")
"""The layout fields a micro-batch's compute and its host launch floor read between them:
one grouping serves both."""

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
    "cp",
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
    cp: int = 1

    @property
    def gpus(self) -> int:
        return self.tp * self.pp * self.cp * self.dp

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
            cp=i(self.cp),
        )


def resolve_layout(
    inputs: ParallelInputs, num_gpus: int, micro_batch: int, recompute: str, layers: int
) -> ResolvedLayout:
    """Decide dp, ZeRO stage, shard group, v and accumulation steps; list inconsistencies."""
    problems: list[str] = []
    tp, pp, cp = inputs.tp, inputs.pp, inputs.cp
    # Megatron-Core: "The total GPU count is TP × CP × PP × DP" (NVIDIA/Megatron-LM@d98e8a64
    # docs/user-guide/features/context_parallel.md)
    names, values = ("tp·cp·pp", f"{tp}·{cp}·{pp}") if cp > 1 else ("tp·pp", f"{tp}·{pp}")
    if inputs.dp is not None:
        dp = inputs.dp
        if dp * tp * cp * pp != num_gpus:
            problems.append(
                f"dp·{names} = {dp}·{values} = {dp * tp * cp * pp} GPUs, not the "
                f"scenario's {num_gpus}"
            )
    else:
        dp = max(1, num_gpus // (tp * cp * pp))
        if num_gpus % (tp * cp * pp):
            problems.append(f"{num_gpus} GPUs are not a multiple of {names} = {tp * cp * pp}")
    zero: int = inputs.zero_stage
    # Megatron-Core reduces gradients and shards its distributed optimizer over the data-
    # and-context-parallel group (NVIDIA/Megatron-LM@d98e8a64 megatron/core/distributed/
    # param_and_grad_buffer.py: get_data_and_context_parallel_group(with_context_parallel=
    # True)): the weights are replicated over cp as over dp
    shard = dp * cp
    if inputs.fsdp_strategy is not None:
        zero = FSDP_TO_ZERO[inputs.fsdp_strategy]
        if inputs.fsdp_strategy == "HYBRID_SHARD":
            in_node = max(1, inputs.gpus_per_node // (tp * cp))
            shard = math.gcd(dp, in_node)
    ep = inputs.expert_parallel
    # Megatron-Core folds cp into the experts' data parallelism (expert order tp-ep-dp-pp
    # over the same GPUs, parallel_state.py): ep divides dp·cp
    if (dp * cp) % ep:
        problems.append(
            f"expert parallel {ep} does not divide dp = {dp}"
            if cp == 1
            else f"expert parallel {ep} does not divide dp·cp = {dp}·{cp}"
        )
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
        cp=cp,
    )


def training_layout_kwargs(lay: ResolvedLayout) -> dict[str, Any]:
    """Keyword arguments of ``estimate_training`` for a resolved layout: the ZeRO stage
    (FSDP names mapped), the shard group as dp (HYBRID_SHARD shards inside a node only),
    the micro-batches in flight of the schedule (None: the estimator's 1F1B default) and
    the expert-parallel degree ep (routed experts ÷ ep, ZeRO-sharded over dp/ep) and the
    context-parallel degree cp (activations ÷ cp)."""
    return {
        "tp": lay.tp,
        "pp": lay.pp,
        "dp": lay.shard,
        "zero_stage": lay.zero_stage,
        "sequence_parallel": lay.sequence_parallel,
        "microbatches_in_flight": in_flight_for(lay),
        "last_stage_microbatches_in_flight": _in_flight(lay)[1],
        "last_stage_loss_in_flight": _in_flight(lay)[2],
        "ep": lay.ep,
        "cp": lay.cp,
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


def in_flight_for(lay: ResolvedLayout) -> float | None:
    """The training estimator's ``microbatches_in_flight`` for a layout in stage-loads
    (None: its default)."""
    value = _in_flight(lay)[0]
    return value if value > 0 else None


def _in_flight(lay: ResolvedLayout) -> tuple[float, float, float]:
    """(:func:`.schedule.training_in_flight`, :func:`.schedule.training_in_flight_last`,
    :func:`.schedule.training_loss_in_flight`) of the layout, in floats
    (:func:`.schedule.training_in_flight_one`: the same values)."""
    m = float(lay.gradient_accumulation_steps)
    return training_in_flight_one(float(lay.pp), m, lay.schedule == "gpipe", float(lay.v))
