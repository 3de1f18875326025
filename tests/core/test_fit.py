"""What would make it fit (core.composition.fit): proposed changes, each with the peak the
real estimators give after it; carried by ``report --json``; bounded work."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from llm_planner.cli import main
from llm_planner.core.composition.estimate import estimate
from llm_planner.core.composition.fit import MAX_SUGGESTIONS, with_changes
from llm_planner.core.composition.scenario import default_scenario
from llm_planner.core.primitives import units


def test_a_run_that_fits_gets_no_suggestions() -> None:
    report = estimate(default_scenario())
    assert report.training.fits
    assert report.training_fit_suggestions == []
    assert report.inference_fit_suggestions == []


def test_training_suggestions_fit_and_their_peak_is_the_estimators() -> None:
    # micro-batch 16 of 4096 tokens on an 8B model does not fit an 80 GB GPU
    scenario = with_changes(default_scenario(), {"training.micro_batch": 16})
    report = estimate(scenario)
    assert not report.training.fits
    suggestions = report.training_fit_suggestions
    assert 1 <= len(suggestions) <= MAX_SUGGESTIONS
    for suggestion in suggestions:
        after = estimate(with_changes(scenario, suggestion.changes))
        assert after.training.fits, suggestion.label
        # the promised peak is what the full estimate gives after applying the change
        assert after.training.peak_bytes == pytest.approx(suggestion.peak_bytes)
        assert suggestion.peak_bytes <= suggestion.capacity_bytes
    labels = [s.label for s in suggestions]
    assert "micro-batch 16 → 1" in labels  # activations scale with b (Korthikanti 2022 §4.1)


def test_when_no_single_change_fits_the_shortest_combination_is_proposed() -> None:
    scenario = with_changes(
        default_scenario(),
        {"training.micro_batch": 8, "parallelism.zero_stage": 0, "training.recompute": "none"},
    )
    report = estimate(scenario)
    assert not report.training.fits
    assert len(report.training_fit_suggestions) == 1
    combined = report.training_fit_suggestions[0]
    assert " + " in combined.label
    assert estimate(with_changes(scenario, combined.changes)).training.fits


def test_inference_suggestions_propose_the_largest_format_or_batch_that_fits() -> None:
    # Llama-3.1-8B, batch 64 at 128k tokens: 128 KiB of bf16 KV cache per token
    # (2 · 32 layers · 8 kv heads · 128 · 2 bytes) → ~1.1 TB per GPU, far over 80 GB
    scenario = with_changes(
        default_scenario(), {"inference.batch": 64, "inference.context": 131072}
    )
    report = estimate(scenario)
    assert not report.inference.fits
    suggestions = report.inference_fit_suggestions
    assert suggestions
    for suggestion in suggestions:
        after = estimate(with_changes(scenario, suggestion.changes))
        assert after.inference.fits
        assert after.inference.per_gpu_total_bytes == pytest.approx(suggestion.peak_bytes)
    kinds = [tuple(sorted(s.changes)) for s in suggestions]
    assert len(kinds) == len(set(kinds))  # one proposal per kind of change: the smallest


def test_estimate_stays_fast_when_nothing_fits() -> None:
    scenario = with_changes(
        default_scenario(),
        {"training.micro_batch": 64, "inference.batch": 256, "inference.context": 131072},
    )
    estimate(scenario)
    start = time.perf_counter()
    for _ in range(5):
        estimate(scenario)
    per_estimate = (time.perf_counter() - start) / 5
    assert per_estimate < 0.25  # bounded: at most a dozen extra section estimates


def test_report_json_carries_fit_suggestions(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", "--micro-batch", "16", "--json"]) == 0
    data: dict[str, Any] = json.loads(capsys.readouterr().out)
    suggestions = data["training"]["fit_suggestions"]
    assert suggestions
    assert {"label", "changes", "peak_bytes", "capacity_bytes", "fits"} <= set(suggestions[0])
    assert data["inference"]["fit_suggestions"] == []


def test_lengths_read_k_as_1024_and_counts_stay_decimal() -> None:
    # "8k context" is 8,192 tokens (Llama-2's max_position_embeddings 4096 = "4k")
    assert units.parse_length("8k") == 8192
    assert units.parse_length("16k") == 16384
    assert units.parse_length("128K") == 131072
    assert units.parse_length("1.5k") == 1536
    assert units.parse_length("8192") == 8192
    assert units.parse_length(512) == 512
    assert units.parse_count("2k") == 2000  # tokens, parameters: decimal
    with pytest.raises(units.UnitError):
        units.parse_length("1.0001k")
    with pytest.raises(units.UnitError):
        units.parse_length("-2k")
