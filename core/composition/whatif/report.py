"""The "What if" section: every part the scenario plans, priced on its estimate."""

from __future__ import annotations

import math
from typing import Any

from pydantic import BaseModel, ConfigDict

from llm_planner.core.composition.scenario import Scenario
from llm_planner.core.composition.whatif.compression import CompressionPlan, plan_compression
from llm_planner.core.composition.whatif.estimated import Estimated
from llm_planner.core.composition.whatif.mixed import MixedClusterPlan, plan_mixed_cluster
from llm_planner.core.composition.whatif.multimodal import MultimodalPlan, plan_multimodal
from llm_planner.core.composition.whatif.rl import RLPlan, plan_rl
from llm_planner.core.primitives.figures import Figure, Unit
from llm_planner.core.sections.parallelism.workload import network_bytes_per_s_per_node

RING = "Patarasuk and Yuan 2009 (ring all-reduce waits on its slowest link)"
VLLM = "Kwon et al. 2023 (vLLM) section 2: decoding is memory-bound"
PIPE = "Narayanan et al. 2021 section 2.2 (m + stages − 1 slots)"


class WhatIfReport(BaseModel):
    """``report --json``'s ``whatif`` key: one entry per planned part (None: not planned)."""

    model_config = ConfigDict(frozen=True)

    mixed_cluster: MixedClusterPlan | None = None
    rl: RLPlan | None = None
    multimodal: MultimodalPlan | None = None
    compression: CompressionPlan | None = None
    rl_not_priced: str | None = None
    """Why a planned RL loop has no plan: it needs the training throughput, and a training
    plan that is not priced (it does not fit, or its rate is impossible) has none."""

    def figures(self) -> list[Figure]:
        """Every planned part's figures, with formulas and sources, in display order."""
        out: list[Figure] = []

        def add(
            key: str, label: str, value: object, unit: Unit, *, f: str = "", s: str = ""
        ) -> None:
            out.append(Figure(key=key, label=label, value=value, unit=unit, formula=f, source=s))  # type: ignore[arg-type]

        if self.rl is None and self.rl_not_priced:
            add("rl.step", "RL step", f"— ({self.rl_not_priced})", "text")
        if (m := self.mixed_cluster) is not None:
            add("mixed.gpus", "Mixed cluster: GPUs", m.gpus, "count", f="Σ groups, whole replicas")
            add(
                "mixed.slowest_network",
                "  slowest network",
                f"{m.slowest_network_bytes_per_s / 1e9:.0f} GB/s per node",
                "text",
                f="min over groups; the data-parallel ring runs at it",
                s=RING,
            )
            add(
                "mixed.step_even",
                "  step, even split",
                m.step_seconds_even,
                "seconds",
                f="max over groups of the group's step",
                s=RING,
            )
            add("mixed.pace_setter", "  pace set by", m.pace_setter, "text")
            add(
                "mixed.step_balanced",
                "  step, balanced split",
                m.step_seconds_balanced,
                "seconds",
                f="earliest T with Σ replicas·⌊T/t_g⌋ ≥ micro-batches",
            )
            for g in m.groups:
                add(
                    f"mixed.{g.name}.peak",
                    f"  {g.name}: peak per GPU ({'fits' if g.fits else 'does not fit'})",
                    g.peak_bytes,
                    "bytes",
                    f=f"of {g.memory_bytes / 1e9:.0f} GB",
                )
                add(
                    f"mixed.{g.name}.share",
                    f"  {g.name}: sequences per replica (balanced)",
                    g.sequences_balanced,
                    "count",
                )
            for i, loss in enumerate(m.losses):
                add(f"mixed.loss{i}", "  lost", loss, "text")
            for i, problem in enumerate(m.problems):
                add(f"mixed.problem{i}", "  problem", problem, "text")
        if (r := self.rl) is not None:
            add("rl.placement", "RL step: placement", r.placement, "text")
            add("rl.step", "  RL step", r.step_seconds, "seconds", f="rollout + training", s=VLLM)
            add(
                "rl.rollout_gpus", "  rollout GPUs", r.rollout_gpus, "count", f="best whole engines"
            )
            add(
                "rl.rollout",
                "  rollout time",
                r.rollout_seconds,
                "seconds",
                f="waves × wave",
                s=VLLM,
            )
            add(
                "rl.training",
                "  training time",
                r.training_seconds,
                "seconds",
                f="tokens ÷ (GPUs × tokens/s per GPU)",
            )
            add("rl.rollout_idle", "  rollout pool idle", r.rollout_idle_fraction, "percent")
            add("rl.training_idle", "  training pool idle", r.training_idle_fraction, "percent")
            add("rl.engine_batch", "  sequences per engine", r.engine.max_batch, "count")
            add(
                "rl.engine_kv",
                "  engine KV cache per GPU",
                r.engine.kv_cache_bytes_per_gpu,
                "bytes",
                f="largest batch at prompt + response tokens",
            )
            for i, problem in enumerate(r.problems):
                add(f"rl.problem{i}", "  problem", problem, "text")
        if (mm := self.multimodal) is not None:
            add("mm.best", "Multimodal: best placement", mm.best, "text")
            add(
                "mm.encoder_flops",
                "  encoder FLOPs per step",
                mm.encoder_flops_per_step,
                "flop",
                f="B·I·T_e·6·P_e (2·P_e frozen)",
                s="Kaplan et al. 2020 section 2.1",
            )
            for p in mm.placements:
                add(
                    f"mm.{p.name}.step",
                    f"  {p.name}: step",
                    p.step_seconds,
                    "seconds",
                    f="",
                    s=PIPE,
                )
                add(f"mm.{p.name}.idle", f"  {p.name}: idle", p.idle_fraction, "percent")
        if (c := self.compression) is not None:
            add("comp.kind", "Compressed communication", c.kind.replace("_", " "), "text")
            add("comp.step_before", "  step before", c.step_seconds_before, "seconds")
            add(
                "comp.step_after",
                "  step after",
                c.step_seconds_after,
                "seconds",
                f="step − t + t/r + 2·bytes/κ",
            )
            add("comp.bottleneck_after", "  bottleneck after", c.bottleneck_after, "text")
            matching = c.matching_network_bytes_per_s
            add(
                "comp.matching_network",
                "  network matching today's uncompressed",
                f"{matching / 1e9:.0f} GB/s per node (today {c.network_bytes_per_s / 1e9:.0f})"
                if matching
                else "— (nothing exposed to shorten, or kernels too slow)",
                "text",
                f="B* = B·t ÷ (r·(t − kernels))",
            )
        return out


