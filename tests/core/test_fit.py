"""What would make it fit (core.composition.fit): proposed changes, each with the peak the
real estimators give after it; carried by ``report --json``; bounded work."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from scenario_helpers import llama_7b_full_fine_tune_on_4090, llama_70b_tp1_on_512_h100

from llm_planner.cli import main
from llm_planner.core.composition.estimate import estimate
from llm_planner.core.composition.fit import (
    LORA_RANK,
    MAX_SUGGESTIONS,
    is_fine_tuning,
    training_candidates,
    with_changes,
)
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


def test_the_shortest_combination_of_the_ladder_is_proposed_too() -> None:
    scenario = with_changes(
        default_scenario(),
        {"training.micro_batch": 8, "parallelism.zero_stage": 0, "training.recompute": "none"},
    )
    report = estimate(scenario)
    assert not report.training.fits
    suggestions = report.training_fit_suggestions
    combined = [s for s in suggestions if " + " in s.label]
    assert len(combined) == 1  # the shortest prefix that fits, not the longer ones
    assert estimate(with_changes(scenario, combined[0].changes)).training.fits
    # no proposal contains another one that fits (it would change the plan for nothing)
    for a in suggestions:
        for b in suggestions:
            assert a is b or not b.changes.items() <= a.changes.items()
    # fastest first: each says what it costs in time
    times = [s.wall_seconds for s in suggestions]
    assert None not in times
    assert times == sorted(times)


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


# ------------------------------------------------------------ issue 25 item 5: the obvious fixes


def test_a_7b_full_fine_tune_on_a_4090_is_offered_lora_and_qlora() -> None:
    scenario = llama_7b_full_fine_tune_on_4090()
    report = estimate(scenario)
    assert not report.training.fits
    by_label = {s.label: s for s in report.training_fit_suggestions}
    lora = by_label[f"LoRA r{LORA_RANK} + full recompute"]
    qlora = by_label["QLoRA + full recompute"]
    assert lora.changes == {"training.lora_rank": LORA_RANK, "training.recompute": "full"}
    assert qlora.changes["training.qlora"] is True
    # by hand: Llama-2-7B has 6.74e9 parameters (Touvron et al. 2023, Table 1). LoRA keeps
    # the frozen base in bf16, 2 bytes each: 13.48 GB, plus the 1 GB CUDA context
    # allowance: at least 14.48 GB, and the suggestion promises it fits the 24 GB card
    assert 2 * 6.74e9 + 1e9 <= lora.peak_bytes <= 24e9
    # QLoRA stores the base in NF4 with double quantisation, 4.127 bits each (Dettmers et
    # al. 2023 §3): 6.74e9 × 4.127 / 8 = 3.48 GB, plus the 1 GB context: at least 4.48 GB,
    # and less than LoRA's bf16 base
    assert 6.74e9 * 4.127 / 8 + 1e9 <= qlora.peak_bytes < lora.peak_bytes
    for suggestion in (lora, qlora):
        assert suggestion.wall_seconds is not None  # what it costs in time
        assert estimate(with_changes(scenario, suggestion.changes)).training.fits


def test_70b_at_tp1_on_512_h100_is_offered_tp_8_with_pipeline_stages() -> None:
    scenario = llama_70b_tp1_on_512_h100()  # Megatron stack, mixed bf16, ZeRO-1
    suggestions = estimate(scenario).training_fit_suggestions
    layouts = [s for s in suggestions if "parallelism.tp" in s.changes]
    # by hand: Llama-3.1-70B, 70.55e9 parameters; Megatron-LM with --bf16 keeps fp32 main
    # gradients (4 bytes), bf16 weights (2), and ZeRO-1 shards the fp32 master and Adam
    # moments (12) over dp. tp 8 alone: 2·70.55e9/8 + 4·70.55e9/8 + 12·70.55e9/512
    # = 17.6 + 35.3 + 1.65 = 54.6 GB of state before activations: not offered alone once
    # the activations are added. tp 8 × pp 2 (dp = 512/16 = 32): 2·70.55e9/16 + 4·70.55e9/16
    # + 12·70.55e9/(16·32) = 8.8 + 17.6 + 1.65 = 28.1 GB of state, under the H100's 80 GB
    tp8 = layouts[0]
    assert tp8.changes == {"parallelism.tp": 8, "parallelism.pp": 2}
    assert tp8.label == "TP 1 → 8 + PP 1 → 2"
    assert 6 * 70.55e9 / 16 + 12 * 70.55e9 / 512 <= tp8.peak_bytes <= 80e9
    assert tp8.wall_seconds is not None


def test_adapters_only_for_fine_tuning() -> None:
    pretraining = default_scenario()  # 8B, 15T tokens on 512 GPUs: far past 20·P
    assert not is_fine_tuning(pretraining)
    assert not any("lora" in k for _, c in training_candidates(pretraining) for k in c)
    assert is_fine_tuning(llama_7b_full_fine_tune_on_4090())  # 1B tokens < 20 × 6.74B


def test_the_next_larger_gpu_is_a_candidate() -> None:
    # datasheets: H100 SXM 80 GB → GH200 96 GB HBM3 (NVIDIA GH200 Grace Hopper datasheet;
    # the same Hopper peak as the H100, so it ranks above the 96 GB H20), then H200 141 GB
    # (NVIDIA H200 datasheet); RTX 4090 24 GB → RTX 5090 32 GB (NVIDIA GeForce RTX 5090
    # specifications)
    h100 = default_scenario()
    gpus = [c["gpu"] for _, c in training_candidates(h100) if "gpu" in c]
    assert (gpus[0]["id"], gpus[0]["memory_bytes"]) == ("gh200", 96e9)
    assert "h200" in [g["id"] for g in gpus]
    ada = llama_7b_full_fine_tune_on_4090()
    first = next(c for _, c in training_candidates(ada) if "gpu" in c)
    assert first["gpu"]["id"] == "rtx-5090"
    # a run over 80 GB on H100 is offered the smallest larger GPU that holds it
    over = with_changes(h100, {"training.micro_batch": 2, "training.recompute": "none"})
    assert not estimate(over).training.fits
    gpu_fixes = [s for s in estimate(over).training_fit_suggestions if "gpu" in s.changes]
    assert gpu_fixes, "a larger GPU should fit a plan a little over 80 GB"
    fix = gpu_fixes[0]
    assert fix.capacity_bytes in (96e9, 141e9)
    assert 80e9 < fix.peak_bytes <= fix.capacity_bytes  # the same plan, on more memory
    if fix.capacity_bytes == 141e9:
        assert fix.peak_bytes > 96e9  # the 96 GB tier would not have held it
