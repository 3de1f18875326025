"""Desktop conventions: config.json import, unsaved-changes prompt, recovery, help, undo steps."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtWidgets import QMessageBox

from llm_planner.gui.main_window import MainWindow

from .helpers import choose, type_into

pytestmark = pytest.mark.gui

LLAMA2_7B_CONFIG = {
    # Hugging Face meta-llama/Llama-2-7b-hf config.json (the fields the importer reads)
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


def test_dropped_config_json_imports_the_model(window: MainWindow, tmp_path: Path) -> None:
    folder = tmp_path / "llama-2-7b"
    folder.mkdir()
    config = folder / "config.json"
    config.write_text(json.dumps(LLAMA2_7B_CONFIG), encoding="utf-8")
    assert window.open_dropped(str(config))
    # 6,738,415,616 parameters: Llama-2-7B's exact count (Touvron et al. 2023, 7B model)
    assert window.state.report.model.params_exact_total == 6_738_415_616
    assert window.state.scenario.model.preset is None
    assert window.summary.labels["params"].text() == "6.74B params"
    assert "(custom)" in window.bar.model.currentText()
    window.state.undo_stack.undo()
    assert window.state.scenario.model.preset == "llama-3.1-8b"


def test_bad_config_json_is_a_message(
    window: MainWindow, tmp_path: Path, messages: list[str]
) -> None:
    bad = tmp_path / "config.json"
    bad.write_text('{"model_type": "llama"}', encoding="utf-8")
    before = window.state.scenario
    assert not window.open_dropped(str(bad))
    assert window.state.scenario == before
    assert messages


def test_close_with_unsaved_changes_asks(
    qtbot: Any, window: MainWindow, monkeypatch: pytest.MonkeyPatch
) -> None:
    window.ask_before_discard = True
    type_into(qtbot, window, window.bar.num_gpus, "64")
    assert window.isWindowModified()
    asked: list[str] = []

    def cancel(*args: Any, **kwargs: Any) -> QMessageBox.StandardButton:
        asked.append(str(args[2]))
        return QMessageBox.StandardButton.Cancel

    monkeypatch.setattr(QMessageBox, "question", cancel)
    assert not window.close()
    assert asked
    assert window.isVisible()

    def discard(*_args: Any, **_kwargs: Any) -> QMessageBox.StandardButton:
        return QMessageBox.StandardButton.Discard

    monkeypatch.setattr(QMessageBox, "question", discard)
    assert window.close()


def test_unsaved_edits_are_recovered_after_a_crash(
    qtbot: Any, window: MainWindow, messages: list[str]
) -> None:
    type_into(qtbot, window, window.bar.num_gpus, "96")
    assert window.autosave() is not None
    # a new session (the old one "crashed": no save, no discard)
    again = MainWindow(restore=False)
    qtbot.addWidget(again)
    again.ask_before_discard = False
    assert again.offer_recovery(ask=False)
    assert again.state.scenario.num_gpus == 96
    assert again.isWindowModified()
    assert again.library is not None
    assert [r.key for r in again.library.library.pending_recoveries()] == [again._session_key]
    del messages


def test_each_pick_is_one_undo_step_and_typing_merges(qtbot: Any, window: MainWindow) -> None:
    tab = window.page(2)
    choose(window, tab.recompute, "full")
    choose(window, tab.recompute, "none")
    type_into(qtbot, window, tab.seq_len, "8192")
    stack = window.state.undo_stack
    assert stack.count() == 3  # two picks, one typed value (four keystrokes merged)
    stack.undo()
    assert window.state.scenario.training.seq_len == 4096
    stack.undo()
    assert window.state.scenario.training.recompute == "full"


def test_help_lists_formulas_and_sources(window: MainWindow) -> None:
    text = window.formulas_html()
    assert "Training FLOPs" in text
    assert "Korthikanti" in text


def test_gpt3_sanity_check_reports_the_seed_figure(window: MainWindow, messages: list[str]) -> None:
    window.page(0).gpt3_check()
    # 6 × 175e9 × 300e9 = 3.15e23 FLOP (Transformer Math 101; GPT-3 reported 3.14e23)
    assert "3.15e23 FLOP" in messages[-1]
