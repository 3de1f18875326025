"""Ranked layout search, scaling curve and the smallest deployment that meets a schedule.

:func:`search` enumerates every layout (tp, pp, dp, ZeRO stage, micro-batch, recompute,
sequence parallel, interleaving, expert parallel) for a model, a global batch and a GPU
count as numpy arrays, prices them all at once with
:func:`~llm_planner.core.sections.parallelism.evaluate_layouts`, drops those whose screened memory
exceeds the GPU, ranks by throughput and re-checks the returned rows with the training
estimator (the one source of truth for per-GPU memory), so a row reported as fitting has
``peak_bytes`` ≤ the GPU's memory.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from llm_planner.core.composition.calibration import calibrate_scenario
from llm_planner.core.composition.search_deployment import (
    FRUGAL_OPTIONS,
    MAX_DEPLOYMENT_GPUS,
    DeploymentPlan,
    ScalingPoint,
    min_gpus_per_instance,
    scaling_curve,
    smallest_deployment,
)
from llm_planner.core.composition.search_engine import (
    _first_of_lexsort,
    _Problem,
    _run,
    _run_counts,
    _screened,
)
from llm_planner.core.composition.search_layouts import (
    LONG_CONTEXT_TOKENS,
    MAX_CANDIDATES_PER_ROW,
    PrecisionAlternative,
    SearchOptions,
    SearchResult,
    SearchRow,
    enumerate_layouts,
)
from llm_planner.core.inputs.training import TrainingInputs
from llm_planner.core.primitives.architecture import Architecture
from llm_planner.core.primitives.gpus import GPU
from llm_planner.core.quantities.optimizers import get_precision
from llm_planner.core.quantities.stacks import get_stack
from llm_planner.core.sections import parallelism as par

__all__ = [
    "FRUGAL_OPTIONS",
    "LONG_CONTEXT_TOKENS",
    "MAX_CANDIDATES_PER_ROW",
    "MAX_DEPLOYMENT_GPUS",
    "ROW_FIELDS",
    "DeploymentPlan",
    "PrecisionAlternative",
    "ScalingPoint",
    "SearchOptions",
    "SearchResult",
    "SearchRow",
    "_Problem",
    "_first_of_lexsort",
    "_screened",
    "apply_row",
    "enumerate_layouts",
    "fp8_recipe_for",
    "min_gpus_per_instance",
    "scaling_curve",
    "search",
    "search_counts",
    "search_scenario",
    "smallest_deployment",
]


def search(
    arch: Architecture,
    gpu: GPU,
    num_gpus: int,
    inputs: par.ParallelInputs,
    training_inputs: TrainingInputs,
    *,
    params_override: float | None = None,
    options: SearchOptions | None = None,
    top: int = 10,
    compute_dtype: str = "bf16",
    include_attention_flops: bool = False,
) -> SearchResult:
    """The ``top`` fastest layouts of ``num_gpus`` GPUs that fit, best first.

    ``compute_dtype`` and ``include_attention_flops`` are the compute section's (the peak
    the step time runs at, and the FLOPs MFU counts), so a row applied to the scenario
    reports the same step time and MFU as the row."""
    problem = _Problem(
        arch,
        gpu,
        inputs,
        training_inputs,
        params_override=params_override,
        compute_dtype=compute_dtype,
        include_attention_flops=include_attention_flops,
    )
    return _run(problem, num_gpus, options or SearchOptions(), top)


def search_counts(
    arch: Architecture,
    gpu: GPU,
    counts: Sequence[int],
    inputs: par.ParallelInputs,
    training_inputs: TrainingInputs,
    *,
    params_override: float | None = None,
    top: int = 10,
    compute_dtype: str = "bf16",
    include_attention_flops: bool = False,
) -> list[SearchResult]:
    """:func:`search` at each GPU count of ``counts`` (the same results, in that order), the
    global batch raised to the count where it is below it (one sequence per GPU at least,
    as the hardware ranking asks). The counts that share a batch are priced together
    (:func:`_run_counts`)."""
    batches = [inputs.global_batch if n <= inputs.global_batch else n for n in counts]
    results: dict[int, SearchResult] = {}
    for batch in dict.fromkeys(batches):
        group = [n for n, b in zip(counts, batches, strict=True) if b == batch]
        problem = _Problem(
            arch,
            gpu,
            inputs.model_copy(update={"global_batch": batch}),
            training_inputs,
            params_override=params_override,
            compute_dtype=compute_dtype,
            include_attention_flops=include_attention_flops,
        )
        results.update(zip(group, _run_counts(problem, group, SearchOptions(), top), strict=True))
    return [results[n] for n in counts]


def fp8_recipe_for(training: TrainingInputs, gpu: GPU, compute_dtype: str) -> str | None:
    """The FP8 recipe to propose beside this plan, or None.

    Proposed where the plan is 16-bit (its recipe runs no low-precision GEMMs, its compute
    dtype is 16-bit, no QLoRA base), the stack has an FP8 recipe the app models
    (:attr:`.stacks.StackProfile.fp8_recipe`: Megatron-Core through Transformer Engine,
    torchtitan through torchao; not DeepSpeed, nanotron or the Hugging Face Trainer, each
    source cited there) and the GPU has tensor cores of the recipe's dtype from a vendor the
    stack's recipe runs on (the catalog's FP8 peak: Hopper, Ada, Blackwell, not A100)."""
    stack = get_stack(training.stack)
    recipe = get_precision(training.precision)
    if stack.fp8_recipe is None or recipe.gemm_dtype is not None or training.qlora:
        return None
    if recipe.activations_dtype not in ("bf16", "fp16") or compute_dtype not in ("bf16", "fp16"):
        return None
    fp8 = get_precision(stack.fp8_recipe)
    if gpu.vendor not in stack.fp8_vendors or not gpu.peak_flops.for_dtype(fp8.gemm_dtype or ""):
        return None
    return fp8.id


def _fp8_alternative(
    scenario: Any, result: SearchResult, options: SearchOptions | None
) -> PrecisionAlternative | None:
    """The best layout of ``scenario`` under the stack's FP8 recipe (:func:`fp8_recipe_for`),
    searched the same way, and its speed against ``result``'s best row."""
    recipe_id = fp8_recipe_for(scenario.training, scenario.gpu, scenario.compute.compute_dtype)
    if recipe_id is None:
        return None
    training = scenario.training.model_validate(
        {**scenario.training.model_dump(), "precision": recipe_id}
    )
    best = search(
        scenario.model.architecture,
        scenario.gpu,
        scenario.num_gpus,
        scenario.parallelism,
        training,
        params_override=scenario.model.params_override,
        options=options,
        top=1,
        compute_dtype=scenario.compute.compute_dtype,
        include_attention_flops=scenario.compute.include_attention_flops,
    ).rows
    row = best[0] if best else None
    base = result.rows[0] if result.rows else None
    stack = get_stack(scenario.training.stack)
    return PrecisionAlternative(
        precision=recipe_id,
        name=stack.fp8_recipe_name or get_precision(recipe_id).name,
        stack=stack.name,
        row=row,
        speedup=row.tokens_per_s / base.tokens_per_s if row and base else None,
        source=stack.source,
    )


