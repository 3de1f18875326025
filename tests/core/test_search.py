"""Layout search, smallest deployment, scaling curve and the ``search`` command."""

from __future__ import annotations

import itertools
import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llm_planner.cli import main
from llm_planner.core.composition import search as srch
from llm_planner.core.primitives.gpus import get_gpu
from llm_planner.core.primitives.presets import get_preset
from llm_planner.core.sections import parallelism as par
from llm_planner.core.sections.training import TrainingInputs

H100 = get_gpu("h100-sxm")


def test_enumeration_respects_constraints() -> None:
    arch = get_preset("llama-3.1-70b").architecture
    lay = srch.enumerate_layouts(arch, 256, 512, srch.SearchOptions())
    assert len(lay) > 0
    assert (lay.tp * lay.pp * lay.dp == 256).all()
    assert (512 % (lay.dp * lay.micro_batch) == 0).all()
    assert (arch.heads % lay.tp == 0).all()
    assert not (lay.sp & (lay.tp == 1)).any()  # sequence parallel needs tp > 1
    assert not ((lay.zero >= 2) & (lay.pp > 1)).any()  # DeepSpeed: ZeRO-1 only with pipelines
    interleaved = lay.v > 1
    assert (lay.pp[interleaved] > 1).all()
    m = 512 // (lay.dp * lay.micro_batch)
    assert (m[interleaved] % lay.pp[interleaved] == 0).all()


@settings(max_examples=15, deadline=None)
@given(
    model=st.sampled_from(["llama-3.1-8b", "llama-3.1-70b", "mixtral-8x7b", "qwen2.5-72b"]),
    gpus=st.sampled_from([8, 16, 64, 256]),
    gpu=st.sampled_from(["h100-sxm", "a100-sxm4-40gb", "h200"]),
)
def test_rows_reported_as_fitting_fit(model: str, gpus: int, gpu: str) -> None:
    """A layout the search returns has peak_bytes ≤ the GPU's memory, best first."""
    device = get_gpu(gpu)
    arch = get_preset(model).architecture
    inputs = par.ParallelInputs(global_batch=256)
    result = srch.search(arch, device, gpus, inputs, TrainingInputs(seq_len=2048), top=5)
    for row in result.rows:
        assert row.peak_bytes <= device.memory_bytes
        assert row.dp * row.tp * row.pp == gpus
    rates = [row.tokens_per_s for row in result.rows]
    assert rates == sorted(rates, reverse=True)


def test_nothing_fits_gives_no_rows() -> None:
    arch = get_preset("llama-3.1-405b").architecture
    result = srch.search(arch, H100, 2, par.ParallelInputs(global_batch=8), TrainingInputs())
    assert result.rows == []
    assert result.candidates > 0


def test_min_gpus_per_instance_is_minimal() -> None:
    arch = get_preset("llama-3.1-70b").architecture
    inputs = par.ParallelInputs(global_batch=64)
    ti = TrainingInputs(seq_len=2048)
    n = srch.min_gpus_per_instance(arch, H100, inputs, ti)
    assert n is not None
    assert n > 1
    # 70B with mixed-precision Adam is 16 bytes/param = 1.1 TB of state: ≥ 14 H100s
    assert n >= 16
    fits = srch.search(arch, H100, n, par.ParallelInputs(global_batch=max(64, n)), ti, top=1)
    assert fits.rows
    smaller = srch.search(arch, H100, n // 2, inputs, ti, top=1)
    assert not smaller.rows


def test_smallest_deployment_meets_deadline_and_prices_it() -> None:
    arch = get_preset("llama-3.1-8b").architecture
    inputs = par.ParallelInputs(global_batch=512)
    ti = TrainingInputs(seq_len=4096)
    tokens, deadline, price = 1e12, 30 * 86400.0, 2.0
    plan = srch.smallest_deployment(
        arch,
        H100,
        inputs,
        ti,
        tokens=tokens,
        deadline_seconds=deadline,
        price_usd_per_gpu_hour=price,
    )
    assert plan is not None
    assert plan.meets_deadline
    assert plan.time_seconds is not None
    assert plan.time_seconds <= deadline
    assert plan.total_gpus == plan.gpus_per_instance * plan.replicas
    assert plan.cost_usd == pytest.approx(plan.total_gpus * plan.time_seconds / 3600 * price)
    # one replica fewer would miss the deadline (replicas are bisected)
    if plan.replicas > 1:
        fewer = srch.search(
            arch, H100, plan.gpus_per_instance * (plan.replicas - 1), inputs, ti, top=1
        )
        assert not fewer.rows or tokens / fewer.rows[0].tokens_per_s > deadline


def test_scaling_curve_and_measured_points() -> None:
    arch = get_preset("llama-3.1-70b").architecture
    inputs = par.ParallelInputs(
        tp=8, pp=4, global_batch=1024, measured_points=[(256, 1.0e5), (512, 1.8e5)]
    )
    points = srch.scaling_curve(arch, H100, inputs, TrainingInputs(), tokens=1e12)
    model = [p for p in points if not p.measured]
    measured = [p for p in points if p.measured]
    assert [p.gpus for p in model][:3] == [32, 64, 128]
    # doubling GPUs never more than halves time, and efficiency decays
    for a, b in itertools.pairwise(model):
        assert b.time_to_train_seconds >= a.time_to_train_seconds / 2 * (1 - 1e-9)
    assert model[-1].scaling_efficiency is not None
    assert model[-1].scaling_efficiency < 1
    assert [(p.gpus, p.tokens_per_s) for p in measured] == [(256, 1.0e5), (512, 1.8e5)]
    assert measured[0].time_to_train_seconds == pytest.approx(1e12 / 1.0e5)


# --------------------------------------------------------------------- command line


def test_cli_search_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        main(["search", "--top", "3", "--json", "--num-gpus", "64", "--global-batch", "256"]) == 0
    )
    rows = json.loads(capsys.readouterr().out)
    assert 1 <= len(rows) <= 3
    for key in ("dp", "tp", "pp", "zero_stage", "peak_bytes", "step_seconds", "tokens_per_s"):
        assert key in rows[0]
    assert "mfu" in rows[0]
    assert "bottleneck" in rows[0]
    assert rows[0]["dp"] * rows[0]["tp"] * rows[0]["pp"] == 64


