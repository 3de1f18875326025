"""Mixed clusters: node groups with different GPUs and networks training one model.

Model (synchronous data-parallel training, the scenario's tp × pp × ZeRO layout on every
group, data parallelism across all of them):

- Each group is priced by the one step-time model (:func:`.parallelism.parallelism_report`)
  as if the whole cluster's data-parallel replicas ran on that group's GPUs and intra-node
  link, with the **slowest network of all groups**: a ring all-reduce advances one chunk per
  step on every link at once, so each step waits for its slowest link (Patarasuk and Yuan
  2009, "Bandwidth optimal all-reduce algorithms", J. Parallel Distrib. Comput. 69(2); the
  same holds for NCCL's rings). EleutherAI's 20B run met this: reaching even the slowest
  switch's speed took tuning.
- **Even split** (every replica the same share of the global batch, what every listed stack
  does): a step ends when the slowest group's replicas end: step = max over groups.
- **Memory**: every GPU holds the same per-GPU state; the smallest GPU bounds what fits.
- **Balanced split**: every replica of group g gets n_g sequences, n_g ∝ its speed 1/s_g,
  s_g = (step_g − exposed data-parallel time_g) ÷ sequences per replica, so the replicas'
  compute ends together — continuously T = B ÷ Σ_g dp_g / s_g; in whole micro-batches
  :func:`balanced_shares` finds the earliest T. No listed
  stack does this out of the box: it needs a sampler giving each replica its share and
  gradients weighted by sample count. The bubble and per-micro-batch communication are
  held at their even-split share per sequence (an approximation: fewer micro-batches per
  replica make the bubble larger).
"""

from __future__ import annotations

import math

from pydantic import BaseModel, ConfigDict

from llm_planner.core.composition.scenario import Scenario
from llm_planner.core.inputs.whatif import MixedClusterInputs, NodeGroup
from llm_planner.core.primitives.gpus import GPU, get_gpu
from llm_planner.core.primitives.resources import read_json
from llm_planner.core.sections.parallelism import parallelism_report

GROUP_PARTS = (
    "compute",
    "bubble",
    "tensor_parallel",
    "pipeline_p2p",
    "expert_all_to_all",
    "data_parallel",
)
"""Step-time parts reported per group (the parallelism section's breakdown)."""


class GroupPlan(BaseModel):
    """One node group under the cluster's layout."""

    model_config = ConfigDict(frozen=True)

    name: str
    gpu: str
    gpus: int
    dp: int
    """Data-parallel replicas this group holds."""
    step_seconds_even: float
    """Its replicas' step with an even share of the batch."""
    seconds_per_sequence: float
    """Compute-side time per sequence per replica (step minus exposed data-parallel sync)."""
    sequences_balanced: int
    """Sequences per replica under the balanced split."""
    peak_bytes: float
    memory_bytes: float
    fits: bool
    breakdown_seconds: dict[str, float]


class MixedClusterPlan(BaseModel):
    """The cluster's plan: per group, and where the step is lost."""

    model_config = ConfigDict(frozen=True)

    gpus: int
    dp: int
    slowest_network_bytes_per_s: float
    step_seconds_even: float
    step_seconds_balanced: float
    pace_setter: str
    """The group whose replicas end last under the even split."""
    losses: list[str]
    """Where the step is lost, largest first, e.g. "A100's network: 31% of the step"."""
    fits: bool
    groups: list[GroupPlan]
    problems: list[str]


def cluster_presets() -> dict[str, dict[str, object]]:
    """The shipped cluster presets (``resources/clusters.json``), by id, with sources."""
    return {c["id"]: c for c in read_json("clusters.json")["clusters"]}


def preset_cluster(preset_id: str) -> MixedClusterInputs:
    """A preset as inputs; KeyError names the known ids."""
    presets = cluster_presets()
    if preset_id not in presets:
        raise KeyError(f"unknown cluster {preset_id!r}; known: {', '.join(presets)}")
    return MixedClusterInputs.model_validate({"groups": presets[preset_id]["groups"]})


