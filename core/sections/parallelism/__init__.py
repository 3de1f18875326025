"""Parallel layout, per-GPU memory under ZeRO, communication, step time and MFU.

A *layout* is dp × tp × pp (= GPUs) with a ZeRO stage, sequence parallelism, expert
parallelism (MoE), a micro-batch, a pipeline schedule and a recomputation policy. Layouts
are priced with numpy arrays (:func:`.step_time.evaluate_layouts`), so the report's one
layout and the search's millions go through the same arithmetic. Per-GPU memory of the
reported layout comes from the training-memory estimator (:mod:`..training`), the one
source of truth for it; the vectorised memory screen (:mod:`.memory`) mirrors it and every
row the search returns is re-checked with it.

The modules, each importing only those above it:

- :mod:`.schedule`: micro-batches in flight per pipeline schedule, the drawable timeline;
- :mod:`.layout`: the tab's inputs, resolving a layout, candidate layouts as arrays;
- :mod:`.workload`: the model's and the cluster's scalars that pricing needs;
- :mod:`.memory`: per-GPU memory of many layouts (screen) and of one (training estimator);
- :mod:`.step_time`: step time, its breakdown, tokens/s, MFU;
- :mod:`.report`: the report section for the scenario's layout.

Every tunable constant lives in :mod:`llm_planner.core.quantities.comm` (named, documented,
editable) and is also a field of :class:`ParallelInputs`, so a scenario can override it.
"""

from llm_planner.core.quantities.flops import model_flops_per_token
from llm_planner.core.sections.parallelism.layout import (
    FSDP_TO_ZERO,
    LAYOUT_FIELDS,
    RECOMPUTE_CODES,
    Layouts,
    ParallelInputs,
    ResolvedLayout,
    resolve_layout,
    scenario_layout,
    training_layout_kwargs,
)
from llm_planner.core.sections.parallelism.memory import (
    MemoryRecipe,
    memory_recipe,
    model_state_bytes_per_gpu,
    training_memory,
    zero_stage_comparison,
)
from llm_planner.core.sections.parallelism.report import ParallelismReport, parallelism_report
from llm_planner.core.sections.parallelism.schedule import (
    FloatArray,
    microbatches_in_flight,
    microbatches_in_flight_last,
    pipeline_timeline,
    training_in_flight,
    training_in_flight_last,
)
from llm_planner.core.sections.parallelism.step_time import (
    TIME_PARTS,
    StepInputs,
    bottleneck_of,
    evaluate_layouts,
    step_inputs_of,
)
from llm_planner.core.sections.parallelism.workload import (
    NON_GEMM_TENSORS,
    Cluster,
    Workload,
    cluster_of,
    workload_of,
)

__all__ = [
    "FSDP_TO_ZERO",
    "LAYOUT_FIELDS",
    "NON_GEMM_TENSORS",
    "RECOMPUTE_CODES",
    "TIME_PARTS",
    "Cluster",
    "FloatArray",
    "Layouts",
    "MemoryRecipe",
    "ParallelInputs",
    "ParallelismReport",
    "ResolvedLayout",
    "StepInputs",
    "Workload",
    "bottleneck_of",
    "cluster_of",
    "evaluate_layouts",
    "memory_recipe",
    "microbatches_in_flight",
    "microbatches_in_flight_last",
    "model_flops_per_token",
    "model_state_bytes_per_gpu",
    "parallelism_report",
    "pipeline_timeline",
    "resolve_layout",
    "scenario_layout",
    "step_inputs_of",
    "training_in_flight",
    "training_in_flight_last",
    "training_layout_kwargs",
    "training_memory",
    "workload_of",
    "zero_stage_comparison",
]
