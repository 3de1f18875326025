"""``llm-planner calibrate`` (issue 15): logs in, fitted parameters out, saved in the file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from llm_planner.cli import main

LOGS = Path(__file__).parent.parent / "fixtures" / "logs"
RUN = ["--num-gpus", "16", "--tp", "2", "--seq-len", "4096"]


def test_calibrate_prints_parameters_and_residuals(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["calibrate", str(LOGS / "megatron_mixtral_h100.log"), *RUN]) == 0
    out = capsys.readouterr().out
    assert "kernel_efficiency" in out
    assert "Residuals" in out
    assert "megatron_mixtral_h100.log" in out


def test_calibrate_json_save_and_report_uses_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    saved = tmp_path / "mine.llmplan.json"
    log = str(LOGS / "megatron_mixtral_h100.log")
    assert main(["calibrate", log, *RUN, "--json", "--save", str(saved)]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["applied"]
    (param,) = data["parameters"]
    assert param["name"] == "kernel_efficiency"
    (res,) = data["residuals"]
    # 128 sequences × 4096 tokens ÷ 5.6262 s ÷ 16 GPUs (steady state of the quoted lines)
    assert res["measured"] == pytest.approx(128 * 4096 / 5.6262 / 16)
    assert abs(res["error_after"]) < 1e-6
    assert data["modeled_after"]["tokens_per_s"] < data["modeled_before"]["tokens_per_s"]
    stored = json.loads(saved.read_text(encoding="utf-8"))
    assert stored["measurements"][0]["step_seconds"] == pytest.approx(5.6262)
    assert main(["report", str(saved), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["calibration"]["parameters"][0]["value"] == pytest.approx(param["value"])
    assert report["parallelism"]["tokens_per_s"] == pytest.approx(
        data["modeled_after"]["tokens_per_s"]
    )


def test_calibrate_off_keeps_measurements_and_the_uncalibrated_model(
    capsys: pytest.CaptureFixture[str],
) -> None:
    log = str(LOGS / "megatron_mixtral_h100.log")
    assert main(["calibrate", log, *RUN, "--json", "--off"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert not data["applied"]
    assert data["parameters"] == []
    assert data["modeled_after"]["tokens_per_s"] == pytest.approx(
        data["modeled_before"]["tokens_per_s"]
    )


def test_unread_lines_are_named_and_bad_logs_are_one_line_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["calibrate", str(LOGS / "malformed_megatron.log"), *RUN]) == 0
    out = capsys.readouterr().out
    assert "unread: malformed_megatron.log:6:" in out
    empty = tmp_path / "empty.log"
    empty.write_text("nothing here\n", encoding="utf-8")
    assert main(["calibrate", str(empty), *RUN]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "empty.log: no measurement read" in err
    # the Trainer's samples/s become tokens/s at the run's sequence length (--seq-len)
    hf = str(LOGS / "hf_trainer_ddp.log")
    assert main(["calibrate", hf, "--num-gpus", "2", "--seq-len", "1024", "--json"]) == 0
    (res,) = json.loads(capsys.readouterr().out)["residuals"]
    assert res["measured"] == pytest.approx(1.963 * 1024 / 2)
