"""GUI test fixtures: a real main window on the default scenario, offscreen."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("PySide6")
pytest.importorskip("pytestqt")

from PySide6.QtWidgets import QMessageBox

from llm_planner.gui.main_window import MainWindow


@pytest.fixture
def messages(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Warnings the window would show (recorded instead of a modal box)."""
    shown: list[str] = []

    def fake(_parent: Any, _title: str, text: str, *args: Any, **kwargs: Any) -> Any:
        shown.append(text)
        return QMessageBox.StandardButton.Ok

    monkeypatch.setattr(QMessageBox, "warning", fake)
    monkeypatch.setattr(QMessageBox, "information", fake)
    return shown


@pytest.fixture
def window(qtbot: Any, messages: list[str]) -> Iterator[MainWindow]:
    win = MainWindow(restore=False)
    qtbot.addWidget(win)
    win.ask_before_discard = False
    win.resize(1366, 768)
    win.show()
    win.build_all_tabs()
    yield win
    win.ask_before_discard = False
