"""Scenario files: format, round trips, untrusted input, atomic saves under kills, CLI."""

from __future__ import annotations

import json
import os
import random
import signal
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from llm_planner import __version__
from llm_planner.cli import main
from llm_planner.core.composition.estimate import estimate, report_json
from llm_planner.core.composition.scenario import (
    SCHEMA_VERSION,
    ModelChoice,
    Scenario,
    default_scenario,
)
from llm_planner.core.files import store
from llm_planner.core.files.store import (
    MAX_FILE_BYTES,
    SUFFIX,
    ScenarioFileError,
    dumps_scenario,
    load_scenario_file,
    save_scenario_file,
)
from llm_planner.core.primitives.gpus import get_gpu
from llm_planner.core.primitives.presets import get_preset, model_presets

FIXTURES = Path(__file__).parent.parent / "fixtures" / "scenarios"
ROOT = Path(__file__).parent.parent.parent


def _figures(scenario: Scenario) -> list[tuple[str, Any]]:
    report = estimate(scenario)
    return [
        (f"{name}.{f.key}", f.value)
        for name, section in report.sections().items()
        for f in section.figures()
    ]


# ------------------------------------------------------------------ round trips


@pytest.mark.parametrize("preset_id", list(model_presets()))
def test_every_preset_round_trips_to_identical_figures(preset_id: str, tmp_path: Path) -> None:
    preset = get_preset(preset_id)
    scenario = default_scenario().model_copy(
        update={"model": ModelChoice(preset=preset.id, architecture=preset.architecture)}
    )
    path = tmp_path / f"{preset_id}{SUFFIX}"
    written = save_scenario_file(scenario, path)
    loaded = load_scenario_file(path)
    assert loaded == written
    assert report_json(estimate(loaded)) == report_json(estimate(scenario))
    assert _figures(loaded) == _figures(scenario)


def test_custom_model_and_gpu_round_trip_self_contained(tmp_path: Path) -> None:
    arch = get_preset("mixtral-8x7b").architecture.model_copy(update={"name": "my-moe"})
    gpu = get_gpu("h100-sxm").model_copy(update={"id": "lab-gpu", "memory_bytes": 96e9})
    scenario = default_scenario().model_copy(
        update={
            "model": ModelChoice(preset=None, architecture=arch, params_override=12.5e9),
            "gpu": gpu,
            "num_gpus": 48,
        }
    )
    path = save_scenario_file(scenario, tmp_path / "c.llmplan.json") and tmp_path / "c.llmplan.json"
    loaded = load_scenario_file(path)
    assert loaded.model.architecture.name == "my-moe"
    assert loaded.model.params_override == 12.5e9
    assert loaded.gpu.memory_bytes == 96e9
    assert _figures(loaded) == _figures(scenario)


# ------------------------------------------------------------------ the format


def test_file_format_is_readable_stable_utf8_json(tmp_path: Path) -> None:
    scenario = default_scenario().model_copy(update={"name": "Größe 70B — 東京", "notes": "a\nb"})
    path = tmp_path / f"s{SUFFIX}"
    written = save_scenario_file(scenario, path)
    raw = path.read_bytes()
    text = raw.decode("utf-8")
    assert "Größe 70B — 東京" in text  # UTF-8, not \\u escapes
    assert text.endswith("}\n")
    assert text.startswith(f'{{\n  "schema_version": {SCHEMA_VERSION},\n  "app_version": ')
    data = json.loads(text)
    assert data["schema_version"] == SCHEMA_VERSION
    assert data["app_version"] == __version__
    assert list(data)[:4] == ["schema_version", "app_version", "name", "notes"]
    # stable: the same scenario gives byte-identical files
    save_scenario_file(written, tmp_path / "again.llmplan.json", touch=False)
    assert (tmp_path / "again.llmplan.json").read_bytes() == raw
    assert dumps_scenario(load_scenario_file(path)).encode("utf-8") == raw


def test_save_stamps_modified_and_keeps_created(tmp_path: Path) -> None:
    old = datetime(2020, 1, 2, 3, 4, 5, tzinfo=UTC)
    scenario = default_scenario().model_copy(update={"created": old, "modified": old})
    written = save_scenario_file(scenario, tmp_path / "s.llmplan.json")
    assert written.created == old
    assert written.modified > old


