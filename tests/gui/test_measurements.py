"""Measured runs on the parallelism tab (issue 15): type a run and press Add, drop a log,
switch calibration off — the fitted parameters and the modeled throughput change."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt

from llm_planner.core.files.store import dumps_scenario, parse_scenario
from llm_planner.gui.main_window import MainWindow

from .helpers import type_into

pytestmark = pytest.mark.gui

LOGS = Path(__file__).parents[1] / "fixtures" / "logs"


def _panel(window: MainWindow) -> Any:
    window.tabs.setCurrentIndex(3)
    return window.page(3).measurements


def test_typed_run_calibrates_and_switches_off(qtbot: Any, window: MainWindow) -> None:
    panel = _panel(window)
    before = window.state.report.parallelism.tokens_per_s
    per_gpu_before = before / window.state.scenario.num_gpus
    # a run at half the modeled rate, on the scenario's layout
    type_into(qtbot, window, panel.rate, f"{per_gpu_before / 2:.0f}")
    qtbot.mouseClick(panel.add_button, Qt.MouseButton.LeftButton)
    window.flush()
    scenario = window.state.scenario
    assert len(scenario.measurements) == 1
    assert scenario.measurements[0].gpus == scenario.num_gpus
    report = window.state.report
    assert report.calibration is not None
    assert report.calibration.applied
    assert report.parallelism.tokens_per_s == pytest.approx(before / 2, rel=1e-3)
    assert "kernel_efficiency" in panel.summary.text()
    assert panel.model.rowCount() == 1
    assert panel.model.data(panel.model.index(0, 4)) == "+0.0%"
    # the compute tab's modeled throughput is the calibrated one
    assert report.compute.tokens_per_s == pytest.approx(report.parallelism.tokens_per_s)
    # off: the uncalibrated model again (a real click on the check box)
    qtbot.mouseClick(panel.enabled, Qt.MouseButton.LeftButton)
    window.flush()
    assert not window.state.scenario.calibration.enabled
    assert window.state.report.parallelism.tokens_per_s == pytest.approx(before)
    # undo brings calibration back
    window.state.undo_stack.undo()
    window.flush()
    assert window.state.scenario.calibration.enabled
    # saved in the scenario file
    again = parse_scenario(dumps_scenario(window.state.scenario).encode())
    assert again.measurements == window.state.scenario.measurements


def test_bad_rate_is_named_not_added(qtbot: Any, window: MainWindow) -> None:
    panel = _panel(window)
    type_into(qtbot, window, panel.rate, "fast")
    qtbot.mouseClick(panel.add_button, Qt.MouseButton.LeftButton)
    assert window.state.scenario.measurements == []
    assert panel.message.text().startswith("tokens/s per GPU:")


def test_dropped_log_becomes_a_measurement(
    qtbot: Any, window: MainWindow, messages: list[str], tmp_path: Path
) -> None:
    panel = _panel(window)
    assert window.open_dropped(str(LOGS / "torchtitan_small.log"))
    window.flush()
    (m,) = window.state.scenario.measurements
    assert m.stack == "torchtitan"
    assert m.tokens_per_s_per_gpu == pytest.approx(7323.5)
    assert panel.model.rowCount() == 1
    assert window.state.report.calibration is not None
    assert window.state.report.calibration.applied
    # remove it with the button
    panel.table.selectRow(0)
    qtbot.mouseClick(panel.remove_button, Qt.MouseButton.LeftButton)
    window.flush()
    assert window.state.scenario.measurements == []
    # a log with nothing readable is named in a message, the scenario untouched
    junk = tmp_path / "junk.log"
    junk.write_text("no training here\n", encoding="utf-8")
    assert not window.open_dropped(str(junk))
    assert messages
    assert "junk.log: no measurement read" in messages[-1]


def test_a_dropped_run_stays_with_its_model(
    qtbot: Any, window: MainWindow, messages: list[str]
) -> None:
    """Issue 25 item 3: a Megatron log dropped on one model's scenario keeps calibrating
    only that model; after the model is switched it is listed as set aside, not fitted."""
    from .helpers import choose

    panel = _panel(window)
    choose(window, window.bar.model, "mixtral-8x7b")
    assert window.open_dropped(str(LOGS / "megatron_mixtral_h100.log"))
    window.flush()
    (run,) = window.state.scenario.measurements
    assert run.model == "Mixtral-8x7B"
    assert run.gpu == window.state.scenario.gpu.id
    assert window.state.report.calibration is not None
    assert window.state.report.calibration.used == [0]
    choose(window, window.bar.model, "llama-3.1-70b")
    window.flush()
    calibration = window.state.report.calibration
    assert calibration is not None
    assert calibration.used == []
    assert not calibration.applied
    assert panel.model.data(panel.model.index(0, 2)) == "set aside"
    assert "Set aside: megatron_mixtral_h100.log: measured on Mixtral-8x7B" in panel.summary.text()
