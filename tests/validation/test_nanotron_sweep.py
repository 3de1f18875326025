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
    median |error| of tokens/s per GPU within 7% (4.7% when this bound was set, 7% before
    nanotron's whole-buffer ZeRO-1 sync was priced)."""
    rows = [
        r
        for r in sweep.sweep_rows()
        if r.error is not None and r.tp <= 8 and (r.pp == 1 or r.gpus <= 8)
    ]
    assert len(rows) > 200
    assert statistics.median(abs(r.error) for r in rows) <= 0.07


def test_throughput_bounds(summary: object) -> None:
    """Bounds a little beyond the figures when set (ACCURACY.md): median |error| 11.0%
    (bound 12%; 12.6% before the backward all-gathers, the cross-node TP step and the
    whole-buffer ZeRO-1 sync), p90 459% (bound 480%: the tail of cross-node pipelines the
    layout does not predict), Spearman per (model, nodes) 0.84 median (bound 0.82) and 0.72
    lowest (bound 0.70; 0.85 / 0.74 before: the tail rows, which no layout term orders, now
    sit among rows priced more exactly; without them every group is ≥ 0.95, see
    test_the_rank_correlation_without_the_tail), the predicted-best layout 0% short of the
    best measured in the median group (bound 5%) and 70.4% in the worst (the 64-node
    groups, whose ZeRO-0 runs measure 5-13× slower than priced; bound 75%)."""
    assert summary.median_abs_error <= 0.12
    assert summary.p90_abs_error <= 4.8
    assert summary.median_spearman >= 0.82
    assert summary.min_spearman >= 0.70
    assert summary.median_best_shortfall <= 0.05
    assert summary.worst_best_shortfall <= 0.75


def test_the_rank_correlation_without_the_tail() -> None:
    """Without the runs that measure under half the predicted throughput, the rank
    correlation is ≥ 0.95 in every (model, nodes) group (0.95-0.99 when this bound was set;
    bound 0.93): what the model orders, it orders right."""
    clean = sweep.spearman_without_tail()
    assert len(clean) == 14
    assert min(clean) >= 0.93


def test_fit_rows_and_held_out_rows() -> None:
    """The constants are fitted on the 1B rows (9.6% median |error| when set, bound 10.5%)
    and checked on the held-out 3B rows (12.9%, bound 14%; 16.3% before the refit): a change
    that only fits the rows it was tuned on fails the second."""
    assert sweep.median_abs_error_of("1B") <= 0.105
    assert sweep.median_abs_error_of("3B") <= 0.14


def test_pipelines_and_tensor_parallelism_across_nodes_are_priced() -> None:
    """The 429 runs with TP in a node and a pipeline across nodes were +135% (median signed
    error) before nanotron's pipeline-spanning-nodes floor, −0.1% when this bound was set:
    within ±10%; the 210 with TP across nodes too, +148% then, +35% now (bound +40%: tp 32
    pipelines measure above the floor host + 3 ms × tp); the 107 with TP across nodes and no
    pipeline +81% before nanotron's cross-node TP step and backward all-gathers, −3.1% now:
    within ±10%."""
    errors = {name: err for name, _, err in sweep.category_errors()}
    assert abs(errors["TP in a node, PP across nodes"]) <= 0.10
    assert errors["TP across nodes, PP across nodes"] <= 0.40
    assert abs(errors["no TP, PP across nodes"]) <= 0.10
    assert abs(errors["TP across nodes, no PP"]) <= 0.10


def test_memory_bounds(summary: object) -> None:
    """Peak memory median |error| ≤ 12% (11.0% when set); ≥ 97% of the runs that ran are
    predicted to fit (issue 14), and over half of the crashed ones not to."""
    assert summary.memory_median_abs_error <= 0.12
    assert summary.fit_ok_share >= 0.97
    assert summary.crashed_predicted_not_fit_share >= 0.5
