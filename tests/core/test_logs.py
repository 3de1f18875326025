"""Training-log parsers (issue 15) on real lines quoted from public issues and docs.

Each fixture in ``tests/fixtures/logs`` says in its header where its lines come from. The
expected values are read off those lines by hand (written out below), in SI units.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from llm_planner.core.files import logs

FIXTURES = Path(__file__).parent.parent / "fixtures" / "logs"


def _parsed(name: str) -> logs.ParsedLog:
    return logs.read_log(FIXTURES / name)


def test_every_fixture_cites_its_source() -> None:
    for path in FIXTURES.glob("*.log"):
        head = path.read_text(encoding="utf-8").splitlines()[0]
        assert head.startswith(("# Source:", "# Not a real log")), path.name


def test_megatron_iteration_lines() -> None:
    p = _parsed("megatron_mixtral_h100.log")
    assert p.stacks == ["megatron"]
    assert len(p.readings) == 3
    first = p.readings[0].values
    assert first["step_seconds"] == pytest.approx(5.4449)  # 5444.9 ms
    assert first["flops_per_gpu_per_s"] == pytest.approx(239.8e12)
    assert first["global_batch"] == 128
    # steady state: first reading dropped, median of 5533.8 and 5718.6 ms
    assert p.steady("step_seconds") == pytest.approx((5.5338 + 5.7186) / 2)
    m = logs.measurement_from_log(p, gpus=16, seq_len=4096)
    assert m.global_batch == 128
    assert m.stack == "megatron"
    assert m.step_seconds == pytest.approx(5.6262)
    assert m.source == "megatron_mixtral_h100.log:4-6"


def test_megatron_memory_report_in_mebibytes() -> None:
    p = _parsed("megatron_v100_memory.log")
    # "max allocated: 12606.06201171875 | reserved: 17482.0 | max reserved: 17482.0" (MB = 2^20)
    assert p.peak("peak_allocated_bytes") == pytest.approx(12606.06201171875 * 2**20)
    assert p.peak("peak_reserved_bytes") == pytest.approx(17482.0 * 2**20)
    # iterations 5, 10, 15: 16491.5 ms (warm-up, dropped), 1993.9, 1978.1
    assert p.steady("step_seconds") == pytest.approx((1.9939 + 1.9781) / 2)
    # no global batch in this older line: a step time alone cannot be priced
    m = logs.measurement_from_log(p, gpus=64)
    assert m.step_seconds is None
    assert m.peak_reserved_bytes == pytest.approx(17482.0 * 2**20)
    m2 = logs.measurement_from_log(p, gpus=64, layout={"global_batch": 512, "tp": 2})
    assert m2.step_seconds == pytest.approx(1.986)
    assert m2.tp == 2


def test_torchtitan_step_lines() -> None:
    p = _parsed("torchtitan_h100.log")
    first = p.readings[0].values
    # "memory: 66.91GiB(37.51%)  tps: 10,050  tflops: 314.71  mfu: 13.99%"
    assert first["peak_reserved_bytes"] == pytest.approx(66.91 * 2**30)
    assert first["tokens_per_s_per_gpu"] == 10050
    assert first["flops_per_gpu_per_s"] == pytest.approx(314.71e12)
    assert first["mfu"] == pytest.approx(0.1399)
    # steady: drop the first, median of 10,050 / 10,049 / 10,007
    assert p.steady("tokens_per_s_per_gpu") == 10049
    small = _parsed("torchtitan_small.log")  # "[rank0]:" prefix
    assert small.steady("tokens_per_s_per_gpu") == pytest.approx((7334 + 7313) / 2)
    m = logs.measurement_from_log(small, gpus=1)
    assert m.stack == "torchtitan"
    assert m.tokens_per_s_per_gpu == pytest.approx(7323.5)


def test_deepspeed_both_throughput_formats() -> None:
    old = _parsed("deepspeed_samples_per_sec.log")
    assert [r.values["samples_per_s"] for r in old.readings] == pytest.approx(
        [83.48609168106144, 83.73838805358588]
    )
    assert old.peak("peak_allocated_bytes") == pytest.approx(9.02 * 2**30)  # GB = /1024**3
    new = _parsed("deepspeed_running_avg.log")
    # CurrSamplesPerSec, not the running average
    assert new.readings[0].values["samples_per_s"] == pytest.approx(159.628891629629)
    assert new.peak("peak_allocated_bytes") == pytest.approx(2.62 * 2**30)
    with pytest.raises(logs.LogError, match="sequence length"):
        logs.measurement_from_log(new, gpus=8)
    m = logs.measurement_from_log(new, gpus=8, seq_len=512)
    # median of the four Curr values after the first: 145.09, 157.81, 155.10, 155.01
    assert m.tokens_per_s == pytest.approx(512 * (155.10475468488542 + 155.01088859630886) / 2)


def test_hf_trainer_final_metrics() -> None:
    p = _parsed("hf_trainer_ddp.log")
    (reading,) = p.readings
    assert reading.values["samples_per_s"] == pytest.approx(1.963)
    assert reading.values["train_runtime_seconds"] == pytest.approx(101.9003)
    # GPT-2 run_clm default block size 1024 tokens per sample (given by the user)
    m = logs.measurement_from_log(p, gpus=2, seq_len=1024)
    assert m.stack == "hf"
    assert m.tokens_per_s == pytest.approx(1.963 * 1024)


def test_nanotron_iteration_lines_in_human_format() -> None:
    p = _parsed("nanotron_iterations.log")
    v = p.readings[0].values
    # "elapsed_time_per_iteration_ms: 11.5K | tokens_per_sec: 22.8K | tokens_per_sec_per_gpu:
    # 11.4K | global_batch_size: 64 | model_tflops_per_gpu: 38.3"
    assert v["step_seconds"] == pytest.approx(11.5)
    assert v["tokens_per_s"] == pytest.approx(22_800)
    assert v["tokens_per_s_per_gpu"] == pytest.approx(11_400)
    assert v["global_batch"] == 64
    assert v["flops_per_gpu_per_s"] == pytest.approx(38.3e12)
    mem = _parsed("nanotron_memory.log")
    assert mem.peak("peak_reserved_bytes") == pytest.approx(547e6)  # "547M" bytes, 1000-based
    assert logs.human_number("1.2B") == pytest.approx(1.2e9)  # B = billions in human_format


def test_malformed_lines_are_named_with_their_line_numbers() -> None:
    p = _parsed("malformed_megatron.log")
    assert len(p.readings) == 3
    assert len(p.problems) == 2
    assert p.problems[0].startswith("malformed_megatron.log:6: a Megatron-LM iteration line")
    assert p.problems[1].startswith("malformed_megatron.log:7:")


def test_a_log_with_nothing_known_is_refused_with_a_message(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("hello\nworld\n", encoding="utf-8")
    with pytest.raises(logs.LogError, match="no line of a known training stack"):
        logs.read_log(path)
    broken = tmp_path / "broken.log"
    broken.write_text(
        " iteration 3/ 10 | elapsed time per iteration (ms): oops\n", encoding="utf-8"
    )
    with pytest.raises(logs.LogError, match=r"broken.log:1: a Megatron-LM iteration line"):
        logs.read_log(broken)
    with pytest.raises(logs.LogError, match="cannot read"):
        logs.read_log(tmp_path / "missing.log")
