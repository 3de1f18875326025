"""The window's Markdown and CSV export carry the what-ifs the scenario plans (the one
``Report.whatif`` that ``estimate()`` priced), exported through the real menu action."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QFileDialog

from llm_planner.gui.main_window import MainWindow

from .test_whatif_tab import _click_check, _whatif_tab


@pytest.mark.parametrize(("action", "suffix"), [("export_md", ".md"), ("export_csv", ".csv")])
def test_exports_include_the_planned_whatif(  # noqa: PLR0917 (pytest fixtures)
    qtbot: Any,
    window: MainWindow,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    action: str,
    suffix: str,
) -> None:
    tab = _whatif_tab(window)
    _click_check(qtbot, tab.boxes["compression"])
    window.flush()
    assert window.state.scenario.whatif.compression is not None
    target = tmp_path / f"report{suffix}"
    monkeypatch.setattr(QFileDialog, "getSaveFileName", lambda *_a, **_k: (str(target), ""))
    found = window.findChild(QAction, action)
    assert found is not None
    found.trigger()
    text = target.read_text(encoding="utf-8")
    if suffix == ".md":
        assert "## What if" in text
        assert "| Compressed communication |" in text
    else:
        assert "\nwhatif,comp.kind,Compressed communication," in text
