"""Report export: Markdown and CSV from each section's figures, JSON = ``report --json``."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from llm_planner.core.composition.estimate import Report, estimate, report_json
from llm_planner.core.composition.scenario import Scenario, default_scenario
from llm_planner.core.files.report_export import (
    SECTION_TITLES,
    export_report,
    format_for_path,
    readable_value,
    report_csv,
    report_json_text,
    report_markdown,
)
from llm_planner.core.primitives.figures import Figure


@pytest.fixture
def scenario() -> Scenario:
    return default_scenario().model_copy(
        update={"name": "70B | what-if", "notes": "line one\nline two"}
    )


@pytest.fixture
def report(scenario: Scenario) -> Report:
    return estimate(scenario)


def _all_figures(report: Report) -> list[tuple[str, Figure]]:
    return [(name, f) for name, s in report.sections().items() for f in s.figures()]


def test_csv_has_one_row_per_figure_with_si_values(report: Report) -> None:
    rows = list(csv.DictReader(io.StringIO(report_csv(report))))
    figures = _all_figures(report)
    assert len(rows) == len(figures)
    for row, (section, figure) in zip(rows, figures, strict=True):
        assert row["section"] == section
        assert row["key"] == figure.key
        assert row["label"] == figure.label
        assert row["unit"] == figure.unit
        if isinstance(figure.value, float):
            assert float(row["value"]) == figure.value  # full precision, SI units
    # Llama-3.1-8B has 8,030,261,248 parameters (count published by Meta's config: the
    # model card's 8.03B); the CSV carries the exact SI value, not a rounded "8.03B"
    params = next(r for r in rows if r["key"] == "params_total")
    assert float(params["value"]) == 8_030_261_248


def test_markdown_has_a_table_per_section_and_escapes_pipes(
    report: Report, scenario: Scenario
) -> None:
    text = report_markdown(report, scenario)
    assert text.startswith("# LLM Planner report: 70B \\| what-if\n")
    assert "> line one line two" in text
    assert text.count("| Figure | Value | Formula | Source |") == len(report.sections())
    for name in report.sections():
        assert f"\n## {SECTION_TITLES[name]}\n" in text
    for _, figure in _all_figures(report):
        label = "\u00a0" * (len(figure.label) - len(figure.label.lstrip())) + figure.label.strip()
        assert f"| {label} | {readable_value(figure)} |" in text
    assert "| Parameters (total) | 8.03B |" in text


def test_json_is_the_report_json_object(report: Report) -> None:
    assert json.loads(report_json_text(report)) == report_json(report)


@pytest.mark.parametrize(
    ("value", "unit", "text"),
    [
        (None, "bytes", "—"),
        (True, "bool", "yes"),
        ("fits", "text", "fits"),
        (0.5, "percent", "50.0%"),
        (1024.0, "count", "1,024"),
        (float("inf"), "ratio", "—"),
    ],
)
def test_readable_value(value: float | bool | str | None, unit: str, text: str) -> None:
    figure = Figure(key="k", label="l", value=value, unit=unit)  # type: ignore[arg-type]
    assert readable_value(figure) == text


def test_csv_neutralises_spreadsheet_formulas(monkeypatch: pytest.MonkeyPatch) -> None:
    from llm_planner.core.files import report_export

    class Section:
        def figures(self) -> list[Figure]:
            return [
                Figure(
                    key="name", label='=HYPERLINK("x")', value="+cmd|' /C calc'!A0", unit="text"
                ),
                Figure(key="n", label="negative", value=-3.0, unit="ratio"),
            ]

    monkeypatch.setattr(report_export, "_sections", lambda _report: {"model": Section().figures()})
    rows = list(csv.reader(io.StringIO(report_export.report_csv(None))))  # type: ignore[arg-type]
    assert rows[1][2] == '\'=HYPERLINK("x")'
    assert rows[1][3] == "'+cmd|' /C calc'!A0"
    assert rows[2][3] == "-3.0"  # numbers are not touched


def test_export_report_picks_the_format_from_the_suffix(
    tmp_path: Path, report: Report, scenario: Scenario
) -> None:
    md = export_report(report, tmp_path / "r.md", scenario)
    assert md.read_text("utf-8") == report_markdown(report, scenario)
    assert export_report(report, tmp_path / "r.CSV").read_text("utf-8") == report_csv(report)
    assert json.loads(export_report(report, tmp_path / "r.json").read_text()) == report_json(report)
    with pytest.raises(ValueError, match=r"\.md, \.csv or \.json"):
        format_for_path(tmp_path / "r.txt")
