"""``Report.whatif``: priced once inside ``estimate()`` when the scenario plans a what-if, and
written by every exporter (``report --json``, ``--markdown``, ``--csv``)."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from llm_planner.cli import main
from llm_planner.core.composition.estimate import estimate, report_json
from llm_planner.core.composition.scenario import Scenario, default_scenario
from llm_planner.core.composition.whatif.report import whatif_json
from llm_planner.core.files.report_export import report_csv, report_markdown
from llm_planner.core.files.store import save_scenario_file
from llm_planner.core.inputs.whatif import (
    CompressionInputs,
    MixedClusterInputs,
    NodeGroup,
    WhatIfInputs,
)


def _planned(whatif: WhatIfInputs) -> Scenario:
    return default_scenario().model_copy(update={"whatif": whatif})


COMPRESSION = WhatIfInputs(compression=CompressionInputs(kind="data_parallel", ratio=2.0))


def test_no_plan_no_whatif_and_no_json_key() -> None:
    report = estimate(default_scenario())
    assert report.whatif is None
    assert "whatif" not in report_json(report)
    assert "What if" not in report_markdown(report)


def test_estimate_prices_the_planned_parts_only() -> None:
    report = estimate(_planned(COMPRESSION))
    assert report.whatif is not None
    assert report.whatif.compression is not None
    assert report.whatif.compression.ratio == 2.0
    assert report.whatif.rl is None
    assert report.whatif.mixed_cluster is None
    assert set(report_json(report)["whatif"]) == {"compression"}


def test_markdown_and_csv_carry_the_whatif_section() -> None:
    report = estimate(_planned(COMPRESSION))
    markdown = report_markdown(report)
    assert "## What if" in markdown
    assert "| Compressed communication | data parallel |" in markdown
    rows = list(csv.reader(io.StringIO(report_csv(report))))
    whatif_rows = {row[1]: row for row in rows if row[0] == "whatif"}
    assert whatif_rows["comp.kind"][3] == "data parallel"
    assert "comp.step_after" in whatif_rows


def test_a_step_that_never_ends_is_null_in_strict_json() -> None:
    # a group of one 8-GPU node cannot hold a tp·pp = 16 replica: no data-parallel rank,
    # so the plan's step is infinite, which JSON cannot write
    group = NodeGroup(
        name="small",
        gpu="h100-sxm",
        nodes=1,
        gpus_per_node=8,
        inter_node_bandwidth_bytes_per_s=4e11,
    )
    scenario = _planned(WhatIfInputs(mixed_cluster=MixedClusterInputs(groups=[group])))
    scenario = scenario.model_copy(
        update={"parallelism": scenario.parallelism.model_copy(update={"tp": 8, "pp": 2})}
    )
    report = estimate(scenario)
    assert report.whatif is not None
    assert report.whatif.mixed_cluster is not None
    assert report.whatif.mixed_cluster.step_seconds_even == float("inf")
    data = whatif_json(report.whatif)
    assert data["mixed_cluster"]["step_seconds_even"] is None
    json.dumps(report_json(report), allow_nan=False)  # raises on inf or nan


@pytest.mark.parametrize("flag", ["--markdown", "--csv"])
def test_report_command_exports_include_whatif(
    flag: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "planned.llmplan.json"
    save_scenario_file(_planned(COMPRESSION), path)
    assert main(["report", str(path), flag]) == 0
    out = capsys.readouterr().out
    assert ("## What if" if flag == "--markdown" else "\nwhatif,comp.kind,") in out


def test_a_planned_rl_loop_on_a_plan_that_is_not_priced_says_why_on_every_face() -> None:
    """The RL loop needs the training rate; a training plan that does not fit has none, so
    the what-if report carries why (the window's figures and the JSON read the same)."""
    from llm_planner.core.composition.estimate import estimate
    from llm_planner.core.composition.scenario import default_scenario, with_changes
    from llm_planner.core.composition.whatif.report import whatif_json
    from llm_planner.core.inputs.whatif import RLInputs
    from llm_planner.core.primitives.presets import get_preset

    preset = get_preset("mixtral-8x7b")
    scenario = with_changes(
        default_scenario(),
        {"model": {"preset": preset.id, "architecture": preset.architecture.model_dump()}},
    )
    scenario = scenario.model_copy(
        update={"whatif": scenario.whatif.model_copy(update={"rl": RLInputs()})}
    )
    report = estimate(scenario)
    assert not report.training.fits  # 46.7B at tp 1 on 80 GB
    assert report.whatif is not None
    assert report.whatif.rl is None
    (step,) = [f for f in report.whatif.figures() if f.key == "rl.step"]
    assert "not priced" in str(step.value)
    data = whatif_json(report.whatif)
    assert data["rl"]["step_seconds"] is None
    assert "not priced" in data["rl"]["not_computed"]["step_seconds"]
