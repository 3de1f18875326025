"""The local scenario library: a folder of scenario files that never loses the user's work.

Layout under the data folder (:func:`llm_planner.core.files.paths.data_dir`)::

    scenarios/<key>.llmplan.json   saved scenarios; <key> is a slug of the name, unique
    trash/<stamp>--<key>.llmplan.json   deleted scenarios, restorable until purged
    quarantine/<stamp>--<file>      library files that could not be read, set aside
    recovery/<hash>.recovery.json   autosaved copies of unsaved edits

Rules: every write is atomic (:func:`llm_planner.core.files.store.atomic_write_bytes`);
nothing is ever overwritten unless the caller saves over the same key; nothing is
deleted except by :meth:`Library.purge_trash` and :meth:`Library.discard_recovery`
(and stale temporary files of interrupted writes). A file that cannot be read is moved
to ``quarantine/`` and reported, and every other file still lists and opens. A file
written by a newer app version is reported and left in place (it is not damaged).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import time
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from llm_planner.core.composition.scenario import Scenario
from llm_planner.core.files import paths
from llm_planner.core.files.store import (
    MAX_FILE_BYTES,
    SUFFIX,
    TEMP_SUFFIX,
    ScenarioFileError,
    atomic_write_bytes,
    dumps_scenario,
    load_scenario_file,
    parse_document,
    save_scenario_file,
    scenario_document,
    scenario_from_document,
    stamped,
)

RECOVERY_SUFFIX = ".recovery.json"
RECOVERY_FORMAT = "llm-planner-recovery"
STALE_TEMP_SECONDS = 3600.0
"""Temporary files of interrupted writes older than this (1 h) are removed on listing."""

_WINDOWS_RESERVED = {"con", "prn", "aux", "nul"} | {
    f"{p}{i}" for p in ("com", "lpt") for i in range(1, 10)
}
_MAX_SLUG = 60


class LibraryError(ValueError):
    """A library operation was refused (unknown or ambiguous name, bad key...)."""


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


def _valid_key(key: str) -> bool:
    """A key is a file stem in the library folder: no separators, not hidden, not empty."""
    return bool(key) and not key.startswith(".") and not any(c in key for c in "/\\\0:")


def _stamp() -> str:
    return datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")


def _fsync_dir(folder: Path) -> None:
    if os.name != "posix":
        return
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _move_aside(source: Path, folder: Path, stem: str) -> Path:
    """Move ``source`` into ``folder`` as ``<stamp>--<stem>`` without replacing anything."""
    folder.mkdir(parents=True, exist_ok=True)
    for attempt in range(1000):
        suffix = "" if attempt == 0 else f"-{attempt}"
        target = folder / f"{_stamp()}{suffix}--{stem}"
        if target.exists():
            continue
        try:
            os.link(source, target)
        except FileExistsError:
            continue
        except OSError:
            os.replace(source, target)
        else:
            source.unlink()
        _fsync_dir(folder)
        _fsync_dir(source.parent)
        return target
    raise LibraryError(f"cannot find a free name in {folder}")


class Library:
    """The scenario library in ``data_dir`` (default: :func:`paths.data_dir`)."""

    def __init__(self, data_dir: Path | None = None) -> None:
        root = Path(data_dir) if data_dir is not None else paths.data_dir()
        self.folder = root / "scenarios"
        self.trash_folder = root / "trash"
        self.quarantine_folder = root / "quarantine"
        self.recovery_folder = root / "recovery"

    # -------------------------------------------------------------- keys and names

    def path_of(self, key: str) -> Path:
        """The file of ``key``; LibraryError for a key that is not a plain slug."""
        if not _valid_key(key):
            raise LibraryError(f"{key!r} is not a library key")
        return self.folder / f"{key}{SUFFIX}"

    def _keys(self) -> list[str]:
        if not self.folder.is_dir():
            return []
        return sorted(
            path.name[: -len(SUFFIX)]
            for path in self.folder.iterdir()
            if path.name.endswith(SUFFIX) and _valid_key(path.name[: -len(SUFFIX)])
        )

    def _free_key(self, name: str, also_taken: set[str] | None = None) -> str:
        """A key from ``name`` that no file uses (compared case-insensitively, as on macOS
        and Windows file systems)."""
        base = slugify(name)
        taken = {key.casefold() for key in self._keys()} | (also_taken or set())
        if base not in taken:
            return base
        n = 2
        while f"{base}-{n}" in taken:
            n += 1
        return f"{base}-{n}"

    def _unique_name(self, name: str, *, ignore_key: str | None = None) -> str:
        """``name``, or ``name (2)``, ``name (3)``... so no two library entries share a name."""
        names = {
            entry.name.casefold() for entry in self.listing().entries if entry.key != ignore_key
        }
        if name.casefold() not in names:
            return name
        stem = re.sub(r" \(\d+\)$", "", name)
        n = 2
        while f"{stem} ({n})".casefold() in names:
            n += 1
        return f"{stem} ({n})"[:200]

    def _write_new(self, scenario: Scenario, *, touch: bool = True) -> Saved:
        """Write ``scenario`` under a fresh key from its name; never replaces a file."""
        clashed: set[str] = set()
        for _ in range(100):
            key = self._free_key(scenario.name, clashed)
            path = self.path_of(key)
            try:
                written = save_scenario_file(scenario, path, overwrite=False, touch=touch)
            except FileExistsError:  # another process took the key meanwhile
                clashed.add(key)
                continue
            return Saved(key, path, written)
        raise LibraryError(f"cannot find a free file name for {scenario.name!r}")

    # -------------------------------------------------------------- reading

    def listing(self, *, set_aside: bool = True) -> Listing:
        """Every readable scenario (by name), and the files that could not be read.

        A damaged file is moved to ``quarantine/`` (``set_aside``) and reported; a file
        from a newer app version is reported and left where it is.
        """
        self._clean_temps()
        entries: list[LibraryEntry] = []
        problems: list[LibraryProblem] = []
        for key in self._keys():
            path = self.path_of(key)
            try:
                scenario = load_scenario_file(path)
            except ScenarioFileError as error:
                problems.append(self._problem(path, error, set_aside=set_aside))
                continue
            entries.append(self._entry(key, path, scenario))
        entries.sort(key=lambda e: (e.name.casefold(), e.key))
        return Listing(entries, problems)

    def _problem(self, path: Path, error: ScenarioFileError, *, set_aside: bool) -> LibraryProblem:
        if error.newer or not set_aside:
            return LibraryProblem(path, path, str(error), set_aside=False)
        try:
            moved = _move_aside(path, self.quarantine_folder, path.name)
        except OSError as move_error:
            message = f"{error} (could not set it aside: {move_error.strerror})"
            return LibraryProblem(path, path, message, set_aside=False)
        return LibraryProblem(path, moved, f"{error} (moved to {moved})", set_aside=True)

    @staticmethod
    def _entry(key: str, path: Path, scenario: Scenario) -> LibraryEntry:
        return LibraryEntry(
            key=key,
            path=path,
            name=scenario.name,
            notes=scenario.notes,
            created=scenario.created,
            modified=scenario.modified,
            model=scenario.model.preset or scenario.model.architecture.name,
            gpu=scenario.gpu.id,
            num_gpus=scenario.num_gpus,
        )

    def _clean_temps(self) -> None:
        """Remove temporary files that a killed write left behind (they are never the data)."""
        if not self.folder.is_dir():
            return
        now = time.time()
        for path in self.folder.glob(f".*{SUFFIX}.*{TEMP_SUFFIX}"):
            with contextlib.suppress(OSError):
                if now - path.stat().st_mtime > STALE_TEMP_SECONDS:
                    path.unlink()

    def open(self, key: str) -> Scenario:
        """The scenario saved under ``key`` (ScenarioFileError if its file is unreadable)."""
        path = self.path_of(key)
        if not path.exists():
            raise LibraryError(f"no scenario {key!r} in the library")
        return load_scenario_file(path)

    def search(self, query: str) -> list[LibraryEntry]:
        """Entries whose name or notes contain every word of ``query`` (case-insensitive)."""
        words = query.casefold().split()
        return [
            entry
            for entry in self.listing().entries
            if all(word in f"{entry.name}\n{entry.notes}".casefold() for word in words)
        ]

    def find(self, name_or_key: str) -> str:
        """The key of the entry whose key or name (case-insensitive) is ``name_or_key``."""
        entries = self.listing().entries
        for entry in entries:
            if entry.key == name_or_key:
                return entry.key
        matches = [e for e in entries if e.name.casefold() == name_or_key.casefold()]
        if len(matches) == 1:
            return matches[0].key
        if matches:
            keys = ", ".join(e.key for e in matches)
            raise LibraryError(f"{name_or_key!r} names several scenarios (keys: {keys})")
        raise LibraryError(f"no scenario named {name_or_key!r} in the library")

    # -------------------------------------------------------------- writing

    def save(self, scenario: Scenario, key: str | None = None) -> Saved:
        """Save over ``key`` (atomic), or as a new entry when ``key`` is None."""
        if key is None:
            return self._write_new(scenario)
        path = self.path_of(key)
        written = save_scenario_file(scenario, path)
        return Saved(key, path, written)

    def save_as(self, scenario: Scenario, name: str | None = None) -> Saved:
        """Save a copy under a new key (and a name no other entry has); replaces nothing."""
        new_name = self._unique_name(name if name is not None else scenario.name)
        return self._write_new(scenario.model_copy(update={"name": new_name}))

    def rename(self, key: str, new_name: str) -> Saved:
        """Give entry ``key`` a new name (and key). Writes the new file before removing the old."""
        scenario = self.open(key)
        renamed = scenario.model_copy(update={"name": new_name})
        Scenario.model_validate(renamed.model_dump())  # name length etc.
        if slugify(new_name) == slugify(scenario.name) or slugify(new_name) == key:
            return self.save(renamed, key)
        saved = self._write_new(renamed)
        self.path_of(key).unlink()
        _fsync_dir(self.folder)
        return saved

    def duplicate(self, key: str, name: str | None = None) -> Saved:
        """A copy of ``key`` as a new entry (default name: "<name> (copy)")."""
        scenario = self.open(key)
        now = datetime.now(UTC).replace(microsecond=0)
        copy = scenario.model_copy(
            update={"name": name or f"{scenario.name} (copy)"[:200], "created": now}
        )
        return self.save_as(copy)

    def delete(self, key: str) -> TrashItem:
        """Move entry ``key`` to the trash (restorable with :meth:`restore`)."""
        path = self.path_of(key)
        if not path.exists():
            raise LibraryError(f"no scenario {key!r} in the library")
        name = key
        with contextlib.suppress(ScenarioFileError):
            name = load_scenario_file(path).name
        moved = _move_aside(path, self.trash_folder, path.name)
        return self._trash_item(moved, name)

    def _trash_item(self, path: Path, name: str | None = None) -> TrashItem:
        stamp, _, file_name = path.name.partition("--")
        key = file_name[: -len(SUFFIX)] if file_name.endswith(SUFFIX) else file_name
        try:
            deleted = datetime.strptime(stamp.split("-")[0], "%Y%m%dT%H%M%S%fZ").replace(tzinfo=UTC)
        except ValueError:
            deleted = datetime.fromtimestamp(path.stat().st_mtime, UTC)
        if name is None:
            name = key
            with contextlib.suppress(ScenarioFileError):
                name = load_scenario_file(path).name
        return TrashItem(id=path.name, path=path, key=key, name=name, deleted=deleted)

    def trash(self) -> list[TrashItem]:
        """Deleted scenarios, most recently deleted first."""
        if not self.trash_folder.is_dir():
            return []
        items = [self._trash_item(p) for p in self.trash_folder.iterdir() if "--" in p.name]
        return sorted(items, key=lambda item: item.deleted, reverse=True)

    def restore(self, trash_id: str) -> Saved:
        """Put a deleted scenario back (under a fresh key if its old one was reused)."""
        if "/" in trash_id or "\\" in trash_id or trash_id.startswith("."):
            raise LibraryError(f"{trash_id!r} is not a trash id")
        path = self.trash_folder / trash_id
        if not path.is_file():
            raise LibraryError(f"nothing called {trash_id!r} in the trash")
        scenario = load_scenario_file(path)
        saved = self._write_new(
            scenario.model_copy(update={"name": self._unique_name(scenario.name)}), touch=False
        )
        path.unlink()
        return saved

    def purge_trash(self, older_than_seconds: float = 0.0) -> int:
        """Delete for good the trash items deleted more than ``older_than_seconds`` ago."""
        now = datetime.now(UTC)
        count = 0
        for item in self.trash():
            if (now - item.deleted).total_seconds() >= older_than_seconds:
                item.path.unlink()
                count += 1
        return count

    # -------------------------------------------------------------- sharing

    def import_files(self, sources: Iterable[Path]) -> ImportResult:
        """Copy scenario files into the library (untrusted: validated; nothing overwritten).

        Each file is loaded strictly (size limit, migrations, validation) and written anew
        in the current format under a fresh key; a name that an entry already has gets a
        " (2)" suffix. A bad file is reported with its message; the others still import.
        """
        imported: list[tuple[Path, Saved]] = []
        failed: list[tuple[Path, str]] = []
        for given in sources:
            source = Path(given)
            try:
                scenario = load_scenario_file(source)
            except ScenarioFileError as error:
                failed.append((source, str(error)))
                continue
            unique = scenario.model_copy(update={"name": self._unique_name(scenario.name)})
            imported.append((source, self._write_new(unique, touch=False)))
        return ImportResult(imported, failed)

    def export(self, keys: Iterable[str], folder: Path) -> list[Path]:
        """Write entries ``keys`` into ``folder`` as ``<key>.llmplan.json``; never overwrites
        (a clash gets ``<key>-2``...). Each is validated first: a damaged entry is not sent."""
        folder = Path(folder)
        written: list[Path] = []
        for key in keys:
            scenario = self.open(key)
            for n in range(1, 1000):
                target = folder / f"{key if n == 1 else f'{key}-{n}'}{SUFFIX}"
                try:
                    export_scenario(scenario, target, overwrite=False)
                except FileExistsError:
                    continue
                written.append(target)
                break
            else:
                raise LibraryError(f"no free file name for {key!r} in {folder}")
        return written

    # -------------------------------------------------------------- autosave and recovery

    def _recovery_path(self, key: str) -> Path:
        digest = hashlib.sha256(key.encode("utf-8")).hexdigest()[:24]
        return self.recovery_folder / f"{digest}{RECOVERY_SUFFIX}"

    def write_recovery(self, scenario: Scenario, key: str) -> Path:
        """Autosave unsaved edits of the editor session ``key`` (a library key or any id)."""
        document = {
            "format": RECOVERY_FORMAT,
            "key": key,
            "saved": datetime.now(UTC).isoformat(),
            "scenario": scenario_document(scenario),
        }
        text = json.dumps(document, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
        path = self._recovery_path(key)
        atomic_write_bytes(path, text.encode("utf-8"))
        return path

    def pending_recoveries(self) -> list[Recovery]:
        """Recovery copies left by a session that did not save or discard them (newest first).

        An unreadable copy is moved to ``quarantine/`` rather than offered or deleted.
        """
        if not self.recovery_folder.is_dir():
            return []
        found: list[Recovery] = []
        for path in sorted(self.recovery_folder.glob(f"*{RECOVERY_SUFFIX}")):
            try:
                found.append(self._read_recovery(path))
            except ScenarioFileError:
                with contextlib.suppress(OSError, LibraryError):
                    _move_aside(path, self.quarantine_folder, path.name)
        return sorted(found, key=lambda r: r.saved, reverse=True)

    def _read_recovery(self, path: Path) -> Recovery:
        from llm_planner.core.files.store import read_limited

        source = str(path)
        document = parse_document(read_limited(path, MAX_FILE_BYTES + 10_000), source)
        key = document.get("key")
        if document.get("format") != RECOVERY_FORMAT or not isinstance(key, str):
            raise ScenarioFileError(source, "format", "not a recovery file")
        try:
            saved = datetime.fromisoformat(str(document.get("saved")))
        except ValueError:
            raise ScenarioFileError(source, "saved", "not a time") from None
        inner = document.get("scenario")
        if not isinstance(inner, dict):
            raise ScenarioFileError(source, "scenario", "missing")
        scenario = scenario_from_document(inner, source)
        return Recovery(key=key, saved=saved, scenario=scenario, path=path)

    def discard_recovery(self, key: str) -> None:
        """Forget the recovery copy of ``key`` (after a save, or when the user declines it)."""
        with contextlib.suppress(FileNotFoundError):
            self._recovery_path(key).unlink()


def export_scenario(scenario: Scenario, path: Path, *, overwrite: bool = False) -> Path:
    """Write one scenario to ``path`` (atomic) for sending to someone; returns the path."""
    atomic_write_bytes(
        Path(path),
        dumps_scenario(stamped(scenario, modified=scenario.modified)).encode("utf-8"),
        overwrite=overwrite,
    )
    return Path(path)


# Module-level shortcuts on the default library (what the GUI calls).


def write_recovery(scenario: Scenario, key: str) -> Path:
    """Autosave ``scenario`` (unsaved edits of session ``key``) in the default library."""
    return Library().write_recovery(scenario, key)


def pending_recoveries() -> list[Recovery]:
    """Recovery copies waiting in the default library (offer them on start)."""
    return Library().pending_recoveries()


def discard_recovery(key: str) -> None:
    """Forget the recovery copy of ``key`` in the default library."""
    Library().discard_recovery(key)