@pytest.mark.parametrize("name", ["v1-default.llmplan.json", "v1-custom.llmplan.json"])
def test_committed_v1_fixtures_keep_loading(name: str) -> None:
    scenario = load_scenario_file(FIXTURES / name)
    assert scenario.schema_version == SCHEMA_VERSION  # migrated on load
    # v2 added inputs with defaults; a v1 file keeps the throughput source it names
    assert scenario.compute.throughput_mode == "mfu"
    assert scenario.training.stack == "megatron"
    assert scenario.created == datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
    if name == "v1-default.llmplan.json":
        assert scenario.name == "Fixture v1: Llama-3.1-8B pretraining"
        assert scenario.model.preset == "llama-3.1-8b"
        assert scenario.num_gpus == 512
        assert scenario.notes.endswith("Ünïcödé ✓")
    else:
        assert scenario.model.preset is None
        assert scenario.model.architecture.name == "my-moe-13x7b"
        assert scenario.gpu.name == "Lab GPU 96GB"
        assert scenario.gpu.memory_bytes == 96e9
        assert scenario.num_gpus == 64
    estimate(scenario)


def test_shipped_json_schema_is_up_to_date() -> None:
    shipped = json.loads((ROOT / "resources" / "scenario.schema.json").read_text("utf-8"))
    assert shipped == store.scenario_json_schema(), "run: .venv/bin/python scripts/gen_schema.py"


def test_fixtures_validate_against_the_shipped_schema() -> None:
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads((ROOT / "resources" / "scenario.schema.json").read_text("utf-8"))
    for name in ("v1-default.llmplan.json", "v1-custom.llmplan.json"):
        jsonschema.validate(json.loads((FIXTURES / name).read_text("utf-8")), schema)
    jsonschema.validate(json.loads(dumps_scenario(default_scenario())), schema)
    doc = _valid_doc()
    doc["compute"]["not_a_field"] = 1
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(doc, schema)


# ------------------------------------------------------------------ untrusted input


def _write(tmp_path: Path, content: bytes | str, name: str = "in.llmplan.json") -> Path:
    path = tmp_path / name
    path.write_bytes(content.encode("utf-8") if isinstance(content, str) else content)
    return path


def _valid_doc() -> dict[str, Any]:
    return json.loads((FIXTURES / "v1-default.llmplan.json").read_text("utf-8"))


def _error(path: Path) -> ScenarioFileError:
    with pytest.raises(ScenarioFileError) as caught:
        load_scenario_file(path)
    message = str(caught.value)
    assert message.startswith(f"{path}: ")
    assert "\n" not in message
    return caught.value


@pytest.mark.parametrize(
    ("content", "field", "words"),
    [
        (b"", "(document)", "empty"),
        (b"   \n", "(document)", "empty"),
        (b"\x89PNG\r\n\x1a\n\x00\x00\xff\xfe", "(file)", "not UTF-8"),
        ('{"schema_version": 1, "name": "x"', "(document)", "not valid JSON"),
        ("[1, 2]", "(document)", "JSON object, not list"),
        ('{"schema_version": NaN}', "(document)", "NaN"),
        ('{"a": 1, "a": 2}', "(document)", "appears twice"),
        ("[" * 100_000 + "]" * 100_000, "(document)", "nested too deeply"),
        ('{"schema_version": 1, "n": ' + "[" * 33 + "]" * 33 + "}", "(document)", "over 32"),
        (
            '{"schema_version": 1, "n": ' + "[" * 990 + "]" * 990 + "}",
            "(document)",
            "nested too deeply",
        ),
        ('{"schema_version": 1, "tokens": 1e400}', "(document)", "1e400 is out of range"),
        ('{"schema_version": ' + "9" * 5000 + "}", "(document)", "not accepted"),
        ('{"architectures": ["LlamaForCausalLM"]}', "schema_version", "not an LLM Planner"),
    ],
)
def test_damaged_or_foreign_files_are_refused_with_one_line(
    tmp_path: Path, content: bytes | str, field: str, words: str
) -> None:
    error = _error(_write(tmp_path, content))
    assert error.field == field
    assert words in str(error)


def test_size_limit_is_one_megabyte(tmp_path: Path) -> None:
    assert MAX_FILE_BYTES == 1_000_000
    doc = _valid_doc()
    doc["notes"] = ""
    base = json.dumps(doc, indent=2).encode("utf-8")
    pad = MAX_FILE_BYTES - len(base)
    at_limit = _write(tmp_path, base[:-2] + b" " * pad + base[-2:], "ok.llmplan.json")
    assert at_limit.stat().st_size == MAX_FILE_BYTES
    load_scenario_file(at_limit)  # exactly 1 MB: accepted
    over = _write(tmp_path, base[:-2] + b" " * (pad + 1) + base[-2:], "big.llmplan.json")
    error = _error(over)
    assert "1,000,001 bytes is over the 1,000,000-byte limit" in str(error)


