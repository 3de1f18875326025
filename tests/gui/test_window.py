"""The window as a whole: undo/redo, inline errors, files, library, settings, errors, smoke."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt

from llm_planner.core.composition.estimate import estimate, report_json
from llm_planner.core.files.store import load_scenario_file
from llm_planner.gui import settings
from llm_planner.gui.app import run_smoke_test
from llm_planner.gui.errors import ExceptionHook, log_path
from llm_planner.gui.main_window import MainWindow

from .helpers import choose, type_into

pytestmark = pytest.mark.gui


def test_undo_redo_restore_inputs_and_figures(qtbot: Any, window: MainWindow) -> None:
    tab = window.page(0)
    original_text = tab.figures.value_text("flops_total")
    type_into(qtbot, window, tab.tokens, "2T")
    changed_text = tab.figures.value_text("flops_total")
    assert changed_text != original_text
    # keystrokes into one field merge into one undo step
    window.state.undo_stack.undo()
    assert window.state.scenario.compute.tokens == 15e12
    assert tab.figures.value_text("flops_total") == original_text
    assert tab.tokens.text() == "15T"
    window.state.undo_stack.redo()
    assert window.state.scenario.compute.tokens == 2e12
    assert tab.figures.value_text("flops_total") == changed_text


def test_bad_input_marks_the_field_and_keeps_last_figures(qtbot: Any, window: MainWindow) -> None:
    tab = window.page(0)
    before = window.state.scenario
    shown = tab.figures.value_text("wall_seconds")
    type_into(qtbot, window, tab.tokens, "lots")
    assert window.state.scenario == before
    assert tab.tokens.property("inputError")
    assert "D62728" in tab.tokens.styleSheet()
    assert window.error_label.isVisibleTo(window)
    assert "Tokens" in window.error_label.text()
    assert tab.figures.value_text("wall_seconds") == shown
    # a value the model refuses (MFU above 1) is an inline error too, not a traceback
    choose(window, tab.mode, "mfu")
    assert tab.mfu.isEnabled()
    type_into(qtbot, window, tab.mfu, "1.5")
    assert tab.mfu.property("inputError")
    type_into(qtbot, window, tab.tokens, "3T")
    assert not tab.tokens.property("inputError")
    assert window.state.scenario.compute.tokens == 3e12


def test_save_open_round_trip_gives_identical_figures(
    qtbot: Any, window: MainWindow, tmp_path: Path
) -> None:
    type_into(qtbot, window, window.bar.num_gpus, "2048")
    path = tmp_path / "run.llmplan.json"
    assert window.save_to(str(path))
    assert window.state.undo_stack.isClean()
    saved = load_scenario_file(path)
    type_into(qtbot, window, window.bar.num_gpus, "64")
    assert window.open_file(path, confirm=False)
    assert window.state.scenario == saved
    assert window.bar.num_gpus.text() == "2048"
    assert report_json(window.state.report) == report_json(estimate(saved))


def test_bad_file_gets_a_message_and_nothing_changes(
    window: MainWindow, tmp_path: Path, messages: list[str]
) -> None:
    bad = tmp_path / "bad.llmplan.json"
    document = json.loads(json.dumps(window.state.scenario.model_dump(mode="json")))
    document["num_gpus"] = -3
    bad.write_text(json.dumps(document), encoding="utf-8")
    before = window.state.scenario
    assert not window.open_file(bad, confirm=False)
    assert window.state.scenario == before
    assert messages
    assert "num_gpus" in messages[-1]


def test_export_report_and_charts(window: MainWindow, tmp_path: Path) -> None:
    md, csv = tmp_path / "r.md", tmp_path / "r.csv"
    window.export_report(str(md), "md")
    window.export_report(str(csv), "csv")
    assert "Training FLOPs" in md.read_text(encoding="utf-8")
    assert "flops_total" in csv.read_text(encoding="utf-8")
    for index in range(4):
        window.tabs.setCurrentIndex(index)
        png = tmp_path / f"chart{index}.png"
        assert window.export_chart(str(png), "png")
        assert png.stat().st_size > 1000
    svg = tmp_path / "chart.svg"
    assert window.export_chart(str(svg), "svg")
    assert "<svg" in svg.read_text(encoding="utf-8")
    text = window.copy_figures()
    assert "Compute budget" in text
    assert "Inference memory" in text


def test_drop_scenario_file_opens_it(qtbot: Any, window: MainWindow, tmp_path: Path) -> None:
    path = tmp_path / "dropped.llmplan.json"
    type_into(qtbot, window, window.bar.num_gpus, "256")
    window.save_to(str(path))
    window.state.load(window.state.scenario.model_copy(update={"num_gpus": 8}), None)
    assert window.open_dropped(str(path))
    assert window.state.scenario.num_gpus == 256


def test_notes_edit_the_scenario(qtbot: Any, window: MainWindow) -> None:
    panel = window.library
    assert panel is not None
    panel.notes.setPlainText("Assume 40% MFU from the pilot run")
    panel._commit_notes()
    assert window.state.scenario.notes == "Assume 40% MFU from the pilot run"
    window.state.undo_stack.undo()
    assert window.state.scenario.notes == ""


def test_geometry_and_tab_are_restored(qtbot: Any, window: MainWindow) -> None:
    window.tabs.setCurrentIndex(2)
    window.resize(1200, 700)
    window.save_window_state()
    assert settings.load()["tab"] == 2
    again = MainWindow(restore=True)
    qtbot.addWidget(again)
    assert again.tabs.currentIndex() == 2
    again.ask_before_discard = False


def test_unexpected_error_is_logged_and_app_keeps_running(window: MainWindow) -> None:
    hook = ExceptionHook(lambda: window)
    hook.show_dialogs = False
    try:
        raise RuntimeError("boom in a slot")
    except RuntimeError as error:
        hook(type(error), error, error.__traceback__)
    assert "boom in a slot" in hook.reports[0]
    assert "boom in a slot" in log_path().read_text(encoding="utf-8")
    assert window.state.scenario is not None


def test_smoke_test_visits_every_tab(window: MainWindow) -> None:
    assert run_smoke_test(window) == 0


def test_estimator_error_keeps_last_figures(
    qtbot: Any, window: MainWindow, monkeypatch: pytest.MonkeyPatch
) -> None:
    from llm_planner.gui import binding

    tab = window.page(0)
    shown = tab.figures.value_text("flops_total")

    def broken(_scenario: Any, **_options: Any) -> Any:
        raise ZeroDivisionError("estimator bug")

    monkeypatch.setattr(binding, "estimate", broken)
    type_into(qtbot, window, tab.tokens, "2T")
    assert window.state.scenario.compute.tokens == 2e12
    assert tab.figures.value_text("flops_total") == shown
    assert "estimator bug" in window.statusBar().currentMessage()


def test_figure_tooltips_explain_value_formula_and_source(window: MainWindow) -> None:
    table = window.page(1).figures
    row = next(i for i, f in enumerate(table.figures) if f.key == "kv_cache_bytes")
    tip = table.item(row, 1).toolTip()
    figure = table.figures[row]
    assert "GB" in tip
    assert "GiB" in tip
    assert figure.formula.split()[0] in tip
    summary_tip = window.summary.labels["flops"].toolTip()
    assert "Formula" in summary_tip


def test_import_into_library_copies_good_files_and_names_bad_ones(
    window: MainWindow, tmp_path: Path, messages: list[str]
) -> None:
    good = tmp_path / "good.llmplan.json"
    window.save_to(str(good))
    bad = tmp_path / "bad.llmplan.json"
    bad.write_text("{not json", encoding="utf-8")
    assert window.library is not None
    window.library.import_files([good, bad])
    assert len(window.library.keys()) == 1
    assert messages
    assert "bad.llmplan.json" in messages[-1]


def test_typing_back_to_the_old_value_leaves_no_undo_step(qtbot: Any, window: MainWindow) -> None:
    edit = window.bar.num_gpus
    type_into(qtbot, window, edit, "5120")
    qtbot.keyClick(edit, "0")  # 51200 … then back to 512
    for _ in range(2):
        qtbot.keyClick(edit, Qt.Key.Key_Backspace)
    assert window.state.scenario.num_gpus == 512
    assert window.state.undo_stack.count() == 0
    assert window.state.undo_stack.isClean()


def test_out_of_range_input_names_the_range(qtbot: Any, window: MainWindow) -> None:
    """Issue 20: the window's inline error is the same range message as the command line's."""
    tab = window.page(3)
    window.tabs.setCurrentIndex(3)
    before = window.state.scenario
    type_into(qtbot, window, tab.tp, "0")
    assert window.state.scenario == before
    assert tab.tp.property("inputError")
    assert "must be between 1 and 16,384" in window.error_label.text()
    type_into(qtbot, window, tab.tp, "2")
    assert not tab.tp.property("inputError")


def test_gpu_picker_items_carry_their_datasheet(window: MainWindow) -> None:
    """Hovering a GPU in the picker shows its datasheet: GB200 NVL72's 186 GB, BF16 dense
    2,500 TFLOP/s (5 PFLOPS with sparsity / 2), its 72-GPU NVLink domain and the share of
    its peak it is priced at (0.9229 → 92.3%); H100 SXM has no such line."""
    combo = window.bar.gpu
    tip = str(combo.itemData(combo.findData("gb200"), Qt.ItemDataRole.ToolTipRole))
    assert "186" in tip
    assert "BF16 2,500 TFLOP/s" in tip
    assert "72 GPUs in one NVLink domain" in tip
    assert "92.3%" in tip
    h100 = str(combo.itemData(combo.findData("h100-sxm"), Qt.ItemDataRole.ToolTipRole))
    assert "BF16 989 TFLOP/s" in h100
    assert "priced at" not in h100
