"""The nanotron sweep (tests/validation/nanotron_sweep.py) against the app's step-time and
memory models. The issue-14 targets are on docs/ACCURACY.md with the values reached; the
bounds here guard what is reached today (set after running it), so a change that makes the
model worse on real runs fails."""

from __future__ import annotations

import importlib.util
import statistics
import sys
from pathlib import Path
from types import ModuleType

import pytest

HERE = Path(__file__).resolve().parent


def _load(name: str, path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


sweep = _load("llm_planner_nanotron_sweep", HERE / "nanotron_sweep.py")


@pytest.fixture(scope="module")
def summary() -> object:
    return sweep.summary()


def test_the_data_is_the_published_sweep() -> None:
    """1,650 rows (1B and 3B), 1,112 that ran and 538 that crashed (the file's own count)."""
    rows = sweep.sweep_rows()
    assert len(rows) == 1650
    assert sum(r.ok for r in rows) == 1112
    data = sweep.load_sweep()
    assert "nanotron" in data["source"]
    # the architectures' parameter counts are the app's exact counts of those shapes
    from llm_planner.core.primitives.architecture import count_parameters

    for model in ("1B", "3B"):
        arch = sweep.architecture(model)
        published = data["architectures"][f"pb-{model}"]["params_total"]
        assert count_parameters(arch).total == published


def test_layouts_without_a_pipeline_across_nodes_are_close() -> None:
    """Runs whose pipeline stays in a node (or without one) and whose TP stays in a node:
    median |error| of tokens/s per GPU within 10% (7% when this bound was set)."""
    rows = [
        r
        for r in sweep.sweep_rows()
        if r.error is not None and r.tp <= 8 and (r.pp == 1 or r.gpus <= 8)
    ]
    assert len(rows) > 200
    assert statistics.median(abs(r.error) for r in rows) <= 0.10


def test_throughput_bounds(summary: object) -> None:
    """Median |error| 46%, p90 ×13 when set: the cross-node pipelines' tail (ACCURACY.md)."""
    assert summary.median_abs_error <= 0.50
    assert summary.p90_abs_error <= 14.0
    assert summary.median_spearman >= 0.68
    assert summary.median_best_shortfall <= 0.05


def test_memory_bounds(summary: object) -> None:
    """Peak memory median |error| ≤ 12% (11.0% when set); ≥ 97% of the runs that ran are
    predicted to fit (issue 14), and over half of the crashed ones not to."""
    assert summary.memory_median_abs_error <= 0.12
    assert summary.fit_ok_share >= 0.97
    assert summary.crashed_predicted_not_fit_share >= 0.5


def test_fitted_constants_hold_on_the_held_out_model() -> None:
    """Fitted on the 1B runs; the 3B runs' median |error| stays within 60% (54% when set)."""
    assert sweep.median_abs_error_of("1B") <= 0.40
    assert sweep.median_abs_error_of("3B") <= 0.60
