"""Scenario files: the one file format, strict loading of untrusted files, durable saves.

Format: one JSON document per scenario, UTF-8, indented by 2 spaces, keys in the models'
declaration order (stable from one save to the next), no NaN/Infinity, suffix
``.llmplan.json``. It carries ``schema_version`` and the ``app_version`` that wrote it;
older versions are migrated (:mod:`llm_planner.core.files.migrations`) on the raw dict before
validation. Its JSON Schema, generated from the model, ships as
``resources/scenario.schema.json``.

Loading treats every file as untrusted: at most :data:`MAX_FILE_BYTES` (1 MB, real
scenarios are 2-5 kB), regular files only, strict UTF-8 JSON (duplicate keys, NaN and
Infinity refused), migrated, then validated strictly (no type coercion, no unknown
fields). Any failure raises :class:`ScenarioFileError` whose one-line message names the
file and the field. Nothing in a file is ever executed or used as a path.

Saving is atomic and durable: the bytes go to a temporary file in the same folder,
which is flushed and fsynced, then renamed over the target with ``os.replace`` and the
folder fsynced, so a crash or kill at any moment leaves the old or the new version.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import reprlib
import stat
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from llm_planner.core.composition.scenario import SCHEMA_VERSION, Scenario
from llm_planner.core.files.migrations import MigrationError, NewerVersionError, migrate
from llm_planner.core.primitives.limits import MAX_INT_DIGITS, describe_error
from llm_planner.core.primitives.reading import FileReadError, read_bounded
from llm_planner.core.primitives.version import __version__

SUFFIX = ".llmplan.json"
"""File name suffix of scenario files."""

MAX_FILE_BYTES = 1_000_000
"""Largest scenario file accepted (1 MB = 10^6 bytes): real scenarios are a few kB."""

TEMP_SUFFIX = ".tmp"
"""Suffix of the temporary files an atomic write leaves behind only if killed mid-write."""

MAX_NESTING = 32
MAX_ITEMS = 10_000
"""Longest list or object accepted before migration (the longest a scenario holds is the
1,000 measured points), so a padded file costs no more than its first pass."""
"""Deepest nesting of objects/arrays accepted (a scenario is about 5 levels deep)."""

_MESSAGE_CHARS = 300

# The process umask, read once at import (reading it means setting it: not thread-safe
# later). mkstemp creates files 0600; a saved or exported file gets the usual 0666 & ~umask
# so a teammate on a shared folder can read it.
_UMASK = os.umask(0o022)
os.umask(_UMASK)
_PREVIEW = reprlib.Repr()
_PREVIEW.maxlevel, _PREVIEW.maxstring, _PREVIEW.maxother = 2, 40, 40
_PREVIEW.maxlist = _PREVIEW.maxdict = 4


class ScenarioFileError(ValueError):
    """A scenario file could not be read; the message names the file and the field.

    ``path`` is the file (as given), ``field`` the dotted path of the offending value or
    ``"(document)"`` / ``"(file)"``; ``newer`` is true when the file was written by a newer
    app version (not a damaged file: keep it).
    """

    def __init__(self, source: str, field: str, detail: str, *, newer: bool = False) -> None:
        self.source = source
        self.field = field
        self.detail = detail
        self.newer = newer
        super().__init__(_one_line(f"{source}: {field}: {detail}"))


def _one_line(text: str, limit: int = _MESSAGE_CHARS) -> str:
    """``text`` on one line of printable characters, at most ``limit`` characters."""
    flat = "".join(ch if ch.isprintable() else " " for ch in text)
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _field_name(loc: tuple[int | str, ...]) -> str:
    parts = []
    for part in loc:
        text = str(part)
        if not text.replace("_", "").isalnum() or len(text) > 40:
            text = repr(text[:40])
        parts.append(text)
    return ".".join(parts) or "(document)"


def _preview(value: Any) -> str:
    text = _PREVIEW.repr(value)
    return text if len(text) <= 40 else text[:39] + "…"


class _TooLongError(ValueError):
    pass


def _nesting(document: Any) -> int:
    """How deeply ``document`` nests objects and arrays (iterative: no recursion limit)."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(document, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict | list):
            deepest = max(deepest, depth)
            if depth > MAX_NESTING:
                return depth
            if len(node) > MAX_ITEMS:  # no list or object of a scenario is this long
                raise _TooLongError(len(node))
            children = node.values() if isinstance(node, dict) else node
            stack.extend((child, depth + 1) for child in children)
    return deepest


