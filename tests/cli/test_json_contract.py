"""The published ``report --json`` and ``search --json`` keys (issues 3, 4, 5): a contract
scripts depend on. Extra keys may be added; none of these may disappear or change type."""

from __future__ import annotations

import json
import math

import pytest

from llm_planner.cli import main

REPORT_KEYS = {
    "model": ["params_total", "params_active"],
    "compute": [
        "flops_total",
        "flops_per_gpu_per_s",
        "gpu_hours",
        "wall_seconds",
        "cost_usd",
        "chinchilla_tokens",
    ],
    "inference": [
        "weights_bytes",
        "kv_cache_bytes",
        "overhead_bytes",
        "total_bytes",
        "fits",
        "max_batch",
        "decode_tokens_per_s_bound",
    ],
    "training": [
        "weights_bytes",
        "gradients_bytes",
        "optimizer_bytes",
        "activations_bytes",
        "temporary_bytes",
        "overhead_bytes",
        "persistent_bytes",
        "peak_bytes",
        "fits",
        "max_micro_batch",
    ],
    "parallelism": [
        "dp",
        "tp",
        "pp",
        "zero_stage",
        "bubble_fraction",
        "step_seconds",
        "tokens_per_s",
        "mfu",
        "comm_bytes_per_step",
    ],
}
BOOLEAN = {("inference", "fits"), ("training", "fits")}
INTEGER = {
    ("inference", "max_batch"),
    ("training", "max_micro_batch"),
    ("parallelism", "dp"),
    ("parallelism", "tp"),
    ("parallelism", "pp"),
    ("parallelism", "zero_stage"),
}
NOT_PRICED = {
    ("compute", "flops_per_gpu_per_s"),
    ("compute", "gpu_hours"),
    ("compute", "wall_seconds"),
    ("compute", "cost_usd"),
}
"""Null for a plan whose training peak exceeds the GPU (issue 25)."""
SEARCH_KEYS = ["peak_bytes", "step_seconds", "tokens_per_s", "mfu", "bottleneck", "tp", "pp", "dp"]


def _json(capsys: pytest.CaptureFixture[str], *argv: str) -> object:
    assert main(list(argv)) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize(
    "argv",
    [
        (),
        ("--model", "mixtral-8x7b", "--num-gpus", "64", "--tp", "2", "--zero", "3"),
        (
            "--model",
            "llama-2-70b",
            "--num-gpus",
            "1024",
            "--tp",
            "8",
            "--pp",
            "4",
            "--recompute",
            "full",
            "--schedule",
            "interleaved:2",
            "--sequence-parallel",
        ),
        ("--params", "175B", "--tokens", "300B", "--gpu", "a100-sxm4-80gb"),
    ],
)
def test_report_json_has_every_published_key(
    capsys: pytest.CaptureFixture[str], argv: tuple[str, ...]
) -> None:
    data = _json(capsys, "report", *argv, "--json")
    assert isinstance(data, dict)
    for section, keys in REPORT_KEYS.items():
        for key in keys:
            value = data[section][key]
            if (section, key) in BOOLEAN:
                assert isinstance(value, bool), (section, key, value)
            elif (section, key) in INTEGER:
                assert isinstance(value, int), (section, key)
                assert not isinstance(value, bool), (section, key)
            elif value is None and (section, key) in NOT_PRICED and not data["training"]["fits"]:
                # a plan that does not fit is not priced: null, and the label says why
                assert "needs " in data["compute"]["throughput_label"]
            else:  # SI values: plain finite numbers
                assert isinstance(value, int | float), (section, key)
                assert not isinstance(value, bool), (section, key)
                assert math.isfinite(value), (section, key, value)
                assert value >= 0, (section, key, value)


def test_report_json_layout_echoes_the_options(capsys: pytest.CaptureFixture[str]) -> None:
    data = _json(
        capsys,
        "report",
        "--model",
        "llama-2-70b",
        "--num-gpus",
        "64",
        "--tp",
        "8",
        "--pp",
        "2",
        "--zero",
        "1",
        "--json",
    )
    layout = data["parallelism"]  # type: ignore[index]
    assert (layout["dp"], layout["tp"], layout["pp"], layout["zero_stage"]) == (4, 8, 2, 1)


def test_search_json_rows(capsys: pytest.CaptureFixture[str]) -> None:
    rows = _json(
        capsys, "search", "--model", "llama-3.1-8b", "--num-gpus", "64", "--top", "3", "--json"
    )
    assert isinstance(rows, list)
    assert 1 <= len(rows) <= 3
    for row in rows:
        for key in SEARCH_KEYS:
            assert key in row
    assert [r["tokens_per_s"] for r in rows] == sorted(
        (r["tokens_per_s"] for r in rows), reverse=True
    )
