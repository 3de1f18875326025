"""`llm-planner report --first-stage-layers / --last-stage-layers`: the registry's flags
reach the estimate, and a split Megatron-Core refuses is refused naming the field."""

from __future__ import annotations

import json

import pytest

from llm_planner.cli import main

ARGS = ["--model", "deepseek-v3", "--num-gpus", "256", "--tp", "1", "--pp", "16", "--ep", "8"]


def _tokens_per_s(capsys: pytest.CaptureFixture[str], *extra: str) -> float:
    assert main(["report", *ARGS, *extra, "--json"]) == 0
    return float(json.loads(capsys.readouterr().out)["parallelism"]["tokens_per_s"])


def test_the_flags_move_the_step(capsys: pytest.CaptureFixture[str]) -> None:
    """First 3 / last 2 over 16 stages: the middle stages hold (61 − 5)/14 = 4 layers and
    none holds 4 layers and the head (the equal split's last stage: ⌈61/16⌉ = 4 + head),
    so the step is faster."""
    even = _tokens_per_s(capsys)
    split = _tokens_per_s(capsys, "--first-stage-layers", "3", "--last-stage-layers", "2")
    assert split > even


def test_a_split_that_does_not_divide_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    """61 − 4 = 57 layers do not divide over 15 stages (Megatron-Core's rule)."""
    assert main(["report", *ARGS, "--first-stage-layers", "4"]) == 2
    err = capsys.readouterr().err
    assert "argument --first-stage-layers" in err  # the field, as its flag
    assert "57 layers left do not divide evenly over the 15 middle stages" in err
