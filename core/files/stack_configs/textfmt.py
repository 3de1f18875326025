"""The text formats the stacks read, without a new dependency: TOML out (Python reads it with
``tomllib``), and YAML out and in for the block subset stack configs use.

The YAML subset: nested block mappings (``key: value``, two-space indents), block
sequences (``- item``, items scalars or mappings), flow ``[]``/``{}`` empties, ``#``
comments, and scalars null/~, true/false, integers, floats, single- or double-quoted or
plain strings (YAML 1.2 core schema). Anchors, tags, multi-line strings and flow
collections with items are refused with a message naming the line, never guessed.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any


class TextFormatError(ValueError):
    """Text outside the subset this module reads; the message names the line."""


# ------------------------------------------------------------------ scalars

_INT = re.compile(r"[-+]?(0|[1-9][0-9_]*)$")
_FLOAT = re.compile(r"[-+]?(\.[0-9]+|[0-9][0-9_]*(\.[0-9]*)?)([eE][-+]?[0-9]+)?$")
_PLAIN_SAFE = re.compile(r"[A-Za-z_./][A-Za-z0-9_./\-]*$")


def _scalar_text(value: Any) -> str:
    """One scalar as YAML (strings quoted unless plainly safe and not a keyword)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise TextFormatError(f"{value} cannot be written")
        text = repr(value)
        mantissa, e, exponent = text.partition("e")
        # PyYAML (YAML 1.1) reads 1e-08 as a string: the mantissa needs its dot
        return f"{mantissa}.0e{exponent}" if e and "." not in mantissa else text
    text = str(value)
    if _PLAIN_SAFE.match(text) and text.lower() not in {"null", "true", "false", "yes", "no"}:
        return text
    return json.dumps(text)


_KEYWORDS: dict[str, Any] = {
    "": None,
    "~": None,
    "null": None,
    "Null": None,
    "NULL": None,
    "true": True,
    "True": True,
    "TRUE": True,
    "false": False,
    "False": False,
    "FALSE": False,
}


def _parse_scalar(text: str, line_no: int) -> Any:
    text = text.strip()
    if text in _KEYWORDS:
        return _KEYWORDS[text]
    if text in {"[]", "{}"}:
        return [] if text == "[]" else {}
    if text[0] == '"':
        try:
            value = json.loads(text)
        except json.JSONDecodeError:
            raise TextFormatError(f"line {line_no}: unreadable quoted string {text}") from None
        return str(value)
    if text[0] == "'":
        if len(text) < 2 or text[-1] != "'":
            raise TextFormatError(f"line {line_no}: unterminated quoted string {text}")
        return text[1:-1].replace("''", "'")
    if text[0] in "[{&*!|>":
        raise TextFormatError(f"line {line_no}: YAML feature not supported here: {text[:20]}")
    if _INT.match(text):
        return int(text.replace("_", ""))
    if _FLOAT.match(text) and any(c in text for c in ".eE"):
        return float(text.replace("_", ""))
    if text in {".inf", "+.inf"}:
        return math.inf
    return text


# ------------------------------------------------------------------ YAML out


def dump_yaml(data: dict[str, Any], comments: list[str] | None = None) -> str:
    """A mapping as block YAML, preceded by ``#`` comment lines."""
    lines = [f"# {c}" if c else "#" for c in comments or []]
    _dump_mapping(data, 0, lines)
    return "\n".join(lines) + "\n"


def _dump_mapping(data: dict[str, Any], indent: int, lines: list[str]) -> None:
    pad = " " * indent
    for key, value in data.items():
        if isinstance(value, dict) and value:
            lines.append(f"{pad}{key}:")
            _dump_mapping(value, indent + 2, lines)
        elif isinstance(value, list) and value:
            lines.append(f"{pad}{key}:")
            _dump_list(value, indent + 2, lines)
        elif isinstance(value, dict | list):
            lines.append(f"{pad}{key}: {'{}' if isinstance(value, dict) else '[]'}")
        else:
            lines.append(f"{pad}{key}: {_scalar_text(value)}")


def _dump_list(items: list[Any], indent: int, lines: list[str]) -> None:
    pad = " " * indent
    for item in items:
        if isinstance(item, dict) and item:
            sub: list[str] = []
            _dump_mapping(item, indent + 2, sub)
            lines.append(f"{pad}- {sub[0].lstrip()}")
            lines.extend(sub[1:])
        elif isinstance(item, dict | list) and item:
            raise TextFormatError("nested lists are not written")
        else:
            lines.append(f"{pad}- {_scalar_text(item)}")


# ------------------------------------------------------------------ YAML in


