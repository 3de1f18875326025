"""Measured runs belong to their model (issue 25 item 3): a run records the model, GPU,
stack and layout it ran; calibration fits only runs of the scenario's model and GPU, says
which it used and which it set aside and why, and the scaling chart draws only those."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from scenario_helpers import preset_scenario

from llm_planner.core.composition.calibration import Measurement, calibrate_scenario
from llm_planner.core.composition.estimate import estimate
from llm_planner.core.composition.fit import with_changes
from llm_planner.core.composition.scaling import time_vs_gpus
from llm_planner.core.composition.scenario import ModelChoice, Scenario
from llm_planner.core.files import logs
from llm_planner.core.files.store import load_scenario_file
from llm_planner.core.primitives.gpus import get_gpu
from llm_planner.core.primitives.presets import get_preset

FIXTURES = Path(__file__).parent.parent / "fixtures"


def _with_half_rate_run(scenario: Scenario) -> Scenario:
    """The scenario with one run of its own model, GPU and layout measured at half the
    modeled rate (a slow cluster: the fit must lower the kernel efficiency)."""
    modeled = estimate(scenario).parallelism.tokens_per_s / scenario.num_gpus
    run = Measurement(
        label="slow run",
        gpus=scenario.num_gpus,
        tokens_per_s_per_gpu=modeled / 2,
        stack=scenario.training.stack,
        **logs.layout_of(scenario),
    )
    return scenario.model_copy(update={"measurements": [run]})


def _switch_model(scenario: Scenario, preset_id: str) -> Scenario:
    preset = get_preset(preset_id)
    return scenario.model_copy(
        update={"model": ModelChoice(preset=preset.id, architecture=preset.architecture)}
    )


def test_a_run_records_model_gpu_stack_and_layout() -> None:
    scenario = preset_scenario("llama-3.1-70b", "h100-sxm", 1024, **{"parallelism.tp": 8})
    run = _with_half_rate_run(scenario).measurements[0]
    assert run.model == "Llama-3.1-70B"
    assert run.gpu == "h100-sxm"
    assert run.stack == "megatron"
    assert (run.tp, run.pp, run.gpus) == (8, 1, 1024)


def test_a_run_of_another_model_is_set_aside_with_why() -> None:
    # tp 8 × pp 2: Megatron keeps fp32 main gradients, so tp 8 alone does not fit 80 GB
    seventy = preset_scenario(
        "llama-3.1-70b", "h100-sxm", 1024, **{"parallelism.tp": 8, "parallelism.pp": 2}
    )
    measured = _with_half_rate_run(seventy)
    own = estimate(measured).calibration
    assert own is not None
    assert own.applied
    assert own.used == [0]
    assert own.set_aside == []

    switched = _switch_model(measured, "llama-3.1-405b")
    report = estimate(switched)
    calibration = report.calibration
    assert calibration is not None
    assert not calibration.applied
    assert calibration.used == []
    (aside,) = calibration.set_aside
    assert aside.index == 0
    assert "Llama-3.1-70B" in aside.reason
    assert "Llama-3.1-405B" in aside.reason
    # the 405B plan is the uncalibrated one: the 70B run moved nothing
    uncalibrated = estimate(switched.model_copy(update={"measurements": []}))
    assert report.parallelism.tokens_per_s == uncalibrated.parallelism.tokens_per_s
    state = next(f for f in calibration.figures() if f.key == "state")
    assert "0 used" in str(state.value)
    assert "1 set aside" in str(state.value)


def test_a_run_on_another_gpu_is_set_aside() -> None:
    h100 = preset_scenario("llama-3.1-8b", "h100-sxm", 64)
    on_h200 = _with_half_rate_run(h100).model_copy(update={"gpu": get_gpu("h200")})
    calibration = estimate(on_h200).calibration
    assert calibration is not None
    assert calibration.used == []
    assert "h100-sxm" in calibration.set_aside[0].reason


def test_only_the_runs_used_are_drawn_on_the_scaling_chart() -> None:
    # tp 8 × pp 2: Megatron keeps fp32 main gradients, so tp 8 alone does not fit 80 GB
    seventy = preset_scenario(
        "llama-3.1-70b", "h100-sxm", 1024, **{"parallelism.tp": 8, "parallelism.pp": 2}
    )
    measured = _with_half_rate_run(seventy)
    own = time_vs_gpus(measured, estimate(measured))
    assert own is not None
    assert [p.gpus for p in own.measured] == [1024]
    switched = _switch_model(measured, "llama-3.1-405b")
    switched = with_changes(switched, {"parallelism.pp": 16, "training.recompute": "full"})
    report = estimate(switched)
    assert report.training.fits
    series = time_vs_gpus(switched, report)
    assert series is not None
    assert series.measured == []
    assert calibrate_scenario(switched)[0].parallelism.measured_points == []


def test_a_v2_file_records_the_scenario_it_was_saved_with() -> None:
    path = FIXTURES / "scenarios" / "v2-measured.llmplan.json"
    raw = json.loads(path.read_text("utf-8"))
    assert raw["schema_version"] == 2
    assert "model" not in raw["measurements"][0]
    scenario = load_scenario_file(path)
    (run,) = scenario.measurements
    # the v2 scenario is Mixtral-8x7B on H100 SXM, tp 2, Megatron-LM (its saved inputs)
    assert run.model == "Mixtral-8x7B"
    assert run.gpu == "h100-sxm"
    assert run.stack == "megatron"
    assert run.tp == 2
    assert run.step_seconds == pytest.approx(5.6262)
    calibration = estimate(scenario).calibration
    assert calibration is not None
    assert calibration.used == [0]
    # the same file with its model switched: the Mixtral run is set aside
    other = _switch_model(scenario, "llama-3.1-8b")
    calibration = estimate(other).calibration
    assert calibration is not None
    assert calibration.used == []
    assert calibration.set_aside[0].index == 0


def test_the_calibration_line_counts_its_runs_in_words() -> None:
    """One run reads "1 measurement", never "1 measurement(s)" (issue 25, item 14)."""
    scenario = _with_half_rate_run(preset_scenario("llama-3.1-8b", "h100-sxm", 64))
    calibration = estimate(scenario).calibration
    assert calibration is not None
    state = next(f for f in calibration.figures() if f.key == "state")
    assert ": 1 measurement, 1 used" in state.text()
    assert "(s)" not in state.text()
