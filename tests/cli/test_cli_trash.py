"""``llm-planner delete NAME``, ``trash``, ``restore NAME``: the library's trash on the
command line (the same operations the window's Trash view offers)."""

from __future__ import annotations

import json

import pytest

from llm_planner.cli import main
from llm_planner.core.composition.scenario import default_scenario
from llm_planner.core.files.library import Library


def test_delete_list_trash_restore_and_empty(capsys: pytest.CaptureFixture[str]) -> None:
    library = Library()
    library.save_as(default_scenario().model_copy(update={"name": "Alpha plan"}))
    assert main(["delete", "Alpha plan"]) == 0
    assert library.listing().entries == []
    capsys.readouterr()
    assert main(["trash", "--json"]) == 0
    items = json.loads(capsys.readouterr().out)
    assert [i["name"] for i in items] == ["Alpha plan"]
    assert main(["restore", "alpha plan"]) == 0  # by name, case-insensitive
    assert [e.name for e in library.listing().entries] == ["Alpha plan"]
    assert main(["trash"]) == 0
    assert "(the trash is empty)" in capsys.readouterr().out
    assert main(["delete", "Alpha plan"]) == 0
    capsys.readouterr()
    assert main(["trash", "--empty"]) == 0
    assert library.trash() == []
    assert capsys.readouterr().out == "deleted 1 scenario for good\n"  # not "scenario(s)"


def test_restore_of_an_unknown_name_is_one_line_exit_2(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["restore", "nothing-here"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "NAME" in err
