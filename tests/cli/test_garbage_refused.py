"""Issue 29, item 8: values no one means are refused in one line naming the option, not
echoed back as a plan (1e-300 failures per GPU-hour, a 301-digit GPU count, a 300-digit
price)."""

from __future__ import annotations

from pathlib import Path

import pytest

from llm_planner.cli import main
from llm_planner.core.composition.scenario import default_scenario, with_changes


@pytest.mark.parametrize(
    ("argv", "option"),
    [
        (["report", "--failure-rate", "1e-300"], "--failure-rate"),
        (["report", "--cuda-context", "1e-300"], "--cuda-context"),
        (["report", "--fragmentation", "1e-300"], "--fragmentation"),
        (["report", "--checkpoint-seconds", "1e-300"], "--checkpoint-seconds"),
        (["hardware", "--max-gpus", "1e300"], "--max-gpus"),
        (["hardware", "--price-for", "h100-sxm=1e300"], "--price-for"),
    ],
)
def test_a_meaningless_value_is_one_line_naming_its_option(
    argv: list[str], option: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.count("\n") == 1
    assert f"argument {option}" in err
    assert "1e+300" in err or "1e-300" in err  # what was typed, in g format, not 301 digits


@pytest.mark.parametrize(
    ("path", "least"),
    [
        ("compute.failures.gpu_failures_per_hour", 1e-9),
        ("compute.failures.checkpoint_write_seconds", 1e-3),
        ("training.cuda_context_bytes", 1e6),
        ("training.fragmentation_fraction", 1e-6),
    ],
)
def test_zero_still_means_none_and_the_least_value_is_accepted(path: str, least: float) -> None:
    base = default_scenario()
    assert with_changes(base, {path: 0.0})  # none at all: a real choice
    assert with_changes(base, {path: least})
    with pytest.raises(ValueError, match=path):
        with_changes(base, {path: least / 10})


def test_paths_with_escape_or_bidi_characters_are_echoed_clean(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A path holding ESC (a terminal escape) or U+202E (right-to-left override) is printed
    without them by export-config, check and import-config, and by every one-line error."""
    hostile = tmp_path / "plan\x1b[2J\u202eredli.json"
    assert main(["export-config", "--stack", "deepspeed", "--out", str(hostile)]) == 0
    err = capsys.readouterr().err
    assert "wrote" in err
    assert "\x1b" not in err
    assert "\u202e" not in err
    for command in ("check", "import-config"):
        main([command, str(hostile)])
        out, err = capsys.readouterr()
        assert "\x1b" not in out + err
        assert "\u202e" not in out + err
    assert main(["check", str(tmp_path / "missing\x1b[2J.json")]) == 2
    assert "\x1b" not in capsys.readouterr().err
