"""`llm-planner export-config`, `import-config` and `check`: the pre-flight exits 0 when the
run fits, 1 when it does not (with layouts that fit), 2 with one line on an unreadable config."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from llm_planner.cli import main
from llm_planner.core.files import stack_configs as sc

LLAMA_8B_PARAMS = 8.03e9
"""Llama-3.1-8B (Meta's model card: 8.03B parameters)."""


def ds_config(path: Path, stage: int, micro: int = 1, accumulation: int = 16) -> Path:
    """A DeepSpeed config for 8 data-parallel GPUs: 128 = micro × accumulation × 8."""
    path.write_text(
        json.dumps(
            {
                "train_batch_size": micro * accumulation * 8,
                "train_micro_batch_size_per_gpu": micro,
                "gradient_accumulation_steps": accumulation,
                "zero_optimization": {"stage": stage},
                "bf16": {"enabled": True},
            }
        )
    )
    return path


def check_json(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, Any]]:
    status = main(["check", *args, "--json"])
    data: dict[str, Any] = json.loads(capsys.readouterr().out)
    return status, data


def test_check_exits_0_when_the_run_fits(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # ZeRO-3 over 8 GPUs: 16 B/param × 8.03e9 / 8 ≈ 16 GB of state per GPU, far below 80 GB
    config = ds_config(tmp_path / "ds.json", stage=3)
    status, data = check_json(
        capsys, str(config), "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--num-gpus", "8"
    )
    assert status == 0
    assert data["fits"] is True
    assert data["format"] == "deepspeed"
    assert data["capacity_bytes"] == pytest.approx(80e9, rel=0.01)
    assert 16 * LLAMA_8B_PARAMS / 8 < data["peak_bytes"] < data["capacity_bytes"]
    assert data["headroom_bytes"] == pytest.approx(data["capacity_bytes"] - data["peak_bytes"])
    assert data["problems"] == []
    assert data["suggestions"] == []
    # the same run through `report` on the same stack (its activation profile): the same peak
    assert (
        main(
            [
                "report",
                "--model",
                "llama-3.1-8b",
                "--gpu",
                "h100-sxm",
                "--num-gpus",
                "8",
                "--stack",
                "deepspeed",
                "--zero",
                "3",
                "--global-batch",
                "128",
                "--json",
            ]
        )
        == 0
    )
    report = json.loads(capsys.readouterr().out)
    assert data["peak_bytes"] == pytest.approx(report["training"]["peak_bytes"])


def test_check_exits_1_with_layouts_that_fit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # no sharding: 16 B/param × 8.03e9 ≈ 128 GB of weights, gradients and Adam per GPU > 80 GB
    config = ds_config(tmp_path / "ds.json", stage=0)
    status, data = check_json(
        capsys, str(config), "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--num-gpus", "8"
    )
    assert status == 1
    assert data["fits"] is False
    assert data["peak_bytes"] > 16 * LLAMA_8B_PARAMS > data["capacity_bytes"]
    assert data["headroom_bytes"] < 0
    assert data["suggestions"], "8 × 80 GB hold an 8B model once sharded"
    assert all(row["peak_bytes"] <= data["capacity_bytes"] for row in data["suggestions"])
    # the text face says the same
    assert (
        main(
            [
                "check",
                str(config),
                "--model",
                "llama-3.1-8b",
                "--gpu",
                "h100-sxm",
                "--num-gpus",
                "8",
            ]
        )
        == 1
    )
    text = capsys.readouterr().out
    assert "DOES NOT FIT" in text
    assert "headroom" in text
    assert "layouts that fit" in text


@pytest.mark.parametrize(
    ("name", "content"),
    [("broken.json", "{oops"), ("notes.txt", "just some text\n"), ("missing.toml", None)],
)
def test_check_exits_2_on_an_unreadable_config(
    name: str, content: str | None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / name
    if content is not None:
        path.write_text(content)
    assert main(["check", str(path), "--model", "llama-3.1-8b"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1
    assert name in lines[0]
    assert "Traceback" not in captured.err


def test_check_reads_the_model_a_config_names(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    toml = tmp_path / "job.toml"
    toml.write_text(
        '[model]\nname = "llama3"\nflavor = "70B"\n\n[parallelism]\n'
        "data_parallel_shard_degree = 64\ntensor_parallel_degree = 8\n"
    )
    status, data = check_json(capsys, str(toml), "--gpu", "h100-sxm")
    assert data["num_gpus"] == 512  # 64 × 8
    assert "llama-3.1-70b" in data["model"]
    assert status in (0, 1)


def test_export_config_writes_each_format(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for fmt in sc.FORMATS:
        out = tmp_path / f"plan-{fmt}.cfg"
        assert main(["export-config", "--tp", "2", "--stack", fmt, "--out", str(out)]) == 0
        assert out.is_file()
        assert sc.read_config(out, fmt).fields["parallelism.tp"] == 2
    assert (tmp_path / "plan-accelerate.training_args.json").is_file()
    err = capsys.readouterr().err
    assert "wrote" in err
    assert "not expressible in" in err


def test_export_config_to_stdout_and_a_search_row(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["export-config", "--stack", "megatron", "--row", "1", "--num-gpus", "64"]) == 0
    text = capsys.readouterr().out
    assert main(["search", "--num-gpus", "64", "--top", "1", "--json"]) == 0
    row = json.loads(capsys.readouterr().out)[0]
    assert f"--tensor-model-parallel-size {row['tp']}\n" in text
    assert f"--pipeline-model-parallel-size {row['pp']}\n" in text
    assert f"--micro-batch-size {row['micro_batch']}\n" in text


def test_export_config_refuses_a_row_the_search_does_not_have(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["export-config", "--row", "99999", "--num-gpus", "8"]) == 2
    assert "argument --row" in capsys.readouterr().err


def test_import_config_says_what_it_read_and_saves_a_scenario(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = ds_config(tmp_path / "ds.json", stage=2, micro=2, accumulation=4)
    saved = tmp_path / "from-ds.llmplan.json"
    assert main(["import-config", str(config), "--save", str(saved), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["format"] == "deepspeed"
    assert "zero_optimization.stage" in data["read"]
    scenario = data["scenario"]
    assert scenario["num_gpus"] == 8  # 64 / (2 × 4)
    assert scenario["parallelism"]["zero_stage"] == 2
    assert scenario["training"]["stack"] == "deepspeed"
    assert saved.is_file()
    assert main(["report", str(saved), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["parallelism"]["dp"] == 8


def test_import_config_options_win_over_the_config(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = ds_config(tmp_path / "ds.json", stage=2)
    assert main(["import-config", str(config), "--zero", "3", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["scenario"]["parallelism"]["zero_stage"] == 3
