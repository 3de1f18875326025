"""Calibration (issue 15): measured runs fit the step-time and memory parameters, and the
calibrated model drives the report, the search and the scaling curve.

Synthetic measurements are made by pricing a layout with *known* parameters (kernel
efficiency 0.5, say) through the step-time model; the fit must give those parameters back
from the default starting point. That tests the fit, not a number copied from its output.
"""

from __future__ import annotations

import importlib.util
import json
import math
import sys
from pathlib import Path
from types import ModuleType

import pytest

from llm_planner.core.composition import calibration as cal
from llm_planner.core.composition.calibration import CalibrationInputs, Measurement
from llm_planner.core.composition.estimate import estimate, report_json
from llm_planner.core.composition.scaling import time_vs_gpus
from llm_planner.core.composition.scenario import Scenario, default_scenario
from llm_planner.core.composition.search import scaling_curve, search_scenario
from llm_planner.core.files.store import dumps_scenario, parse_scenario
from llm_planner.core.primitives.gpus import get_gpu
from llm_planner.core.primitives.presets import get_preset
from llm_planner.core.sections.parallelism import ParallelInputs
from llm_planner.core.sections.training import TrainingInputs

H100 = get_gpu("h100-sxm")
A100 = get_gpu("a100-sxm4-80gb")
ARCH = get_preset("llama-3.1-8b").architecture
TRAIN = TrainingInputs(seq_len=4096, micro_batch=1, recompute="selective")
BASE = ParallelInputs(gpus_per_node=8, global_batch=256)


def _truth(par: ParallelInputs, runs: list[Measurement]) -> list[Measurement]:
    """``runs`` with tokens/s per GPU priced by the model at ``par`` (the known truth)."""
    rates = cal.predict_tokens_per_s_per_gpu(ARCH, H100, par, TRAIN, runs)
    out = []
    for m, rate in zip(runs, rates, strict=True):
        assert rate is not None
        out.append(m.model_copy(update={"tokens_per_s_per_gpu": rate}))
    return out


def _params(c: cal.Calibration) -> dict[str, cal.FittedParameter]:
    return {p.name: p for p in c.report.parameters}


def test_one_measurement_fits_one_parameter_exactly() -> None:
    truth = BASE.model_copy(update={"kernel_efficiency": 0.5})
    runs = _truth(truth, [Measurement(label="8 GPUs", gpus=8, tp=1, pp=1)])
    c = cal.calibrate(ARCH, H100, BASE, TRAIN, runs)
    fitted = _params(c)
    assert list(fitted) == ["kernel_efficiency"], "one datum, one parameter"
    assert fitted["kernel_efficiency"].value == pytest.approx(0.5, rel=1e-4)
    assert fitted["kernel_efficiency"].uncertainty is None, "exactly determined: no σ"
    assert c.parallelism.kernel_efficiency == pytest.approx(0.5, rel=1e-4)
    (res,) = c.report.residuals
    assert abs(res["error_after"]) < 1e-6
    assert res["error_before"] > 0.3, "default 0.7 vs truth 0.5: the model was ~40% fast"


def test_two_parameters_from_single_and_multi_node_runs_with_uncertainty() -> None:
    truth = BASE.model_copy(update={"kernel_efficiency": 0.55, "inter_node_efficiency": 0.3})
    layouts = [
        Measurement(label="1 node", gpus=8),
        Measurement(label="2 nodes", gpus=16),
        Measurement(label="4 nodes", gpus=32),
        Measurement(label="8 nodes", gpus=64),
    ]
    runs = _truth(truth, layouts)
    c = cal.calibrate(
        ARCH,
        H100,
        BASE,
        TRAIN,
        runs,
        inputs=CalibrationInputs(time_parameters=("kernel_efficiency", "inter_node_efficiency")),
    )
    fitted = _params(c)
    assert fitted["kernel_efficiency"].value == pytest.approx(0.55, rel=1e-3)
    assert fitted["inter_node_efficiency"].value == pytest.approx(0.3, rel=1e-2)
    # four data, two parameters, exact data: σ exists and is ~0
    for p in fitted.values():
        assert p.uncertainty is not None
        assert p.uncertainty < 1e-3


