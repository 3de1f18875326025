"""The window driven as a user drives it: real mouse clicks on buttons (``QTest.mouseClick``),
triggered menu actions, keys typed into fields, dialogs answered as they open.

A slot that receives ``clicked(bool)`` in a name or flag parameter breaks only under a real
click (the rename and delete bugs of issue 13): these tests never call the slots directly.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import QMimeData, QPoint, QPointF, Qt, QTimer, QUrl
from PySide6.QtGui import QDropEvent
from PySide6.QtTest import QTest
from PySide6.QtWidgets import (
    QAbstractButton,
    QApplication,
    QDialog,
    QFileDialog,
    QInputDialog,
    QLineEdit,
    QMessageBox,
    QPushButton,
    QTableView,
)

from llm_planner.core.composition.estimate import estimate
from llm_planner.gui.main_window import MainWindow

from .helpers import choose, type_into

pytestmark = pytest.mark.gui

LLAMA2_7B_CONFIG = {
    # Hugging Face meta-llama/Llama-2-7b-hf config.json: a 4,096-token model
    "model_type": "llama",
    "hidden_size": 4096,
    "intermediate_size": 11008,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": 32,
    "vocab_size": 32000,
    "max_position_embeddings": 4096,
    "rms_norm_eps": 1e-05,
    "tie_word_embeddings": False,
}


# ---------------------------------------------------------------- how a user acts


def click(widget: QAbstractButton) -> None:
    assert widget.isVisible(), f"{widget.objectName()} is not on screen"
    assert widget.isEnabled(), f"{widget.objectName()} is disabled"
    QTest.mouseClick(widget, Qt.MouseButton.LeftButton)


def when_dialog(answer: Callable[[QDialog], None]) -> list[str]:
    """Answer the next modal dialog as soon as it opens; returns the seen dialog's texts."""
    seen: list[str] = []

    def poll() -> None:
        dialog = QApplication.activeModalWidget()
        if isinstance(dialog, QDialog):
            seen.append(dialog.windowTitle())
            answer(dialog)
        else:
            QTimer.singleShot(20, poll)

    QTimer.singleShot(0, poll)
    return seen


def type_and_accept(text: str) -> Callable[[QDialog], None]:
    def answer(dialog: QDialog) -> None:
        edit = dialog.findChild(QLineEdit)
        assert edit is not None, "the dialog has no text field"
        edit.selectAll()
        QTest.keyClicks(edit, text)
        QTest.keyClick(edit, Qt.Key.Key_Return)

    return answer


def press(button: QMessageBox.StandardButton) -> Callable[[QDialog], None]:
    def answer(dialog: QDialog) -> None:
        assert isinstance(dialog, QMessageBox), f"expected a question, got {dialog!r}"
        QTest.mouseClick(dialog.button(button), Qt.MouseButton.LeftButton)

    return answer