def test_cli_search_csv_and_text(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["search", "--top", "2", "--csv", "--num-gpus", "16"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0].startswith("rank,dp,tp,pp")
    assert len(lines) == 3
    assert main(["search", "--top", "2", "--num-gpus", "16"]) == 0
    assert "layouts tried" in capsys.readouterr().out


def test_cli_report_parallelism_options(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["report", "--json", "--model", "llama-3.1-70b", "--num-gpus", "256", "--tp", "8"]
    args += ["--pp", "4", "--zero", "1", "--sequence-parallel", "--global-batch", "512"]
    args += ["--gpus-per-node", "8", "--schedule", "interleaved:2"]
    assert main(args) == 0
    p = json.loads(capsys.readouterr().out)["parallelism"]
    assert (p["dp"], p["tp"], p["pp"], p["zero_stage"]) == (8, 8, 4, 1)
    # bubble share (p−1)/(v·m + p − 1) with m = 512/8 = 64, v = 2: 3/131
    assert p["bubble_fraction"] == pytest.approx(3 / 131)
    for key in ("step_seconds", "tokens_per_s", "mfu", "comm_bytes_per_step"):
        assert math.isfinite(p[key])
        assert p[key] > 0


@pytest.mark.parametrize(
    ("option", "value"),
    [("--schedule", "interleaved:1"), ("--schedule", "zigzag"), ("--zero", "4"), ("--tp", "0")],
)
def test_cli_bad_parallel_options_exit_2(
    option: str, value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["report", option, value]) == 2
    assert option in capsys.readouterr().err


def test_report_carries_gpus_per_instance_into_compute() -> None:
    """The report's fewest GPUs per instance is the searched one, and compute uses it."""
    from llm_planner.core.composition.estimate import estimate
    from llm_planner.core.composition.scenario import default_scenario

    scenario = default_scenario()
    report = estimate(scenario)
    expected = srch.min_gpus_per_instance(
        scenario.model.architecture, scenario.gpu, scenario.parallelism, scenario.training
    )
    assert report.parallelism.gpus_per_instance == expected
    assert report.compute.gpus_per_instance == expected


def test_report_and_search_price_expert_parallelism(capsys: pytest.CaptureFixture[str]) -> None:
    """ep reaches the training estimator: the report's peak is the estimator's at ep = 4
    (no "ignores ep" problem any more), and each search row's exact peak is too."""
    from llm_planner.core.sections.training import estimate_training

    args = ["report", "--json", "--model", "mixtral-8x7b", "--num-gpus", "64", "--tp", "2"]
    assert main([*args, "--ep", "4"]) == 0
    data = json.loads(capsys.readouterr().out)
    p = data["parallelism"]
    assert p["ep"] == 4
    assert not any("ignores ep" in problem for problem in p["problems"])
    ti = TrainingInputs()
    arch = get_preset("mixtral-8x7b").architecture
    # the report's defaults: ZeRO 1 over dp = 64/2 = 32, no pipeline
    exact = estimate_training(arch, ti, H100, tp=2, dp=32, ep=4, zero_stage=1)
    assert p["peak_bytes"] == pytest.approx(exact.peak_bytes, rel=1e-12)
    assert data["training"]["peak_bytes"] == pytest.approx(exact.peak_bytes, rel=1e-12)
    assert main(args) == 0
    assert json.loads(capsys.readouterr().out)["parallelism"]["peak_bytes"] > p["peak_bytes"]

    res = srch.search(arch, H100, 64, par.ParallelInputs(), ti, top=5)
    assert any(row.ep > 1 for row in res.rows)
    for row in res.rows:
        if row.pp > 1:
            continue
        update = {"micro_batch": row.micro_batch, "recompute": row.recompute}
        exact = estimate_training(
            arch,
            ti.model_copy(update=update),
            H100,
            tp=row.tp,
            dp=row.dp,
            ep=row.ep,
            zero_stage=row.zero_stage,
            sequence_parallel=row.sequence_parallel,
        )
        assert row.peak_bytes == pytest.approx(exact.peak_bytes, rel=1e-12)