def balanced_shares(
    seconds_per_microbatch: dict[str, float], replicas: dict[str, int], microbatches: int
) -> dict[str, int]:
    """Micro-batches per replica of each group so that all ``microbatches`` of the step are
    done as early as possible: the smallest T with Σ_g replicas_g · ⌊T / t_g⌋ ≥ M (found by
    bisection), then each group's ⌊T / t_g⌋, trimmed from the groups that finish last until
    the total is exactly M where whole replicas allow it."""
    groups = {n: t for n, t in seconds_per_microbatch.items() if t > 0 and replicas.get(n, 0)}
    if not groups:
        return {}
    lo, hi = 0.0, microbatches * max(groups.values())
    for _ in range(200):
        mid = (lo + hi) / 2
        cap = sum(replicas[n] * math.floor(mid / t) for n, t in groups.items())
        if cap >= microbatches:
            hi = mid
        else:
            lo = mid
    per = {n: math.floor(hi / t + 1e-9) for n, t in groups.items()}
    excess = sum(replicas[n] * k for n, k in per.items()) - microbatches
    for n in sorted(per, key=lambda n: -per[n] * groups[n]):  # latest finishers first
        while excess >= replicas[n] and per[n] > 0:
            per[n] -= 1
            excess -= replicas[n]
    return per


def _gpu_of(group: NodeGroup) -> GPU:
    gpu = get_gpu(group.gpu)
    if group.memory_bytes is not None:
        gpu = gpu.model_copy(update={"memory_bytes": group.memory_bytes})
    return gpu


