"""The rules of thumb on every plan (issue 31 item 5): a rate below its generation's
troubleshooting threshold or outside its published band is named in the report, whether the
step-time model produced it or the user gave it.

Bands and thresholds are the published figures in core/composition/calibration_checks.py
RATE_BANDS (the seed talk: 100-180 TFLOP/s per A100, troubleshoot below 115; 30-40 per V100;
Llama 3's 380-430 per H100).
"""

from __future__ import annotations

from llm_planner.core.composition.estimate import estimate
from llm_planner.core.composition.scenario import Scenario, default_scenario
from llm_planner.core.inputs.scenario import with_changes
from llm_planner.core.primitives.gpus import get_gpu


def _scenario(gpu: str, **compute: object) -> Scenario:
    sc = default_scenario()
    return sc.model_copy(
        update={
            "gpu": get_gpu(gpu),
            "compute": sc.compute.model_copy(update=compute),
        }
    )


def _checks(sc: Scenario) -> list:  # type: ignore[type-arg]
    return list(estimate(sc, suggest=False).calibration.checks)


def test_a_given_a100_rate_below_115_is_flagged_as_below_the_troubleshooting_threshold() -> None:
    """`--tflops 90` on an A100 used to pass silently: 90 < 115 (and below the band's 100)."""
    checks = _checks(
        _scenario("a100-sxm4-80gb", throughput_mode="tflops", achieved_flops_per_gpu=90e12)
    )
    given = [c for c in checks if c.what.startswith("measured: the TFLOP/s given")]
    assert len(given) == 1
    check = given[0]
    assert check.below
    assert check.flops_per_gpu_per_s == 90e12  # model FLOP/s per GPU, as given
    assert "below the 115 TFLOP/s troubleshooting threshold" in check.sentence()


def test_inside_the_band_but_under_the_threshold_is_still_named() -> None:
    """110 TFLOP/s is inside the seed's 100-180 band but under its 115 troubleshooting line;
    120 is above it and is not flagged."""
    low = _checks(
        _scenario("a100-sxm4-80gb", throughput_mode="tflops", achieved_flops_per_gpu=110e12)
    )
    ok = _checks(
        _scenario("a100-sxm4-80gb", throughput_mode="tflops", achieved_flops_per_gpu=120e12)
    )
    assert [c.below for c in low if c.what.startswith("measured")] == [True]
    assert [c.below or c.above for c in ok if c.what.startswith("measured")] == [False]


def test_an_assumed_mfu_is_checked_as_its_rate() -> None:
    """An assumed MFU of 0.30 on an A100 is 0.30 · 312 = 93.6 TFLOP/s of model FLOPs: below
    115."""
    checks = _checks(_scenario("a100-sxm4-80gb", throughput_mode="mfu", mfu=0.30))
    given = [c for c in checks if c.what.startswith("assumed")]
    assert len(given) == 1
    assert abs(given[0].flops_per_gpu_per_s - 0.30 * 312e12) < 1e9
    assert given[0].below


def test_a_v100_plan_says_why_it_is_above_the_practitioners_band() -> None:
    """The default 8B on V100 at tp 4 (the default tp 1 does not fit in 32 GB: 8.03e9 ×
    (2 bf16 weights + 4 fp32 gradients) = 48 GB alone) prices above 40 TFLOP/s per GPU (the
    model's Ampere/Hopper efficiencies); the report says so, with the reason, instead of a
    bare calibration note."""
    checks = _checks(with_changes(_scenario("v100-sxm2-32gb"), {"parallelism.tp": 4}))
    modeled = [c for c in checks if c.what.startswith("modeled")]
    assert len(modeled) == 1
    assert modeled[0].above
    assert modeled[0].flops_per_gpu_per_s > 40e12
    sentence = modeled[0].sentence()
    assert "above the 30-40 band" in sentence
    assert "24-32% of that peak" in sentence


def test_a_modeled_plan_carries_no_given_rate_check() -> None:
    checks = _checks(default_scenario())
    assert [c.what for c in checks] == ["modeled: the scenario's layout"]


def test_a_plan_that_does_not_fit_has_no_modeled_rate_to_check() -> None:
    """The default tp 1 on V100 needs more than 32 GB per GPU (above), so it is not priced
    (issue 25 item 2) and no modeled rate is checked."""
    sc = _scenario("v100-sxm2-32gb")
    assert not estimate(sc, suggest=False).training.fits
    assert [c for c in _checks(sc) if c.what.startswith("modeled")] == []
    fits = with_changes(sc, {"parallelism.tp": 4})
    assert [c.what for c in _checks(fits)] == ["modeled: the scenario's layout"]
