"""The scenario, re-exported from its home in the inputs layer
(:mod:`llm_planner.core.inputs.scenario`) for the modules and files that import it from here."""

from llm_planner.core.inputs.scenario import (
    DEFAULT_GPU,
    DEFAULT_MODEL,
    DEFAULT_NUM_GPUS,
    SCHEMA_VERSION,
    ModelChoice,
    Scenario,
    default_scenario,
    get_path,
    inline_range_problem,
    layout_refusal,
    with_changes,
)

__all__ = [
    "DEFAULT_GPU",
    "DEFAULT_MODEL",
    "DEFAULT_NUM_GPUS",
    "SCHEMA_VERSION",
    "ModelChoice",
    "Scenario",
    "default_scenario",
    "get_path",
    "inline_range_problem",
    "layout_refusal",
    "with_changes",
]
