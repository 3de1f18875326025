"""One throughput for every face: the compute section takes the parallelism section's modeled
step time by default, the two agree to the last digit, every search row applied to the
scenario agrees with itself, and the time-against-GPUs chart never shows a layout family
faster than perfect scaling."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from llm_planner.core.composition.estimate import estimate
from llm_planner.core.composition.scaling import time_vs_gpus
from llm_planner.core.composition.scenario import Scenario, default_scenario
from llm_planner.core.composition.search import apply_row, search_scenario
from llm_planner.core.primitives.presets import get_preset


def _with(scenario: Scenario, **sections: dict[str, object]) -> Scenario:
    data = scenario.model_dump()
    for section, changes in sections.items():
        if isinstance(data[section], dict):
            data[section].update(changes)
        else:
            data[section] = changes
    return Scenario.model_validate(data)


def test_default_throughput_is_the_modeled_step_time() -> None:
    report = estimate(default_scenario())
    compute, par = report.compute, report.parallelism
    assert compute.throughput_source == "modeled"
    assert "modeled" in compute.throughput_label
    # the very same floats, not merely close ones
    assert compute.tokens_per_s == par.tokens_per_s
    assert compute.mfu == par.mfu
    # time is D ÷ tokens/s, written out: 15e12 tokens at the layout's tokens/s
    assert compute.compute_seconds == 15e12 / par.tokens_per_s
    assert compute.tokens_per_s_per_gpu == par.tokens_per_s / par.gpus


def test_every_search_row_applied_agrees_with_itself_and_with_compute() -> None:
    scenario = _with(
        default_scenario(),
        model={"preset": "llama-3.1-70b", "architecture": get_preset("llama-3.1-70b").architecture},
    )
    rows = search_scenario(scenario, top=8).rows
    assert rows
    for row in rows:
        applied = apply_row(scenario, row)
        report = estimate(applied)
        assert report.parallelism.tokens_per_s == pytest.approx(row.tokens_per_s, rel=1e-12)
        assert report.parallelism.mfu == pytest.approx(row.mfu, rel=1e-12)
        assert report.compute.tokens_per_s == report.parallelism.tokens_per_s
        assert report.compute.mfu == report.parallelism.mfu
        assert report.compute.compute_seconds == 15e12 / report.parallelism.tokens_per_s


def test_assumed_mfu_means_the_modeled_mfu() -> None:
    """An assumed MFU equal to the modeled one gives the modeled time: one MFU definition."""
    base = default_scenario()
    modeled = estimate(base).compute
    assumed = estimate(_with(base, compute={"throughput_mode": "mfu", "mfu": modeled.mfu})).compute
    assert assumed.throughput_source == "assumed_mfu"
    assert assumed.compute_seconds == pytest.approx(modeled.compute_seconds, rel=1e-12)


def test_seed_arithmetic_holds_for_an_assumed_mfu() -> None:
    """Transformer Math 101: t = 6·P·D ÷ (N · peak · MFU) with the budget's own count."""
    scenario = _with(default_scenario(), compute={"throughput_mode": "mfu", "mfu": 0.4})
    report = estimate(scenario)
    p = report.compute.params
    peak = scenario.gpu.peak_flops.for_dtype("bf16")
    assert peak is not None
    expected = 6 * p * 15e12 / (512 * peak * 0.4)
    assert report.compute.compute_seconds == pytest.approx(expected, rel=1e-12)
    # the parallelism tab still models its own layout; compute says it used the assumption
    assert report.compute.mfu == pytest.approx(0.4)
    assert report.compute.throughput_label.startswith("assumed")


def test_attention_flops_change_the_count_of_both_sections_alike() -> None:
    scenario = _with(default_scenario(), compute={"include_attention_flops": True})
    report = estimate(scenario)
    assert report.compute.mfu == report.parallelism.mfu
    plain = estimate(default_scenario())
    # same step time, more FLOPs counted per token: MFU grows by the count's ratio
    ratio = report.compute.flops_per_token / plain.compute.flops_per_token
    assert report.parallelism.tokens_per_s == plain.parallelism.tokens_per_s
    assert report.parallelism.mfu == pytest.approx(plain.parallelism.mfu * ratio, rel=1e-9)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True
)
@given(
    gpus=st.sampled_from([8, 64, 512, 2048]),
    tp=st.sampled_from([1, 2, 8]),
    pp=st.sampled_from([1, 2, 4]),
    zero=st.sampled_from([0, 1, 3]),
    micro_batch=st.sampled_from([1, 2]),
    mode=st.sampled_from(["modeled", "mfu"]),
    mfu=st.floats(0.05, 0.9),
)
def test_no_layout_family_beats_perfect_scaling(
    *, gpus: int, tp: int, pp: int, zero: int, micro_batch: int, mode: str, mfu: float
) -> None:
    assume(tp * pp <= gpus)  # more GPUs in one replica than the cluster has is refused
    scenario = _with(
        default_scenario(),
        num_gpus=gpus,
        parallelism={"tp": tp, "pp": pp, "zero_stage": zero},
        training={"micro_batch": micro_batch},
        compute={"throughput_mode": mode, "mfu": mfu},
    )
    report = estimate(scenario)
    series = time_vs_gpus(scenario, report)
    if not report.training.fits:  # not priced (issue 25): no rate, no series
        assert report.compute.wall_seconds is None
        assert series is None
        return
    assert series is not None
    perfect = {p.gpus: p.wall_seconds for p in series.perfect}
    assert report.compute.wall_seconds is not None
    assert report.compute.wall_seconds >= perfect[gpus] * (1 - 1e-12)
    assert series.family, "the family has points (dp = 1, 2, 4 … at tp·pp GPUs each)"
    for point in series.family:
        # the perfect line is drawn at every GPU count of the family too
        assert point.gpus in perfect
        assert point.wall_seconds >= perfect[point.gpus] * (1 - 1e-12)