# ------------------------------------------------------------------ reading


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not allowed (JSON has no NaN or Infinity)")


def _finite_float(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise ValueError(f"number {text[:40]} is out of range")
    return value


def _bounded_int(text: str) -> int:
    """An integer literal of at most :data:`MAX_INT_DIGITS` digits (a 400-digit integer in
    a float field would otherwise become infinity)."""
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        raise ValueError(
            f"integer {text[:20]}… has {len(text.lstrip('-'))} digits (at most {MAX_INT_DIGITS})"
        )
    return int(text)


def _refuse_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise ValueError(f"key {key[:40]!r} appears twice in one object")
        result[key] = value
    return result


def read_limited(path: Path, limit: int = MAX_FILE_BYTES) -> bytes:
    """The bytes of regular file ``path``, refusing anything over ``limit`` bytes (through
    :func:`~llm_planner.core.primitives.reading.read_bounded`: never blocks on a FIFO)."""
    try:
        return read_bounded(path, limit, "a scenario file")
    except FileReadError as error:
        raise ScenarioFileError(error.source, "(file)", error.detail) from None


def parse_document(data: bytes, source: str) -> dict[str, Any]:
    """Raw bytes → the JSON object they hold (no schema checks yet)."""
    if len(data) > MAX_FILE_BYTES:
        raise ScenarioFileError(source, "(file)", f"over the {MAX_FILE_BYTES:,}-byte limit")
    if not data.strip():
        raise ScenarioFileError(source, "(document)", "the file is empty")
    try:
        text = data.decode("utf-8-sig")  # tolerate the BOM some editors add
    except UnicodeDecodeError as error:
        raise ScenarioFileError(
            source, "(file)", f"not UTF-8 text (byte {error.start}); not a scenario file"
        ) from None
    try:
        document = json.loads(
            text,
            parse_constant=_refuse_constant,
            parse_float=_finite_float,
            parse_int=_bounded_int,
            object_pairs_hook=_refuse_duplicates,
        )
    except json.JSONDecodeError as error:
        raise ScenarioFileError(
            source,
            "(document)",
            f"not valid JSON: {error.msg} at line {error.lineno} column {error.colno}",
        ) from None
    except RecursionError:
        raise ScenarioFileError(source, "(document)", "JSON nested too deeply") from None
    except ValueError as error:  # NaN, duplicate keys, integers too long to convert
        raise ScenarioFileError(source, "(document)", f"not accepted: {error}") from None
    if not isinstance(document, dict):
        raise ScenarioFileError(
            source, "(document)", f"a scenario is a JSON object, not {type(document).__name__}"
        )
    return document


def scenario_from_document(document: dict[str, Any], source: str) -> Scenario:
    """A raw scenario object (any known schema version) → a validated Scenario."""
    try:
        depth = _nesting(document)
    except _TooLongError as error:
        raise ScenarioFileError(
            source, "(document)", f"a list of {error.args[0]:,} items (at most {MAX_ITEMS:,})"
        ) from None
    if depth > MAX_NESTING:
        raise ScenarioFileError(
            source, "(document)", f"JSON nested too deeply (over {MAX_NESTING} levels)"
        )
    try:
        migrated = migrate(document, app_version=__version__)
    except NewerVersionError as error:
        raise ScenarioFileError(source, error.field, error.message, newer=True) from None
    except MigrationError as error:
        raise ScenarioFileError(source, error.field, error.message) from None
    try:
        text = json.dumps(migrated, allow_nan=False)
        return Scenario.model_validate_json(text, strict=True)
    except ValidationError as error:
        errors = error.errors(include_url=False)
        first = errors[0]
        field, detail = describe_error(first)
        if first["type"] not in ("missing", "extra_forbidden", "value_error"):
            detail += f" (got {_preview(first.get('input'))})"
        elif first["type"] == "extra_forbidden":
            detail = "unknown field (not part of the scenario format)"
        if len(errors) > 1:
            others = [_field_name(tuple(e["loc"])) for e in errors[1:4]]
            more = f" and {len(errors) - 4} more" if len(errors) > 4 else ""
            detail += f"; also invalid: {', '.join(others)}{more}"
        version = document.get("schema_version")
        if isinstance(version, int) and version < SCHEMA_VERSION:
            detail += f" (after migrating the v{version} file to v{SCHEMA_VERSION})"
        name = _field_name(tuple(field.split("."))) if field else "(document)"
        raise ScenarioFileError(source, name, detail) from None
    except Exception as error:  # a validator's own bug must not escape as another type
        raise ScenarioFileError(
            source, "(document)", f"cannot be validated ({type(error).__name__}: {error})"
        ) from None


def parse_scenario(data: bytes, source: str = "<data>") -> Scenario:
    """Untrusted bytes → a validated Scenario, or ScenarioFileError naming ``source``."""
    return scenario_from_document(parse_document(data, source), source)


def load_scenario_file(path: Path) -> Scenario:
    """Read, migrate and strictly validate one scenario file (untrusted input)."""
    path = Path(path)
    return parse_scenario(read_limited(path), str(path))


# ------------------------------------------------------------------ writing


def scenario_document(scenario: Scenario) -> dict[str, Any]:
    """The JSON object written for ``scenario``: current schema and this app's version."""
    document = scenario.model_dump(mode="json")
    document["schema_version"] = SCHEMA_VERSION
    document["app_version"] = __version__
    return document


def dumps_scenario(scenario: Scenario) -> str:
    """The text of a scenario file (UTF-8, indent 2, stable key order, newline-terminated)."""
    document = scenario_document(scenario)
    return json.dumps(document, indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def stamped(scenario: Scenario, *, modified: datetime | None = None) -> Scenario:
    """``scenario`` as it is saved now: ``modified`` set, ``app_version`` this app's."""
    moment = modified or datetime.now(UTC).replace(microsecond=0)
    return scenario.model_copy(
        update={
            "modified": moment,
            "app_version": __version__,
            "schema_version": SCHEMA_VERSION,
        }
    )


def fsync_dir(folder: Path) -> None:
    """Make a rename in ``folder`` durable (POSIX; Windows has no directory handles)."""
    if os.name != "posix":
        return
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def make_folders(folder: Path) -> None:
    """Create ``folder`` and its missing parents, fsyncing each new entry's parent so the
    folders themselves survive a power cut (a file fsynced into a folder whose own entry
    was lost is lost too)."""
    folder = Path(folder)
    missing: list[Path] = []
    node = folder
    while not node.exists() and node != node.parent:
        missing.append(node)
        node = node.parent
    for new in reversed(missing):
        with contextlib.suppress(FileExistsError):
            new.mkdir()
        fsync_dir(new.parent)
    if not folder.is_dir():
        raise NotADirectoryError(errno.ENOTDIR, "not a folder", str(folder))


class NotRegularFileError(OSError):
    """A save was asked to replace something that is not a regular file (a symbolic link,
    a FIFO, a device, a folder): refused, nothing is written."""


_KINDS = (
    (stat.S_ISLNK, "a symbolic link"),
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def check_save_target(path: Path) -> None:
    """Refuse an empty path and any existing target that is not a regular file.

    Renaming a new file over a symbolic link, a FIFO or a device node would replace the
    link or the node itself (run as root, ``--save /dev/null`` replaced the system's
    ``/dev/null``); the caller gets :class:`NotRegularFileError` instead.
    """
    if not str(path).strip():
        raise NotRegularFileError(errno.EINVAL, "empty file name", str(path))
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISREG(info.st_mode):
        return
    kind = next((name for test, name in _KINDS if test(info.st_mode)), "not a regular file")
    raise NotRegularFileError(
        errno.EEXIST, f"{kind} is there, not a regular file; refusing to replace it", str(path)
    )


def atomic_write_bytes(
    path: Path, data: bytes, *, overwrite: bool = True, sync_folder: bool = True
) -> None:
    """Write ``data`` to ``path`` so that readers see the old or the new file, never a mix.

    Temporary file in the same folder (same file system, so the rename is atomic), write,
    flush, fsync, then ``os.replace`` over the target (``os.link`` when ``overwrite`` is
    false, which fails instead of replacing an existing file), then fsync the folder so
    the rename itself survives a power cut. FileExistsError when ``overwrite`` is false
    and ``path`` exists. ``sync_folder=False`` leaves the folder's fsync to the caller (a
    batch of writes into one folder syncs it once).
    """
    path = Path(path)
    check_save_target(path)
    folder = path.parent
    make_folders(folder)
    fd, temp_name = tempfile.mkstemp(dir=folder, prefix=f".{path.name}.", suffix=TEMP_SUFFIX)
    temp = Path(temp_name)
    try:
        if hasattr(os, "fchmod"):
            try:
                mode = path.stat().st_mode & 0o777
            except OSError:
                mode = 0o666 & ~_UMASK
            os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        if overwrite:
            os.replace(temp, path)
        else:
            _link_new(temp, path)
        if sync_folder:
            fsync_dir(folder)
    except BaseException:
        with contextlib.suppress(OSError):
            temp.unlink()
        raise


def _link_new(temp: Path, path: Path) -> None:
    """Move ``temp`` to ``path`` only if ``path`` does not exist (no race, where possible)."""
    try:
        os.link(temp, path)
    except FileExistsError:
        raise
    except OSError:  # file systems without hard links (FAT, some network shares)
        if path.exists():
            raise FileExistsError(f"{path} exists") from None
        os.replace(temp, path)
        return
    temp.unlink()


def save_scenario_file(
    scenario: Scenario,
    path: Path,
    *,
    overwrite: bool = True,
    touch: bool = True,
    sync_folder: bool = True,
) -> Scenario:
    """Write ``scenario`` to ``path`` atomically; returns the scenario as written.

    ``touch`` sets ``modified`` to now. ``overwrite=False`` raises FileExistsError rather
    than replace an existing file.
    """
    written = stamped(scenario) if touch else scenario
    data = dumps_scenario(written).encode("utf-8")
    if len(data) > MAX_FILE_BYTES:  # never write what could not be read back
        raise OSError(
            errno.EFBIG,
            f"the scenario would be {len(data):,} bytes, over the {MAX_FILE_BYTES:,}-byte "
            "limit files are read with",
            str(path),
        )
    atomic_write_bytes(Path(path), data, overwrite=overwrite, sync_folder=sync_folder)
    return written


def scenario_json_schema() -> dict[str, Any]:
    """The JSON Schema of scenario files (shipped as ``resources/scenario.schema.json``)."""
    schema = Scenario.model_json_schema(mode="validation")
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "description": (
            f"LLM Planner scenario file (*{SUFFIX}), schema_version {SCHEMA_VERSION}. "
            "Generated from the pydantic model by scripts/gen_schema.py; do not edit."
        ),
        **{key: value for key, value in schema.items() if key != "description"},
    }