def click_row(table: QTableView, row: int, double: bool = False) -> None:
    column = next(c for c in range(table.model().columnCount()) if not table.isColumnHidden(c))
    rect = table.visualRect(
        table.model().index(
            row, max(column, 1 if column == 0 and not table.isColumnHidden(1) else column)
        )
    )
    assert rect.isValid(), f"row {row} is not visible"
    if double:
        QTest.mouseDClick(table.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    else:
        QTest.mouseClick(table.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())


def action(window: MainWindow, name: str) -> Any:
    from PySide6.QtGui import QAction

    found = window.findChild(QAction, name)
    assert found is not None, name
    return found


def names(window: MainWindow) -> list[str]:
    panel = window.library
    assert panel is not None
    return [str(panel.proxy.index(r, 0).data()) for r in range(panel.proxy.rowCount())]


# ---------------------------------------------------------------- library flows


def test_save_rename_duplicate_delete_restore_by_clicking(
    qtbot: Any, window: MainWindow, messages: list[str]
) -> None:
    panel = window.library
    assert panel is not None
    assert panel.empty_hint.isVisible()  # an empty library says what to do
    type_into(qtbot, window, window.bar.name, "Team plan")
    assert window.windowTitle().startswith("LLM Planner — Team plan")
    assert window.isWindowModified()
    click(panel.add_button)
    click(panel.add_button)  # saving again saves over its own entry: no "(2)"
    assert names(window) == ["Team plan"]
    assert not window.isWindowModified()
    assert not panel.empty_hint.isVisible()

    click_row(panel.list, 0)
    seen = when_dialog(type_and_accept("Renamed plan"))
    click(panel.rename_button)
    assert seen == ["Rename scenario"]
    assert names(window) == ["Renamed plan"]
    assert window.state.scenario.name == "Renamed plan"  # the open scenario follows
    assert window.bar.name.text() == "Renamed plan"
    assert messages == []  # no pydantic error box

    click_row(panel.list, 0)
    click(panel.duplicate_button)
    assert sorted(names(window)) == ["Renamed plan", "Renamed plan (copy)"]

    panel.select_key(panel.keys()[names(window).index("Renamed plan (copy)")])
    when_dialog(press(QMessageBox.StandardButton.No))
    click(panel.delete_button)
    assert len(names(window)) == 2  # "No" keeps it
    when_dialog(press(QMessageBox.StandardButton.Yes))
    click(panel.delete_button)
    assert names(window) == ["Renamed plan"]

    def restore(dialog: QDialog) -> None:
        assert dialog.objectName() == "trash_dialog"
        click(dialog.findChild(QPushButton, "trash_restore"))
        assert "empty" in dialog.hint.text()  # type: ignore[attr-defined]
        dialog.accept()

    when_dialog(restore)
    click(panel.trash_button)
    qtbot.waitUntil(lambda: len(names(window)) == 2)
    assert sorted(names(window)) == ["Renamed plan", "Renamed plan (copy)"]

    click_row(panel.list, 0)
    when_dialog(press(QMessageBox.StandardButton.Yes))
    click(panel.delete_button)

    def empty(dialog: QDialog) -> None:
        if dialog.objectName() == "trash_dialog":
            when_dialog(press(QMessageBox.StandardButton.Yes))
            click(dialog.findChild(QPushButton, "trash_empty"))
            assert dialog.model.items == []  # type: ignore[attr-defined]
            dialog.accept()

    when_dialog(empty)
    click(panel.trash_button)
    qtbot.waitUntil(lambda: panel.library.trash() == [])


def test_library_lists_model_gpus_and_date_sorts_and_searches(
    qtbot: Any, window: MainWindow
) -> None:
    panel = window.library
    assert panel is not None
    click(panel.add_button)
    choose(window, window.bar.model, "llama-3.1-70b")
    # a name that named the old model follows the new one (no stale "8B" name)
    assert window.state.scenario.name == "Llama-3.1-70B pretraining"
    type_into(qtbot, window, window.bar.num_gpus, "1k")
    assert window.statusBar().currentMessage() == "GPUs: 1k = 1024"  # echoed exactly
    QTest.keyClick(window.bar.num_gpus, Qt.Key.Key_Return)
    assert window.bar.num_gpus.text() == "1024"  # k = 1024 for GPU counts
    window.state.path = None
    click(panel.add_button)
    model = panel.proxy
    rows = {
        model.index(r, 0).data(): [model.index(r, c).data() for c in range(4)]
        for r in range(model.rowCount())
    }
    gpu = window.state.scenario.gpu.name.removeprefix("NVIDIA ")
    assert rows["Llama-3.1-70B pretraining"][1:3] == ["Llama-3.1-70B", f"{gpu} × 1,024"]
    assert rows["Llama-3.1-8B pretraining"][1:3] == ["Llama-3.1-8B", f"{gpu} × 512"]
    assert all(len(r[3]) == len("2026-01-01") for r in rows.values())
    # sorted by the picker: by name, then newest first (the 70B entry was saved last)
    panel.sort.setCurrentIndex(panel.sort.findText("Name"))
    assert names(window) == ["Llama-3.1-70B pretraining", "Llama-3.1-8B pretraining"]
    panel.sort.setCurrentIndex(panel.sort.findText("GPUs"))
    assert names(window)[0] == "Llama-3.1-8B pretraining"  # same GPU: 512 before 1,024
    panel.sort.setCurrentIndex(panel.sort.findText("Newest first"))
    assert (panel.proxy.sortColumn(), panel.proxy.sortOrder()) == (3, Qt.SortOrder.DescendingOrder)
    QTest.keyClicks(panel.search, "70b")
    assert names(window) == ["Llama-3.1-70B pretraining"]


def test_save_and_save_as_like_a_desktop_app(
    qtbot: Any, window: MainWindow, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "docs" / "plan.llmplan.json"
    target.parent.mkdir()
    asked: list[str] = []

    def save_dialog(_parent: Any, _title: str, suggested: str, _filter: str) -> tuple[str, str]:
        asked.append(suggested)
        return str(target), ""

    monkeypatch.setattr(QFileDialog, "getSaveFileName", save_dialog)
    action(window, "save").trigger()  # no file yet: Save asks where (Save As)
    assert target.is_file()
    assert window.library is not None
    assert not asked[0].startswith(str(window.library.library.folder))  # not data/scenarios
    type_into(qtbot, window, window.bar.num_gpus, "64")
    assert window.isWindowModified()
    action(window, "save").trigger()  # now Save writes there, asking nothing
    assert len(asked) == 1
    assert json.loads(target.read_text(encoding="utf-8"))["num_gpus"] == 64
    assert str(target.resolve()) in window.settings["recent"]
    window.recent_menu.aboutToShow.emit()
    assert str(target.resolve()) in [a.text() for a in window.recent_menu.actions()]
    assert "Saved" in window.statusBar().currentMessage()


# ---------------------------------------------------------------- share with a teammate


def test_export_and_reopen_as_a_teammate(
    qtbot: Any, window: MainWindow, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shared = tmp_path / "shared.llmplan.json"
    type_into(qtbot, window, window.bar.num_gpus, "2k")
    assert window.state.scenario.num_gpus == 2048
    monkeypatch.setattr(QFileDialog, "getSaveFileName", lambda *_a, **_k: (str(shared), ""))
    action(window, "export_scenario").trigger()
    assert shared.is_file()
    assert str(shared) in window.statusBar().currentMessage()
    mine = window.state.report

    monkeypatch.setenv("LLM_PLANNER_HOME", str(tmp_path / "teammate"))  # a fresh data folder
    teammate = MainWindow(restore=False)
    qtbot.addWidget(teammate)
    teammate.ask_before_discard = False
    teammate.show()
    monkeypatch.setattr(QFileDialog, "getOpenFileName", lambda *_a, **_k: (str(shared), ""))
    action(teammate, "open").trigger()
    assert teammate.state.scenario.num_gpus == 2048
    assert teammate.state.report == mine
    assert teammate.summary.labels["cost"].text() == window.summary.labels["cost"].text()


def test_export_every_chart_as_png_at_a_scale_and_svg_with_a_caption(
    window: MainWindow, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from PySide6.QtGui import QImage

    window.tabs.setCurrentIndex(0)
    window.flush()
    charts = window.charts()
    assert [name for name, _ in charts] == ["time_chart", "cost_chart", "chinchilla_chart"]
    png = tmp_path / "out" / "charts.png"
    png.parent.mkdir()
    monkeypatch.setattr(QFileDialog, "getSaveFileName", lambda *_a, **_k: (str(png), ""))
    monkeypatch.setattr(QInputDialog, "getDouble", lambda *_a, **_k: (3.0, True))
    action(window, "export_png").trigger()
    image = QImage(str(png))
    width = max(chart.width() for _, chart in charts)
    assert image.width() == 3 * width  # the chosen scale, not screen size
    assert str(png) in window.statusBar().currentMessage()
    svg = tmp_path / "out" / "charts.svg"
    monkeypatch.setattr(QFileDialog, "getSaveFileName", lambda *_a, **_k: (str(svg), ""))
    action(window, "export_svg").trigger()
    text = svg.read_text(encoding="utf-8")
    scenario = window.state.scenario
    for part in (scenario.name, scenario.model.architecture.name, scenario.gpu.name, "LLM Planner"):
        assert part in text
    assert window.settings["last_folder"] == str(png.parent.resolve())
    assert window._folder() == str(png.parent.resolve())  # the next dialog starts there


# ---------------------------------------------------------------- drops


def _drop(window: MainWindow, path: Path) -> None:
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(path))])
    event = QDropEvent(
        QPointF(200, 200),
        Qt.DropAction.CopyAction,
        mime,
        Qt.MouseButton.LeftButton,
        Qt.KeyboardModifier.NoModifier,
    )
    from PySide6.QtGui import QDragEnterEvent

    enter = QDragEnterEvent(
        QPoint(200, 200),
        Qt.DropAction.CopyAction,
        mime,
        Qt.MouseButton.LeftButton,
        Qt.KeyboardModifier.NoModifier,
    )
    QApplication.sendEvent(window, enter)
    assert enter.isAccepted(), f"the window refused {path.name}"
    QApplication.sendEvent(window, event)


def test_drop_a_config_json_and_a_model_folder(window: MainWindow, tmp_path: Path) -> None:
    folder = tmp_path / "Llama-2-7b-hf"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(LLAMA2_7B_CONFIG), encoding="utf-8")
    _drop(window, folder / "config.json")
    assert window.state.report.model.params_exact_total == 6_738_415_616
    # a Hugging Face config trains on the Hugging Face stack (issue 14), as --model PATH does
    assert window.state.scenario.training.stack == "hf"
    window.state.undo_stack.undo()
    assert window.state.scenario.model.preset == "llama-3.1-8b"
    assert window.state.scenario.training.stack == "megatron"
    _drop(window, folder)  # the folder itself
    assert window.state.report.model.params_exact_total == 6_738_415_616


