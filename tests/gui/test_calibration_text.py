"""The calibration panel prints each figure as the report formats it (issue 25, item 14:
"RMS error after: 5.501399336083068e-11" was the raw float)."""

from __future__ import annotations

from scenario_helpers import preset_scenario

from llm_planner.core.composition.estimate import estimate
from llm_planner.core.files import logs
from llm_planner.core.inputs.calibration import Measurement
from llm_planner.gui.widgets.measurements import calibration_text


def test_calibration_lines_are_the_figures_text_not_raw_floats() -> None:
    scenario = preset_scenario("llama-3.1-8b", "h100-sxm", 64)
    modeled = estimate(scenario).parallelism.tokens_per_s / scenario.num_gpus
    run = Measurement(
        label="slow run",
        gpus=scenario.num_gpus,
        tokens_per_s_per_gpu=modeled / 2,
        stack=scenario.training.stack,
        **logs.layout_of(scenario),
    )
    report = estimate(scenario.model_copy(update={"measurements": [run]}))
    assert report.calibration is not None
    text = calibration_text(report)
    for figure in report.calibration.figures():
        if figure.key != "skipped":
            assert f"{figure.label.strip()}: {figure.text()}" in text
    rms = [line for line in text.splitlines() if line.startswith("RMS error")]
    assert rms
    for line in rms:  # a formatted figure: no 16-digit float, no e-notation of a fraction
        value = line.split(": ", 1)[1]
        assert "e-" not in value
        assert len(value) < 16
