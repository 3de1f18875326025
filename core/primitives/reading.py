"""Reading a file the user names: regular files only, never blocking, never unbounded.

Every reader of the app (scenario files, stack configs, training logs, price lists, GPU
files, GGUF headers, the window's drops) opens through :func:`open_regular`, so a folder, a
FIFO, a terminal or an endless device such as ``/dev/zero`` is refused in one line before a
byte is read, and a file larger than its kind's cap is refused by its size. The caps per
kind are listed in ``docs/ARCHITECTURE.md`` ("Reading files").

Why ``O_NONBLOCK``: opening a FIFO for reading blocks until a writer appears (forever, for a
FIFO nobody writes); with the flag the open returns at once and ``fstat`` on the open
descriptor names what it is. Checking ``stat`` first and ``fstat`` after the open closes the
window in which the path could be swapped between the two.

This module lives in ``primitives`` (not ``files``) because readers in every layer need it:
the GPU catalog's custom GPU files, the price list of the hardware ranking and the files
layer; it knows nothing of any format.
"""

from __future__ import annotations

import functools
import os
import re
import stat
from pathlib import Path
from typing import BinaryIO

from llm_planner.core.primitives.units import clean_text

_MESSAGE_CHARS = 300

_KINDS = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)

_OPEN_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_NOCTTY", 0)
    | getattr(os, "O_BINARY", 0)
)


class FileReadError(ValueError):
    """A file that was not read: its message is one line naming the file and the reason.

    ``source`` is the file as given, ``detail`` the reason alone (callers with their own
    error type re-raise it as theirs)."""

    def __init__(self, source: str, detail: str) -> None:
        self.source = source
        self.detail = detail
        text = clean_text(f"{source}: {detail}")
        super().__init__(text if len(text) <= _MESSAGE_CHARS else text[: _MESSAGE_CHARS - 1] + "…")


def kind_of(mode: int) -> str:
    """What a ``stat`` mode is, in words ("a folder", "a FIFO (named pipe)", …)."""
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def _refuse_special(source: str, mode: int) -> None:
    if not stat.S_ISREG(mode):
        raise FileReadError(source, f"{kind_of(mode)}, not a regular file")


def _refuse_size(source: str, size: int, limit: int, what: str) -> None:
    if size > limit:
        raise FileReadError(source, f"{size:,} bytes is over the {limit:,}-byte limit for {what}")


def check_regular(path: str | Path) -> None:
    """Refuse (FileReadError) a path that is not a regular file, reading nothing: what a
    window's drop checks before choosing a reader."""
    source = str(path)
    try:
        info = os.stat(path)
    except FileNotFoundError:
        raise FileReadError(source, "cannot read (no such file)") from None
    except (OSError, ValueError) as error:  # ValueError: a NUL in the name
        raise FileReadError(
            source, f"cannot read ({getattr(error, 'strerror', None) or error})"
        ) from None
    _refuse_special(source, info.st_mode)


def open_regular(path: str | Path, limit: int, what: str = "a file") -> BinaryIO:
    """``path`` opened for reading in binary, or :class:`FileReadError` when it is not a
    regular file (folder, FIFO, device, socket), is larger than ``limit`` bytes or cannot be
    opened. Never blocks: a FIFO is refused without waiting for a writer."""
    source = str(path)
    try:
        before = os.stat(path)
    except FileNotFoundError:
        raise FileReadError(source, "cannot read (no such file)") from None
    except (OSError, ValueError) as error:  # ValueError: a NUL in the name
        raise FileReadError(
            source, f"cannot read ({getattr(error, 'strerror', None) or error})"
        ) from None
    _refuse_special(source, before.st_mode)
    _refuse_size(source, before.st_size, limit, what)
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except OSError as error:
        raise FileReadError(source, f"cannot read ({error.strerror or error})") from None
    try:
        after = os.fstat(fd)
        _refuse_special(source, after.st_mode)  # swapped for a FIFO or device after stat
        _refuse_size(source, after.st_size, limit, what)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_bounded(path: str | Path, limit: int, what: str = "a file") -> bytes:
    """The bytes of regular file ``path``, at most ``limit`` of them (a file that grows past
    the cap while it is read is refused, not cut)."""
    source = str(path)
    with open_regular(path, limit, what) as handle:
        try:
            data = handle.read(limit + 1)
        except OSError as error:
            raise FileReadError(source, f"cannot read ({error.strerror or error})") from None
    if len(data) > limit:
        raise FileReadError(source, f"grew over the {limit:,}-byte limit for {what} while read")
    return data


def read_text_bounded(path: str | Path, limit: int, what: str = "a file") -> str:
    """The UTF-8 text of regular file ``path`` (a leading BOM dropped), at most ``limit``
    bytes; undecodable bytes are refused with their offset."""
    data = read_bounded(path, limit, what)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise FileReadError(str(path), f"not UTF-8 text (byte {error.start:,})") from None


def read_head(path: str | Path, size: int) -> bytes:
    """At most the first ``size`` bytes of regular file ``path`` (whatever its length): what
    a sniffer needs to tell formats apart. FileReadError as :func:`open_regular`."""
    with open_regular(path, 2**63 - 1) as handle:
        try:
            return handle.read(size)
        except OSError as error:
            raise FileReadError(str(path), f"cannot read ({error.strerror or error})") from None


MAX_NESTING = 64
"""Deepest nesting of brackets (JSON arrays and objects, TOML arrays and inline tables) a
config, price list or GPU file may hold; real ones nest 3 to 5 levels."""

MAX_DIGITS = 64
"""Longest run of digits accepted in a config, price list or GPU file: no real value has
more than about 20, and Python refuses to convert integers of over 4,300 digits."""


@functools.cache
def _structure(max_digits: int) -> re.Pattern[str]:
    """Brackets, line ends and digit runs longer than ``max_digits``."""
    return re.compile(r"[\[\]{}\n]|[0-9]{" + str(max_digits + 1) + ",}")


def check_structure(
    text: str, source: str, *, max_nesting: int = MAX_NESTING, max_digits: int = MAX_DIGITS
) -> None:
    """Refuse, before any parser sees it, text nesting brackets deeper than ``max_nesting``
    or holding a run of more than ``max_digits`` digits (FileReadError naming the line).

    A scan of the raw text, strings included: a bracket inside a string counts too, which
    can only make the count larger, never let a deep document through."""
    pattern = _structure(max_digits)
    depth = 0
    line = 1
    for match in pattern.finditer(text):
        token = match.group()
        if token == "\n":
            line += 1
        elif token in "[{":
            depth += 1
            if depth > max_nesting:
                raise FileReadError(source, f"line {line}: nested over {max_nesting} levels deep")
        elif token in "]}":
            depth = max(0, depth - 1)
        else:
            raise FileReadError(
                source,
                f"line {line}: a number of {len(token):,} digits (at most {max_digits})",
            )


def nesting_depth(document: object, limit: int = MAX_NESTING) -> int:
    """How deeply a parsed document nests dicts and lists, counted without recursion and
    stopping once past ``limit``."""
    deepest = 0
    stack: list[tuple[object, int]] = [(document, 0)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict | list):
            deepest = max(deepest, depth + 1)
            if deepest > limit:
                return deepest
            children = node.values() if isinstance(node, dict) else node
            stack.extend((child, depth + 1) for child in children)
    return deepest
