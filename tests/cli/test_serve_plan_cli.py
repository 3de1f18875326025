"""``llm-planner serve-plan``: the cheapest GPU and replica size serving N users at a
latency target (issue 30), its JSON keys and its refusals."""

from __future__ import annotations

import json
import math

import pytest

from llm_planner.cli import main

BASE = ["serve-plan", "--users", "1000", "--tpot", "50ms", "--price-for", "h100-sxm=3.00"]


def test_serve_plan_json_prices_each_replica_by_hand(capsys: pytest.CaptureFixture[str]) -> None:
    """For every priced row: replicas = ⌈1000 ÷ users per replica⌉, $/h = replicas ×
    GPUs per replica × the GPU's price ($3.00 for the H100 given with --price-for), and
    $ per million output tokens = $/h ÷ 3600 ÷ (tokens/s) × 10^6, where tokens/s is one
    token per served user per TPOT: min(1000, replicas × users per replica) ÷ TPOT."""
    assert main([*BASE, "--json", "--engine", "sglang", "--output-tokens", "512"]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert plan["users"] == 1000
    assert plan["tpot_target_seconds"] == pytest.approx(0.050)  # "50ms"
    assert plan["ttft_target_seconds"] is None
    assert (plan["engine"], plan["prompt_tokens"], plan["output_tokens"]) == ("sglang", 1024, 512)
    h100 = [o for o in plan["options"] if o["gpu_id"] == "h100-sxm" and o["status"] == "ok"]
    assert {o["gpus_per_replica"] for o in h100} <= {1, 2, 4, 8}
    assert h100, "an H100 replica serves 8B at 50 ms per token"
    for o in h100:
        c = o["concurrency_per_replica"]
        assert o["replicas"] == math.ceil(1000 / c)
        assert o["total_gpus"] == o["replicas"] * o["gpus_per_replica"]
        assert o["usd_per_hour"] == pytest.approx(o["replicas"] * o["gpus_per_replica"] * 3.00)
        assert o["tpot_seconds"] <= 0.050
        tokens_per_s = min(1000, o["replicas"] * c) / o["tpot_seconds"]
        assert o["usd_per_million_output_tokens"] == pytest.approx(
            o["usd_per_hour"] / 3600 / tokens_per_s * 1e6
        )
    ok = [o["usd_per_hour"] for o in plan["options"] if o["status"] == "ok"]
    assert ok == sorted(ok)  # cheapest first
    assert plan["best"] == plan["options"][0]


def test_serve_plan_text_and_top(capsys: pytest.CaptureFixture[str]) -> None:
    """--top 3 prints the header and three ranked rows, then the cheapest in words."""
    assert main([*BASE, "--ttft", "2s", "--top", "3"]) == 0
    out = capsys.readouterr().out
    assert "1,000 concurrent users" in out
    assert "TPOT ≤ 50.0 ms, TTFT ≤ 2,000.0 ms" in out
    rows = [line for line in out.splitlines() if line[:3].strip() in {"1", "2", "3", "4"}]
    assert [row.split()[0] for row in rows] == ["1", "2", "3"]
    assert "Cheapest:" in out


def test_serve_plan_no_option_meets_an_impossible_target(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """0.1 ms per output token is 10,000 tokens/s for one user: no GPU reads 16 GB of
    weights that fast (an H100's 3.35 TB/s reads them in about 4.8 ms)."""
    assert main(["serve-plan", "--users", "10", "--tpot", "0.1ms", "--json"]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert plan["best"] is None
    assert {o["status"] for o in plan["options"]} <= {"misses latency", "does not fit"}


@pytest.mark.parametrize(
    ("argv", "option"),
    [
        (["--users", "0", "--tpot", "50ms"], "--users"),
        (["--users", "many", "--tpot", "50ms"], "--users"),
        (["--users", "1.5", "--tpot", "50ms"], "--users"),
        (["--users", "10", "--tpot", "0"], "--tpot"),
        (["--users", "10", "--tpot", "-5ms"], "--tpot"),
        (["--users", "10", "--tpot", "fast"], "--tpot"),
        (["--users", "10", "--tpot", "50ms", "--ttft", "2 parsecs"], "--ttft"),
        (["--users", "10", "--tpot", "50ms", "--engine", "tgi"], "--engine"),
        (["--users", "10", "--tpot", "50ms", "--prompt-tokens", "0"], "--prompt-tokens"),
        (["--users", "10"], "--tpot"),
    ],
)
def test_serve_plan_bad_input_is_one_line_naming_the_option(
    capsys: pytest.CaptureFixture[str], argv: list[str], option: str
) -> None:
    assert main(["serve-plan", *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert option in err
