"""No number moves (issue 26): ``report --json`` of every preset's default scenario, of every
validation run, of a sample of the nanotron sweep, and the search's best layouts, recomputed
and compared exactly (12 significant digits) against ``tests/snapshots/report_snapshot.json``.

The snapshot is a regression guard, not a source of truth: it was taken from the code before
the consolidation of issue 26. A commit that moves numbers on purpose regenerates it
(``scripts/gen_report_snapshot.py``) and says which figures moved and why.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _generator() -> ModuleType:
    name = "llm_planner_gen_report_snapshot"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / "gen_report_snapshot.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


GEN = _generator()


@pytest.fixture(scope="module")
def committed() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(GEN.TARGET.read_text(encoding="utf-8"))
    return data


@pytest.fixture(scope="module")
def recomputed() -> dict[str, Any]:
    data: dict[str, Any] = GEN.snapshot()
    return data


def _differences(old: Any, new: Any, path: str, out: list[str]) -> None:
    """Where two JSON values differ, as ``path: old -> new`` lines (the first few)."""
    if len(out) >= 20:
        return
    if isinstance(old, dict) and isinstance(new, dict):
        for key in sorted(set(old) | set(new)):
            if key not in old or key not in new:
                out.append(f"{path}.{key}: {'absent' if key not in old else 'present'} -> ...")
            else:
                _differences(old[key], new[key], f"{path}.{key}", out)
    elif isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        for i, (a, b) in enumerate(zip(old, new, strict=True)):
            _differences(a, b, f"{path}[{i}]", out)
    elif old != new or type(old) is not type(new):
        out.append(f"{path}: {old!r} -> {new!r}")


def test_snapshot_covers_every_preset_and_run(committed: dict[str, Any]) -> None:
    from llm_planner.core.primitives.presets import model_presets

    assert set(committed["presets"]) == set(model_presets())
    runs = json.loads((ROOT / "tests" / "validation" / "runs.json").read_text(encoding="utf-8"))
    assert set(committed["validation_runs"]) == {run["id"] for run in runs["runs"]}
    assert len(committed["nanotron_sweep"]) >= 100
    for group in ("presets", "validation_runs", "nanotron_sweep"):
        for key, report in committed[group].items():
            assert "error" not in report, f"{group}.{key}: {report}"
            assert {"model", "compute", "training", "parallelism", "inference"} <= set(report)


@pytest.mark.parametrize("group", ["presets", "validation_runs", "nanotron_sweep", "search"])
def test_no_number_moves(group: str, committed: dict[str, Any], recomputed: dict[str, Any]) -> None:
    differences: list[str] = []
    _differences(committed[group], recomputed[group], group, differences)
    assert not differences, "numbers moved (regenerate only on purpose):\n" + "\n".join(differences)


def test_rounding_keeps_twelve_significant_digits() -> None:
    assert GEN.rounded(1.0 / 3.0) == 0.333333333333
    assert GEN.rounded({"a": [2.0 / 3.0e9, 5, "x"]}) == {"a": [6.66666666667e-10, 5, "x"]}
    assert GEN.rounded(0.0) == 0.0


def test_file_is_the_generator_text(committed: dict[str, Any]) -> None:
    """The committed file is exactly what the generator writes for its own content (sorted
    keys, one entry a line), so a regeneration diff shows only the numbers that moved."""
    assert GEN.snapshot_text(committed) == GEN.TARGET.read_text(encoding="utf-8")
    assert GEN.TARGET.stat().st_size < 2_500_000
