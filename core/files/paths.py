"""Where the app keeps the user's data: one place, with an override for tests and portable use.

The data folder is ``platformdirs.user_data_dir("llm-planner")`` (for example
``~/.local/share/llm-planner`` on Linux, ``~/Library/Application Support/llm-planner`` on
macOS, ``%LOCALAPPDATA%\\llm-planner`` on Windows). Setting the environment variable
``LLM_PLANNER_HOME`` replaces it: the data folder is then ``$LLM_PLANNER_HOME/data``, the
config folder ``$LLM_PLANNER_HOME/config`` and the log folder ``$LLM_PLANNER_HOME/log``
(tests and portable installs use this).

Nothing here creates folders; the functions that write create what they need.
"""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs

APP_NAME = "llm-planner"
HOME_ENV = "LLM_PLANNER_HOME"


def _home_override() -> Path | None:
    value = os.environ.get(HOME_ENV)
    return Path(value).expanduser() if value else None


def data_dir() -> Path:
    """The app's data folder (library, trash, recovery copies)."""
    home = _home_override()
    if home is not None:
        return home / "data"
    return Path(platformdirs.user_data_dir(APP_NAME, appauthor=False))


def config_dir() -> Path:
    """The app's settings folder."""
    home = _home_override()
    if home is not None:
        return home / "config"
    return Path(platformdirs.user_config_dir(APP_NAME, appauthor=False))


LIBRARY_FOLDER = "scenarios"
TRASH_FOLDER = "trash"
QUARANTINE_FOLDER = "quarantine"
RECOVERY_FOLDER = "recovery"
JOURNAL_FOLDER = "journal"
"""The library's folders under the data folder (one spelling, used by ``library``)."""


def log_dir() -> Path:
    """Where the window writes its log (``$LLM_PLANNER_HOME/log`` with the override)."""
    home = _home_override()
    if home is not None:
        return home / "log"
    return Path(platformdirs.user_log_dir(APP_NAME, appauthor=False))


def library_dir(data: Path | None = None) -> Path:
    """Saved scenarios, one ``.llmplan.json`` file each (``data``: the data folder, by
    default :func:`data_dir`)."""
    return (data or data_dir()) / LIBRARY_FOLDER


def trash_dir(data: Path | None = None) -> Path:
    """Deleted scenarios, kept until the trash is emptied (restorable)."""
    return (data or data_dir()) / TRASH_FOLDER


def quarantine_dir(data: Path | None = None) -> Path:
    """Library files that could not be read, moved aside (never deleted)."""
    return (data or data_dir()) / QUARANTINE_FOLDER


def recovery_dir(data: Path | None = None) -> Path:
    """Autosaved copies of unsaved edits, offered on the next start."""
    return (data or data_dir()) / RECOVERY_FOLDER


def journal_dir(data: Path | None = None) -> Path:
    """The library's record of two-file operations under way (finished on the next start)."""
    return (data or data_dir()) / JOURNAL_FOLDER
