"""Parallel layout, per-GPU memory under ZeRO, communication, step time and MFU.

A *layout* is dp × tp × pp (= GPUs) with a ZeRO stage, sequence parallelism, expert
parallelism (MoE), a micro-batch, a pipeline schedule and a recomputation policy. Layouts
are priced with numpy arrays (:func:`.step_time.evaluate_layouts`), so the report's one
layout and the search's millions go through the same arithmetic. Per-GPU memory of one
layout and of many is the one array-valued training-memory function
(:mod:`..training_memory`): the report evaluates it at the scenario's layout, the search
at every candidate.

The modules, each importing only those above it:

- :mod:`.schedule`: micro-batches in flight per pipeline schedule, the drawable timeline;
- :mod:`.layout`: the tab's inputs, resolving a layout, candidate layouts as arrays;
- :mod:`.workload`: the model's and the cluster's scalars that pricing needs;
- :mod:`.memory`: per-GPU memory of layouts (the training-memory function with each
  schedule's micro-batches in flight);
- :mod:`.step_time_inputs`: what pricing reads from the model and the training inputs;
- :mod:`.step_time_host`: kernels launched per micro-batch, the host's launch floor;
- :mod:`.step_time_compute`: compute and memory-bound time of a micro-batch;
- :mod:`.step_time_comm`: exposed communication per micro-batch and per step;
- :mod:`.step_time`: step time, its breakdown, tokens/s, MFU;
- :mod:`.report`: the report section for the scenario's layout.

Every tunable constant lives in :mod:`llm_planner.core.quantities.comm` (named, documented,
editable) and is also a field of :class:`ParallelInputs`, so a scenario can override it.
"""

from llm_planner.core.inputs.parallelism import ParallelInputs
from llm_planner.core.quantities.flops import model_flops_per_token
from llm_planner.core.sections.parallelism.layout import (
    FSDP_TO_ZERO,
    LAYOUT_FIELDS,
    RECOMPUTE_CODES,
    Layouts,
    ResolvedLayout,
    resolve_layout,
    scenario_layout,
    training_layout_kwargs,
)
from llm_planner.core.sections.parallelism.memory import (
    FIRST_FIT_UP_TO,
    LayoutRow,
    memory_screen,
    model_state_bytes_per_gpu,
    row_arguments,
    screen_peaks,
    some_fits,
    some_peak_fits,
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
    training_loss_in_flight,
)
from llm_planner.core.sections.parallelism.step_time import (
    TIME_PARTS,
    StepInputs,
    bottleneck_of,
    evaluate_layouts,
    microbatches_per_step,
    step_inputs_of,
)
from llm_planner.core.sections.parallelism.workload import (
    NON_GEMM_TENSORS,
    Cluster,
    Workload,
    cluster_of,
    nvlink_domain_of,
    workload_of,
)
from llm_planner.core.sections.training_memory import MemoryTerms, memory_terms

__all__ = [
    "FIRST_FIT_UP_TO",
    "FSDP_TO_ZERO",
    "LAYOUT_FIELDS",
    "NON_GEMM_TENSORS",
    "RECOMPUTE_CODES",
    "TIME_PARTS",
    "Cluster",
    "FloatArray",
    "LayoutRow",
    "Layouts",
    "MemoryTerms",
    "ParallelInputs",
    "ParallelismReport",
    "ResolvedLayout",
    "StepInputs",
    "Workload",
    "bottleneck_of",
    "cluster_of",
    "evaluate_layouts",
    "memory_screen",
    "memory_terms",
    "microbatches_in_flight",
    "microbatches_in_flight_last",
    "microbatches_per_step",
    "model_flops_per_token",
    "model_state_bytes_per_gpu",
    "nvlink_domain_of",
    "parallelism_report",
    "pipeline_timeline",
    "resolve_layout",
    "row_arguments",
    "scenario_layout",
    "screen_peaks",
    "some_fits",
    "some_peak_fits",
    "step_inputs_of",
    "training_in_flight",
    "training_in_flight_last",
    "training_layout_kwargs",
    "training_loss_in_flight",
    "training_memory",
    "workload_of",
    "zero_stage_comparison",
]
