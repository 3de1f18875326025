"""The library's parts below the :class:`~llm_planner.core.files.library.Library` class: its
constants, the records it returns (entries, problems, trash items, recoveries), keys from
names, the index rows cached in ``index.json``, the per-process lock on ``library.lock``
and the journaled move into the trash or quarantine. See :mod:`llm_planner.core.files.library`
for the rules they keep.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import threading
import unicodedata
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from llm_planner.core.composition.scenario import Scenario
from llm_planner.core.files.store import fsync_dir, make_folders

RECOVERY_SUFFIX = ".recovery.json"
RECOVERY_FORMAT = "llm-planner-recovery"
STALE_TEMP_SECONDS = 60.0
"""Temporary files of interrupted writes older than this are removed on start (a write
lasts milliseconds; a minute leaves room for a slow disk and a writer outside the lock)."""
INDEX_FORMAT = "llm-planner-index"
INDEX_NOTES_CHARS = 4000
"""Notes longer than this are not cached in the index (the file is read instead)."""
JOURNAL_FORMAT = "llm-planner-journal"
IMPORT_INDEX_SLACK = 32
"""An import rewrites the index once more than this many rows are missing from it (the
rewrite costs about as much as reading 30 files; listing rewrites it anyway)."""

_WINDOWS_RESERVED = {"con", "prn", "aux", "nul"} | {
    f"{p}{i}" for p in ("com", "lpt") for i in range(1, 10)
}
_MAX_SLUG = 60


class LibraryError(ValueError):
    """A library operation was refused (unknown or ambiguous name, bad key...)."""


CANNOT_WRITE = frozenset(
    {errno.EROFS, errno.EACCES, errno.EPERM, errno.ENOSPC, errno.EDQUOT, errno.EFBIG}
)
"""The errors of a disk that cannot take a write (read-only, full, over a size limit)."""


def disk_error(path: Path, doing: str, error: OSError) -> LibraryError:
    """A disk error of a library operation as one line naming the file (no traceback)."""
    return LibraryError(f"{path}: cannot {doing} ({error.strerror or type(error).__name__})")


@dataclass(frozen=True)
class LibraryEntry:
    """One readable scenario of the library (what a list row shows)."""

    key: str
    path: Path
    name: str
    notes: str
    created: datetime
    modified: datetime
    model: str
    gpu: str
    num_gpus: int


@dataclass(frozen=True)
class LibraryProblem:
    """A library file that could not be read; ``path`` is where it is now."""

    original: Path
    path: Path
    message: str
    set_aside: bool


@dataclass(frozen=True)
class Listing:
    """The library's readable entries (sorted by name) and its problem files."""

    entries: list[LibraryEntry]
    problems: list[LibraryProblem]


@dataclass(frozen=True)
class Saved:
    """Result of a save: the key, the file, and the scenario as written."""

    key: str
    path: Path
    scenario: Scenario


@dataclass(frozen=True)
class TrashItem:
    """A deleted scenario; ``id`` restores it."""

    id: str
    path: Path
    key: str
    name: str
    deleted: datetime


@dataclass(frozen=True)
class ImportResult:
    """What an import did: (source, saved) per file copied in, (source, message) per refusal."""

    imported: list[tuple[Path, Saved]]
    failed: list[tuple[Path, str]]


@dataclass(frozen=True)
class Recovery:
    """An autosaved copy of unsaved edits, offered on the next start."""

    key: str
    saved: datetime
    scenario: Scenario
    path: Path


def slugify(name: str) -> str:
    """A file-name-safe key from a scenario name: lowercase ASCII letters, digits and '-'."""
    text = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode("ascii")
    text = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:_MAX_SLUG].strip("-")
    if not text:
        text = "scenario"
    if text in _WINDOWS_RESERVED:
        text += "-1"
    return text


_KEY_FORBIDDEN = frozenset("/\\\0:")


def _valid_key(key: str) -> bool:
    """A key is a file stem in the library folder: no separators, not hidden, not empty."""
    return bool(key) and not key.startswith(".") and _KEY_FORBIDDEN.isdisjoint(key)


def _stamp() -> str:
    return datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")


