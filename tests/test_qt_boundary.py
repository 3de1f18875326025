"""``core`` never imports Qt, pyqtgraph or the GUI: checked statically and at run time."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import llm_planner.core

FORBIDDEN = ("PySide6", "pyqtgraph", "shiboken6", "PyQt5", "PyQt6", "llm_planner.gui")
CORE_DIR = Path(llm_planner.core.__file__).parent


def _imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


def test_no_core_module_imports_qt_or_gui() -> None:
    offenders = {
        f"{path.name}: {name}"
        for path in CORE_DIR.rglob("*.py")
        for name in _imported_modules(path)
        if name.startswith(FORBIDDEN)
    }
    assert not offenders, f"core imports Qt or the GUI: {sorted(offenders)}"


def test_core_imports_and_estimates_with_qt_unimportable() -> None:
    """Import every core module, and run an estimate, with PySide6 and pyqtgraph blocked."""
    script = """
import importlib, pkgutil, sys
class Block:
    def find_spec(self, name, path=None, target=None):
        if name.split('.')[0] in ('PySide6', 'pyqtgraph', 'shiboken6', 'PyQt5', 'PyQt6'):
            raise ImportError('blocked for the test: ' + name)
        return None
sys.meta_path.insert(0, Block())
import llm_planner.core as core
names = [i.name for i in pkgutil.walk_packages(core.__path__, 'llm_planner.core.')]
for name in names:
    importlib.import_module(name)
from llm_planner.core.composition.estimate import estimate
from llm_planner.core.composition.scenario import default_scenario
estimate(default_scenario())
assert not any(m.split('.')[0] in ('PySide6', 'pyqtgraph') for m in sys.modules)
print(len(names), 'ok')
"""
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().endswith("ok")
    # every module under core/, not only the sub-packages' __init__s
    expected = {
        ".".join(("llm_planner.core", *path.relative_to(CORE_DIR).with_suffix("").parts))
        for path in CORE_DIR.rglob("*.py")
        if path.name != "__init__.py"
    }
    assert int(result.stdout.split()[0]) >= len(expected)
