"""``llm-planner compare | hardware | sensitivity | prices`` on hand-worked scenarios."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from core.test_compare import H100_BF16, hand_scenario

from llm_planner.cli import main
from llm_planner.core.files.store import save_scenario_file


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    assert main(list(argv)) == 0
    return capsys.readouterr().out


@pytest.fixture
def files(tmp_path: Path) -> list[str]:
    a = hand_scenario(tokens=1e12, gpus=8, price=2.0).model_copy(update={"name": "A"})
    b = hand_scenario(tokens=2e12, gpus=16, price=3.0).model_copy(update={"name": "B"})
    paths = []
    for s in (a, b):
        path = tmp_path / f"{s.name}.llmplan.json"
        save_scenario_file(s, path)
        paths.append(str(path))
    return paths


def test_compare_json_by_hand(capsys: pytest.CaptureFixture[str], files: list[str]) -> None:
    data = json.loads(run(capsys, "compare", *files, "--json"))
    assert data["names"] == ["A", "B"]
    rows = {r["key"]: r for r in data["rows"]}
    t = 6e21 / (8 * H100_BF16 * 0.5)  # = 12e21 / (16 · peak · 0.5): the same time
    assert rows["wall_seconds"]["values"] == pytest.approx([t, t], rel=1e-9)
    assert rows["cost_usd"]["values"] == pytest.approx([16 * t / 3600, 48 * t / 3600], rel=1e-9)
    assert rows["cost_usd"]["ratios"][1] == pytest.approx(2.0)
    assert [d["path"] for d in data["inputs"]] == [
        "num_gpus",
        "compute.tokens",
        "compute.price_usd_per_gpu_hour",
    ]


def test_compare_markdown_and_csv(capsys: pytest.CaptureFixture[str], files: list[str]) -> None:
    md = run(capsys, "compare", *files, "--markdown")
    assert "| Figure | A | B |" in md
    assert "(+200.0%)" in md  # cost ×3
    assert "`compute.tokens`" in md
    rows = list(csv.reader(io.StringIO(run(capsys, "compare", *files, "--csv"))))
    assert rows[0][:6] == ["section", "key", "label", "unit", "A", "B"]
    tokens = next(r for r in rows if r[1] == "tokens")
    assert float(tokens[4]) == 1e12
    assert float(tokens[6]) == 1e12  # the difference
    text = run(capsys, "compare", *files)
    assert "Inputs that differ:" in text
    assert "+200.0%" in text


def test_compare_counts_and_bad_files(capsys: pytest.CaptureFixture[str], files: list[str]) -> None:
    assert main(["compare", files[0]]) == 2
    assert "compare takes 2 to 4 scenario files, got 1" in capsys.readouterr().err
    assert main(["compare", files[0], "missing.json"]) == 2
    err = capsys.readouterr().err
    assert "missing.json" in err
    assert "Traceback" not in err


def test_hardware_cheapest_first(capsys: pytest.CaptureFixture[str], files: list[str]) -> None:
    data = json.loads(run(capsys, "hardware", files[0], "--max-gpus", "64", "--json"))
    options = data["options"]
    ok = [o for o in options if o["status"] == "ok"]
    assert ok
    assert ok[0]["rank"] == 1
    assert [o["cost_usd"] for o in ok] == sorted(o["cost_usd"] for o in ok)
    assert all(o["num_gpus"] <= 64 for o in options)
    text = run(capsys, "hardware", files[0], "--max-gpus", "64", "--top", "3")
    assert "ranked by cost" in text
    assert "at most 12 counts" in text


def test_hardware_bad_price_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    bad = tmp_path / "p.json"
    bad.write_text("{")
    assert main(["hardware", "--prices", str(bad)]) == 2
    assert "argument --prices" in capsys.readouterr().err


def test_sensitivity_json(capsys: pytest.CaptureFixture[str], files: list[str]) -> None:
    data = json.loads(run(capsys, "sensitivity", files[0], "--json"))
    t = 6e21 / (8 * H100_BF16 * 0.5)
    assert data["base_time_seconds"] == pytest.approx(t, rel=1e-9)
    price = next(b for b in data["bars"] if b["key"] == "compute.price_usd_per_gpu_hour")
    assert price["cost_high_usd"] == pytest.approx(1.2 * 16 * t / 3600, rel=1e-9)
    assert "Price per GPU-hour" in run(capsys, "sensitivity", files[0])


def test_prices_lists_sources(capsys: pytest.CaptureFixture[str]) -> None:
    data = json.loads(run(capsys, "prices", "--json"))
    assert all(o["source"] and o["date"] for o in data["offers"])
    assert "out_of_date" in data
    text = run(capsys, "prices")
    assert "https://" in text


def test_hardware_price_for_overrides(capsys: pytest.CaptureFixture[str], files: list[str]) -> None:
    argv = ["hardware", files[0], "--max-gpus", "16", "--json", "--price-for", "mi300x=1.5"]
    data = json.loads(run(capsys, *argv))
    mi = [o for o in data["options"] if o["gpu_id"] == "mi300x"]
    assert mi
    assert all(o["price_usd_per_gpu_hour"] == 1.5 for o in mi)
    assert all(o["price_source"] == "scenario price override" for o in mi)
    assert main(["hardware", "--price-for", "oops"]) == 2
    assert "GPU=PRICE" in capsys.readouterr().err