def test_drop_a_quantized_config_sets_the_weights_format(
    window: MainWindow, tmp_path: Path
) -> None:
    """A config whose quantization_config says fp8 weights: the window's inference tab reads
    fp8, as ``report --model PATH`` does (one byte per weight instead of bf16's two)."""
    config = tmp_path / "config.json"
    quantized = {**LLAMA2_7B_CONFIG, "quantization_config": {"quant_method": "fp8"}}
    config.write_text(json.dumps(quantized), encoding="utf-8")
    _drop(window, config)
    assert window.state.scenario.inference.weights_format == "fp8"
    weights = window.state.report.inference.weights_bytes
    assert weights == pytest.approx(6_738_415_616 * 1.0, rel=0.01)


def test_context_beyond_the_models_limit_is_a_warning_not_a_block(
    qtbot: Any, window: MainWindow, tmp_path: Path
) -> None:
    config = tmp_path / "config.json"
    config.write_text(json.dumps(LLAMA2_7B_CONFIG), encoding="utf-8")
    assert window.open_dropped(str(config))
    window.tabs.setCurrentIndex(1)
    tab = window.page(1)
    type_into(qtbot, window, tab.context, "8k")
    assert window.state.scenario.inference.context == 8192  # accepted
    QTest.keyClick(tab.context, Qt.Key.Key_Return)
    assert tab.context.text() == "8192"
    assert tab.context_warning.isVisible()
    assert "4,096" in tab.context_warning.text()
    label = tab.context_chart.vlines["max_context"].label.toPlainText()  # type: ignore[attr-defined]
    assert "4,096" in label
    assert "limited by the model" in label
    type_into(qtbot, window, tab.context, "2k")
    assert not tab.context_warning.isVisible()
    window.tabs.setCurrentIndex(2)
    training = window.page(2)
    type_into(qtbot, window, training.seq_len, "8k")
    assert window.state.scenario.training.seq_len == 8192
    assert training.context_warning.isVisible()