def test_not_a_regular_file(tmp_path: Path) -> None:
    assert "not a regular file" in str(_error(tmp_path))
    if hasattr(os, "mkfifo"):
        fifo = tmp_path / "pipe.llmplan.json"
        os.mkfifo(fifo)
        assert "not a regular file" in str(_error(fifo))  # and no hang on open
    assert "cannot read" in str(_error(tmp_path / "missing.llmplan.json"))


def test_byte_order_mark_is_tolerated(tmp_path: Path) -> None:
    text = (FIXTURES / "v1-default.llmplan.json").read_text("utf-8")
    load_scenario_file(_write(tmp_path, b"\xef\xbb\xbf" + text.encode("utf-8")))


@pytest.mark.parametrize(
    ("path", "value", "field", "words"),
    [
        (["num_gpus"], "512", "num_gpus", "valid integer"),  # strict: no coercion
        (["num_gpus"], 512.0, "num_gpus", "valid integer"),
        (["num_gpus"], 0, "num_gpus", "must be between 1 and 1,048,576 GPUs"),
        (["compute", "tokens"], -1, "compute.tokens", "must be between 1 and"),
        (["model", "architecture", "layers"], True, "model.architecture.layers", "integer"),
        (["gpu", "memory_bytes"], "80 GB", "gpu.memory_bytes", "valid number"),
        (["name"], "x" * 201, "name", "at most 200"),
        (["surprise"], {"__class__": "os.system"}, "surprise", "unknown field"),
        (["compute", "evil"], "rm -rf /", "compute.evil", "unknown field"),
    ],
)
def test_invalid_values_name_the_file_and_field(
    tmp_path: Path, path: list[str], value: Any, field: str, words: str
) -> None:
    doc = _valid_doc()
    node = doc
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    error = _error(_write(tmp_path, json.dumps(doc)))
    assert error.field == field
    assert words in str(error)


def test_missing_required_fields_are_all_mentioned(tmp_path: Path) -> None:
    error = _error(_write(tmp_path, '{"schema_version": 1, "num_gpus": "x"}'))
    assert error.field == "model"
    assert "also invalid: gpu, num_gpus" in str(error)


def test_newer_file_says_update(tmp_path: Path) -> None:
    doc = _valid_doc()
    doc["schema_version"] = SCHEMA_VERSION + 5
    doc["app_version"] = "7.0.0"
    doc["field_from_the_future"] = 1
    error = _error(_write(tmp_path, json.dumps(doc)))
    assert error.newer
    assert error.field == "schema_version"
    assert "7.0.0" in str(error)
    assert "update LLM Planner" in str(error)


def test_hostile_field_names_stay_on_one_line(tmp_path: Path) -> None:
    doc = _valid_doc()
    doc["bad\nkey\x1b[31m" + "k" * 500] = 1
    error = _error(_write(tmp_path, json.dumps(doc)))
    assert len(str(error)) <= 300
    assert "\x1b" not in str(error)


# ------------------------------------------------------------------ atomic saves


def _marked(n: int) -> Scenario:
    """Version ``n`` of a scenario, ~90 kB so a write takes long enough to be interrupted."""
    return default_scenario().model_copy(
        update={"name": f"v{n}", "notes": f"version {n}\n" + "x" * 90_000}
    )


def _version_of(path: Path) -> int:
    scenario = load_scenario_file(path)  # raises on a torn file
    n = int(scenario.name[1:])
    assert scenario.notes == f"version {n}\n" + "x" * 90_000
    return n


