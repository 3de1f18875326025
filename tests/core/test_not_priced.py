"""A plan that does not fit gets no time, cost or MFU (issue 25 item 2): the compute section
refuses to price it and says what it needs; ``report --json`` has the figures null; the fit
suggestions carry the changed plan's own time, cost and MFU."""

from __future__ import annotations

import json
import re

import pytest
from scenario_helpers import llama_7b_full_fine_tune_on_4090, llama_70b_tp1_on_512_h100

from llm_planner.cli import main
from llm_planner.core.composition.compare import compare
from llm_planner.core.composition.estimate import estimate
from llm_planner.core.composition.fit import with_changes
from llm_planner.core.composition.hardware import rank_hardware
from llm_planner.core.composition.scenario import default_scenario
from llm_planner.core.primitives.gpus import get_gpu
from llm_planner.core.sections.compute import MemoryNeed, does_not_fit

NOT_PRICED = ("mfu", "hfu", "compute_seconds", "wall_seconds", "gpu_hours", "cost_usd")


def _needed_gb(label: str) -> tuple[float, float]:
    found = re.search(r"needs ([\d.]+) GB per GPU of ([\d.]+) GB", label)
    assert found, label
    return float(found.group(1)), float(found.group(2))


def test_the_phrase_names_what_the_plan_needs() -> None:
    assert does_not_fit(MemoryNeed(peak_bytes=399e9, capacity_bytes=80e9)) == (
        "needs 399 GB per GPU of 80.0 GB; not priced"
    )
    assert does_not_fit(MemoryNeed(peak_bytes=80e9, capacity_bytes=80e9)) is None
    assert does_not_fit(None) is None


def test_70b_at_tp1_on_h100_is_not_priced() -> None:
    report = estimate(llama_70b_tp1_on_512_h100())
    compute = report.compute
    for key in NOT_PRICED:
        assert getattr(compute, key) is None, key
    needs, capacity = _needed_gb(compute.throughput_label)
    # by hand: Llama-3.1-70B has 70.55e9 parameters (Meta model card: 70B); at tp 1 and ZeRO-1
    # every GPU holds the bf16 weights and bf16 gradients whole, 2 + 2 bytes each:
    # 4 × 70.55e9 = 282 GB before optimizer shards and activations, over the H100's 80 GB
    assert needs >= 282
    assert capacity == 80.0
    assert compute.throughput_label.startswith("modeled: ")


def test_7b_full_fine_tune_on_a_4090_is_not_priced_whatever_the_source() -> None:
    # by hand: Llama-2-7B, 6.74e9 parameters (Touvron et al. 2023, Table 1: 7B), mixed
    # precision Adam keeps 16 bytes each (ZeRO §3.1) on its one GPU: 107.8 GB > 24 GB
    scenario = llama_7b_full_fine_tune_on_4090()
    for changes in (
        {},
        {"compute.throughput_mode": "mfu", "compute.mfu": 0.4},
        {"compute.throughput_mode": "tokens_per_s", "compute.tokens_per_s_per_gpu": 2000.0},
    ):
        compute = estimate(with_changes(scenario, changes)).compute
        assert compute.wall_seconds is None
        assert compute.cost_usd is None
        assert compute.mfu is None
        needs, capacity = _needed_gb(compute.throughput_label)
        assert needs >= 107.8
        assert capacity == 24.0


def test_report_json_has_null_time_cost_and_mfu_with_the_reason(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = main(["report", "--model", "llama-3.1-70b", "--tp", "1", "--pp", "1", "--json"])
    assert code == 0
    compute = json.loads(capsys.readouterr().out)["compute"]
    for key in NOT_PRICED:
        assert compute[key] is None, key
    assert "needs " in compute["throughput_label"]
    assert "per GPU of 80.0 GB" in compute["throughput_label"]


def test_a_plan_that_fits_is_still_priced() -> None:
    compute = estimate(default_scenario()).compute
    assert compute.wall_seconds is not None
    assert compute.cost_usd is not None
    assert "needs" not in compute.throughput_label


def test_the_nearest_plan_that_fits_carries_its_own_figures() -> None:
    scenario = llama_70b_tp1_on_512_h100()
    suggestions = estimate(scenario).training_fit_suggestions
    assert suggestions
    for suggestion in suggestions:
        after = estimate(with_changes(scenario, suggestion.changes)).compute
        assert after.wall_seconds is not None
        # the figures shown beside the suggestion are the changed plan's own estimate
        assert suggestion.wall_seconds == after.wall_seconds
        assert suggestion.cost_usd == after.cost_usd
        assert suggestion.mfu == after.mfu


def test_compare_reads_null_with_the_reason() -> None:
    fits, too_big = default_scenario(), llama_70b_tp1_on_512_h100()
    comparison = compare([fits, too_big])
    assert comparison.row("wall_seconds").values[1] is None
    assert comparison.row("cost_usd").values[1] is None
    assert comparison.row("mfu").values[1] is None
    assert comparison.not_priced[0] is None
    reason = comparison.not_priced[1]
    assert reason is not None
    assert "needs" in reason
    assert comparison.fits == [True, False]


def test_the_hardware_ranking_prices_only_layouts_that_fit() -> None:
    scenario = llama_7b_full_fine_tune_on_4090()
    gpu = get_gpu("rtx-4090")
    ranking = rank_hardware(scenario, gpus=[gpu], max_counts=3)
    assert ranking.options
    for option in ranking.options:
        if option.time_seconds is None:
            assert option.status == "does not fit"
            continue
        assert option.layout is not None
        assert option.layout.peak_bytes <= gpu.memory_bytes
