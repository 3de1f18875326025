"""A variant is a new scenario with no file: saving it never writes over the file it came from.

Issue 25, item 1: open A.llmplan.json, Compare and choose → Duplicate as variant, change the
GPUs, Ctrl+S wrote the variant over A. Each test here drives the window as a user does
(menu actions, the Compare window's button, typed keys, answered dialogs) and compares the
original file's bytes before and after.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QAction
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QFileDialog, QMessageBox, QPushButton

from llm_planner.core.composition.scenario import default_scenario
from llm_planner.core.files import store
from llm_planner.gui.main_window import MainWindow

from .helpers import type_into


def _action(window: MainWindow, name: str) -> QAction:
    found = window.findChild(QAction, name)
    assert found is not None, name
    return found


@pytest.fixture
def original(tmp_path: Path) -> Path:
    """A teammate's scenario file on disk (written by the app's own writer)."""
    path = tmp_path / "A.llmplan.json"
    store.save_scenario_file(default_scenario().model_copy(update={"name": "A"}), path)
    return path


def _open(window: MainWindow, path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(QFileDialog, "getOpenFileName", lambda *_a, **_k: (str(path), ""))
    _action(window, "open").trigger()
    assert window.state.path == str(path)


def _duplicate_as_variant(window: MainWindow, qtbot: Any) -> None:
    _action(window, "compare").trigger()
    choose = window._choose_window
    qtbot.waitExposed(choose)
    button = choose.compare.findChild(QPushButton, "duplicate_variant")
    assert button is not None
    QTest.mouseClick(button, Qt.MouseButton.LeftButton)
    choose.close()


def test_saving_a_variant_asks_where_and_leaves_the_original_byte_identical(
    qtbot: Any, window: MainWindow, original: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = original.read_bytes()
    _open(window, original, monkeypatch)
    _duplicate_as_variant(window, qtbot)
    assert window.state.scenario.name == "A (variant)"
    assert window.state.path is None  # a variant has no file yet
    type_into(qtbot, window, window.bar.num_gpus, "2048")
    asked: list[str] = []
    variant = tmp_path / "B.llmplan.json"

    def save_dialog(_parent: Any, _title: str, suggested: str, _filter: str) -> tuple[str, str]:
        asked.append(suggested)
        return str(variant), ""

    monkeypatch.setattr(QFileDialog, "getSaveFileName", save_dialog)
    window.activateWindow()
    QTest.keyClick(window, Qt.Key.Key_S, Qt.KeyboardModifier.ControlModifier)  # Ctrl+S
    if not asked:  # no keyboard focus offscreen: the menu's Save, the same action
        _action(window, "save").trigger()
    assert len(asked) == 1  # Save asked where, as for any new scenario
    assert "variant" in Path(asked[0]).name  # suggested under the variant's own name
    assert original.read_bytes() == before
    saved = store.load_scenario_file(variant)
    assert (saved.name, saved.num_gpus) == ("A (variant)", 2048)
    assert window.state.path == str(variant)
    # from now on Save writes the variant's own file, still never the original
    type_into(qtbot, window, window.bar.num_gpus, "4096")
    _action(window, "save").trigger()
    assert len(asked) == 1
    assert store.load_scenario_file(variant).num_gpus == 4096
    assert original.read_bytes() == before


def test_the_unsaved_changes_prompt_saves_a_variant_elsewhere(
    qtbot: Any, window: MainWindow, original: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = original.read_bytes()
    _open(window, original, monkeypatch)
    _duplicate_as_variant(window, qtbot)
    type_into(qtbot, window, window.bar.num_gpus, "2048")
    variant = tmp_path / "B.llmplan.json"
    monkeypatch.setattr(QFileDialog, "getSaveFileName", lambda *_a, **_k: (str(variant), ""))
    monkeypatch.setattr(QMessageBox, "question", lambda *_a, **_k: QMessageBox.StandardButton.Save)
    window.ask_before_discard = True
    _action(window, "new").trigger()  # "Save the changes first?" → Save
    assert store.load_scenario_file(variant).num_gpus == 2048
    assert original.read_bytes() == before
    assert window.state.path is None  # the new, default scenario


def test_cancelling_the_save_dialog_keeps_the_variant_and_the_original(
    qtbot: Any, window: MainWindow, original: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = original.read_bytes()
    _open(window, original, monkeypatch)
    _duplicate_as_variant(window, qtbot)
    type_into(qtbot, window, window.bar.num_gpus, "2048")
    monkeypatch.setattr(QFileDialog, "getSaveFileName", lambda *_a, **_k: ("", ""))
    monkeypatch.setattr(QMessageBox, "question", lambda *_a, **_k: QMessageBox.StandardButton.Save)
    window.ask_before_discard = True
    _action(window, "new").trigger()  # Save → the dialog is cancelled: nothing is discarded
    assert window.state.scenario.num_gpus == 2048
    assert window.state.scenario.name == "A (variant)"
    assert original.read_bytes() == before


def test_undoing_the_variant_gives_the_file_back(
    qtbot: Any, window: MainWindow, original: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _open(window, original, monkeypatch)
    _duplicate_as_variant(window, qtbot)
    assert window.state.path is None
    window.state.undo_stack.undo()
    assert (window.state.scenario.name, window.state.path) == ("A", str(original))
    assert not window.isWindowModified()  # back where it was opened
    window.state.undo_stack.redo()
    assert (window.state.scenario.name, window.state.path) == ("A (variant)", None)


def test_edits_that_are_not_variants_keep_their_file(
    qtbot: Any, window: MainWindow, original: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Typing, applying a search row or importing a model edits the open plan: Save writes it."""
    _open(window, original, monkeypatch)
    type_into(qtbot, window, window.bar.num_gpus, "16")
    assert window.state.path == str(original)
    monkeypatch.setattr(
        QFileDialog, "getSaveFileName", lambda *_a, **_k: pytest.fail("Save asked where")
    )
    _action(window, "save").trigger()
    assert store.load_scenario_file(original).num_gpus == 16
