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

Between processes: every operation that chooses a key or a name, or moves a file, holds
an exclusive lock on ``library.lock`` (``fcntl.flock``; on systems without it, none), so two
processes saving the same name get two different names, never duplicates. Operations
that touch two files (rename, restore, delete to the trash) first write a journal entry
in ``journal/``, then do the work; a run killed half-way is finished on the next start
(the new file exists: the old one is removed), so no kill leaves both names. Temporary
files of interrupted writes are removed on start. ``index.json`` caches what a list row
shows, keyed on each file's size, modification time and inode, so listing a library of
thousands of scenarios reads only the files that changed.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import time
from collections.abc import Callable, Iterable, Iterator
from datetime import UTC, datetime
from pathlib import Path

from llm_planner.core.composition.scenario import Scenario
from llm_planner.core.files import library_recovery, paths
from llm_planner.core.files.library_index import (
    IMPORT_INDEX_SLACK,
    INDEX_FORMAT,
    INDEX_NOTES_CHARS,
    JOURNAL_FORMAT,
    RECOVERY_FORMAT,
    RECOVERY_SUFFIX,
    STALE_TEMP_SECONDS,
    ImportResult,
    LibraryEntry,
    LibraryError,
    LibraryProblem,
    Listing,
    Recovery,
    Saved,
    TrashItem,
    _entry_from_row,
    _move_aside,
    _process_lock,
    _row_of,
    _row_ok,
    _stamp,
    _valid_key,
    disk_error,
    slugify,
)
from llm_planner.core.files.store import (
    MAX_FILE_BYTES,
    SUFFIX,
    TEMP_SUFFIX,
    ScenarioFileError,
    atomic_write_bytes,
    dumps_scenario,
    fsync_dir,
    load_scenario_file,
    make_folders,
    save_scenario_file,
    stamped,
)

__all__ = [
    "IMPORT_INDEX_SLACK",
    "INDEX_FORMAT",
    "INDEX_NOTES_CHARS",
    "JOURNAL_FORMAT",
    "RECOVERY_FORMAT",
    "RECOVERY_SUFFIX",
    "STALE_TEMP_SECONDS",
    "ImportResult",
    "Library",
    "LibraryEntry",
    "LibraryError",
    "LibraryProblem",
    "Listing",
    "Recovery",
    "Saved",
    "TrashItem",
    "discard_recovery",
    "export_scenario",
    "pending_recoveries",
    "slugify",
    "write_recovery",
]