def _strip_comment(line: str) -> str:
    """The line without a trailing ``# comment`` (a ``#`` inside quotes is kept)."""
    quote = ""
    for i, ch in enumerate(line):
        if quote:
            if ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or line[i - 1] in " \t"):
            return line[:i].rstrip()
    return line.rstrip()


def load_yaml(text: str) -> dict[str, Any]:
    """Read block YAML of the subset above into a dict (TextFormatError naming the line)."""
    rows: list[tuple[int, int, str]] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        if "\t" in raw[: len(raw) - len(raw.lstrip())]:
            raise TextFormatError(f"line {number}: tab in indentation")
        line = _strip_comment(raw)
        if not line.strip() or line.strip() in {"---", "..."}:
            continue
        rows.append((len(line) - len(line.lstrip(" ")), number, line.strip()))
    if not rows:
        return {}
    value, end = _block(rows, 0, rows[0][0])
    if end != len(rows):
        raise TextFormatError(f"line {rows[end][1]}: unexpected indentation")
    if not isinstance(value, dict):
        raise TextFormatError("the document is not a mapping")
    return value


def _block(rows: list[tuple[int, int, str]], i: int, indent: int) -> tuple[Any, int]:
    if rows[i][2].startswith("- ") or rows[i][2] == "-":
        return _sequence(rows, i, indent)
    return _mapping(rows, i, indent)


# Possessive runs (``++``): a plain key cannot hold ':' or '#', so nothing is given back; the
# lazy ``[^:#]+?\s*:`` these replace was quadratic in a long line of spaces (1.4 s for
# 20,000 characters, about an hour for a 1 MB config).
_KEY = re.compile(r"""("[^"]*"|'[^']*'|[^:#]++)\s*:(\s+|$)(.*)$""")
_ITEM_KEY = re.compile(r"""("[^"]*"|'[^']*'|[^:#'"\[{]++)\s*:(\s|$)""")


def _split_key(content: str, number: int) -> tuple[str, str]:
    match = _KEY.match(content)
    if not match:
        raise TextFormatError(f"line {number}: expected 'key: value', found {content[:40]!r}")
    key = match.group(1)
    key = key[1:-1] if key[0] in "'\"" else key.rstrip()
    return key, match.group(3)


def _mapping(rows: list[tuple[int, int, str]], i: int, indent: int) -> tuple[dict[str, Any], int]:
    out: dict[str, Any] = {}
    while i < len(rows):
        ind, number, content = rows[i]
        if ind < indent:
            break
        if ind > indent or content.startswith("- "):
            raise TextFormatError(f"line {number}: unexpected indentation")
        key, rest = _split_key(content, number)
        if key in out:
            raise TextFormatError(f"line {number}: duplicate key {key!r}")
        i += 1
        if rest:
            out[key] = _parse_scalar(rest, number)
        elif i < len(rows) and (
            rows[i][0] > indent or (rows[i][0] == indent and rows[i][2].startswith("-"))
        ):
            out[key], i = _block(rows, i, rows[i][0])
        else:
            out[key] = None
    return out, i


def _sequence(rows: list[tuple[int, int, str]], i: int, indent: int) -> tuple[list[Any], int]:
    out: list[Any] = []
    while i < len(rows):
        ind, number, content = rows[i]
        if ind < indent or not (content.startswith("- ") or content == "-"):
            break
        if ind > indent:
            raise TextFormatError(f"line {number}: unexpected indentation")
        item = content[1:].strip()
        if not item:
            i += 1
            if i < len(rows) and rows[i][0] > indent:
                value, i = _block(rows, i, rows[i][0])
                out.append(value)
            else:
                out.append(None)
            continue
        if _ITEM_KEY.match(item):
            # "- key: value" opens a mapping whose keys sit two columns further in
            sub = [(ind + 2, number, item), *rows[i + 1 :]]
            value, used = _mapping(sub, 0, ind + 2)
            out.append(value)
            i += used
            continue
        out.append(_parse_scalar(item, number))
        i += 1
    return out, i


# ------------------------------------------------------------------ TOML out


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    return json.dumps(str(value))


def dump_toml(sections: dict[str, dict[str, Any]], comments: list[str] | None = None) -> str:
    """Tables of scalars (and lists of scalars) as TOML, preceded by ``#`` comment lines;
    None values are left out (TOML has no null)."""
    lines = [f"# {c}" if c else "#" for c in comments or []]
    for name, table in sections.items():
        lines.append("")
        lines.append(f"[{name}]")
        lines.extend(f"{k} = {_toml_value(v)}" for k, v in table.items() if v is not None)
    return "\n".join(lines) + "\n"