def test_never_more_parameters_than_data_and_only_those_the_data_move() -> None:
    # one 8-GPU ZeRO-0 run inside a node: the network does not appear in its step time
    runs = [Measurement(label="1 node", gpus=8, tokens_per_s_per_gpu=5000.0)]
    c = cal.calibrate(ARCH, H100, BASE, TRAIN, runs)
    assert [p.name for p in c.report.parameters] == ["kernel_efficiency"]
    # two runs on one node: the second parameter may not be the network (it moves nothing)
    two = [*runs, Measurement(label="tp 8", gpus=8, tp=8, tokens_per_s_per_gpu=4000.0)]
    c2 = cal.calibrate(ARCH, H100, BASE, TRAIN, two)
    names = [p.name for p in c2.report.parameters]
    assert len(names) <= 2
    assert "inter_node_efficiency" not in names


def test_measured_rate_from_step_time_and_from_tflops() -> None:
    # 256 sequences × 4096 tokens in 2.0 s on 64 GPUs = 8192 tokens/s per GPU (by hand)
    m = Measurement(gpus=64, step_seconds=2.0)
    rate, why = cal.measured_tokens_per_s_per_gpu(
        m,
        global_batch=256,
        seq_len=4096,
        arch=ARCH,
        params=8e9,
        app_flops_per_token=48e9,
        gpu_peak=989e12,
    )
    assert rate == pytest.approx(256 * 4096 / 2.0 / 64)
    assert "step time" in why
    # 400 TFLOP/s counted as 6·P with P = 8e9: 400e12 / 48e9 = 8333.3 tokens/s
    m2 = Measurement(gpus=8, flops_per_gpu_per_s=400e12, flops_formula="6P")
    rate2, _ = cal.measured_tokens_per_s_per_gpu(
        m2,
        global_batch=256,
        seq_len=4096,
        arch=ARCH,
        params=8e9,
        app_flops_per_token=1.0,
        gpu_peak=989e12,
    )
    assert rate2 == pytest.approx(400e12 / 48e9)
    # a TFLOP/s without its formula is not guessed into tokens/s
    m3 = Measurement(gpus=8, mfu=0.4)
    rate3, why3 = cal.measured_tokens_per_s_per_gpu(
        m3,
        global_batch=256,
        seq_len=4096,
        arch=ARCH,
        params=8e9,
        app_flops_per_token=1.0,
        gpu_peak=989e12,
    )
    assert rate3 is None
    assert "formula" in why3


def test_megatron_formula_is_narayanan_eq3() -> None:
    """96·l·h²·(1 + s/6h + V/16lh): GPT-3 175B (l 96, h 12288, s 2048, V 51200) per token."""
    arch = get_preset("llama-3.1-8b").architecture.model_copy(
        update={"layers": 96, "hidden_size": 12288, "vocab_size": 51200}
    )
    per_token = cal.published_flops_per_token("megatron_hw_full", arch, 2048, 175e9, 0.0)
    by_hand = 96 * 96 * 12288**2 * (1 + 2048 / (6 * 12288) + 51200 / (16 * 96 * 12288))
    assert per_token == pytest.approx(by_hand)
    # ≈ 8·P·(1 + s/6h) for P = 12·l·h² = 174e9: recompute counts a 4th pass over 6·P
    assert per_token / (8 * 12 * 96 * 12288**2) == pytest.approx(1.0306, abs=2e-3)


def test_memory_fit_fragmentation_from_reserved() -> None:
    """Peak reserved = allocated × (1 + f): one reserved reading fixes f."""
    sc = default_scenario()
    lay_par = BASE.model_copy(update={"tp": 8})
    probe = cal.calibrate(
        ARCH, H100, lay_par, TRAIN, [Measurement(gpus=64, tp=8, peak_allocated_bytes=40e9)]
    )
    allocated_model = probe.report.residuals[0]["model_before"]
    reserved = allocated_model * 1.20
    c = cal.calibrate(
        ARCH, H100, lay_par, TRAIN, [Measurement(gpus=64, tp=8, peak_reserved_bytes=reserved)]
    )
    fitted = _params(c)
    assert fitted["fragmentation_fraction"].value == pytest.approx(0.20, rel=1e-3)
    assert c.training.fragmentation_fraction == pytest.approx(0.20, rel=1e-3)
    assert sc.training.fragmentation_fraction == 0.05