class Library:
    """The scenario library in ``data_dir`` (default: :func:`paths.data_dir`)."""

    def __init__(self, data_dir: Path | None = None) -> None:
        root = Path(data_dir) if data_dir is not None else paths.data_dir()
        self.root = root
        self.folder = paths.library_dir(root)
        self.trash_folder = paths.trash_dir(root)
        self.quarantine_folder = paths.quarantine_dir(root)
        self.recovery_folder = paths.recovery_dir(root)
        self.journal_folder = paths.journal_dir(root)
        self.index_path = root / "index.json"
        self._lock = _process_lock(root / "library.lock")
        self._started = False

    # -------------------------------------------------------------- lock and start

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the library's lock (other processes wait); finishes half-done work and
        removes stale temporary files the first time."""
        with self._lock.held():
            if not self._started:
                self._started = True
                with contextlib.suppress(OSError):
                    self._finish_journal()
                    self._clean_temps()
            yield

    def _journal(self, op: str, **names: str) -> Path:
        """Record an operation on two files before doing it; returns the entry to remove."""
        make_folders(self.journal_folder)
        document = {"format": JOURNAL_FORMAT, "op": op, **names}
        text = json.dumps(document, ensure_ascii=True) + "\n"
        for attempt in range(1000):
            path = self.journal_folder / f"{_stamp()}-{attempt}.json"
            try:
                atomic_write_bytes(path, text.encode("ascii"), overwrite=False)
            except FileExistsError:
                continue
            return path
        raise LibraryError("cannot write the library journal")

    def _journal_file(self, relative: object) -> Path | None:
        """A journal's file name, back to a path inside the library's own folders only."""
        if not isinstance(relative, str) or "\\" in relative or "\0" in relative:
            return None
        folder, _, name = relative.partition("/")
        folders = {
            paths.LIBRARY_FOLDER: self.folder,
            paths.TRASH_FOLDER: self.trash_folder,
            paths.QUARANTINE_FOLDER: self.quarantine_folder,
            paths.RECOVERY_FOLDER: self.recovery_folder,
        }
        if folder not in folders or not name or "/" in name or name.startswith("."):
            return None
        return folders[folder] / name

    def _relative(self, path: Path) -> str:
        return f"{path.parent.name}/{path.name}"

    def _finish_journal(self) -> None:
        """Finish what a killed rename, restore or move left half-done.

        Each entry names the file that was being created (``new``) and the one to remove
        once it exists (``old``); the new file is written atomically, so if it exists the
        operation had done its work and only the removal is left; if not, nothing happened
        and the old file is intact. Either way the entry goes.
        """
        if not self.journal_folder.is_dir():
            return
        for entry in sorted(self.journal_folder.glob("*.json")):
            try:
                document = json.loads(entry.read_bytes()[:10_000])
                new = self._journal_file(document.get("new"))
                old = self._journal_file(document.get("old"))
            except (OSError, ValueError, AttributeError):
                new = old = None
            if new is not None and old is not None and new.is_file() and old != new:
                with contextlib.suppress(FileNotFoundError):
                    old.unlink()
                    fsync_dir(old.parent)
            with contextlib.suppress(OSError):
                entry.unlink()
        for temp in self.journal_folder.glob(f".*{TEMP_SUFFIX}"):
            with contextlib.suppress(OSError):
                temp.unlink()

    # -------------------------------------------------------------- keys and names

    def path_of(self, key: str) -> Path:
        """The file of ``key``; LibraryError for a key that is not a plain slug."""
        if not _valid_key(key):
            raise LibraryError(f"{key!r} is not a library key")
        return self.folder / f"{key}{SUFFIX}"

    def _keys(self) -> list[str]:
        try:
            names = os.listdir(self.folder)
        except (FileNotFoundError, NotADirectoryError):
            return []
        cut = len(SUFFIX)
        return sorted(n[:-cut] for n in names if n.endswith(SUFFIX) and _valid_key(n[:-cut]))

    def _free_key(self, name: str, taken: set[str]) -> str:
        """A key from ``name`` that is not in ``taken`` (casefolded keys: compared
        case-insensitively, as on macOS and Windows file systems)."""
        base = slugify(name)
        if base not in taken:
            return base
        n = 2
        while f"{base}-{n}" in taken:
            n += 1
        return f"{base}-{n}"

    def _taken_keys(self) -> set[str]:
        return {key.casefold() for key in self._keys()}

    def _names(self, *, ignore_key: str | None = None) -> set[str]:
        return {
            entry.name.casefold() for entry in self.listing().entries if entry.key != ignore_key
        }

    @staticmethod
    def _unique_in(name: str, names: set[str]) -> str:
        """``name``, or ``name (2)``, ``name (3)``... so that it is not in ``names``."""
        if name.casefold() not in names:
            return name
        stem = re.sub(r" \(\d+\)$", "", name)[:190]
        n = 2
        while f"{stem} ({n})".casefold() in names:
            n += 1
        return f"{stem} ({n})"

    def _unique_name(self, name: str, *, ignore_key: str | None = None) -> str:
        """``name``, or ``name (2)``, ``name (3)``... so no two library entries share a name."""
        return self._unique_in(name, self._names(ignore_key=ignore_key))

    def _write_new(
        self,
        scenario: Scenario,
        *,
        touch: bool = True,
        taken: set[str] | None = None,
        before: Callable[[Path], None] | None = None,
        sync_folder: bool = True,
    ) -> Saved:
        """Write ``scenario`` under a fresh key from its name; never replaces a file.

        ``taken``: the keys known to be in use (kept up to date; read from the folder when
        None). ``before(path)`` runs once the key is chosen, before the file is written
        (the journal entry of a rename or restore).
        """
        with self.locked():
            used = self._taken_keys() if taken is None else taken
            for _ in range(100):
                key = self._free_key(scenario.name, used)
                path = self.path_of(key)
                if before is not None:
                    before(path)
                try:
                    written = save_scenario_file(
                        scenario, path, overwrite=False, touch=touch, sync_folder=sync_folder
                    )
                except FileExistsError:  # a writer outside the lock took the key meanwhile
                    used.add(key.casefold())
                    continue
                used.add(key.casefold())
                return Saved(key, path, written)
        raise LibraryError(f"cannot find a free file name for {scenario.name!r}")

    # -------------------------------------------------------------- reading

    def listing(self, *, set_aside: bool = True) -> Listing:
        """Every readable scenario (by name), and the files that could not be read.

        A damaged file is moved to ``quarantine/`` (``set_aside``) and reported; a file
        from a newer app version is reported and left where it is. Rows come from the
        index where a file's size, time and inode are unchanged (see the module notes).
        """
        with self.locked():
            return self._listing(set_aside=set_aside)

    def _listing(self, *, set_aside: bool) -> Listing:
        rows, problems, loaded = self._rows(set_aside=set_aside)
        entries = list(loaded.values())
        for key, row in rows.items():
            if key in loaded:
                continue
            entry = _entry_from_row(key, self.folder / f"{key}{SUFFIX}", row)
            if entry is None:  # a row _rows accepted always converts; defensive
                continue
            entries.append(entry)
        entries.sort(key=lambda e: (e.name.casefold(), e.key))
        return Listing(entries, problems)

    def _rows(
        self, *, set_aside: bool = True
    ) -> tuple[dict[str, dict[str, object]], list[LibraryProblem], dict[str, LibraryEntry]]:
        """Every readable file's index row (from the index where the file's size, mtime and
        inode are unchanged, else read), the problem files, and the entries read now.

        Rewrites the index when it changed. One ``scandir`` and one ``stat`` per file: a
        library of 5,000 scenarios costs milliseconds when nothing changed.
        """
        with contextlib.suppress(OSError):
            self._clean_temps()
        cache = self._read_index()
        rows: dict[str, dict[str, object]] = {}
        problems: list[LibraryProblem] = []
        loaded: dict[str, LibraryEntry] = {}
        try:
            scan = list(os.scandir(self.folder))
        except (FileNotFoundError, NotADirectoryError):
            scan = []
        for item in scan:
            name = item.name
            if not name.endswith(SUFFIX) or not _valid_key(key := name[: -len(SUFFIX)]):
                continue
            try:
                info = item.stat()
            except OSError:
                continue
            stamp = [info.st_size, info.st_mtime_ns, info.st_ino]
            row = cache.get(key)
            if row is not None and row.get("stamp") == stamp and _row_ok(row):
                rows[key] = row
                continue
            path = self.folder / name
            try:
                scenario = load_scenario_file(path)
            except ScenarioFileError as error:
                problems.append(self._problem(path, error, set_aside=set_aside))
                continue
            entry = self._entry(key, path, scenario)
            fresh = _row_of(entry, stamp)
            rows[key] = fresh if fresh is not None else {"stamp": stamp, "name": entry.name}
            if fresh is None:
                loaded[key] = entry
        cacheable = {k: v for k, v in rows.items() if k not in loaded}
        if cacheable != cache:
            self._write_index(cacheable)
        return rows, problems, loaded

    def _read_index(self) -> dict[str, dict[str, object]]:
        """The cached rows (empty when the index is missing, damaged or foreign)."""
        try:
            data = self.index_path.read_bytes()
            if len(data) > 64 * MAX_FILE_BYTES:
                return {}
            document = json.loads(data)
        except (OSError, ValueError):
            return {}
        if not isinstance(document, dict) or document.get("format") != INDEX_FORMAT:
            return {}
        rows = document.get("entries")
        if not isinstance(rows, dict):
            return {}
        return {k: v for k, v in rows.items() if isinstance(k, str) and isinstance(v, dict)}

    def _write_index(self, rows: dict[str, dict[str, object]]) -> None:
        """Replace the index (atomic rename; not fsynced: it is a cache, rebuilt if lost)."""
        text = json.dumps({"format": INDEX_FORMAT, "entries": rows}, ensure_ascii=False)
        temp = self.root / f".index.json.{os.getpid()}{TEMP_SUFFIX}"
        try:
            make_folders(self.root)
            temp.write_text(text, encoding="utf-8")
            os.replace(temp, self.index_path)
        except OSError:  # a read-only or full disk: the listing works without its cache
            with contextlib.suppress(OSError):
                temp.unlink()

    def _problem(self, path: Path, error: ScenarioFileError, *, set_aside: bool) -> LibraryProblem:
        if error.newer or not set_aside:
            return LibraryProblem(path, path, str(error), set_aside=False)
        try:
            moved = self._move(path, self.quarantine_folder)
        except (OSError, LibraryError) as move_error:
            reason = getattr(move_error, "strerror", None) or str(move_error)
            message = f"{error} (could not set it aside: {reason})"
            return LibraryProblem(path, path, message, set_aside=False)
        return LibraryProblem(path, moved, f"{error} (moved to {moved})", set_aside=True)

    def _move(self, path: Path, folder: Path) -> Path:
        """Move a library file into the trash or quarantine, journaled."""

        def journal(target: Path) -> Path:
            return self._journal("move", old=self._relative(path), new=self._relative(target))

        return _move_aside(path, folder, path.name, journal)

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
        now = time.time()
        for folder in (self.folder, self.trash_folder, self.recovery_folder, self.root):
            if not folder.is_dir():
                continue
            for path in folder.glob(f".*{TEMP_SUFFIX}"):
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
        """Save over ``key`` (atomic), or as a new entry when ``key`` is None. A name another
        entry has (the window's name field edited, then saved over the entry) gets " (2)"...
        as :meth:`rename` gives it, so no two entries share a name."""
        if key is None:
            try:
                return self._write_new(scenario)
            except OSError as error:
                raise disk_error(self.folder, f"save {scenario.name!r} there", error) from None
        path = self.path_of(key)
        with self.locked():
            unique = self._unique_name(scenario.name, ignore_key=key)
            if unique != scenario.name:
                scenario = scenario.model_copy(update={"name": unique})
            try:
                written = save_scenario_file(scenario, path)
            except OSError as error:
                raise disk_error(path, "save it", error) from None
        return Saved(key, path, written)

    def save_as(self, scenario: Scenario, name: str | None = None) -> Saved:
        """Save a copy under a new key (and a name no other entry has); replaces nothing."""
        with self.locked():
            new_name = self._unique_name(name if name is not None else scenario.name)
            try:
                return self._write_new(scenario.model_copy(update={"name": new_name}))
            except OSError as error:
                raise disk_error(self.folder, f"save {new_name!r} there", error) from None

    def rename(self, key: str, new_name: str) -> Saved:
        """Give entry ``key`` a new name (and key): journaled, then the new file is written
        before the old is removed, so a kill at any moment leaves one of the two names
        (finished on the next start). A name another entry has gets " (2)"... as
        :meth:`save_as` gives it, so no two entries share a name."""
        with self.locked():
            scenario = self.open(key)
            renamed = Scenario.model_validate(
                {**scenario.model_dump(), "name": new_name}
            )  # name length, cleaning
            unique = self._unique_name(renamed.name, ignore_key=key)
            if unique != renamed.name:
                renamed = Scenario.model_validate({**renamed.model_dump(), "name": unique})
            old = self.path_of(key)
            try:
                if slugify(renamed.name) == slugify(scenario.name) or slugify(renamed.name) == key:
                    return self.save(renamed, key)
                return self._replace("rename", old, renamed, touch=True)
            except OSError as error:
                raise disk_error(old, "rename it", error) from None

    def _replace(self, op: str, old: Path, scenario: Scenario, *, touch: bool) -> Saved:
        """Write ``scenario`` under a fresh key, then remove ``old`` (a rename or a restore):
        journaled first, so a kill at any moment leaves one of the two (finished on the
        next start). When the write fails (a full or read-only disk) ``old`` stays and so
        does nothing else: the journal entry goes unless the new file was written whole,
        and an entry naming a file that was never written would let a later file of that
        name remove ``old`` on the next start."""
        entries: list[Path] = []
        targets: list[Path] = []

        def journal(path: Path) -> None:
            for stale in entries:
                stale.unlink()
            entries[:] = [self._journal(op, old=self._relative(old), new=self._relative(path))]
            targets[:] = [path]

        try:
            saved = self._write_new(scenario, touch=touch, before=journal)
        except BaseException:
            if not (targets and targets[0].exists()):
                for entry in entries:
                    with contextlib.suppress(OSError):
                        entry.unlink()
            raise
        old.unlink()
        fsync_dir(old.parent)
        for entry in entries:
            entry.unlink()
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
        with self.locked():
            if not path.exists():
                raise LibraryError(f"no scenario {key!r} in the library")
            name = key
            with contextlib.suppress(ScenarioFileError):
                name = load_scenario_file(path).name
            try:
                moved = self._move(path, self.trash_folder)
            except OSError as error:
                raise disk_error(path, "move it to the trash", error) from None
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
        items = [
            self._trash_item(p)
            for p in self.trash_folder.iterdir()
            if "--" in p.name and not p.name.startswith(".")
        ]
        return sorted(items, key=lambda item: item.deleted, reverse=True)

    def restore(self, trash_id: str) -> Saved:
        """Put a deleted scenario back (under a fresh key if its old one was reused):
        journaled like :meth:`rename`, so a kill never leaves it in both places."""
        if "/" in trash_id or "\\" in trash_id or trash_id.startswith("."):
            raise LibraryError(f"{trash_id!r} is not a trash id")
        path = self.trash_folder / trash_id
        with self.locked():
            if not path.is_file():
                raise LibraryError(f"nothing called {trash_id!r} in the trash")
            scenario = load_scenario_file(path)
            restored = scenario.model_copy(update={"name": self._unique_name(scenario.name)})
            try:
                return self._replace("restore", path, restored, touch=False)
            except OSError as error:
                raise disk_error(path, f"restore it into {self.folder}", error) from None

    def purge_trash(self, older_than_seconds: float = 0.0) -> int:
        """Delete for good the trash items deleted more than ``older_than_seconds`` ago."""
        now = datetime.now(UTC)
        count = 0
        with self.locked():
            for item in self.trash():
                if (now - item.deleted).total_seconds() >= older_than_seconds:
                    try:
                        item.path.unlink()
                    except OSError as error:
                        raise disk_error(item.path, "delete it for good", error) from None
                    count += 1
        return count

    # -------------------------------------------------------------- sharing

    def import_files(self, sources: Iterable[Path]) -> ImportResult:
        """Copy scenario files into the library (untrusted: validated; nothing overwritten).

        Each file is loaded strictly (size limit, migrations, validation) and written anew
        in the current format under a fresh key; a name that an entry already has gets a
        " (2)" suffix. A bad file is reported with its message, and so is a write that
        fails (a full or read-only disk); the others still import. The library is listed
        once for the whole batch, under the lock.
        """
        imported: list[tuple[Path, Saved]] = []
        failed: list[tuple[Path, str]] = []
        with self.locked():
            index, pending = self._import_rows()
            names = {str(row["name"]).casefold() for row in index.values()}
            taken = {key.casefold() for key in index}
            for given in sources:
                source = Path(given)
                try:
                    scenario = load_scenario_file(source)
                except ScenarioFileError as error:
                    failed.append((source, str(error)))
                    continue
                unique = scenario.model_copy(update={"name": self._unique_in(scenario.name, names)})
                try:
                    saved = self._write_new(unique, touch=False, taken=taken, sync_folder=False)
                except (OSError, LibraryError) as error:
                    reason = getattr(error, "strerror", None) or str(error)
                    failed.append((source, f"{source}: cannot copy into {self.folder} ({reason})"))
                    continue
                names.add(saved.scenario.name.casefold())
                imported.append((source, saved))
                with contextlib.suppress(OSError):
                    info = saved.path.stat()
                    row = _row_of(
                        self._entry(saved.key, saved.path, saved.scenario),
                        [info.st_size, info.st_mtime_ns, info.st_ino],
                    )
                    if row is not None:
                        index[saved.key] = row
                        pending += 1
            if imported:  # the batch's new names, made durable at once
                with contextlib.suppress(OSError):
                    fsync_dir(self.folder)
            if pending > IMPORT_INDEX_SLACK:
                self._write_index(index)
        return ImportResult(imported, failed)

    def _import_rows(self) -> tuple[dict[str, dict[str, object]], int]:
        """The names an import must avoid, cheaply: index rows are trusted without a
        ``stat`` of every file (the listing revalidates them; only a file edited in place
        outside the app could hold a newer name), files the index lacks are read. Returns
        the rows and how many are not in the index file yet."""
        cache = self._read_index()
        rows: dict[str, dict[str, object]] = {}
        pending = 0
        for key in self._keys():
            row = cache.get(key)
            if row is not None and _row_ok(row):
                rows[key] = row
                continue
            path = self.path_of(key)
            try:
                scenario = load_scenario_file(path)
                info = path.stat()
            except (ScenarioFileError, OSError):
                continue  # the next listing sets it aside and reports it
            entry = self._entry(key, path, scenario)
            fresh = _row_of(entry, [info.st_size, info.st_mtime_ns, info.st_ino])
            rows[key] = fresh if fresh is not None else {"name": entry.name}
            pending += fresh is not None
        return rows, pending

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

    def write_recovery(self, scenario: Scenario, key: str) -> Path:
        """Autosave unsaved edits of the editor session ``key`` (a library key or any id)."""
        return library_recovery.write_recovery(self.recovery_folder, scenario, key)

    def pending_recoveries(self) -> list[Recovery]:
        """Recovery copies left by a session that did not save or discard them (newest first).

        An unreadable copy is moved to ``quarantine/`` rather than offered or deleted.
        """
        return library_recovery.pending_recoveries(self.recovery_folder, self.quarantine_folder)

    def discard_recovery(self, key: str) -> None:
        """Forget the recovery copy of ``key`` (after a save, or when the user declines it)."""
        library_recovery.discard_recovery(self.recovery_folder, key)


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
