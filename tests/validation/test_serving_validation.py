"""Serving model against published engine benchmarks (issue 30): every table's median
|error| within the issue's 15 %, on every row the table holds (``serving_validation.py``
prices them; ``docs/ACCURACY.md``, "Serving", lists them)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

HERE = Path(__file__).resolve().parent


def _load(name: str, path: Path) -> ModuleType:
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


sv = _load("llm_planner_serving_validation", HERE / "serving_validation.py")

ROWS_PER_TABLE = {
    "TensorRT-LLM max throughput": 220,
    "LMDeploy TTFT": 80,
    "LMDeploy TPOT": 80,
    "llama.cpp tg (gaming)": 119,
    "llama.cpp pp (gaming)": 119,
    "llama.cpp tg (professional)": 236,
    "llama.cpp pp (professional)": 236,
    "llama.cpp tg (Apple)": 43,
    "llama.cpp pp (Apple)": 43,
}
"""Rows compared per table: every measured row of serving-calibration.json (its 1,109 rows
less the 4 out-of-memory rows and LMDeploy's 9 request-throughput rows of unstated
lengths; llama.cpp's 740 rows split into tg and pp)."""


def test_every_row_is_priced() -> None:
    tables = sv.by_table()
    assert {name: len(rows) for name, rows in tables.items()} == ROWS_PER_TABLE


@pytest.mark.parametrize("table", sorted(ROWS_PER_TABLE))
def test_median_error_within_target(table: str) -> None:
    rows = sv.by_table()[table]
    median = sv.median_abs_error(rows)
    assert median <= sv.TARGET_MEDIAN, f"{table}: median |error| {median:.1%} over 15%"
