"""The library's commands on a faulty disk (issue 29 item 7): a read-only library still
lists; on a read-only, full (ENOSPC) or size-limited (EFBIG) disk, ``delete``, ``restore``
and ``trash --empty`` fail in one line naming the file, exit 2, and lose nothing.

The faults are made by wrapping the ``os`` calls the library writes through (the tests run
as root on CI, where ``chmod`` does not stop a write); the EFBIG case is a real
``RLIMIT_FSIZE`` on a child process, as ``ulimit -f 2`` gives.
"""

from __future__ import annotations

import builtins
import errno
import io
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from llm_planner.cli import main
from llm_planner.core.composition.scenario import default_scenario
from llm_planner.core.files import paths
from llm_planner.core.files.library import Library

_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND


def _under(path: Any, root: Path) -> bool:
    if isinstance(path, int):
        return False
    try:
        return Path(os.path.abspath(os.fsdecode(path))).is_relative_to(root)
    except (TypeError, ValueError):
        return False


def _fail(code: int, path: Any) -> OSError:
    return OSError(code, os.strerror(code), os.fsdecode(path))


def faulty_disk(monkeypatch: pytest.MonkeyPatch, root: Path, code: int) -> None:
    """From now on the disk under ``root`` is read-only (EROFS) or full (ENOSPC).

    Read-only: nothing under ``root`` can be created, opened for writing, linked, renamed,
    removed or made. Full: nothing new can be created, linked, renamed or made, and an
    ``fsync`` reports the lost write; existing files still open and removal still works.
    """
    root = Path(os.path.abspath(root))
    real_open, real_link, real_replace = os.open, os.link, os.replace
    real_rename, real_unlink, real_mkdir = os.rename, os.unlink, os.mkdir
    real_rmdir, real_fsync, real_io_open = os.rmdir, os.fsync, io.open
    read_only = code in (errno.EROFS, errno.EACCES)

    def fake_open(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        creating = read_only or not os.path.exists(path)
        if _under(path, root) and flags & _WRITE_FLAGS and creating:
            raise _fail(code, path)
        return real_open(path, flags, *args, **kwargs)

    def guard2(real: Callable[..., Any]) -> Callable[..., Any]:
        def fake(source: Any, target: Any, *args: Any, **kwargs: Any) -> Any:
            if _under(target, root) or (read_only and _under(source, root)):
                raise _fail(code, target)
            return real(source, target, *args, **kwargs)

        return fake

    def guard_removal(real: Callable[..., Any]) -> Callable[..., Any]:
        def fake(path: Any, *args: Any, **kwargs: Any) -> Any:
            if read_only and _under(path, root):
                raise _fail(code, path)
            return real(path, *args, **kwargs)

        return fake

    def fake_mkdir(path: Any, *args: Any, **kwargs: Any) -> None:
        if _under(path, root):
            if os.path.exists(path):
                raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), os.fsdecode(path))
            raise _fail(code, path)
        real_mkdir(path, *args, **kwargs)

    def fake_fsync(fd: int) -> None:
        if not read_only:
            raise OSError(code, os.strerror(code))
        real_fsync(fd)

    def fake_io_open(file: Any, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        writing = any(c in mode for c in "wax+")
        if writing and _under(file, root) and (read_only or not os.path.exists(file)):
            raise _fail(code, file)
        return real_io_open(file, mode, *args, **kwargs)

    monkeypatch.setattr(os, "open", fake_open)
    monkeypatch.setattr(os, "link", guard2(real_link))
    monkeypatch.setattr(os, "replace", guard2(real_replace))
    monkeypatch.setattr(os, "rename", guard2(real_rename))
    monkeypatch.setattr(os, "unlink", guard_removal(real_unlink))
    monkeypatch.setattr(os, "remove", guard_removal(real_unlink))
    monkeypatch.setattr(os, "rmdir", guard_removal(real_rmdir))
    monkeypatch.setattr(os, "mkdir", fake_mkdir)
    monkeypatch.setattr(os, "fsync", fake_fsync)
    monkeypatch.setattr(io, "open", fake_io_open)
    monkeypatch.setattr(builtins, "open", fake_io_open)


def _library_with_one_saved_and_one_deleted() -> Library:
    """A library holding "Kept plan" and, in its trash, "Deleted plan" (lock file included)."""
    library = Library()
    library.save_as(default_scenario().model_copy(update={"name": "Kept plan"}))
    deleted = library.save_as(default_scenario().model_copy(update={"name": "Deleted plan"}))
    library.delete(deleted.key)
    return library


def _state(root: Path) -> tuple[list[str], list[str]]:
    """The names in the library and in its trash, read by a fresh Library on a healthy disk."""
    library = Library(root)
    return [e.name for e in library.listing().entries], [i.name for i in library.trash()]


def _one_line(err: str, *needles: str) -> None:
    assert err.count("\n") == 1, err
    assert "Traceback" not in err
    for needle in needles:
        assert needle in err, err


@pytest.mark.parametrize("code", [errno.EROFS, errno.EACCES])
def test_a_read_only_library_still_lists(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], code: int
) -> None:
    _library_with_one_saved_and_one_deleted()
    root = paths.data_dir()
    capsys.readouterr()
    with monkeypatch.context() as patch:
        faulty_disk(patch, root, code)
        assert main(["list", "--json"]) == 0
        listed = capsys.readouterr().out
        assert main(["trash", "--json"]) == 0
        trashed = capsys.readouterr().out
    assert '"Kept plan"' in listed
    assert '"Deleted plan"' in trashed


