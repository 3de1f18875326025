"""Drive real input widgets the way a user does."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QComboBox, QLineEdit

from llm_planner.gui.main_window import MainWindow


def type_into(qtbot: Any, window: MainWindow, edit: QLineEdit, text: str) -> None:
    """Select all, type ``text`` key by key, then flush deferred redraws."""
    edit.setFocus()
    edit.selectAll()
    qtbot.keyClick(edit, Qt.Key.Key_Backspace)
    qtbot.keyClicks(edit, text)
    window.flush()


def choose(window: MainWindow, combo: QComboBox, value: Any) -> None:
    index = combo.findData(value)
    assert index >= 0, f"{value!r} not offered by {combo.objectName()}"
    combo.setCurrentIndex(index)
    window.flush()


def bar_widths_gb(bars: Any, component: str) -> list[float]:
    """The drawn widths (GB) of one component's segments, row by row."""
    width = bars.items[component].opts["width"]
    return [float(w) for w in width]
