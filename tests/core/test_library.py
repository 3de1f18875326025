"""The local library: every operation, damaged files set aside, import/export, recovery."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from llm_planner.cli import main
from llm_planner.core.composition.scenario import SCHEMA_VERSION, Scenario, default_scenario
from llm_planner.core.files import paths
from llm_planner.core.files.library import (
    Library,
    LibraryError,
    discard_recovery,
    pending_recoveries,
    slugify,
    write_recovery,
)
from llm_planner.core.files.store import (
    SUFFIX,
    ScenarioFileError,
    load_scenario_file,
    save_scenario_file,
)

FIXTURES = Path(__file__).parent.parent / "fixtures" / "scenarios"


def _scenario(name: str, notes: str = "", num_gpus: int = 512) -> Scenario:
    return default_scenario().model_copy(
        update={"name": name, "notes": notes, "num_gpus": num_gpus}
    )


def _files(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []


def test_paths_follow_the_environment_override(tmp_path: Path) -> None:
    home = Path(os.environ["LLM_PLANNER_HOME"])
    assert home.is_relative_to(tmp_path)
    assert paths.data_dir() == home / "data"
    assert paths.library_dir() == home / "data" / "scenarios"
    assert Library().folder == paths.library_dir()


def test_paths_without_override_use_platformdirs(monkeypatch: pytest.MonkeyPatch) -> None:
    import platformdirs

    monkeypatch.delenv("LLM_PLANNER_HOME")
    assert paths.data_dir() == Path(platformdirs.user_data_dir("llm-planner", appauthor=False))


@pytest.mark.parametrize(
    ("name", "slug"),
    [
        ("70B pretrain", "70b-pretrain"),
        ("Größe / 東京 ../..", "groe"),
        ("  ", "scenario"),
        ("CON", "con-1"),
        ("a" * 300, "a" * 60),
    ],
)
def test_slugify(name: str, slug: str) -> None:
    assert slugify(name) == slug


def test_save_open_list_search() -> None:
    library = Library()
    assert library.listing().entries == []
    first = library.save(_scenario("70B pretrain", "Llama 70B on H100, 15T tokens"))
    second = library.save(_scenario("8B finetune", "LoRA run", num_gpus=8))
    assert first.key == "70b-pretrain"
    assert second.key == "8b-finetune"
    listing = library.listing()
    assert [e.name for e in listing.entries] == ["70B pretrain", "8B finetune"]
    assert listing.problems == []
    assert library.open("8b-finetune").num_gpus == 8
    assert [e.key for e in library.search("lora")] == ["8b-finetune"]
    assert [e.key for e in library.search("H100 tokens")] == ["70b-pretrain"]
    assert [e.key for e in library.search("PRETRAIN")] == ["70b-pretrain"]
    assert library.search("nothing-like-this") == []
    assert len(library.search("")) == 2
    assert library.find("8B FINETUNE") == "8b-finetune"
    assert library.find("70b-pretrain") == "70b-pretrain"
    with pytest.raises(LibraryError, match="no scenario named"):
        library.find("missing")


def test_save_over_a_key_and_save_as_never_overwrites_another() -> None:
    library = Library()
    saved = library.save(_scenario("plan"))
    library.save(saved.scenario.model_copy(update={"num_gpus": 64}), saved.key)
    assert library.open("plan").num_gpus == 64
    copy = library.save_as(library.open("plan"))
    assert copy.key == "plan-2"
    assert copy.scenario.name == "plan (2)"
    third = library.save(_scenario("plan"))  # a new entry with a taken name: new key
    assert third.key == "plan-3"
    assert {e.key for e in library.listing().entries} == {"plan", "plan-2", "plan-3"}
    with pytest.raises(LibraryError, match="not a library key"):
        library.open("../escape")


def test_rename_and_duplicate() -> None:
    library = Library()
    library.save(_scenario("old name", "keep these notes"))
    renamed = library.rename("old-name", "New name")
    assert renamed.key == "new-name"
    assert _files(library.folder) == [f"new-name{SUFFIX}"]
    assert library.open("new-name").notes == "keep these notes"
    same_slug = library.rename("new-name", "NEW NAME")  # same key, only the name changes
    assert same_slug.key == "new-name"
    assert library.open("new-name").name == "NEW NAME"
    dup = library.duplicate("new-name")
    assert dup.scenario.name == "NEW NAME (copy)"
    assert library.open(dup.key).notes == "keep these notes"
    assert len(library.listing().entries) == 2


def test_delete_goes_to_trash_and_restores() -> None:
    library = Library()
    library.save(_scenario("doomed", "important notes"))
    item = library.delete("doomed")
    assert library.listing().entries == []
    assert [t.name for t in library.trash()] == ["doomed"]
    assert item.key == "doomed"
    # the key is reused meanwhile: restoring must not overwrite it
    library.save(_scenario("doomed", "a different one"))
    restored = library.restore(item.id)
    assert restored.key == "doomed-2"
    assert restored.scenario.name == "doomed (2)"
    assert library.open("doomed-2").notes == "important notes"
    assert library.open("doomed").notes == "a different one"
    assert library.trash() == []
    library.delete("doomed")
    assert library.purge_trash(older_than_seconds=3600) == 0  # too recent
    assert library.purge_trash() == 1
    assert library.trash() == []


def _damage(library: Library) -> dict[str, bytes]:
    """Drop one of each kind of bad file into the library folder."""
    good = (FIXTURES / "v1-default.llmplan.json").read_bytes()
    bad = {
        "corrupt": b'{"schema_version": 1, "name": "x", }',
        "truncated": good[: len(good) // 2],
        "empty": b"",
        "binary": bytes(range(256)) * 4,
        "huge": b'{"schema_version": 1, "notes": "' + b"x" * 1_200_000 + b'"}',
        "wrong-schema": json.dumps({"schema_version": 1, "model": "llama", "gpu": 3}).encode(),
        "foreign": b'{"architectures": ["LlamaForCausalLM"], "hidden_size": 4096}',
    }
    for name, data in bad.items():
        (library.folder / f"{name}{SUFFIX}").write_bytes(data)
    return bad


def test_damaged_files_are_set_aside_and_good_ones_still_list_and_open() -> None:
    library = Library()
    for i in range(3):
        library.save(_scenario(f"good {i}"))
    bad = _damage(library)
    (library.folder / "notes.txt").write_text("not a scenario")  # ignored: wrong suffix
    listing = library.listing()
    assert [e.name for e in listing.entries] == ["good 0", "good 1", "good 2"]
    assert len(listing.problems) == len(bad)
    for problem in listing.problems:
        assert problem.set_aside
        assert str(problem.original) in problem.message
        assert problem.path.parent == library.quarantine_folder
    # nothing lost: every bad file is in quarantine, byte for byte
    quarantined = {
        p.name.split("--", 1)[1]: p.read_bytes() for p in library.quarantine_folder.iterdir()
    }
    assert quarantined == {f"{name}{SUFFIX}": data for name, data in bad.items()}
    for entry in listing.entries:
        assert library.open(entry.key).name == entry.name
    assert library.listing().problems == []  # once set aside, the library is clean


def test_a_newer_file_is_reported_but_left_in_place() -> None:
    library = Library()
    library.folder.mkdir(parents=True)
    doc = json.loads((FIXTURES / "v1-default.llmplan.json").read_text("utf-8"))
    doc["schema_version"] = 99
    path = library.folder / f"future{SUFFIX}"
    path.write_text(json.dumps(doc), encoding="utf-8")
    listing = library.listing()
    assert listing.entries == []
    [problem] = listing.problems
    assert not problem.set_aside
    assert "newer" in problem.message
    assert path.exists()


def test_stale_temp_files_of_killed_writes_are_cleaned() -> None:
    library = Library()
    library.save(_scenario("a"))
    stale = library.folder / f".a{SUFFIX}.x1.tmp"
    fresh = library.folder / f".a{SUFFIX}.x2.tmp"
    stale.write_text("{")
    fresh.write_text("{")
    old = time.time() - 7200
    os.utime(stale, (old, old))
    assert [e.key for e in library.listing().entries] == ["a"]
    assert not stale.exists()
    assert fresh.exists()  # may belong to a save in progress


def test_import_copies_in_without_overwriting_and_reports_bad_files(tmp_path: Path) -> None:
    library = Library()
    library.save(_scenario("Fixture v1: Llama-3.1-8B pretraining", "mine"))
    bad = tmp_path / "bad.llmplan.json"
    bad.write_text('{"schema_version": 1, "num_gpus": -3}')
    sources = [FIXTURES / "v1-default.llmplan.json", bad, FIXTURES / "v0-legacy.llmplan.json"]
    before = {p: p.read_bytes() for p in sources}
    result = library.import_files(sources)
    assert [s.scenario.name for _, s in result.imported] == [
        "Fixture v1: Llama-3.1-8B pretraining (2)",
        "70B pretraining (v0 draft)",
    ]
    [(source, message)] = result.failed
    assert source == bad
    assert str(bad) in message
    assert library.open("fixture-v1-llama-3-1-8b-pretraining").notes == "mine"  # untouched
    assert {p: p.read_bytes() for p in sources} == before  # sources untouched
    imported = load_scenario_file(result.imported[1][1].path)
    assert imported.schema_version == SCHEMA_VERSION  # the v0 file was migrated on the way in


def test_export_writes_files_that_load_and_never_overwrites(tmp_path: Path) -> None:
    library = Library()
    a = library.save(_scenario("alpha"))
    b = library.save(_scenario("beta", num_gpus=16))
    out = tmp_path / "out"
    written = library.export([a.key, b.key], out)
    assert [p.name for p in written] == [f"alpha{SUFFIX}", f"beta{SUFFIX}"]
    assert load_scenario_file(written[1]).num_gpus == 16
    again = library.export([a.key], out)
    assert again == [out / f"alpha-2{SUFFIX}"]
    assert load_scenario_file(written[0]) == load_scenario_file(again[0])


def test_recovery_round_trip_and_damaged_recovery_is_set_aside() -> None:
    assert pending_recoveries() == []
    edited = _scenario("unsaved edits", "typed but not saved")
    write_recovery(edited, "70b-pretrain")
    write_recovery(_scenario("untitled"), "untitled-1")
    write_recovery(edited.model_copy(update={"num_gpus": 8}), "70b-pretrain")  # replaces
    found = {r.key: r for r in pending_recoveries()}
    assert set(found) == {"70b-pretrain", "untitled-1"}
    assert found["70b-pretrain"].scenario.num_gpus == 8
    assert found["70b-pretrain"].scenario.notes == "typed but not saved"
    discard_recovery("70b-pretrain")
    discard_recovery("never-written")  # no error
    assert [r.key for r in pending_recoveries()] == ["untitled-1"]
    library = Library()
    (library.recovery_folder / f"junk{'.recovery.json'}").write_bytes(b"\x00garbage")
    assert [r.key for r in pending_recoveries()] == ["untitled-1"]
    assert len(_files(library.quarantine_folder)) == 1


def test_library_rejects_a_bad_name_on_rename() -> None:
    library = Library()
    library.save(_scenario("a"))
    with pytest.raises(ValueError, match="200"):
        library.rename("a", "x" * 201)
    assert library.open("a").name == "a"


def test_open_unknown_and_damaged() -> None:
    library = Library()
    with pytest.raises(LibraryError):
        library.open("nope")
    library.folder.mkdir(parents=True)
    (library.folder / f"broken{SUFFIX}").write_text("{")
    with pytest.raises(ScenarioFileError, match="broken"):
        library.open("broken")


# ------------------------------------------------------------------ command line


def test_cli_list_import_export(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["list"]) == 0
    assert "no scenarios" in capsys.readouterr().out
    bad = tmp_path / "foreign.json"
    bad.write_text('{"architectures": ["LlamaForCausalLM"]}')
    code = main(["import", str(FIXTURES / "v1-default.llmplan.json"), str(bad)])
    out, err = capsys.readouterr()
    assert code == 2  # one file refused, the other imported
    assert "imported" in out
    assert err.count("\n") == 1
    assert str(bad) in err
    assert "schema_version" in err
    assert main(["list", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["name"] for r in rows] == ["Fixture v1: Llama-3.1-8B pretraining"]
    assert main(["list", "--search", "fixture"]) == 0
    assert "fixture-v1" in capsys.readouterr().out
    out_dir = tmp_path / "to"
    assert main(["export", "Fixture v1: Llama-3.1-8B pretraining", "--to", str(out_dir)]) == 0
    [written] = capsys.readouterr().out.split()
    assert load_scenario_file(Path(written)).name == "Fixture v1: Llama-3.1-8B pretraining"
    assert main(["export", "no such", "--to", str(out_dir)]) == 2
    assert "no scenario named 'no such'" in capsys.readouterr().err


def test_cli_list_reports_problems_on_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    library = Library()
    save_scenario_file(_scenario("ok"), library.folder / f"ok{SUFFIX}")
    (library.folder / f"bad{SUFFIX}").write_text("[]")
    assert main(["list"]) == 0
    out, err = capsys.readouterr()
    assert "ok" in out
    assert "warning" in err
    assert "bad" in err


def test_new_keys_avoid_files_that_differ_only_in_case() -> None:
    library = Library()
    library.folder.mkdir(parents=True)
    save_scenario_file(_scenario("Plan"), library.folder / f"Plan{SUFFIX}")  # dropped in by hand
    saved = library.save(_scenario("plan"))
    assert saved.key == "plan-2"
    assert {e.key for e in library.listing().entries} == {"Plan", "plan-2"}


def test_the_library_folders_are_spelled_once(tmp_path: Path) -> None:
    """``Library(root)`` uses the folders ``paths`` names, under whichever root it is given."""
    library = Library(tmp_path)
    assert library.folder == paths.library_dir(tmp_path) == tmp_path / "scenarios"
    assert library.trash_folder == paths.trash_dir(tmp_path) == tmp_path / "trash"
    assert library.quarantine_folder == tmp_path / "quarantine"
    assert library.recovery_folder == tmp_path / "recovery"
    assert library.journal_folder == tmp_path / "journal"


# ---------------------------------------------------------------- issue 29 item 9: unique names


def test_rename_to_a_name_another_entry_has_gives_a_fresh_one() -> None:
    library = Library()
    library.save_as(_scenario("Alpha"))
    beta = library.save_as(_scenario("Beta"))
    renamed = library.rename(beta.key, "alpha")  # another case of the same name
    assert renamed.scenario.name == "alpha (2)"
    names = sorted(e.name for e in library.listing().entries)
    assert names == ["Alpha", "alpha (2)"]
    assert library.find("Alpha") != library.find("alpha (2)")  # neither is ambiguous


def test_rename_keeping_the_key_still_refuses_a_taken_name() -> None:
    """'Alpha!' has the key 'alpha-2'; renamed to 'Alpha' its slug is not its key, and
    'beta' renamed to 'BETA' keeps its key: neither may end up sharing a name."""
    library = Library()
    library.save_as(_scenario("Alpha"))
    other = library.save_as(_scenario("Alpha!"))
    assert other.key == "alpha-2"
    assert library.rename(other.key, "Alpha").scenario.name == "Alpha (2)"
    beta = library.save_as(_scenario("beta"))
    assert library.rename(beta.key, "BETA").scenario.name == "BETA"  # its own name: no suffix
    names = [e.name.casefold() for e in library.listing().entries]
    assert len(names) == len(set(names)) == 3


def test_the_command_line_finds_each_entry_after_a_rename_onto_a_taken_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    library = Library()
    library.save_as(_scenario("Plan A", num_gpus=8))
    second = library.save_as(_scenario("Plan B", num_gpus=16))
    library.rename(second.key, "Plan A")
    assert main(["export", "Plan A", "--to", str(tmp_path / "out")]) == 0
    assert main(["delete", "Plan A"]) == 0
    left = library.listing().entries
    assert [(e.name, e.num_gpus) for e in left] == [("Plan A (2)", 16)]


# ---------------------------------------------------------------- issue 29 item 7: a failed move


def test_a_restore_whose_write_fails_leaves_no_journal_that_could_remove_it_later(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The journal entry of a restore names the file to be written; if the write fails
    (a full disk) and the entry stayed, saving that name later and starting again would
    remove the trashed file as if the restore had finished."""
    import errno

    import llm_planner.core.files.library as library_module

    library = Library()
    saved = library.save_as(_scenario("Precious", "only copy"))
    library.delete(saved.key)
    [item] = library.trash()

    def full(*_args: object, **_kwargs: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    with monkeypatch.context() as patch:
        patch.setattr(library_module, "save_scenario_file", full)
        with pytest.raises(LibraryError, match="No space left on device") as raised:
            library.restore(item.id)
    assert item.id in str(raised.value)
    assert _files(library.journal_folder) == []
    library.save_as(_scenario("Precious", "a new plan of the same name"))
    assert [i.id for i in Library().trash()] == [item.id]  # a fresh start removes nothing
    assert Library().listing().entries[0].notes == "a new plan of the same name"
    assert load_scenario_file(item.path).notes == "only copy"


def test_a_delete_whose_move_fails_keeps_the_entry_and_no_journal(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import errno

    library = Library()
    saved = library.save_as(_scenario("Kept", "still here"))

    def refuse(*_args: object, **_kwargs: object) -> None:
        raise OSError(errno.EIO, "Input/output error")

    with monkeypatch.context() as patch:
        patch.setattr(os, "link", refuse)
        patch.setattr(os, "replace", refuse)
        with pytest.raises(LibraryError, match="Input/output error") as raised:
            library.delete(saved.key)
    assert str(saved.path) in str(raised.value)
    assert "\n" not in str(raised.value)
    assert _files(library.journal_folder) == []
    assert library.open(saved.key).notes == "still here"
    assert Library().trash() == []


def test_a_save_on_a_full_disk_is_one_message_naming_the_file_and_keeps_the_old_copy(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import errno

    library = Library()
    saved = library.save_as(_scenario("Kept", "the saved version"))

    def full(_fd: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    with monkeypatch.context() as patch:
        patch.setattr(os, "fsync", full)
        with pytest.raises(LibraryError, match="No space left on device") as over:
            library.save(_scenario("Kept", "an edit that did not fit"), saved.key)
        with pytest.raises(LibraryError, match="No space left on device") as new:
            library.save_as(_scenario("Another"))
    assert str(over.value).startswith(f"{saved.path}: ")
    assert str(new.value).startswith(f"{library.folder}: ")
    assert "'Another'" in str(new.value)
    assert library.open(saved.key).notes == "the saved version"
    assert [e.name for e in library.listing().entries] == ["Kept"]
    assert [p for p in _files(library.folder) if p.startswith(".")] == []  # no temp left


def test_saving_over_an_entry_under_a_name_another_entry_has_gives_a_fresh_one() -> None:
    """The window's name field edited to another entry's name, then Save over the entry:
    the same duplicate a rename could make (issue 29 item 9)."""
    library = Library()
    library.save_as(_scenario("Alpha", num_gpus=8))
    beta = library.save_as(_scenario("Beta", num_gpus=16))
    saved = library.save(_scenario("ALPHA", num_gpus=16), beta.key)
    assert saved.key == beta.key
    assert saved.scenario.name == "ALPHA (2)"
    assert sorted(e.name for e in library.listing().entries) == ["ALPHA (2)", "Alpha"]
    again = library.save(_scenario("ALPHA (2)", num_gpus=32), beta.key)  # its own name
    assert again.scenario.name == "ALPHA (2)"
