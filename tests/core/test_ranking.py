"""core/composition/ranking.py: a layout's mechanism class, the spread of measured ÷ modeled
throughput it reads from the table, and the search's use of it."""

from __future__ import annotations

import json
from typing import Any

import pytest

from llm_planner.cli import main
from llm_planner.core.composition import ranking
from llm_planner.core.composition.ranking import MechanismClass, mechanism_class


def test_mechanism_class_reads_what_spans_nodes() -> None:
    # 8 GPUs per node: tp 2 × pp 8 = 16 GPUs per pipeline, so the pipeline spans nodes
    assert mechanism_class(2, 8, 1, 8) == MechanismClass(1, True, True, False)
    # tp 2 × pp 4 = 8 fits one node
    assert mechanism_class(2, 4, 0, 8) == MechanismClass(0, True, False, False)
    # tp 16 > 8: the TP group spans nodes
    assert mechanism_class(16, 1, 0, 8) == MechanismClass(0, False, False, True)


TABLE: dict[str, Any] = {
    "stack": "nanotron",
    "gpus_per_node": 8,
    "classes": [
        # five runs at 64 nodes: ratios 0.2 ... 1.0
        {"model": "A", "nodes": 64, "zero": 0, "pipelined": False,
         "pipeline_across_nodes": False, "tp_across_nodes": False,
         "ratios": [0.2, 0.4, 0.6]},
        {"model": "B", "nodes": 64, "zero": 0, "pipelined": False,
         "pipeline_across_nodes": False, "tp_across_nodes": False, "ratios": [0.8, 1.0]},
        # two runs only at 8 nodes: too few, the class at any node count is used
        {"model": "A", "nodes": 8, "zero": 0, "pipelined": False,
         "pipeline_across_nodes": False, "tp_across_nodes": False, "ratios": [1.0, 1.0]},
    ],
}  # fmt: skip


@pytest.fixture
def table(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ranking, "_table", lambda: TABLE)
    ranking._ratios.cache_clear()
    ranking.uncertainty.cache_clear()
    yield
    ranking._ratios.cache_clear()
    ranking.uncertainty.cache_clear()


@pytest.mark.usefixtures("table")
def test_the_spread_is_the_quartiles_of_the_class_at_that_node_count() -> None:
    cls = MechanismClass(0, False, False, False)
    u = ranking.uncertainty("nanotron", cls, 64)
    assert u is not None
    # 0.2, 0.4, 0.6, 0.8, 1.0: the 25th percentile is the 2nd value, the 75th the 4th
    assert (u.low, u.high, u.runs) == (pytest.approx(0.4), pytest.approx(0.8), 5)
    assert ranking.ranking_factor(u) == pytest.approx(0.4)
    # leaving model B out: 0.2, 0.4, 0.6 → 0.3 and 0.5 (linear between order statistics)
    a = ranking.uncertainty("nanotron", cls, 64, exclude_model="B")
    assert a is not None
    assert (a.low, a.high, a.runs) == (pytest.approx(0.3), pytest.approx(0.5), 3)


@pytest.mark.usefixtures("table")
def test_too_few_runs_take_the_class_at_every_node_count() -> None:
    cls = MechanismClass(0, False, False, False)
    u = ranking.uncertainty("nanotron", cls, 8)
    assert u is not None
    assert u.runs == 7  # 5 at 64 nodes + 2 at 8
    assert u.basis.endswith("any node count")


@pytest.mark.usefixtures("table")
def test_an_unmeasured_mechanism_takes_every_run_at_that_scale() -> None:
    u = ranking.uncertainty("nanotron", MechanismClass(3, True, True, True), 50)
    assert u is not None
    assert u.runs == 5  # every run at 64 nodes, the nearest node count measured
    assert u.basis.startswith("no run of")


@pytest.mark.usefixtures("table")
def test_another_stack_has_no_spread_and_ranks_by_the_modeled_figure() -> None:
    assert ranking.uncertainty("megatron", MechanismClass(0, False, False, False), 64) is None
    assert ranking.ranking_factor(None) == 1.0


def _search(capsys: pytest.CaptureFixture[str], *args: str) -> list[dict[str, Any]]:
    assert main(["search", *args, "--json", "--top", "5"]) == 0
    rows: list[dict[str, Any]] = json.loads(capsys.readouterr().out)
    return rows


def test_search_rows_carry_their_uncertainty(capsys: pytest.CaptureFixture[str]) -> None:
    common = ("--model", "llama-3.1-8b", "--gpu", "h100", "--num-gpus", "128",
              "--global-batch", "256", "--seq-len", "4096")  # fmt: skip
    nano = _search(capsys, *common, "--stack", "nanotron")
    assert nano
    for r in nano:
        assert r["measured_ratio_low"] is not None
        assert r["measured_ratio_low"] <= r["measured_ratio_high"]
        assert r["uncertainty_runs"] >= ranking.MIN_RUNS
        assert r["ranked_tokens_per_s"] == pytest.approx(
            r["tokens_per_s"] * r["measured_ratio_low"]
        )
    ranked = [r["ranked_tokens_per_s"] for r in nano]
    assert ranked == sorted(ranked, reverse=True)
    # Megatron: nothing measured, ranked by the modeled figure, and said so
    mega = _search(capsys, *common, "--stack", "megatron")
    for r in mega:
        assert r["measured_ratio_low"] is None
        assert r["ranked_tokens_per_s"] == r["tokens_per_s"]
        assert r["uncertainty_basis"].startswith("no measured runs")
