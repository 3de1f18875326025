"""Shared test setup: GUI tests run offscreen; no test touches the developer's real data."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")


@pytest.fixture(autouse=True)
def _isolated_user_dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Point the app's data, config, log and cache folders at a temporary folder."""
    home = tmp_path / "llm-planner-home"
    monkeypatch.setenv("LLM_PLANNER_HOME", str(home))
    monkeypatch.setenv("XDG_DATA_HOME", str(home / "data"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / "config"))
    monkeypatch.setenv("XDG_STATE_HOME", str(home / "state"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(home / "cache"))
    yield


SLOW_ENV = "LLM_PLANNER_SLOW"
"""Set to 1 to run the tests marked ``slow`` (the frozen bundle's two-minute build, the stack
frameworks' own parsers); CI sets it. ``-m slow`` selects them too."""


def _run_slow(config: pytest.Config) -> bool:
    return os.environ.get(SLOW_ENV) == "1" or "slow" in (config.getoption("-m") or "")


def pytest_report_header(config: pytest.Config) -> str:
    if _run_slow(config):
        return "slow tests: run"
    return f"slow tests: deselected (set {SLOW_ENV}=1 or pass -m slow to run them)"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Deselect the slow tests from a plain ``pytest`` (a developer's quick run)."""
    if _run_slow(config):
        return
    slow = [item for item in items if item.get_closest_marker("slow") is not None]
    if slow:
        config.hook.pytest_deselected(items=slow)
        items[:] = [item for item in items if item.get_closest_marker("slow") is None]
