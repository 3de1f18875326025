"""The window's settings go through the app's one set of folders (core.files.paths) and the
store's one atomic writer; a failed write is not the user's problem."""

from __future__ import annotations

import json
import os
from pathlib import Path

from llm_planner.core.files import paths
from llm_planner.gui import settings


def test_settings_and_log_live_under_the_app_home() -> None:
    home = Path(os.environ["LLM_PLANNER_HOME"])  # set for every test by tests/conftest.py
    assert settings.config_dir() == home / "config"
    assert settings.log_dir() == home / "log" == paths.log_dir()


def test_save_writes_the_file_whole_and_load_reads_it_back() -> None:
    settings.save({"tab": 2, "recent": ["/a.llmplan.json"]})
    path = settings.config_dir() / settings.FILE_NAME
    assert json.loads(path.read_text(encoding="utf-8")) == {
        "tab": 2,
        "recent": ["/a.llmplan.json"],
    }
    assert settings.load()["tab"] == 2
    # the writer leaves no temporary file behind
    assert sorted(p.name for p in path.parent.iterdir()) == [settings.FILE_NAME]


def test_a_folder_that_cannot_be_written_is_not_an_error() -> None:
    blocked = settings.config_dir()
    blocked.parent.mkdir(parents=True, exist_ok=True)
    blocked.write_text("a file where the folder should be", encoding="utf-8")
    settings.save({"tab": 1})  # no exception
    assert settings.load() == {}


def test_recent_files_move_to_the_front_without_duplicates() -> None:
    data: dict[str, object] = {"recent": ["/b", "/a"]}
    assert settings.add_recent(data, "/a") == ["/a", "/b"]
    for i in range(20):
        settings.add_recent(data, f"/{i}")
    assert len(data["recent"]) == settings.MAX_RECENT  # type: ignore[arg-type]
