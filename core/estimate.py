"""``estimate(scenario) -> Report``: every figure of every tab, from one scenario.

Each section is computed by its own estimator module; this module only wires them
together (which section feeds which) and is the one entry point the GUI and the command
line call. Sections whose estimator does not exist yet are ``None``.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

from llm_planner.core.architecture import Architecture, ParameterCount, count_parameters
from llm_planner.core.figures import Figure
from llm_planner.core.scenario import Scenario


class ModelReport(BaseModel):
    """The model section: architecture summary and exact parameter breakdown."""

    model_config = ConfigDict(frozen=True)

    id: str
    name: str
    params_total: float
    params_active: float
    params_exact_total: int
    params_exact_active: int
    params_overridden: bool
    layers: int
    hidden_size: int
    heads: int
    kv_heads: int
    head_dim: int
    ffn_size: int
    vocab_size: int
    max_context: int
    breakdown: ParameterCount

    def figures(self) -> list[Figure]:
        src = "exact count, term by term (core.architecture.count_parameters)"
        figures = [
            Figure(
                key="params_total",
                label="Parameters (total)",
                value=self.params_total,
                unit="params",
                formula="embedding + layers·(attention + FFN + norms) + head",
                source=src,
            ),
            Figure(
                key="params_active",
                label="Parameters (active per token)",
                value=self.params_active,
                unit="params",
                formula="total − routed experts a token skips (MoE)",
                source=src,
            ),
        ]
        if self.params_overridden:
            figures.append(
                Figure(
                    key="params_exact_total",
                    label="Parameters of the shapes",
                    value=self.params_exact_total,
                    unit="params",
                    formula="the proposed architecture's own exact count",
                )
            )
        return figures


class Report(BaseModel):
    """Everything the window shows and ``llm-planner report`` prints."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    model: ModelReport
    compute: Any = None
    inference: Any = None
    training: Any = None
    parallelism: Any = None

    def sections(self) -> dict[str, Any]:
        """The sections that exist, in display order."""
        names = ("model", "compute", "inference", "training", "parallelism")
        return {name: getattr(self, name) for name in names if getattr(self, name) is not None}


def model_section(scenario: Scenario) -> ModelReport:
    """Parameter counts; ``params_override`` (``--params``) replaces P, not the shapes."""
    arch: Architecture = scenario.model.architecture
    counts = count_parameters(arch)
    override = scenario.model.params_override
    total = float(override) if override is not None else float(counts.total)
    active = total * counts.active / counts.total if override is not None else float(counts.active)
    return ModelReport(
        id=scenario.model.preset or arch.name,
        name=arch.name,
        params_total=total,
        params_active=active,
        params_exact_total=counts.total,
        params_exact_active=counts.active,
        params_overridden=override is not None,
        layers=arch.layers,
        hidden_size=arch.hidden_size,
        heads=arch.heads,
        kv_heads=arch.kv_heads,
        head_dim=arch.head_dim,
        ffn_size=arch.ffn_size,
        vocab_size=arch.vocab_size,
        max_context=arch.max_context,
        breakdown=counts,
    )


def _training_section(scenario: Scenario, model: ModelReport) -> Any:
    """Training memory per GPU under the scenario's layout (issue 4).

    The layout is resolved once by the parallelism module (dp from the GPU count, FSDP
    names mapped to ZeRO stages, HYBRID_SHARD's shard group, the schedule's micro-batches
    in flight), so ``training.*`` and ``parallelism.peak_bytes`` describe the same GPU.
    """
    from llm_planner.core.parallelism import scenario_layout, training_layout_kwargs
    from llm_planner.core.training import estimate_training

    return estimate_training(
        scenario.model.architecture,
        scenario.training,
        scenario.gpu,
        params_override=model.params_total if model.params_overridden else None,
        **training_layout_kwargs(scenario_layout(scenario)),
    )


def _parallelism_section(scenario: Scenario, model: ModelReport, training: Any) -> Any:
    """Layout, communication, step time and MFU (issue 5)."""
    del training  # per-GPU memory: the parallelism estimator asks training for its own layout
    from llm_planner.core.parallelism import parallelism_report

    return parallelism_report(
        scenario.model.architecture,
        scenario.gpu,
        scenario.num_gpus,
        scenario.parallelism,
        scenario.training,
        params_override=model.params_total if model.params_overridden else None,
        compute_dtype=scenario.compute.compute_dtype,
    )


def _compute_section(
    scenario: Scenario, model: ModelReport, training: Any, parallelism: Any
) -> Any:
    """Compute budget: FLOPs, throughput, time, cost, Chinchilla, failures (issue 3)."""
    from llm_planner.core.compute import estimate_compute

    # Recomputation's extra FLOPs are taken relative to this section's own model FLOPs
    # (training_inputs), so HFU − MFU is exactly the recomputed share of peak; the GPUs one
    # instance needs come from the parallelism search.
    del training
    instance = getattr(parallelism, "gpus_per_instance", None)
    return estimate_compute(
        scenario.model.architecture,
        model.params_active,
        model.params_total,
        scenario.gpu,
        scenario.num_gpus,
        inputs=scenario.compute,
        seq_len=scenario.training.seq_len,
        recompute=scenario.training.recompute,
        training_inputs=scenario.training,
        gpus_per_instance=instance,
    )


def _inference_section(scenario: Scenario, model: ModelReport) -> Any:
    """Inference memory, fit, largest batch/context, decode bound (issue 3)."""
    from llm_planner.core.inference import estimate_inference

    return estimate_inference(
        scenario.model.architecture,
        model.params_total,
        model.params_active,
        scenario.gpu,
        scenario.inference,
    )


def estimate(scenario: Scenario) -> Report:
    """Every figure for ``scenario``. Pure: no I/O, no globals, same input → same output."""
    model = model_section(scenario)
    training = _training_section(scenario, model)
    parallelism = _parallelism_section(scenario, model, training)
    compute = _compute_section(scenario, model, training, parallelism)
    inference = _inference_section(scenario, model)
    return Report(
        model=model,
        compute=compute,
        inference=inference,
        training=training,
        parallelism=parallelism,
    )


def report_json(report: Report) -> dict[str, Any]:
    """The ``report --json`` object: one key per section, values in SI base units."""
    return {name: section.model_dump(mode="json") for name, section in report.sections().items()}