def test_a_read_only_library_lists_even_without_its_lock_file(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A library copied from elsewhere (or whose lock file was removed) on a read-only disk."""
    _library_with_one_saved_and_one_deleted()
    root = paths.data_dir()
    (root / "library.lock").unlink()
    capsys.readouterr()
    with monkeypatch.context() as patch:
        faulty_disk(patch, root, errno.EROFS)
        assert main(["list"]) == 0
    assert "Kept plan" in capsys.readouterr().out


@pytest.mark.parametrize("code", [errno.EROFS, errno.ENOSPC])
@pytest.mark.parametrize(
    ("command", "names"),
    [
        (["delete", "Kept plan"], ("Kept plan", "kept-plan")),
        (["restore", "Deleted plan"], ("Deleted plan", "deleted-plan")),
        (["trash", "--empty"], ("deleted-plan",)),
    ],
)
def test_a_library_command_on_a_faulty_disk_is_one_line_and_loses_nothing(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    code: int,
    command: list[str],
    names: tuple[str, ...],
) -> None:
    _library_with_one_saved_and_one_deleted()
    root = paths.data_dir()
    before = _state(root)
    capsys.readouterr()
    with monkeypatch.context() as patch:
        faulty_disk(patch, root, code)
        status = main(command)
    captured = capsys.readouterr()
    if command == ["trash", "--empty"] and code == errno.ENOSPC:
        # removing files works on a full disk: emptying the trash is what frees space
        assert status == 0, captured.err
        assert _state(root) == (before[0], [])
        return
    assert status == 2
    _one_line(captured.err, os.strerror(code))
    assert any(name in captured.err for name in names), captured.err
    # the disk is healthy again: everything is where it was, and a new start (which
    # finishes journaled moves) does not remove anything either
    assert _state(root) == before
    assert _state(root) == before
    assert sorted(p.name for p in (root / paths.JOURNAL_FOLDER).glob("*")) == []


def test_restore_over_the_file_size_limit_is_one_line_and_loses_nothing(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``ulimit -f 2`` (2 KiB per file): the restored copy cannot be written."""
    _library_with_one_saved_and_one_deleted()
    root = paths.data_dir()
    before = _state(root)
    scenario_bytes = next(root.joinpath(paths.TRASH_FOLDER).iterdir()).stat().st_size
    assert scenario_bytes > 2048  # else the limit would not bite

    def limit() -> None:
        import resource

        resource.setrlimit(resource.RLIMIT_FSIZE, (2048, 2048))

    code = "from llm_planner.cli import main; raise SystemExit(main(['restore', 'Deleted plan']))"
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=limit,
        env={**os.environ},
        check=False,
    )
    assert done.returncode == 2, done.stderr
    _one_line(done.stderr, "deleted-plan", os.strerror(errno.EFBIG))
    assert sorted(p.name for p in (root / paths.JOURNAL_FOLDER).glob("*")) == []
    assert _state(root) == before
    assert _state(root) == before


@pytest.mark.parametrize(("command", "folder"), [(["list"], "scenarios"), (["trash"], "trash")])
def test_an_unreadable_library_folder_is_one_line_naming_it(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    command: list[str],
    folder: str,
) -> None:
    _library_with_one_saved_and_one_deleted()
    target = paths.data_dir() / folder

    def refusing(real: Callable[..., Any]) -> Callable[..., Any]:
        def refuse(path: Any = ".") -> Any:
            if Path(os.fsdecode(path)) == target:
                raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), os.fsdecode(path))
            return real(path)

        return refuse

    capsys.readouterr()
    with monkeypatch.context() as patch:
        patch.setattr(os, "scandir", refusing(os.scandir))
        patch.setattr(os, "listdir", refusing(os.listdir))
        status = main(command)
    assert status == 2
    _one_line(capsys.readouterr().err, str(target), os.strerror(errno.EACCES))