def _calibrated_scenario() -> tuple[Scenario, Scenario]:
    sc = default_scenario().model_copy(update={"num_gpus": 64})
    sc = sc.model_copy(update={"parallelism": sc.parallelism.model_copy(update={"tp": 8})})
    slow = BASE.model_copy(update={"tp": 8, "global_batch": 1024, "kernel_efficiency": 0.4})
    runs = cal.predict_tokens_per_s_per_gpu(
        sc.model.architecture, sc.gpu, slow, sc.training, [Measurement(gpus=64, tp=8)]
    )
    m = Measurement(label="our run", gpus=64, tp=8, tokens_per_s_per_gpu=runs[0])
    return sc, sc.model_copy(update={"measurements": [m]})


def test_calibrated_model_drives_report_compute_and_search() -> None:
    plain, measured = _calibrated_scenario()
    before, after = estimate(plain), estimate(measured)
    # kernel efficiency 0.7 → 0.4 slows the GEMMs by 0.7/0.4 = 1.75× (the memory-bound part
    # of "compute" is unchanged: ≥ 1.4× in all); TP traffic is unchanged. (Issue 31: the
    # whole step moves less than that here, 0.84×, because the uncalibrated step of 8B at
    # tp 8, micro-batch 1 sits partly under the launch floor, which the slower GEMMs clear.)
    compute_before = before.parallelism.time_breakdown_seconds["compute"]
    assert after.parallelism.time_breakdown_seconds["compute"] > 1.4 * compute_before
    assert after.parallelism.tokens_per_s < 0.9 * before.parallelism.tokens_per_s
    # the compute tab's modeled throughput is the parallelism tab's
    assert after.compute.tokens_per_s == pytest.approx(after.parallelism.tokens_per_s)
    assert after.calibration is not None
    assert after.calibration.applied
    assert [p.name for p in after.calibration.parameters] == ["kernel_efficiency"]
    assert after.calibration.parameters[0].value == pytest.approx(0.4, rel=1e-3)
    # the search ranks with the calibrated model
    top_before = search_scenario(plain, top=1).rows[0]
    top_after = search_scenario(measured, top=1).rows[0]
    assert top_after.tokens_per_s < 0.75 * top_before.tokens_per_s
    # switched off: the uncalibrated model, measurements still listed
    off = measured.model_copy(update={"calibration": CalibrationInputs(enabled=False)})
    report_off = estimate(off)
    assert report_off.parallelism.tokens_per_s == pytest.approx(before.parallelism.tokens_per_s)
    assert report_off.calibration is not None
    assert not report_off.calibration.applied
    assert report_off.calibration.measurements


def test_report_json_has_calibration_keys() -> None:
    _, measured = _calibrated_scenario()
    data = report_json(estimate(measured))["calibration"]
    for key in ("enabled", "applied", "measurements", "used", "parameters", "residuals", "checks"):
        assert key in data
    assert data["residuals"][0]["quantity"] == "tokens_per_s_per_gpu"
    json.dumps(data)


def test_measurements_saved_in_the_scenario_file_and_old_files_load() -> None:
    _, measured = _calibrated_scenario()
    text = dumps_scenario(measured)
    again = parse_scenario(text.encode())
    assert again.measurements == measured.measurements
    old = json.loads(dumps_scenario(default_scenario()))
    del old["measurements"], old["calibration"]
    loaded = parse_scenario(json.dumps(old).encode())
    assert loaded.measurements == []
    assert loaded.calibration.enabled


def test_measured_points_feed_the_fit_and_the_scaling_curve() -> None:
    sc = default_scenario()
    par = sc.parallelism.model_copy(update={"tp": 8, "measured_points": [(64, 64 * 3000.0)]})
    sc = sc.model_copy(update={"parallelism": par, "num_gpus": 64})
    report = estimate(sc)
    assert report.calibration is not None
    assert report.calibration.applied
    assert "parallelism.measured_points" in " ".join(report.calibration.measurements)
    # a typed measurement appears on the scaling curve as a measured point
    _, measured = _calibrated_scenario()
    calibrated, _ = cal.calibrate_scenario(measured)
    points = scaling_curve(
        calibrated.model.architecture,
        calibrated.gpu,
        calibrated.parallelism,
        calibrated.training,
        tokens=1e12,
    )
    drawn = [p for p in points if p.measured]
    rate = measured.measurements[0].tokens_per_s_per_gpu
    assert rate is not None
    assert [(p.gpus, p.tokens_per_s) for p in drawn] == [(64, pytest.approx(64 * rate))]
    # the compute tab's time-vs-GPUs charts draw it too, with the calibrated family
    series = time_vs_gpus(measured, estimate(measured))
    assert series is not None
    assert [p.gpus for p in series.measured] == [64]
    assert series.measured[0].tokens_per_s_per_gpu == pytest.approx(rate)
    plain = time_vs_gpus(measured.model_copy(update={"measurements": []}), estimate(measured))
    assert plain is not None
    slower = {p.gpus: p.tokens_per_s_per_gpu for p in series.family}
    for p in plain.family:
        assert slower[p.gpus] < p.tokens_per_s_per_gpu


