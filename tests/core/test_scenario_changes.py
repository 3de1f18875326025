"""``with_changes``: the one way a scenario is derived with dotted fields changed (the
window's inputs, the fit suggestions, the tornado, stack-config imports and the command line
all go through it)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from llm_planner.core.inputs.scenario import Scenario, default_scenario, with_changes


def test_a_dotted_path_sets_one_nested_field_and_keeps_the_rest() -> None:
    base = default_scenario()
    changed = with_changes(base, {"parallelism.tp": 2, "compute.failures.restart_seconds": 90.0})
    assert changed.parallelism.tp == 2
    assert changed.compute.failures.restart_seconds == 90.0
    assert changed.parallelism.pp == base.parallelism.pp
    assert changed.name == base.name
    assert base.parallelism.tp == 1  # the original is untouched


def test_a_part_that_is_none_starts_from_its_defaults() -> None:
    base = default_scenario()
    assert base.whatif.rl is None
    changed = with_changes(base, {"whatif.rl.prompts_per_step": 64})
    assert changed.whatif.rl is not None
    assert changed.whatif.rl.prompts_per_step == 64
    assert changed.whatif.rl.samples_per_prompt == 8  # RLInputs' default


def test_a_list_given_is_copied_not_shared() -> None:
    points = [[64, 1.0e6]]
    changed = with_changes(default_scenario(), {"parallelism.measured_points": points})
    points.append([128, 2.0e6])
    assert changed.parallelism.measured_points == [(64, 1.0e6)]


def test_an_invalid_value_is_refused_naming_the_field() -> None:
    with pytest.raises(ValidationError) as caught:
        with_changes(default_scenario(), {"training.micro_batch": 0})
    assert caught.value.errors()[0]["loc"] == ("training", "micro_batch")


def test_the_whole_scenario_is_validated_again() -> None:
    # Llama-3.1-8B has 32 attention heads: tp = 3 does not divide them (layout_refusal)
    with pytest.raises(ValueError, match="tp = 3 does not divide"):
        with_changes(default_scenario(), {"parallelism.tp": 3})


def test_the_composition_module_re_exports_the_same_objects() -> None:
    from llm_planner.core.composition import scenario as old

    assert old.Scenario is Scenario
    assert old.with_changes is with_changes
