"""Kill and concurrency harnesses of the library (issue 20), kept as tests.

- SIGKILL at a random moment of a loop of renames, of delete/restore, of saves over a key
  and of imports; the next start (a new Library) must see exactly the one scenario, once:
  never both names, never in both the library and the trash, nothing torn, no journal or
  temporary file left.
- Two processes saving the same name at once: every save gets its own name (the lock).

CI runs a few of each; ``LLM_PLANNER_KILL_RUNS=60`` (per operation) and
``LLM_PLANNER_CONCURRENT_SAVES=150`` (per process) reproduce issue 20's counts.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from llm_planner.core.composition.scenario import default_scenario
from llm_planner.core.files.library import Library
from llm_planner.core.files.store import load_scenario_file, save_scenario_file

KILL_RUNS = int(os.environ.get("LLM_PLANNER_KILL_RUNS", "4"))
CONCURRENT_SAVES = int(os.environ.get("LLM_PLANNER_CONCURRENT_SAVES", "15"))

_CHILD = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from llm_planner.core.files.library import Library
    from llm_planner.core.composition.scenario import default_scenario
    root, op = Path(sys.argv[1]), sys.argv[2]
    lib = Library(root)
    source = root.parent / "source.llmplan.json"
    print("ready", flush=True)
    n = 0
    while True:
        n += 1
        if op == "rename":
            [entry] = lib.listing().entries
            lib.rename(entry.key, "Beta" if entry.name == "Alpha" else "Alpha")
        elif op == "trash":
            entries = lib.listing().entries
            if entries:
                lib.delete(entries[0].key)
            else:
                lib.restore(lib.trash()[0].id)
        elif op == "save":
            [entry] = lib.listing().entries
            scenario = lib.open(entry.key)
            lib.save(scenario.model_copy(update={"num_gpus": 8 * (1 + n % 64)}), entry.key)
        elif op == "import":
            lib.import_files([source])
    """
)


def _child(root: Path, op: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", _CHILD, str(root), op],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _kill_at_random(process: subprocess.Popen[str], rng: random.Random) -> None:
    assert process.stdout is not None
    assert process.stdout.readline().strip() == "ready"
    time.sleep(rng.uniform(0.0, 0.15))
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=30)
    assert process.returncode == -signal.SIGKILL, process.stderr.read() if process.stderr else ""


def _leftovers(library: Library) -> list[str]:
    found = []
    for folder in (library.folder, library.trash_folder, library.journal_folder):
        if folder.is_dir():
            found += [p.name for p in folder.iterdir() if p.name.startswith(".")]
    if library.journal_folder.is_dir():
        found += [p.name for p in library.journal_folder.iterdir()]
    return found


@pytest.mark.parametrize("op", ["rename", "trash", "save", "import"])
def test_a_kill_at_any_moment_leaves_each_scenario_once(op: str, tmp_path: Path) -> None:
    rng = random.Random(f"{op}-20")
    for run in range(KILL_RUNS):
        root = tmp_path / f"run{run}" / "data"
        library = Library(root)
        library.save(default_scenario().model_copy(update={"name": "Alpha"}))
        save_scenario_file(default_scenario(), root.parent / "source.llmplan.json")
        before = len(library.listing().entries)
        _kill_at_random(_child(root, op), rng)
        time.sleep(0.01)
        after = Library(root)  # the next start finishes what the kill left half-done
        listing = after.listing()
        assert listing.problems == [], listing.problems  # nothing torn
        for entry in listing.entries:
            load_scenario_file(entry.path)
        if op == "import":
            assert len(listing.entries) >= before
            names = [e.name.casefold() for e in listing.entries]
            assert len(names) == len(set(names))
        else:
            assert len(listing.entries) + len(after.trash()) == 1, (
                [e.name for e in listing.entries],
                [t.id for t in after.trash()],
            )
        # stale temporaries older than a minute go; a journal is always finished
        assert not [n for n in _leftovers(after) if n.endswith(".json")], _leftovers(after)


_SAVER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from llm_planner.core.files.library import Library
    from llm_planner.core.composition.scenario import default_scenario
    lib = Library(Path(sys.argv[1]))
    scenario = default_scenario().model_copy(update={"name": "Base"})
    print("ready", flush=True)
    sys.stdin.readline()
    for _ in range(int(sys.argv[2])):
        lib.save_as(scenario)
    """
)


def test_two_processes_saving_one_name_never_produce_duplicates(tmp_path: Path) -> None:
    root = tmp_path / "data"
    savers = [
        subprocess.Popen(
            [sys.executable, "-c", _SAVER, str(root), str(CONCURRENT_SAVES)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    for saver in savers:
        assert saver.stdout is not None
        assert saver.stdout.readline().strip() == "ready"
    for saver in savers:  # both start together
        assert saver.stdin is not None
        saver.stdin.write("go\n")
        saver.stdin.flush()
    for saver in savers:
        assert saver.wait(timeout=300) == 0
    entries = Library(root).listing().entries
    names = [entry.name for entry in entries]
    assert len(entries) == 2 * CONCURRENT_SAVES
    assert len(set(names)) == len(names)
    library = Library(root)
    assert library.find("Base (2)")  # every name finds exactly one scenario


def test_a_journal_left_by_a_killed_rename_is_finished_on_start(tmp_path: Path) -> None:
    """The state a kill between "new written" and "old removed" leaves, built by hand."""
    library = Library(tmp_path / "data")
    old = library.save(default_scenario().model_copy(update={"name": "Old"}))
    new = library.save(default_scenario().model_copy(update={"name": "New"}))
    library.journal_folder.mkdir(parents=True, exist_ok=True)
    (library.journal_folder / "20260101T000000000000Z-0.json").write_text(
        '{"format": "llm-planner-journal", "op": "rename", '
        f'"old": "scenarios/{old.path.name}", "new": "scenarios/{new.path.name}"}}'
    )
    # a journal naming a file outside the library is ignored (and removed)
    (library.journal_folder / "20260101T000000000000Z-1.json").write_text(
        '{"format": "llm-planner-journal", "op": "rename", '
        '"old": "../../etc/passwd", "new": "scenarios/' + new.path.name + '"}'
    )
    fresh = Library(tmp_path / "data")
    assert [e.name for e in fresh.listing().entries] == ["New"]
    assert list(fresh.journal_folder.iterdir()) == []
