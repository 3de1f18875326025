"""The window's module loads no chart library: the first paint draws no chart."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest


def test_main_window_module_does_not_load_pyqtgraph() -> None:
    """The window's first paint draws no chart (the first tab defers its own): pyqtgraph,
    ~0.12 s of imports, loads after it; Compare and choose imports it when opened."""
    pytest.importorskip("PySide6")
    script = "import sys\nimport llm_planner.gui.main_window\nprint('\\n'.join(sys.modules))\n"
    result = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
        env={**os.environ, "QT_QPA_PLATFORM": "offscreen"},
    )
    loaded = set(result.stdout.split())
    assert "llm_planner.gui.main_window" in loaded
    assert "pyqtgraph" not in loaded
    assert "llm_planner.gui.compare" not in loaded