def plan_mixed_cluster(scenario: Scenario, inputs: MixedClusterInputs) -> MixedClusterPlan:
    """Price the scenario's model and layout on the node groups of ``inputs``."""
    par = scenario.parallelism
    training = scenario.training
    arch = scenario.model.architecture
    override = scenario.model.params_override
    tp_pp = par.tp * par.pp
    problems: list[str] = []
    dps = {g.name: g.gpus // tp_pp for g in inputs.groups}
    for g in inputs.groups:
        if g.gpus % tp_pp:
            problems.append(f"{g.name}: {g.gpus} GPUs are not a multiple of tp·pp = {tp_pp}")
        if par.tp > g.gpus_per_node:
            problems.append(f"{g.name}: tp = {par.tp} spans nodes of {g.gpus_per_node} GPUs")
    dp = sum(dps.values())
    gpus = dp * tp_pp
    slowest = min(g.inter_node_bandwidth_bytes_per_s for g in inputs.groups)
    if dp < 1:
        return MixedClusterPlan(
            gpus=0,
            dp=0,
            slowest_network_bytes_per_s=slowest,
            step_seconds_even=math.inf,
            step_seconds_balanced=math.inf,
            pace_setter="",
            losses=[],
            fits=False,
            groups=[],
            problems=[*problems, "no group holds a whole tp·pp replica"],
        )
    batch = par.global_batch
    per_replica = batch / dp
    reports = {}
    for g in inputs.groups:
        inputs_g = par.model_copy(
            update={
                "dp": dp,
                "gpus_per_node": g.gpus_per_node,
                "intra_node_bandwidth_bytes_per_s": g.intra_node_bandwidth_bytes_per_s,
                "inter_node_bandwidth_bytes_per_s": slowest,
            }
        )
        reports[g.name] = parallelism_report(
            arch,
            _gpu_of(g),
            gpus,
            inputs_g,
            training,
            params_override=override,
            compute_dtype=scenario.compute.compute_dtype,
        )
    seconds_per_seq = {
        name: max(r.step_seconds - r.time_breakdown_seconds["data_parallel"], 0.0) / per_replica
        for name, r in reports.items()
    }
    b = int(training.micro_batch)
    whole = balanced_shares(
        {n: seconds_per_seq[n] * b for n in dps if dps[n]}, dps, max(1, batch // b)
    )
    exposed = max(r.time_breakdown_seconds["data_parallel"] for r in reports.values())
    balanced = max(whole[n] * b * seconds_per_seq[n] for n in whole) + exposed
    whole = {n: whole.get(n, 0) * b for n in dps}
    even = max(reports[n].step_seconds for n in dps if dps[n])
    pace = max((n for n in dps if dps[n]), key=lambda n: reports[n].step_seconds)
    groups = []
    for g in inputs.groups:
        r = reports[g.name]
        peak = float(r.peak_bytes or 0.0)
        memory = _gpu_of(g).memory_bytes
        groups.append(
            GroupPlan(
                name=g.name,
                gpu=g.gpu,
                gpus=g.gpus,
                dp=dps[g.name],
                step_seconds_even=r.step_seconds,
                seconds_per_sequence=seconds_per_seq[g.name],
                sequences_balanced=whole[g.name],
                peak_bytes=peak,
                memory_bytes=memory,
                fits=peak <= memory,
                breakdown_seconds={p: r.time_breakdown_seconds.get(p, 0.0) for p in GROUP_PARTS},
            )
        )
    slow = reports[pace]
    names = {
        "data_parallel": "network",
        "tensor_parallel": "tensor-parallel link",
        "pipeline_p2p": "pipeline sends",
        "expert_all_to_all": "all-to-all",
        "bubble": "pipeline bubble",
        "compute": "compute",
    }
    losses = [
        f"{pace}'s {names[p]}: {100 * slow.time_breakdown_seconds[p] / even:.0f}% of the step"
        for p in sorted(GROUP_PARTS, key=lambda p: -slow.time_breakdown_seconds.get(p, 0.0))
        if p != "compute" and slow.time_breakdown_seconds.get(p, 0.0) > 0.01 * even
    ]
    return MixedClusterPlan(
        gpus=gpus,
        dp=dp,
        slowest_network_bytes_per_s=slowest,
        step_seconds_even=even,
        step_seconds_balanced=balanced,
        pace_setter=pace,
        losses=losses,
        fits=all(g.fits for g in groups),
        groups=groups,
        problems=problems,
    )


class MixedLayoutRow(BaseModel):
    """One layout of the mixed-cluster search."""

    model_config = ConfigDict(frozen=True)

    tp: int
    pp: int
    zero_stage: int
    step_seconds_even: float
    step_seconds_balanced: float
    pace_setter: str


def search_mixed_cluster(
    scenario: Scenario, inputs: MixedClusterInputs, *, top: int = 5
) -> list[MixedLayoutRow]:
    """The fastest (balanced) layouts that fit on every group: tp within the smallest
    node, pp among the divisors of the layers up to 16, ZeRO 1 or 3; at most 40 layouts,
    each priced per group by the step-time model."""
    arch = scenario.model.architecture
    smallest_node = min(g.gpus_per_node for g in inputs.groups)
    tps = [t for t in (1, 2, 4, 8) if t <= smallest_node and arch.heads % t == 0]
    pps = [p for p in (1, 2, 4, 8, 16) if arch.layers % p == 0]
    rows: list[MixedLayoutRow] = []
    for tp in tps:
        for pp in pps:
            if any(g.gpus % (tp * pp) for g in inputs.groups):
                continue
            for zero in (1, 3):
                data = scenario.model_dump()
                data["parallelism"].update(
                    {"tp": tp, "pp": pp, "zero_stage": zero, "dp": None, "fsdp_strategy": None}
                )
                plan = plan_mixed_cluster(type(scenario).model_validate(data), inputs)
                if plan.fits and not plan.problems:
                    rows.append(
                        MixedLayoutRow(
                            tp=tp,
                            pp=pp,
                            zero_stage=zero,
                            step_seconds_even=plan.step_seconds_even,
                            step_seconds_balanced=plan.step_seconds_balanced,
                            pace_setter=plan.pace_setter,
                        )
                    )
    rows.sort(key=lambda r: r.step_seconds_balanced)
    return rows[:top]
