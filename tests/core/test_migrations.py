"""The migration chain: ordered explicit steps, failures named, nothing half-migrated."""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from llm_planner.core.composition.scenario import SCHEMA_VERSION
from llm_planner.core.files import migrations
from llm_planner.core.files.migrations import (
    MIGRATIONS,
    Migration,
    MigrationError,
    NewerVersionError,
    StepError,
    check_chain,
    migrate,
)
from llm_planner.core.files.store import ScenarioFileError, load_scenario_file
from llm_planner.core.primitives.gpus import get_gpu
from llm_planner.core.primitives.presets import get_preset

FIXTURES = Path(__file__).parent.parent / "fixtures" / "scenarios"


def test_shipped_chain_covers_every_version_in_order() -> None:
    check_chain(MIGRATIONS, SCHEMA_VERSION)
    assert [m.to_version for m in MIGRATIONS] == list(range(1, SCHEMA_VERSION + 1))


def test_check_chain_rejects_gaps_and_disorder() -> None:
    step = Migration(0, "x", lambda d: d)
    with pytest.raises(AssertionError):
        check_chain([step, Migration(2, "y", lambda d: d)], 3)
    with pytest.raises(AssertionError):
        check_chain([Migration(1, "y", lambda d: d), step], 2)


def _tracing_chain(log: list[str]) -> list[Migration]:
    def step(n: int) -> Migration:
        def apply(data: dict[str, Any]) -> dict[str, Any]:
            log.append(f"{n}->{n + 1}")
            data.setdefault("trail", []).append(n)
            data["schema_version"] = n + 1
            return data

        return Migration(n, f"step {n}", apply)

    return [step(n) for n in range(3)]


def test_steps_run_in_order_from_the_documents_version() -> None:
    log: list[str] = []
    chain = _tracing_chain(log)
    out = migrate({"schema_version": 1}, current=3, migrations=chain)
    assert log == ["1->2", "2->3"]
    assert out == {"schema_version": 3, "trail": [1, 2]}
    log.clear()
    assert migrate({"schema_version": 3}, current=3, migrations=chain) == {"schema_version": 3}
    assert log == []


def test_a_failing_step_is_named_and_leaves_no_half_migrated_document() -> None:
    def ok(data: dict[str, Any]) -> dict[str, Any]:
        data["schema_version"] = 1
        data["touched"] = True
        return data

    def boom(data: dict[str, Any]) -> dict[str, Any]:
        data["half"] = True  # mutates its copy, then fails
        raise StepError("compute.tokens", "cannot convert")

    chain = [Migration(0, "first", ok), Migration(1, "second", boom)]
    original = {"schema_version": 0, "compute": {"tokens": "lots"}}
    before = copy.deepcopy(original)
    with pytest.raises(MigrationError) as caught:
        migrate(original, current=2, migrations=chain)
    assert caught.value.step is chain[1]
    assert caught.value.field == "compute.tokens"
    assert "v1→v2 (second)" in str(caught.value)
    assert original == before  # the caller's dict is untouched


def test_a_step_with_a_bug_is_still_reported_with_its_step() -> None:
    def buggy(data: dict[str, Any]) -> dict[str, Any]:
        return {"x": data["missing"]}

    with pytest.raises(MigrationError, match=r"v0→v1 \(buggy\) failed: KeyError"):
        migrate({"schema_version": 0}, current=1, migrations=[Migration(0, "buggy", buggy)])


def test_a_step_must_produce_its_target_version() -> None:
    lazy = Migration(0, "lazy", lambda d: d)
    with pytest.raises(MigrationError, match="did not produce a v1 document"):
        migrate({"schema_version": 0}, current=1, migrations=[lazy])


def test_newer_version_is_refused_with_a_clear_message() -> None:
    with pytest.raises(NewerVersionError) as caught:
        migrate({"schema_version": SCHEMA_VERSION + 1, "app_version": "9.0.0"}, app_version="0.1")
    message = str(caught.value)
    assert "9.0.0" in message
    assert "update LLM Planner" in message
    assert caught.value.field == "schema_version"


@pytest.mark.parametrize("version", ["1", 1.0, True, None, [1]])
def test_version_must_be_an_integer(version: Any) -> None:
    with pytest.raises(MigrationError, match="whole number"):
        migrate({"schema_version": version})


def test_missing_version_means_not_a_scenario() -> None:
    with pytest.raises(MigrationError, match="not an LLM Planner scenario"):
        migrate({"architectures": ["LlamaForCausalLM"]})


def test_v0_fixture_migrates_to_the_expected_v1_scenario() -> None:
    scenario = load_scenario_file(FIXTURES / "v0-legacy.llmplan.json")
    # hand-checked against the fixture: title/description/gpus renamed, ids inlined
    assert scenario.schema_version == SCHEMA_VERSION
    assert scenario.name == "70B pretraining (v0 draft)"
    assert scenario.notes.startswith("Hand-written in the pre-release v0 format")
    assert scenario.num_gpus == 1024
    # saved_at 1767225600 s = 20454 days × 86400 s = 2026-01-01T00:00:00Z
    assert scenario.created == datetime(2026, 1, 1, tzinfo=UTC)
    assert scenario.modified == datetime(2026, 1, 1, tzinfo=UTC)
    assert scenario.model.preset == "llama-3.1-70b"
    assert scenario.model.architecture == get_preset("llama-3.1-70b").architecture
    assert scenario.gpu == get_gpu("h100-sxm")
    assert scenario.compute.tokens == 15e12
    assert scenario.compute.mfu == 0.38


