"""The library's recovery copies: autosaved unsaved edits, ``recovery/<hash>.recovery.json``,
offered on the next start (:class:`~llm_planner.core.files.library.Library` calls these)."""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
from datetime import UTC, datetime
from pathlib import Path

from llm_planner.core.composition.scenario import Scenario
from llm_planner.core.files.library_index import (
    RECOVERY_FORMAT,
    RECOVERY_SUFFIX,
    LibraryError,
    Recovery,
    _move_aside,
)
from llm_planner.core.files.store import (
    MAX_FILE_BYTES,
    ScenarioFileError,
    atomic_write_bytes,
    parse_document,
    scenario_document,
    scenario_from_document,
)


def recovery_path(folder: Path, key: str) -> Path:
    """The recovery copy of the editor session ``key`` in ``folder``."""
    digest = hashlib.sha256(key.encode("utf-8")).hexdigest()[:24]
    return folder / f"{digest}{RECOVERY_SUFFIX}"


def write_recovery(folder: Path, scenario: Scenario, key: str) -> Path:
    """Autosave unsaved edits of the editor session ``key`` (a library key or any id)."""
    document = {
        "format": RECOVERY_FORMAT,
        "key": key,
        "saved": datetime.now(UTC).isoformat(),
        "scenario": scenario_document(scenario),
    }
    text = json.dumps(document, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    data = text.encode("utf-8")
    if len(data) > MAX_FILE_BYTES + 10_000:  # the limit it is read back with
        raise OSError(errno.EFBIG, "the recovery copy would be over its read limit")
    path = recovery_path(folder, key)
    atomic_write_bytes(path, data)
    return path


def pending_recoveries(folder: Path, quarantine: Path) -> list[Recovery]:
    """Recovery copies left by a session that did not save or discard them (newest first).

    An unreadable copy is moved to ``quarantine`` rather than offered or deleted.
    """
    if not folder.is_dir():
        return []
    found: list[Recovery] = []
    for path in sorted(folder.glob(f"*{RECOVERY_SUFFIX}")):
        try:
            found.append(read_recovery(path))
        except ScenarioFileError:
            with contextlib.suppress(OSError, LibraryError):
                _move_aside(path, quarantine, path.name)
    return sorted(found, key=lambda r: r.saved, reverse=True)


def read_recovery(path: Path) -> Recovery:
    """One recovery copy (ScenarioFileError naming the file and field if it is not one)."""
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


def discard_recovery(folder: Path, key: str) -> None:
    """Forget the recovery copy of ``key`` (after a save, or when the user declines it)."""
    with contextlib.suppress(FileNotFoundError):
        recovery_path(folder, key).unlink()
