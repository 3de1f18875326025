"""The window's own settings (geometry, last tab, recent files) as a small JSON file.

Qt's ``QSettings`` is deliberately not used (one persistence style for the whole app):
the file lives in the app's config folder (``LLM_PLANNER_HOME/config`` when that variable
is set, as in tests and portable installs; else ``platformdirs.user_config_dir``) and is
written atomically.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

APP_NAME = "llm-planner"
FILE_NAME = "window.json"
MAX_RECENT = 10


def config_dir() -> Path:
    try:  # the store engineer's module, once it exists, is the one source of paths
        from llm_planner.core.files import paths  # type: ignore[attr-defined]

        return Path(paths.config_dir())
    except (ImportError, AttributeError):
        pass
    home = os.environ.get("LLM_PLANNER_HOME")
    if home:
        return Path(home) / "config"
    import platformdirs

    return Path(platformdirs.user_config_dir(APP_NAME, appauthor=False))


def log_dir() -> Path:
    try:
        from llm_planner.core.files import paths  # type: ignore[attr-defined]

        return Path(paths.log_dir())
    except (ImportError, AttributeError):
        pass
    home = os.environ.get("LLM_PLANNER_HOME")
    if home:
        return Path(home) / "log"
    import platformdirs

    return Path(platformdirs.user_log_dir(APP_NAME, appauthor=False))


def load() -> dict[str, Any]:
    """The saved settings, or an empty dict when missing or unreadable."""
    path = config_dir() / FILE_NAME
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def save(data: dict[str, Any]) -> None:
    """Write ``data`` atomically (temporary file in the same folder, fsync, replace)."""
    folder = config_dir()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".window-", suffix=".json", dir=folder)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(data, handle, indent=2)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, folder / FILE_NAME)
    except OSError:
        with contextlib.suppress(OSError, UnboundLocalError):
            os.unlink(tmp)


def add_recent(data: dict[str, Any], path: str) -> list[str]:
    recent = [p for p in data.get("recent", []) if isinstance(p, str) and p != path]
    recent.insert(0, path)
    data["recent"] = recent[:MAX_RECENT]
    return data["recent"]