def test_v0_with_an_unknown_model_names_file_step_and_field(tmp_path: Path) -> None:
    data = json.loads((FIXTURES / "v0-legacy.llmplan.json").read_text(encoding="utf-8"))
    data["model"] = "gpt-7-omega"
    path = tmp_path / "old.llmplan.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(ScenarioFileError) as caught:
        load_scenario_file(path)
    message = str(caught.value)
    assert str(path) in message
    assert "model" in message
    assert "v0→v1" in message
    assert "gpt-7-omega" in message
    assert "\n" not in message


@pytest.mark.parametrize(
    ("key", "value", "field"),
    [("gpu", {"id": "h100"}, "gpu"), ("saved_at", "yesterday", "saved_at"), ("model", 7, "model")],
)
def test_v0_step_rejects_bad_values(key: str, value: Any, field: str) -> None:
    data = {"schema_version": 0, "model": "llama-3.1-8b", "gpu": "h100-sxm", key: value}
    with pytest.raises(MigrationError) as caught:
        migrate(data)
    assert caught.value.field == field
    assert caught.value.step is migrations.MIGRATIONS[0]


def test_a_v0_file_invalid_after_migration_says_so(tmp_path: Path) -> None:
    data = json.loads((FIXTURES / "v0-legacy.llmplan.json").read_text(encoding="utf-8"))
    data["gpus"] = 0  # renamed to num_gpus by the step, then refused by validation
    path = tmp_path / "old.llmplan.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(ScenarioFileError) as caught:
        load_scenario_file(path)
    assert caught.value.field == "num_gpus"
    assert f"after migrating the v0 file to v{SCHEMA_VERSION}" in str(caught.value)


def test_every_schema_version_has_a_committed_fixture_that_loads() -> None:
    """Bumping SCHEMA_VERSION needs a migration step and a fixture of the old version."""
    for version in range(SCHEMA_VERSION + 1):
        found = sorted(FIXTURES.glob(f"v{version}-*.llmplan.json"))
        assert found, f"no fixture for schema v{version} in {FIXTURES}"
        for path in found:
            assert json.loads(path.read_text("utf-8"))["schema_version"] == version
            assert load_scenario_file(path).schema_version == SCHEMA_VERSION


def test_v4_rl_decode_efficiency_is_dropped_and_the_other_rl_inputs_kept() -> None:
    """v4 → v5: the RL rollouts are priced by the serving model, so the fixture's
    ``decode_bandwidth_efficiency: 0.55`` is dropped; its other RL inputs (64 GPUs, 512
    prompts × 8 samples, 1024 + 2048 tokens, engines of 1 GPU, separate pools) stay."""
    path = FIXTURES / "v4-rl-decode-efficiency.llmplan.json"
    raw = json.loads(path.read_text("utf-8"))
    assert raw["schema_version"] == 4
    assert raw["whatif"]["rl"]["decode_bandwidth_efficiency"] == 0.55
    migrated = migrate(raw, current=5)
    assert migrated["schema_version"] == 5
    rl = migrated["whatif"]["rl"]
    assert "decode_bandwidth_efficiency" not in rl
    assert rl == {
        k: v for k, v in raw["whatif"]["rl"].items() if k != "decode_bandwidth_efficiency"
    }
    scenario = load_scenario_file(path)
    assert scenario.whatif.rl is not None
    loaded = scenario.whatif.rl
    assert (loaded.num_gpus, loaded.prompts_per_step, loaded.samples_per_prompt) == (64, 512, 8)
    assert (loaded.prompt_tokens, loaded.response_tokens, loaded.engine_gpus) == (1024, 2048, 1)
    assert loaded.placement == "separate"
    # a v4 file that plans no RL what-if (or none at all) is only re-versioned
    for whatif in ({"rl": None}, None):
        doc = {"schema_version": 4, "whatif": whatif}
        assert migrate(doc, current=5, migrations=migrations.MIGRATIONS) == {
            "schema_version": 5,
            "whatif": whatif,
        }


def test_v5_refuses_the_removed_rl_field() -> None:
    """The field is gone from the v5 format: a v5 file that still has it is refused,
    naming it, rather than silently ignoring a value that no longer changes anything."""
    from llm_planner.core.files.store import dumps_scenario, parse_scenario
    from llm_planner.core.inputs.scenario import default_scenario, with_changes

    document = json.loads(dumps_scenario(with_changes(default_scenario(), {"whatif.rl": {}})))
    document["whatif"]["rl"]["decode_bandwidth_efficiency"] = 0.7
    with pytest.raises(ScenarioFileError, match="decode_bandwidth_efficiency"):
        parse_scenario(json.dumps(document).encode())