# ---------------------------------------------------------------- what would fit


def test_over_capacity_offers_changes_and_one_click_applies_one(
    qtbot: Any, window: MainWindow
) -> None:
    window.tabs.setCurrentIndex(2)
    tab = window.page(2)
    type_into(qtbot, window, tab.micro_batch, "16")
    assert not window.state.report.training.fits
    assert tab.fit_panel.isVisible()
    assert "Does not fit" in tab.fit_panel.title.text()
    buttons = [b for b in tab.fit_panel.buttons if b.isVisible()]
    assert buttons
    suggestion = window.state.report.training_fit_suggestions[0]
    click(buttons[0])
    assert window.state.report.training.fits
    # the peak the button promised is the peak the estimator gives after the change
    assert window.state.report.training.peak_bytes == pytest.approx(suggestion.peak_bytes)
    assert not tab.fit_panel.offered()  # fits now: no change offered, the column says so
    assert "Fits in memory" in tab.fit_panel.title.text()
    undo = next(a for a in window.menuBar().actions()[1].menu().actions() if "Undo" in a.text())
    undo.trigger()
    assert not window.state.report.training.fits
    assert "Parallelism" in tab.layout_note.text()  # the training tab says where ZeRO/TP live


# ---------------------------------------------------------------- the parallelism tab


