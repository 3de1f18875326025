"""The window's own settings (geometry, last tab, recent files) as a small JSON file.

Qt's ``QSettings`` is deliberately not used (one persistence style for the whole app): the
file lives in the app's config folder (:func:`llm_planner.core.files.paths.config_dir`:
``LLM_PLANNER_HOME/config`` when that variable is set, as in tests and portable installs)
and is written by the store's one atomic writer
(:func:`llm_planner.core.files.store.atomic_write_bytes`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from llm_planner.core.files import paths, store

FILE_NAME = "window.json"
MAX_RECENT = 10


def config_dir() -> Path:
    """The folder the settings file lives in."""
    return paths.config_dir()


def log_dir() -> Path:
    """The folder the window's log lives in."""
    return paths.log_dir()


def load() -> dict[str, Any]:
    """The saved settings, or an empty dict when missing or unreadable."""
    path = config_dir() / FILE_NAME
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def save(data: dict[str, Any]) -> None:
    """Write ``data`` atomically; a failure (a read-only folder) leaves the old file and is
    not the user's problem: the window's settings are a convenience."""
    text = json.dumps(data, indent=2)
    try:
        store.atomic_write_bytes(config_dir() / FILE_NAME, text.encode("utf-8"))
    except OSError:
        return


def add_recent(data: dict[str, Any], path: str) -> list[str]:
    recent = [p for p in data.get("recent", []) if isinstance(p, str) and p != path]
    recent.insert(0, path)
    kept = recent[:MAX_RECENT]
    data["recent"] = kept
    return kept