def estimate_whatif(scenario: Scenario, report: Estimated) -> WhatIfReport:
    """Run the parts ``scenario.whatif`` plans (each a few estimator calls)."""
    w = scenario.whatif
    rl = plan_rl(scenario, report, w.rl) if w.rl else None
    return WhatIfReport(
        mixed_cluster=plan_mixed_cluster(scenario, w.mixed_cluster) if w.mixed_cluster else None,
        rl=rl,
        rl_not_priced=(
            report.compute.throughput_label or "no training throughput"
            if w.rl is not None and rl is None
            else None
        ),
        multimodal=plan_multimodal(scenario, report, w.multimodal) if w.multimodal else None,
        compression=(
            plan_compression(
                report,
                w.compression,
                network_bytes_per_s_per_node(scenario.gpu, scenario.parallelism),
            )
            if w.compression
            else None
        ),
    )


def whatif_json(whatif: WhatIfReport) -> dict[str, Any]:
    """The planned parts as JSON (SI units), absent parts left out.

    JSON has no infinity: a figure that cannot be computed (an RL step whose engine holds no
    sequence takes forever) is ``null``, and the part's ``not_computed`` maps its dotted
    path to the reason (the part's first problem), as the text report prints "—"."""
    data = whatif.model_dump(mode="json", exclude_none=True)
    reason = data.pop("rl_not_priced", None)
    if reason is not None:  # a planned loop with no plan: its step, null, and why
        data["rl"] = {"step_seconds": None, "not_computed": {"step_seconds": reason}}
    for name, part in data.items():
        missing: list[str] = []
        data[name] = _finite_or_null(part, "", missing)
        if missing:
            problems = part.get("problems") or []
            reason = problems[0] if problems else "not a finite number"
            data[name]["not_computed"] = dict.fromkeys(missing, reason)
    return data


def _finite_or_null(value: Any, path: str, missing: list[str]) -> Any:
    """``value`` with every non-finite float replaced by None, their paths in ``missing``
    (list items as ``*``: ``curve.*.rollout_seconds``)."""
    if isinstance(value, float) and not math.isfinite(value):
        if path not in missing:
            missing.append(path)
        return None
    if isinstance(value, dict):
        return {
            k: _finite_or_null(v, f"{path}.{k}" if path else str(k), missing)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_finite_or_null(v, f"{path}.*" if path else "*", missing) for v in value]
    return value