def test_search_runs_off_the_ui_thread_and_a_row_applies_with_undo_redo(
    qtbot: Any, window: MainWindow
) -> None:
    window.tabs.setCurrentIndex(3)
    tab = window.page(3)
    window.flush()
    assert tab.search.rows
    type_into_no_flush(qtbot, window.bar.num_gpus, "256")
    # the keystroke redrew at once; rows for 512 GPUs are not shown next to 256's figures
    assert tab.search.rows == []
    # busy while the worker runs: the search now takes milliseconds, so the busy bar may
    # come and go between two polls; it must show unless the rows are already back
    qtbot.waitUntil(lambda: tab.search.busy.isVisible() or bool(tab.search.rows), timeout=10000)
    qtbot.waitUntil(lambda: bool(tab.search.rows), timeout=10000)
    assert not tab.search.busy.isVisible()
    assert "256" in tab.search.title.text()
    from PySide6.QtCore import QAbstractTableModel

    assert isinstance(tab.search.table.model(), QAbstractTableModel)
    click_row(tab.search.table, 2)
    row = tab.search.selected_row()
    assert row is not None
    before = window.state.scenario
    click(tab.search.apply_button)
    s = window.state.scenario
    assert (s.parallelism.tp, s.parallelism.pp, s.parallelism.zero_stage) == (
        row["tp"],
        row["pp"],
        row["zero_stage"],
    )
    undo = next(a for a in window.menuBar().actions()[1].menu().actions() if "Undo" in a.text())
    redo = next(a for a in window.menuBar().actions()[1].menu().actions() if "Redo" in a.text())
    undo.trigger()
    assert window.state.scenario == before
    redo.trigger()
    assert window.state.scenario == s


def type_into_no_flush(qtbot: Any, edit: QLineEdit, text: str) -> None:
    edit.setFocus()
    edit.selectAll()
    qtbot.keyClick(edit, Qt.Key.Key_Backspace)
    qtbot.keyClicks(edit, text)


def test_pipeline_chart_only_when_there_is_a_pipeline(qtbot: Any, window: MainWindow) -> None:
    window.tabs.setCurrentIndex(3)
    tab = window.page(3)
    assert window.state.report.parallelism.pp == 1
    assert not tab.timeline.isVisible()
    type_into(qtbot, window, tab.pp, "4")
    assert tab.timeline.isVisible()


# ---------------------------------------------------------------- every tab, every size


