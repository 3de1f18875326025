"""Where the app keeps the user's data: one place, with an override for tests and portable use.

The data folder is ``platformdirs.user_data_dir("llm-planner")`` (for example
``~/.local/share/llm-planner`` on Linux, ``~/Library/Application Support/llm-planner`` on
macOS, ``%LOCALAPPDATA%\\llm-planner`` on Windows). Setting the environment variable
``LLM_PLANNER_HOME`` replaces it: the data folder is then ``$LLM_PLANNER_HOME/data`` and the
config folder ``$LLM_PLANNER_HOME/config`` (tests and portable installs use this).

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


def library_dir() -> Path:
    """Saved scenarios, one ``.llmplan.json`` file each."""
    return data_dir() / "scenarios"


def trash_dir() -> Path:
    """Deleted scenarios, kept until the trash is emptied (restorable)."""
    return data_dir() / "trash"


def quarantine_dir() -> Path:
    """Library files that could not be read, moved aside (never deleted)."""
    return data_dir() / "quarantine"


def recovery_dir() -> Path:
    """Autosaved copies of unsaved edits, offered on the next start."""
    return data_dir() / "recovery"
