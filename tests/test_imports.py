"""Imports point one way: no cycles anywhere in ``llm_planner``, and ``core``'s layers only
import from themselves or the layers below them (primitives < quantities < inputs < sections <
composition < files). Every import counts: module level, inside functions, and under
``TYPE_CHECKING``, since each is a dependency a reader has to follow."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FOLDERS = {"cli": "llm_planner", "core": "llm_planner.core", "gui": "llm_planner.gui"}
LAYERS = ("primitives", "quantities", "inputs", "sections", "composition", "files")
"""core's sub-packages, bottom first."""


def _modules() -> dict[str, Path]:
    """Dotted name → source file, as setuptools' package-dir maps the folders."""
    out: dict[str, Path] = {}
    for folder, package in FOLDERS.items():
        for path in sorted((ROOT / folder).rglob("*.py")):
            parts = list(path.relative_to(ROOT / folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            out[".".join([package, *parts])] = path
    return out


def _imports(path: Path, known: set[str]) -> set[str]:
    """The ``llm_planner`` modules ``path`` imports (``from a import b``: ``a.b`` if a module)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
        else:
            continue
        for name in names:
            module = name
            while module and module not in known:
                module = module.rpartition(".")[0]
            if module:
                found.add(module)
    return found


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    known = set(modules)
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        # importing a.b.c runs a and a.b first: a package's __init__ is not an edge to follow
        graph[name] = {
            m for m in _imports(path, known) if m != name and not name.startswith(m + ".")
        }
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan 1972)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_the_cycle_finder_finds_a_cycle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_the_walker_sees_function_level_and_type_checking_imports(tmp_path: Path) -> None:
    source = tmp_path / "m.py"
    source.write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from llm_planner.core.files import store\n"
        "def f():\n    import llm_planner.core.primitives.units\n",
        encoding="utf-8",
    )
    known = set(_modules())
    assert _imports(source, known) == {
        "llm_planner.core.files",  # the package runs first
        "llm_planner.core.files.store",
        "llm_planner.core.primitives.units",
    }


def test_no_import_cycles() -> None:
    found = cycles(_graph())
    assert not found, "import cycles: " + "; ".join(" ↔ ".join(c) for c in found)


def _layer(module: str) -> int | None:
    parts = module.split(".")
    if len(parts) > 2 and parts[1] == "core" and parts[2] in LAYERS:
        return LAYERS.index(parts[2])
    return None


def test_core_layers_import_only_downwards() -> None:
    graph = _graph()
    upward = [
        f"{module} → {target}"
        for module, targets in graph.items()
        if (mine := _layer(module)) is not None
        for target in targets
        if (theirs := _layer(target)) is not None and theirs > mine
    ]
    assert not upward, "core imports a higher layer: " + "; ".join(sorted(upward))


@pytest.mark.parametrize("outside", ["llm_planner.gui", "llm_planner.cli"])
def test_core_never_imports_the_faces(outside: str) -> None:
    graph = _graph()
    offenders = [
        f"{module} → {target}"
        for module, targets in graph.items()
        if module.startswith("llm_planner.core")
        for target in targets
        if target == outside or target.startswith((outside + ".", outside + "_"))
    ]
    assert not offenders, offenders


def test_every_core_module_sits_in_a_layer() -> None:
    loose = [m for m in _graph() if m.startswith("llm_planner.core.") and _layer(m) is None]
    assert not loose, f"core modules outside the layers {LAYERS}: {loose}"


def test_every_package_is_installed() -> None:
    """``pip install .`` ships only the packages pyproject lists: a new sub-package that is
    not listed imports in an editable install and is missing from the real one."""
    import tomllib

    listed = set(
        tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["tool"]["setuptools"][
            "packages"
        ]
    )
    found = {name for name, path in _modules().items() if path.name == "__init__.py"} | {
        "llm_planner"
    }
    assert found - listed == set(), "add to [tool.setuptools] packages in pyproject.toml"


def test_core_imports_only_core() -> None:
    """``core`` depends on nothing of the app above it: not the command line's package (where
    the version once lived, an edge the cycle finder cannot see since every module imports
    its package), not the window."""
    graph = _graph()
    outside = {
        f"{name} → {target}"
        for name, targets in graph.items()
        if name.startswith("llm_planner.core")
        for target in targets
        if not target.startswith("llm_planner.core")
    }
    assert not outside, sorted(outside)


MAX_MODULE_LINES = 800
"""Issue 26: no module under core/, gui/ or the command line's folder is a room too big to
live in."""


def test_no_module_exceeds_800_lines() -> None:
    """Every module of the three folders has at most :data:`MAX_MODULE_LINES` lines (two
    merges in one session took sections/training_memory.py to 818 and 820 unnoticed)."""
    too_long = {
        name: n
        for name, path in _modules().items()
        if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES
    }
    assert not too_long, too_long


def test_the_size_check_sees_every_folder() -> None:
    """The walker reaches all three folders (a check that saw none would pass)."""
    folders = {path.relative_to(ROOT).parts[0] for path in _modules().values()}
    assert folders == set(FOLDERS)
    assert len(_modules()) > 150
