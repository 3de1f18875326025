"""``llm-planner search`` shows the context-parallel degree of each row and, for a 16-bit plan
on a GPU and stack that run FP8, the stack's FP8 recipe with its best layout (issue 27)."""

from __future__ import annotations

import csv
import io

import pytest

from llm_planner.cli import main


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    assert main(list(argv)) == 0
    return capsys.readouterr().out


ARGS = ("search", "--model", "llama-3.1-8b", "--num-gpus", "64", "--top", "3")


def test_text_has_a_cp_column_and_the_fp8_line(capsys: pytest.CaptureFixture[str]) -> None:
    out = run(capsys, *ARGS, "--gpu", "h100-sxm", "--stack", "megatron")
    header = next(line for line in out.splitlines() if line.lstrip().startswith("#"))
    assert header.split()[:6] == ["#", "dp", "tp", "pp", "cp", "ep"]
    assert "FP8 on this GPU and stack: Transformer Engine FP8" in out
    assert "--precision fp8_current" in out


def test_no_fp8_line_on_a100(capsys: pytest.CaptureFixture[str]) -> None:
    out = run(capsys, *ARGS, "--gpu", "a100-sxm4-80gb", "--stack", "megatron")
    assert "FP8 on this GPU" not in out


def test_csv_carries_cp(capsys: pytest.CaptureFixture[str]) -> None:
    rows = list(csv.DictReader(io.StringIO(run(capsys, *ARGS, "--csv"))))
    assert rows
    assert all(int(r["dp"]) * int(r["tp"]) * int(r["pp"]) * int(r["cp"]) == 64 for r in rows)