def search_scenario(
    scenario: Any, *, options: SearchOptions | None = None, top: int = 10
) -> SearchResult:
    """:func:`search` on a scenario's model, GPU, GPU count, layout inputs and training, with
    the scenario's measurements calibrating the step-time model first (the ranking is the
    calibrated model's). Where the plan is 16-bit and the GPU and stack run FP8, the
    stack's FP8 recipe is searched too and its best layout proposed beside the rows
    (``low_precision``)."""
    scenario = calibrate_scenario(scenario)[0]
    result = search(
        scenario.model.architecture,
        scenario.gpu,
        scenario.num_gpus,
        scenario.parallelism,
        scenario.training,
        params_override=scenario.model.params_override,
        options=options,
        top=top,
        compute_dtype=scenario.compute.compute_dtype,
        include_attention_flops=scenario.compute.include_attention_flops,
    )
    alternative = _fp8_alternative(scenario, result, options)
    if alternative is None:
        return result
    return result.model_copy(update={"low_precision": alternative})


ROW_FIELDS: dict[str, str] = {
    "tp": "tp",
    "pp": "pp",
    "dp": "dp",
    "ep": "expert_parallel",
    "cp": "cp",
    "zero_stage": "zero_stage",
    "sequence_parallel": "sequence_parallel",
    "schedule": "schedule",
    "interleave_chunks": "interleave_chunks",
}
"""Search-row field → the parallelism input it sets (micro-batch and recompute are
training's)."""


def apply_row(scenario: Any, row: SearchRow) -> Any:
    """``scenario`` with a search row's layout: the parallelism inputs of :data:`ROW_FIELDS`,
    the micro-batch and the recomputation policy; an FSDP name is dropped, since the row
    states its ZeRO stage. dp is left unset (GPUs ÷ (tp·pp)) where that is the row's.
    Validated as a whole (a row always applies to the scenario it was searched for)."""
    data = scenario.model_dump()
    parallel = data["parallelism"]
    for key, name in ROW_FIELDS.items():
        parallel[name] = getattr(row, key)
    if row.dp * row.tp * row.cp * row.pp == scenario.num_gpus:
        # dp is what the GPU count leaves: kept as "from the GPU count", it follows a later
        # change of the count instead of contradicting it
        parallel["dp"] = None
    parallel["fsdp_strategy"] = None
    data["training"]["micro_batch"] = row.micro_batch
    data["training"]["recompute"] = row.recompute
    return type(scenario).model_validate(data)