@pytest.mark.parametrize("failing", ["write", "fsync", "replace", "fsync_dir"])
def test_a_save_that_fails_at_any_step_leaves_the_old_or_new_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, failing: str
) -> None:
    path = tmp_path / "s.llmplan.json"
    save_scenario_file(_marked(1), path)

    def boom(*args: Any, **kwargs: Any) -> None:
        raise OSError(28, "No space left on device")

    if failing == "write":
        real_fdopen = os.fdopen

        class HalfWritten:
            """A file whose write stores half the bytes, then fails (disk full)."""

            def __init__(self, fd: int, mode: str) -> None:
                self.file = real_fdopen(fd, mode)

            def __enter__(self) -> HalfWritten:
                return self

            def __exit__(self, *exc: object) -> None:
                self.file.close()

            def write(self, data: bytes) -> None:
                self.file.write(data[: len(data) // 2])
                boom()

        monkeypatch.setattr(store.os, "fdopen", HalfWritten)
    elif failing == "fsync":
        monkeypatch.setattr(store.os, "fsync", boom)
    elif failing == "replace":
        monkeypatch.setattr(store.os, "replace", boom)
    else:
        monkeypatch.setattr(store, "fsync_dir", boom)
    with pytest.raises(OSError, match="No space"):
        save_scenario_file(_marked(2), path)
    monkeypatch.undo()
    expected = 2 if failing == "fsync_dir" else 1  # the rename happened before the dir fsync
    assert _version_of(path) == expected
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.llmplan.json"]  # temp removed


def test_overwrite_false_never_replaces(tmp_path: Path) -> None:
    path = tmp_path / "s.llmplan.json"
    save_scenario_file(_marked(1), path)
    with pytest.raises(FileExistsError):
        save_scenario_file(_marked(2), path, overwrite=False)
    assert _version_of(path) == 1
    assert [p.name for p in tmp_path.iterdir()] == ["s.llmplan.json"]


def _kill_saves(path: Path, kills: int, seed: int) -> tuple[int, int]:
    """A child process saves new versions of ``path`` in a loop; SIGKILL it ``kills`` times.

    After each kill the file must exist, parse and validate completely, and hold a
    version no older than before the kill. Returns (kills that landed mid-write, as
    shown by a leftover temporary file; the last version saved).
    """
    save_scenario_file(_marked(0), path)
    rng = random.Random(seed)
    last = 0
    mid_write = 0
    for _ in range(kills):
        ready_r, ready_w = os.pipe()
        pid = os.fork()
        if pid == 0:  # child: save versions last+1, last+2, ... until killed
            try:
                os.close(ready_r)
                os.write(ready_w, b"1")
                n = last + 1
                while True:
                    save_scenario_file(_marked(n), path)
                    n += 1
            finally:
                os._exit(0)
        os.close(ready_w)
        os.read(ready_r, 1)
        os.close(ready_r)
        time.sleep(rng.uniform(0, 0.02))
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        version = _version_of(path)
        assert version >= last
        last = version
        temps = [p for p in path.parent.iterdir() if p.name.endswith(store.TEMP_SUFFIX)]
        mid_write += bool(temps)
        for temp in temps:
            temp.unlink()
    return mid_write, last


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork()")
def test_saves_killed_at_random_moments_never_tear_or_lose_the_file(tmp_path: Path) -> None:
    """50 kills by default; LLM_PLANNER_KILLS=1000 for a longer run."""
    kills = int(os.environ.get("LLM_PLANNER_KILLS", "50"))
    mid_write, last = _kill_saves(tmp_path / "s.llmplan.json", kills, seed=20261129 + kills)
    print(f"kills={kills} mid_write={mid_write} versions_saved={last}")
    assert last > 0  # the children did get to save
    assert mid_write > 0, "no kill landed mid-write: the test did not exercise anything"


# ------------------------------------------------------------------ command line


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_report_save_then_report_file_json_matches(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / f"run{SUFFIX}"
    code, direct, err = _run(
        capsys, "report", "--model", "llama-3.1-70b", "--num-gpus", "1024", "--tokens", "2T",
        "--name", "70B what-if", "--save", str(path), "--json",
    )  # fmt: skip
    assert code == 0
    assert f"saved {path}" in err
    code, again, _ = _run(capsys, "report", str(path), "--json")
    assert code == 0
    assert json.loads(again) == json.loads(direct)
    scenario = load_scenario_file(path)
    assert scenario.name == "70B what-if"
    assert scenario.num_gpus == 1024
    assert scenario.compute.tokens == 2e12
    assert scenario.model.preset == "llama-3.1-70b"


def test_report_on_a_bad_file_exits_2_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = _valid_doc()
    doc["compute"]["mfu"] = "high"
    path = _write(tmp_path, json.dumps(doc))
    code, out, err = _run(capsys, "report", str(path))
    assert code == 2
    assert out == ""
    assert err.count("\n") == 1
    assert str(path) in err
    assert "compute.mfu" in err


def test_report_markdown_and_csv(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "report", "--markdown")
    assert code == 0
    assert out.startswith("# LLM Planner report: ")
    code, out, _ = _run(capsys, "report", "--csv")
    assert code == 0
    assert out.splitlines()[0] == "section,key,label,value,unit,formula,source"
    code, _, err = _run(capsys, "report", "--csv", "--json")
    assert code == 2
    assert "--json" in err


@pytest.mark.skipif(os.name != "posix", reason="POSIX permissions")
def test_saved_files_get_normal_permissions_not_the_temp_files_0600(tmp_path: Path) -> None:
    umask = os.umask(0o022)
    os.umask(umask)
    path = tmp_path / "s.llmplan.json"
    save_scenario_file(default_scenario(), path)
    assert path.stat().st_mode & 0o777 == 0o666 & ~umask
    path.chmod(0o640)
    save_scenario_file(default_scenario(), path)  # overwriting keeps the file's mode
    assert path.stat().st_mode & 0o777 == 0o640
