"""The serving options on the command line and ``inference.serving`` in ``report --json``
(issue 30)."""

from __future__ import annotations

import json

import pytest


def test_cli_serving_options_reach_the_json(capsys: pytest.CaptureFixture[str]) -> None:
    """``--prompt-tokens 2k`` reads k as 1,024 (a length); ``--batch max`` serves as many
    as fit; ``--engine`` picks the profile."""
    from llm_planner.cli import main

    argv = ["report", "--json", "--batch", "max", "--engine", "tensorrt-llm"]
    assert main([*argv, "--prompt-tokens", "2k", "--output-tokens", "512"]) == 0
    s = json.loads(capsys.readouterr().out)["inference"]["serving"]
    assert (s["engine"], s["prompt_tokens"], s["output_tokens"]) == ("tensorrt-llm", 2048, 512)
    assert s["concurrency"] == s["max_concurrency"]
    assert main(["report", "--json", "--batch", "8"]) == 0
    s = json.loads(capsys.readouterr().out)["inference"]["serving"]
    assert s["concurrency"] == 8
    assert main(["report", "--engine", "tgi"]) == 2
    assert "--engine" in capsys.readouterr().err