def test_sanity_band_a100_below_threshold_names_causes() -> None:
    """The seed's band: 100-180 TFLOP/s per A100, troubleshoot below 115."""
    check = cal.rate_check(
        A100,
        "measured",
        90e12,
        {"compute": 1.0, "bubble": 0.4, "data_parallel": 0.3, "tensor_parallel": 0.0},
        0.35,
    )
    assert check is not None
    assert (check.band_low, check.band_high, check.threshold) == (100e12, 180e12, 115e12)
    assert check.below
    text = " ".join(check.causes)
    assert "bubble" in text
    assert "data-parallel" in text
    assert "small or inefficient kernels" in text
    ok = cal.rate_check(A100, "measured", 150e12, {"compute": 1.0}, 0.7)
    assert ok is not None
    assert not ok.below
    assert ok.causes == []
    v100 = cal.band_for(get_gpu("v100-sxm2-32gb"))
    assert v100 is not None
    assert (v100.low, v100.high) == (30e12, 40e12)


def test_bad_measurement_is_named_not_fitted() -> None:
    runs = [Measurement(label="odd", gpus=12, tp=8, tokens_per_s_per_gpu=1000.0)]
    c = cal.calibrate(ARCH, H100, BASE, TRAIN, runs)
    assert not c.report.parameters
    assert c.report.skipped
    assert c.report.skipped[0].startswith("odd:")


def test_unknown_parameter_name_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="no parameter 'warp_speed'"):
        cal.parameter_spec("warp_speed")
    # any float field of the inputs plugs in with its own bounds
    spec = cal.parameter_spec("cuda_context_bytes")
    assert spec.section == "training"
    assert spec.lower == 0.0
    assert spec.upper > 1e9


# ------------------------------------------------------------------ does it help?


def _report_module() -> ModuleType:
    path = Path(__file__).parent.parent / "validation" / "calibration_report.py"
    spec = importlib.util.spec_from_file_location("llm_planner_calibration_report", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_calibration_on_1b_small_runs_improves_held_back_runs() -> None:
    report = _report_module()
    out = report.outcome()
    if out is None:
        pytest.skip("nanotron sweep not available (LLM_PLANNER_NANOTRON_SWEEP)")
    train = report.errors(out.rows, report.GROUPS[0])
    assert train["n"] >= 4
    assert train["median_after"] < 0.05
    for group in report.GROUPS[1:]:
        e = report.errors(out.rows, group)
        if "1–2 nodes" in group:
            assert e["median_after"] < e["median_before"], group
        else:
            # 4–64 nodes: since cross-node TP and nanotron's ZeRO-1 sync are priced the
            # uncalibrated model is no longer optimistic there on the whole, so a kernel
            # efficiency fitted on 1–2 nodes moves the median either way (3B: 21.7% →
            # 23.3% when this bound was set, 1B: 18.7% → 17.2%); it must not move it by
            # more than 3 points, and the RMS log error must still drop
            assert e["median_after"] < e["median_before"] + 0.03, group
        assert e["rms_log_after"] < e["rms_log_before"], group
        # most runs the fit moves end closer; not all: the model errs on both sides of the
        # sweep since the step-time rework, so one efficiency that fixes the over-predicted
        # majority moves the already-slower runs further (the page counts them). Runs it does
        # not move (host-bound ones: a GPU efficiency does not change them) are left out:
        # 62-84% of the moved runs end closer when this bound was set.
        assert e["moved_closer"] > 0.55, group
    # held-back runs on the calibration machine size: within 15% median after
    for group in ("held back: 1B, 1–2 nodes", "held back: 3B, 1–2 nodes"):
        assert report.errors(out.rows, group)["median_after"] < 0.15
    assert math.isfinite(out.calibration.report.rms_error_after or math.nan)