def test_edit_a_field_on_each_tab(qtbot: Any, window: MainWindow) -> None:
    for index, attribute, text, path, expected in (
        (0, "tokens", "2T", ("compute", "tokens"), 2e12),
        (1, "batch", "4", ("inference", "batch"), 4),
        (2, "seq_len", "2k", ("training", "seq_len"), 2048),
        (3, "tp", "2", ("parallelism", "tp"), 2),
    ):
        window.tabs.setCurrentIndex(index)
        tab = window.page(index)
        type_into(qtbot, window, getattr(tab, attribute), text)
        section = getattr(window.state.scenario, path[0])
        assert getattr(section, path[1]) == expected


def test_change_model_and_gpu_with_the_pickers(qtbot: Any, window: MainWindow) -> None:
    choose(window, window.bar.model, "llama-3.1-70b")
    assert window.state.report.model.name == "Llama-3.1-70B"
    other = next(
        window.bar.gpu.itemData(i)
        for i in range(window.bar.gpu.count())
        if window.bar.gpu.itemData(i) not in (window.state.scenario.gpu.id, None)
    )
    choose(window, window.bar.gpu, other)
    assert window.state.scenario.gpu.id == other
    assert window.state.scenario.gpu.name in window.windowTitle()
    assert window.state.report == estimate(window.state.scenario)


def test_pickers_show_human_names(window: MainWindow) -> None:
    training = window.page(2)
    texts = [training.precision.itemText(i) for i in range(training.precision.count())]
    assert not any("_" in t for t in texts), texts  # "mixed bf16 + fp32", not "mixed_bf16 — …"
    assert training.precision.currentData() == window.state.scenario.training.precision


def test_window_fits_a_laptop_and_resizes_to_1024x640(qtbot: Any, window: MainWindow) -> None:
    screen = window.screen().availableGeometry()
    fresh = MainWindow(restore=False)
    qtbot.addWidget(fresh)
    fresh.show()
    assert fresh.frameGeometry().height() <= max(screen.height(), 640) + 40
    assert fresh.width() <= max(screen.width(), 1024)
    hint = fresh.minimumSizeHint()
    assert fresh.minimumWidth() <= 1024
    assert fresh.minimumHeight() <= 640
    assert hint.width() <= 1024, hint
    assert hint.height() <= 640, hint
    fresh.resize(1024, 640)
    QApplication.processEvents()
    assert (fresh.width(), fresh.height()) == (1024, 640)
    fresh.ask_before_discard = False
    assert os.environ["QT_QPA_PLATFORM"] == "offscreen"


def test_small_things_fractions_messages_ticks_and_legends(qtbot: Any, window: MainWindow) -> None:
    window.tabs.setCurrentIndex(2)
    training = window.page(2)
    type_into(qtbot, window, training.fragmentation, "10%")
    QTest.keyClick(training.fragmentation, Qt.Key.Key_Return)
    assert window.state.scenario.training.fragmentation_fraction == pytest.approx(0.1)
    assert training.fragmentation.text() == "10%"  # shown as typed, not 0.1
    type_into(qtbot, window, training.fragmentation, "0.05")
    QTest.keyClick(training.fragmentation, Qt.Key.Key_Return)
    assert training.fragmentation.text() == "0.05"
    type_into(qtbot, window, training.micro_batch, "two")
    message = window.error_label.text()
    assert "Micro-batch" in message
    assert "7B" not in message  # the examples fit the field: 1, 4, 16
    assert "1, 4, 16" in message
    assert window.error_label.isVisible()
    window.tabs.setCurrentIndex(0)
    window.flush()
    chinchilla = window.page(0).chinchilla_chart
    ticks = chinchilla.plot.getPlotItem().getAxis("bottom")._tickLevels[0]
    labels = [text for _pos, text in ticks]
    assert all(label[:1] in "1" for label in labels), labels  # decades: 1B, 10B, 100B, 1T
    assert chinchilla.legend.parent() is chinchilla  # the legend is a row under the plot
    assert "this scenario" in chinchilla.legend.text()
