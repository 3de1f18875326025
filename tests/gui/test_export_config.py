"""The window's plan-to-launch: *Export for…* on the parallelism tab and on a search row's
context menu writes the stack's config; a stack config dropped on the window imports it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("PySide6")
pytest.importorskip("pytestqt")

from PySide6.QtCore import QMimeData, QPoint, QPointF, Qt, QUrl
from PySide6.QtGui import QContextMenuEvent, QDragEnterEvent, QDropEvent
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication, QFileDialog, QMessageBox, QPushButton

from llm_planner.gui.main_window import MainWindow

pytestmark = pytest.mark.gui


@pytest.fixture
def window(qtbot: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[MainWindow]:
    def ok(*_args: Any, **_kwargs: Any) -> QMessageBox.StandardButton:
        return QMessageBox.StandardButton.Ok

    monkeypatch.setattr(QMessageBox, "warning", ok)
    win = MainWindow(restore=False)
    qtbot.addWidget(win)
    win.ask_before_discard = False
    win.resize(1366, 768)
    win.show()
    win.build_all_tabs()
    yield win


def save_as(monkeypatch: pytest.MonkeyPatch, path: Path) -> None:
    def answer(*_args: Any, **_kwargs: Any) -> tuple[str, str]:
        return str(path), ""

    monkeypatch.setattr(QFileDialog, "getSaveFileName", answer)


def test_export_for_button_writes_the_tab_layout(
    qtbot: Any, window: MainWindow, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    window.tabs.setCurrentIndex(3)
    tab = window.page(3)
    button = tab.findChild(QPushButton, "export_for_button")
    assert button is not None
    assert button.isVisible()
    menu = button.menu()
    menu.aboutToShow.connect(lambda: close_soon(menu))
    QTest.mouseClick(button, Qt.MouseButton.LeftButton)  # opens the menu (closed at once)
    action = next(a for a in menu.actions() if a.objectName() == "export_megatron")
    target = tmp_path / "args.sh"
    save_as(monkeypatch, target)
    action.trigger()
    text = target.read_text()
    s = window.state.scenario
    assert f"--tensor-model-parallel-size {s.parallelism.tp}\n" in text
    assert f"--global-batch-size {s.parallelism.global_batch}\n" in text
    assert "Wrote" in window.statusBar().currentMessage()


def close_soon(menu: Any) -> None:
    """Close a menu as soon as it has opened (a button's menu runs its own event loop)."""
    from PySide6.QtCore import QTimer

    QTimer.singleShot(0, menu.close)


def test_search_row_context_menu_exports_that_row(
    qtbot: Any, window: MainWindow, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    window.tabs.setCurrentIndex(3)
    tab = window.page(3)
    QTest.mouseClick(tab.search.run_button, Qt.MouseButton.LeftButton)
    window.flush()
    qtbot.waitUntil(lambda: tab.search.table.model().rowCount() > 1, timeout=20_000)
    table = tab.search.table
    position = table.visualRect(table.model().index(1, 0)).center()
    row = tab.search.rows[1]
    event = QContextMenuEvent(
        QContextMenuEvent.Reason.Mouse, position, table.viewport().mapToGlobal(position)
    )
    QApplication.sendEvent(table.viewport(), event)
    menu = table.property("last_row_menu")
    assert menu is not None
    menu.close()
    export = menu.actions()[0].menu()
    action = next(a for a in export.actions() if a.objectName() == "export_deepspeed")
    target = tmp_path / "ds.json"
    save_as(monkeypatch, target)
    action.trigger()
    data = json.loads(target.read_text())
    assert data["zero_optimization"]["stage"] == row["zero_stage"]
    assert data["train_micro_batch_size_per_gpu"] == row["micro_batch"]
    assert data["gradient_accumulation_steps"] == row["gradient_accumulation_steps"]
    assert data["llm_planner"]["pipeline_parallel"] == row["pp"]


def test_dropping_a_stack_config_imports_its_layout(
    qtbot: Any, window: MainWindow, tmp_path: Path
) -> None:
    config = tmp_path / "job.toml"
    config.write_text(
        '[model]\nname = "llama3"\nflavor = "70B"\n\n[parallelism]\n'
        "data_parallel_shard_degree = 16\ntensor_parallel_degree = 8\n"
        'pipeline_parallel_degree = 2\npipeline_parallel_schedule = "GPipe"\n'
    )
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(config))])
    enter = QDragEnterEvent(
        QPoint(20, 20),
        Qt.DropAction.CopyAction,
        mime,
        Qt.MouseButton.LeftButton,
        Qt.KeyboardModifier.NoModifier,
    )
    QApplication.sendEvent(window, enter)
    assert enter.isAccepted()  # the window takes a .toml
    event = QDropEvent(
        QPointF(QPoint(20, 20)),
        Qt.DropAction.CopyAction,
        mime,
        Qt.MouseButton.LeftButton,
        Qt.KeyboardModifier.NoModifier,
    )
    QApplication.sendEvent(window, event)
    s = window.state.scenario
    assert s.model.preset == "llama-3.1-70b"
    assert (s.num_gpus, s.parallelism.tp, s.parallelism.pp) == (256, 8, 2)  # 16 × 8 × 2
    assert s.parallelism.schedule == "gpipe"
    assert s.training.stack == "torchtitan"
    window.state.undo_stack.undo()  # one undoable step
    assert window.state.scenario.model.preset == "llama-3.1-8b"


def test_a_dropped_trainer_config_says_which_values_are_left_to_the_launcher(
    qtbot: Any, window: MainWindow
) -> None:
    """The HF Trainer's ZeRO-3 offload config (batch and fp16 'auto') dropped on the window:
    ZeRO-3 and the offload are applied, the scenario's batch and precision stay, and the
    status line names the four 'auto' keys."""
    from .test_drop_hostile import drop

    fixture = (
        Path(__file__).parents[1] / "fixtures" / "stack_configs" / "hf_trainer_zero3_auto.json"
    )
    before = window.state.scenario
    drop(window, fixture)
    window.flush()
    after = window.state.scenario
    assert after.parallelism.zero_stage == 3
    assert after.training.offload_optimizer == "cpu"
    assert after.training.micro_batch == before.training.micro_batch
    assert after.training.precision == before.training.precision
    message = window.statusBar().currentMessage()
    assert "4 left to the launcher ('auto'" in message
    assert "train_batch_size" in message