def _move_aside(
    source: Path, folder: Path, stem: str, journal: Callable[[Path], Path] | None = None
) -> Path:
    """Move ``source`` into ``folder`` as ``<stamp>--<stem>`` without replacing anything.

    ``journal(target)`` records the move before it is made (and returns the entry, removed
    once done), so a kill between the link and the unlink is finished on the next start.
    """
    make_folders(folder)
    for attempt in range(1000):
        suffix = "" if attempt == 0 else f"-{attempt}"
        target = folder / f"{_stamp()}{suffix}--{stem}"
        if target.exists():
            continue
        entry = journal(target) if journal is not None else None
        try:
            try:
                os.link(source, target)
            except FileExistsError:
                if entry is not None:
                    entry.unlink()
                continue
            except OSError:
                os.replace(source, target)
            else:
                source.unlink()
        except OSError:
            # Nothing moved (or the move is whole: then the journal finishes it on the
            # next start); an entry naming a target that does not exist must not stay, or
            # a later file of that name would make the next start remove the source.
            if entry is not None and not target.exists():
                with contextlib.suppress(OSError):
                    entry.unlink()
            raise
        fsync_dir(folder)
        fsync_dir(source.parent)
        if entry is not None:
            entry.unlink()
        return target
    raise LibraryError(f"cannot find a free name in {folder}")


def _row_of(entry: LibraryEntry, stamp: list[int]) -> dict[str, object] | None:
    """The index row of ``entry`` (None when its notes are too long to cache)."""
    if len(entry.notes) > INDEX_NOTES_CHARS:
        return None
    return {
        "stamp": stamp,
        "name": entry.name,
        "notes": entry.notes,
        "created": entry.created.isoformat(),
        "modified": entry.modified.isoformat(),
        "model": entry.model,
        "gpu": entry.gpu,
        "num_gpus": entry.num_gpus,
    }


def _row_ok(row: dict[str, object]) -> bool:
    """A cached row has what a list row shows, with the types this app writes."""
    return (
        all(isinstance(row.get(k), str) for k in ("name", "notes", "model", "gpu", "created"))
        and isinstance(row.get("modified"), str)
        and type(row.get("num_gpus")) is int
    )


def _entry_from_row(key: str, path: Path, row: dict[str, object]) -> LibraryEntry | None:
    """A cached row back to an entry; None for a row that is not what this app writes."""
    try:
        name, notes, model, gpu = (row[k] for k in ("name", "notes", "model", "gpu"))
        num_gpus = row["num_gpus"]
        if not all(isinstance(v, str) for v in (name, notes, model, gpu)):
            return None
        if not isinstance(num_gpus, int) or isinstance(num_gpus, bool):
            return None
        created = datetime.fromisoformat(str(row["created"]))
        modified = datetime.fromisoformat(str(row["modified"]))
    except (KeyError, ValueError, TypeError):
        return None
    return LibraryEntry(
        key=key,
        path=path,
        name=str(name),
        notes=str(notes),
        created=created,
        modified=modified,
        model=str(model),
        gpu=str(gpu),
        num_gpus=num_gpus,
    )


class _ProcessLock:
    """One exclusive ``flock`` per lock file per process, re-entrant across threads'
    nested calls and across the Library objects of one process (two descriptors of the
    same file in one process would block each other)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.mutex = threading.RLock()
        self.depth = 0
        self.fd: int | None = None

    @contextlib.contextmanager
    def held(self) -> Iterator[bool]:
        """Hold the lock; yields True on the outermost entry."""
        with self.mutex:
            outermost = self.depth == 0
            if outermost:
                self._acquire()
            self.depth += 1
            try:
                yield outermost
            finally:
                self.depth -= 1
                if self.depth == 0:
                    self._release()

    def _acquire(self) -> None:
        try:
            import fcntl
        except ImportError:  # Windows: no advisory locks here; writes stay atomic
            return
        try:
            make_folders(self.path.parent)
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as error:
            if error.errno not in CANNOT_WRITE:
                raise
            # A read-only or full disk: an existing lock file still locks when opened
            # for reading (flock does not need write access); without one, nothing this
            # process could do changes the library, and its reads need no lock.
            try:
                fd = os.open(self.path, os.O_RDONLY)
            except OSError:
                return
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
        except OSError:
            os.close(fd)
            raise
        self.fd = fd

    def _release(self) -> None:
        if self.fd is None:
            return
        import fcntl

        with contextlib.suppress(OSError):
            fcntl.flock(self.fd, fcntl.LOCK_UN)
        os.close(self.fd)
        self.fd = None


_LOCKS: dict[str, _ProcessLock] = {}
_LOCKS_GUARD = threading.Lock()


def _process_lock(path: Path) -> _ProcessLock:
    with _LOCKS_GUARD:
        key = os.path.abspath(path)
        if key not in _LOCKS:
            _LOCKS[key] = _ProcessLock(Path(key))
        return _LOCKS[key]
