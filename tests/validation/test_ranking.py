"""The search's uncertainty-aware ranking on the nanotron sweep (issue 31, item 4): each
(model, node count) group ranked with the other model's runs only, against the best layout
measured in that group. Issue 31's target: the first-ranked layout within 15% of the best in
every group. Reached in 13 of 14 groups; the 3B 64-node group misses it (62.7%, 70.4% ranked
by the modeled figure), for the reason docs/ACCURACY.md gives, and is bounded here at what
is reached so that it cannot get worse unnoticed."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]


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


sweep = _load("llm_planner_nanotron_sweep", ROOT / "tests" / "validation" / "nanotron_sweep.py")
gen = _load("llm_planner_gen_ranking", ROOT / "scripts" / "gen_ranking_uncertainty.py")

TARGET = 0.15
MISSED = {("3B", 64): 0.63}
"""Groups that miss the target, with the shortfall reached (bound)."""


def test_the_shipped_table_is_the_sweep_against_todays_model() -> None:
    """resources/ranking_uncertainty.json is regenerated whenever the model moves the sweep
    (scripts/gen_ranking_uncertainty.py)."""
    shipped = (ROOT / "resources" / "ranking_uncertainty.json").read_text(encoding="utf-8")
    assert shipped == gen.table_text()


def test_the_first_ranked_layout_is_within_15_percent_of_the_best_measured() -> None:
    groups = sweep.ranked_groups()
    assert len(groups) == 14
    for g in groups:
        bound = MISSED.get((g.model, g.nodes), TARGET)
        assert g.ranked_shortfall <= bound, (g.model, g.nodes, g.ranked_shortfall)
        # never worse than ranking by the modeled figure
        assert g.ranked_shortfall <= g.modeled_shortfall + 1e-12, (g.model, g.nodes)


def test_the_64_node_zero0_layouts_are_no_longer_ranked_first_on_1b() -> None:
    """1B on 64 nodes: the model ranks dp128 tp4 ZeRO-0 first (measured 1,710 tokens/s per
    GPU against 4,603 for the best, dp128 tp2 pp2 ZeRO-1: 62.9% short); the 3B runs of the
    same mechanisms at 64 nodes measure 0.14-0.18 of their prediction, so the ranking puts
    the best layout first."""
    g = next(g for g in sweep.ranked_groups() if (g.model, g.nodes) == ("1B", 64))
    assert g.modeled_first.label == "dp128 tp4 pp1 z0 mbs2 ga1"
    assert g.ranked_first.label == g.best_measured.label == "dp128 tp2 pp2 z1 mbs2 ga1"
