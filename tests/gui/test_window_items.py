"""Issue 25, the window itself: the wheel, dp after a search row, nothing cut at 1024×640,
the fit verdict, Export for… a row, the keyboard, and the small things. Each test acts as a
user does (clicks, keys, wheel events, triggered actions, answered dialogs)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import QPoint, QPointF, Qt
from PySide6.QtGui import QAction, QWheelEvent
from PySide6.QtTest import QTest
from PySide6.QtWidgets import (
    QAbstractButton,
    QAbstractItemView,
    QAbstractScrollArea,
    QAbstractSpinBox,
    QApplication,
    QComboBox,
    QDialog,
    QFileDialog,
    QGroupBox,
    QLineEdit,
    QMessageBox,
    QPlainTextEdit,
    QScrollArea,
    QStyle,
    QStyleOptionGroupBox,
    QTabBar,
    QWidget,
)

from llm_planner.core.composition.search import apply_row, search_scenario
from llm_planner.core.files import stack_configs
from llm_planner.core.files.store import save_scenario_file
from llm_planner.gui.main_window import MainWindow
from llm_planner.gui.screenshots import heavy_states

from .helpers import choose, type_into
from .test_as_user import LLAMA2_7B_CONFIG, action, click, click_row, press, when_dialog

pytestmark = pytest.mark.gui

README = Path(__file__).parents[2] / "README.md"


def wheel(widget: QWidget, steps: int) -> None:
    """A real wheel event over the middle of ``widget`` (steps > 0: away from the user)."""
    centre = QPointF(widget.rect().center())
    event = QWheelEvent(
        centre,
        QPointF(widget.mapToGlobal(centre.toPoint())),
        QPoint(0, 0),
        QPoint(0, 120 * steps),
        Qt.MouseButton.NoButton,
        Qt.KeyboardModifier.NoModifier,
        Qt.ScrollPhase.NoScrollPhase,
        False,
    )
    QApplication.sendEvent(widget, event)


def scroll_area_of(widget: QWidget) -> QScrollArea:
    node = widget.parentWidget()
    while node is not None and not isinstance(node, QScrollArea):
        node = node.parentWidget()
    assert node is not None
    return node


def undo(window: MainWindow) -> None:
    edit = window.menuBar().actions()[1].menu()
    next(a for a in edit.actions() if "Undo" in a.text()).trigger()


def open_heavy(window: MainWindow, tmp_path: Path, monkeypatch: Any, name: str) -> None:
    """Open one of the screenshot script's heavy states through File ▸ Open."""
    path = tmp_path / f"{name}.llmplan.json"
    save_scenario_file(dict(heavy_states())[name], path)  # type: ignore[arg-type]
    monkeypatch.setattr(QFileDialog, "getOpenFileName", lambda *_a, **_k: (str(path), ""))
    action(window, "open").trigger()
    window.flush()


def click_group_check(box: QGroupBox) -> None:
    option = QStyleOptionGroupBox()
    box.initStyleOption(option)
    rect = box.style().subControlRect(
        QStyle.ComplexControl.CC_GroupBox, option, QStyle.SubControl.SC_GroupBoxCheckBox, box
    )
    QTest.mouseClick(box, Qt.MouseButton.LeftButton, pos=rect.center())


# ---------------------------------------------------------------- 8. the mouse wheel


def test_wheel_over_an_unfocused_picker_scrolls_the_form_and_undo_restores_exactly(
    qtbot: Any, window: MainWindow
) -> None:
    action(window, "tab3").trigger()
    tab = window.page(3)
    type_into(qtbot, window, tab.pp, "4")
    choose(window, tab.schedule, "interleaved")
    type_into(qtbot, window, tab.chunks, "2")
    QTest.mouseClick(window.bar.num_gpus, Qt.MouseButton.LeftButton)  # focus elsewhere
    before = window.state.scenario
    bar = scroll_area_of(tab.zero).verticalScrollBar()
    bar.setValue(0)
    assert bar.maximum() > 0, "the form should be long enough to scroll"

    wheel(tab.schedule, +1)  # would pick "1F1B"
    wheel(tab.zero, -1)  # would pick ZeRO 2, and scrolls the form instead
    assert window.state.scenario == before
    assert tab.schedule.currentText() == "interleaved 1F1B"
    assert bar.value() > 0

    # clicked into, the picker takes the wheel as usual; one undo gives back exactly before
    QTest.mouseClick(tab.schedule, Qt.MouseButton.LeftButton)
    tab.schedule.hidePopup()
    assert tab.schedule.hasFocus()
    wheel(tab.schedule, +1)
    assert window.state.scenario.parallelism.schedule == "1f1b"
    undo(window)
    assert window.state.scenario == before
    assert tab.schedule.currentText() == "interleaved 1F1B"
    assert tab.chunks.text() == "2"


def test_wheel_over_an_unfocused_spin_box_changes_nothing(qtbot: Any, window: MainWindow) -> None:
    action(window, "tab4").trigger()
    tab = window.page(4)
    click_group_check(tab.boxes["rl"])
    window.flush()
    assert window.state.scenario.whatif.rl is not None
    QTest.mouseClick(window.bar.num_gpus, Qt.MouseButton.LeftButton)
    before = window.state.scenario
    spin = tab.fields[("rl", "prompts_per_step")]
    assert isinstance(spin, QAbstractSpinBox)
    wheel(spin, +3)
    window.flush()
    assert window.state.scenario == before


# ---------------------------------------------------------------- 9. dp after a search row


def test_an_applied_rows_dp_follows_the_gpu_count(qtbot: Any, window: MainWindow) -> None:
    action(window, "tab3").trigger()
    tab = window.page(3)
    window.flush()
    click_row(tab.search.table, 0)
    click(tab.search.apply_button)
    applied = window.state.scenario
    assert applied.parallelism.dp is None  # "from the GPU count", not a pinned 512/(tp·pp)
    assert tab.dp.text() == ""
    type_into(qtbot, window, window.bar.num_gpus, "1024")
    assert window.state.scenario.num_gpus == 1024
    layout = window.state.report.parallelism
    assert layout.dp * layout.tp * layout.pp == 1024
    assert not window.error_label.isVisible()


def test_clearing_dp_takes_the_gpu_count_that_was_refused(qtbot: Any, window: MainWindow) -> None:
    action(window, "tab3").trigger()
    tab = window.page(3)
    type_into(qtbot, window, tab.dp, "512")
    assert window.state.scenario.parallelism.dp == 512
    type_into(qtbot, window, window.bar.num_gpus, "2048")
    assert window.state.scenario.num_gpus == 512  # refused: dp·tp·pp says 512
    assert window.error_label.isVisible()
    type_into(qtbot, window, tab.dp, "")
    assert window.state.scenario.parallelism.dp is None
    assert window.state.scenario.num_gpus == 2048
    assert not window.error_label.isVisible()
    assert not window.bar.num_gpus.property("inputError")


# ---------------------------------------------------------------- 10. nothing cut


def _cells_fit(table: QAbstractItemView) -> list[str]:
    """Texts of a table that its cells cut: a word wider than its column, or a cell lower
    than its wrapped text."""
    model = table.model()
    metrics = table.fontMetrics()
    cut = []
    for row in range(model.rowCount()):
        for column in range(model.columnCount()):
            index = model.index(row, column)
            text = str(index.data() or "")
            if not text:
                continue
            rect = table.visualRect(index)
            room = rect.width() - 6  # the delegate's margins
            widest = max(metrics.horizontalAdvance(word) for word in text.split())
            height = table.rowHeight(row)  # type: ignore[attr-defined]
            if table.wordWrap():  # the delegate's own height for the text wrapped in its column
                needed = table.sizeHintForRow(row)
            else:
                needed = metrics.height() if metrics.horizontalAdvance(text) <= room else 10**6
            if widest > room or needed > height:
                cut.append(text)
    return cut


@pytest.mark.parametrize("size", [(1366, 768), (1024, 640)])
def test_heavy_states_cut_nothing(
    qtbot: Any, window: MainWindow, tmp_path: Path, monkeypatch: Any, size: tuple[int, int]
) -> None:
    window.resize(*size)
    open_heavy(window, tmp_path, monkeypatch, "big")
    action(window, "tab3").trigger()
    tab = window.page(3)
    window.flush()
    QApplication.processEvents()
    QApplication.processEvents()
    # figures: no value or label elided
    assert _cells_fit(tab.figures) == []
    # the search's numbers whole (the last column, a sentence, may elide)
    metrics = tab.search.table.fontMetrics()
    for row in tab.search.rows:
        from llm_planner.gui.tabs.parallelism import COLUMNS, cell_text

        for column, (key, _h, _t) in enumerate(COLUMNS[:-1]):
            width = tab.search.table.columnWidth(column)
            assert metrics.horizontalAdvance(cell_text(key, row.get(key))) + 8 <= width, key
    # chart titles and axis names wrap instead of running off the chart
    for chart in (tab.zero_bars, tab.timeline):
        for label in (chart.title, chart.x_label):
            assert label.wordWrap()
            assert label.heightForWidth(label.width()) <= label.height() + 1, label.text()
    # the pipeline's micro-batch numbers never print over each other
    shown = [t for t in tab.timeline.texts if t.isVisible()]
    boxes = [t.sceneBoundingRect() for t in shown]
    for i, first in enumerate(boxes):
        assert not any(first.intersects(other) for other in boxes[i + 1 :])
    # the bar totals stay inside the plot
    view = tab.zero_bars.plot.getPlotItem().getViewBox()
    for label in tab.zero_bars.labels:
        if label.text():
            right = view.mapFromItemToView(label, label.boundingRect()).boundingRect().right()
            assert right <= view.viewRange()[0][1], label.text()
    # the capacity label inside the chart (no title above the plot any more to run into)
    label = tab.zero_bars.capacity_line.label
    drawn = label.mapRectToScene(label.boundingRect())
    assert tab.zero_bars.plot.sceneRect().contains(drawn), (label.toPlainText(), drawn)
    # the header's fields show their whole text
    for edit in (window.bar.gpu_memory, window.bar.num_gpus):
        assert edit.fontMetrics().horizontalAdvance(edit.text()) <= edit.width() - 6


@pytest.mark.parametrize("size", [(1366, 768), (1024, 640)])
def test_every_form_fits_its_column_with_every_whatif_planned(
    qtbot: Any, window: MainWindow, tmp_path: Path, monkeypatch: Any, size: tuple[int, int]
) -> None:
    window.resize(*size)
    open_heavy(window, tmp_path, monkeypatch, "whatif")
    for index in range(window.tabs.count()):
        action(window, f"tab{index}").trigger()
        window.flush()
        QApplication.processEvents()
        page = window.page(index)
        viewport = scroll_area_of(page.inputs).viewport()
        assert page.inputs.width() <= viewport.width(), page.section
    tab = window.page(4)
    assert all(box.isChecked() for box in tab.boxes.values())
    # the RL problem sentence wraps, whole, once the rows have taken their wrapped heights
    # (a column's new width re-wraps on the next turn of the event loop)
    qtbot.waitUntil(lambda: _cells_fit(tab.figures) == [], timeout=3000)


# ---------------------------------------------------------------- 11. the fit verdict


def test_a_model_that_does_not_fit_says_so_at_once(
    qtbot: Any, window: MainWindow, tmp_path: Path
) -> None:
    action(window, "tab2").trigger()
    tab = window.page(2)
    window.flush()
    assert "Fits in memory" in tab.fit_panel.title.text()
    config = tmp_path / "config.json"
    big = {**LLAMA2_7B_CONFIG, "hidden_size": 8192, "intermediate_size": 28672}
    big |= {"num_hidden_layers": 80, "num_attention_heads": 64, "num_key_value_heads": 8}
    config.write_text(json.dumps(big), encoding="utf-8")
    from .test_as_user import _drop

    _drop(window, config)
    # no flush: the suggestions are still being worked out in the background
    assert not window.state.report.training.fits
    assert "Fits in memory" not in tab.fit_panel.title.text()
    assert "Does not fit" in tab.fit_panel.title.text()
    window.flush()
    qtbot.waitUntil(lambda: "Looking" not in tab.fit_panel.title.text(), timeout=10000)
    assert "Does not fit" in tab.fit_panel.title.text()


# ---------------------------------------------------------------- 12. Export for… a row


def test_export_for_writes_the_selected_row(
    qtbot: Any, window: MainWindow, tmp_path: Path, monkeypatch: Any
) -> None:
    action(window, "tab3").trigger()
    tab = window.page(3)
    window.flush()
    scenario = window.state.scenario
    rows = search_scenario(scenario, top=len(tab.search.rows)).rows
    own = stack_configs.export_config(scenario, "deepspeed").text
    index = next(
        i
        for i, row in enumerate(rows)
        if stack_configs.export_config(apply_row(scenario, row), "deepspeed").text != own
    )
    click_row(tab.search.table, index)
    target = tmp_path / "ds.json"
    monkeypatch.setattr(QFileDialog, "getSaveFileName", lambda *_a, **_k: (str(target), ""))
    menu = tab.search.export_button.menu()
    menu.findChild(QAction, "export_deepspeed").trigger()
    expected = stack_configs.export_config(apply_row(scenario, rows[index]), "deepspeed").text
    assert target.read_text(encoding="utf-8") == expected
    # nothing selected: the scenario's own layout
    tab.search.table.clearSelection()
    menu.findChild(QAction, "export_deepspeed").trigger()
    assert target.read_text(encoding="utf-8") == own


# ---------------------------------------------------------------- 13. the keyboard


def test_tab_from_the_header_reaches_the_page_and_focus_stays_visible(
    qtbot: Any, window: MainWindow
) -> None:
    window.activateWindow()
    qtbot.waitUntil(window.isActiveWindow, timeout=3000)
    action(window, "tab3").trigger()
    page = window.page(3)
    QTest.mouseClick(window.bar.num_gpus, Qt.MouseButton.LeftButton)
    QTest.keyClick(QApplication.focusWidget(), Qt.Key.Key_Tab)
    assert isinstance(QApplication.focusWidget(), QTabBar)
    QTest.keyClick(QApplication.focusWidget(), Qt.Key.Key_Tab)
    assert page.isAncestorOf(QApplication.focusWidget())
    shows_focus = (QLineEdit, QComboBox, QAbstractSpinBox, QAbstractButton, QTabBar)
    for _ in range(40):
        focus = QApplication.focusWidget()
        assert focus is not None
        assert focus.isVisible()
        assert isinstance(focus, (*shows_focus, QAbstractScrollArea)), type(focus).__name__
        assert not type(focus).__name__.endswith(("PlotWidget", "ThemedPlot")), focus
        QTest.keyClick(focus, Qt.Key.Key_Tab)


def test_tab_leaves_the_notes_and_escape_closes_compare(qtbot: Any, window: MainWindow) -> None:
    window.activateWindow()
    qtbot.waitUntil(window.isActiveWindow, timeout=3000)
    panel = window.library
    assert panel is not None
    notes: QPlainTextEdit = panel.notes
    QTest.mouseClick(notes.viewport(), Qt.MouseButton.LeftButton)
    QTest.keyClicks(notes, "pilot run")
    QTest.keyClick(notes, Qt.Key.Key_Tab)
    assert "\t" not in notes.toPlainText()
    assert not notes.hasFocus()

    action(window, "compare").trigger()
    compare = window._choose_window
    qtbot.waitExposed(compare)
    compare.activateWindow()
    qtbot.waitUntil(compare.isActiveWindow, timeout=3000)
    QTest.keyClick(compare, Qt.Key.Key_Escape)
    assert not compare.isVisible()


# ---------------------------------------------------------------- 14. small things


def test_parameter_counts_read_as_people_write_them(window: MainWindow, capsys: Any) -> None:
    picker = window.bar.model
    text = picker.itemText(picker.findData("gemma-3-1b"))
    assert "e+" not in text, text
    assert text.endswith("· 1B"), text
    from llm_planner.cli import main

    assert main(["presets", "models"]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if "gemma-3-1b" in x)
    assert "e+" not in line


def test_find_a_model_by_words(qtbot: Any, window: MainWindow) -> None:
    seen: list[int] = []

    def answer(dialog: QDialog) -> None:
        search = dialog.findChild(QLineEdit, "model_search")
        QTest.keyClicks(search, "llama 3")
        proxy = dialog.proxy  # type: ignore[attr-defined]
        seen.append(proxy.rowCount())
        names = [str(proxy.index(r, 0).data()) for r in range(proxy.rowCount())]
        assert all(name.startswith("Llama-3") for name in names), names
        QTest.keyClick(search, Qt.Key.Key_Return)

    when_dialog(answer)
    choose(window, window.bar.model, "__find__")
    assert seen
    assert seen[0] > 0
    assert window.state.scenario.model.architecture.name.startswith("Llama-3")


def test_library_duplicate_rename_trash_and_the_export_folder(
    qtbot: Any, window: MainWindow, monkeypatch: Any, tmp_path: Path
) -> None:
    panel = window.library
    assert panel is not None
    click(panel.add_button)
    original = window.state.path
    assert original is not None
    name = window.state.scenario.name
    # Duplicate: the editor shows the copy, never the original
    assert panel.select_key(Path(original).name.removesuffix(".llmplan.json"))
    click(panel.duplicate_button)
    assert window.state.path != original
    assert window.state.scenario.name == f"{name} (copy)"
    # Rename: a dialog wide enough for its title
    widths: list[int] = []

    def rename(dialog: QDialog) -> None:
        widths.append(dialog.width())
        widths.append(dialog.fontMetrics().horizontalAdvance(dialog.windowTitle()))
        edit = dialog.findChild(QLineEdit)
        edit.selectAll()
        QTest.keyClicks(edit, "Renamed plan")
        QTest.keyClick(edit, Qt.Key.Key_Return)

    when_dialog(rename)
    click(panel.rename_button)
    assert widths[0] >= 3 * widths[1]
    assert "Renamed plan" in [
        str(panel.proxy.index(r, 0).data()) for r in range(panel.proxy.rowCount())
    ]
    # Export scenario… starts in the user's folder, not the library's own
    folders: list[str] = []

    def save_name(_parent: Any, _title: str, suggested: str, *_a: Any) -> tuple[str, str]:
        folders.append(str(Path(suggested).parent))
        return "", ""

    monkeypatch.setattr(QFileDialog, "getSaveFileName", save_name)
    action(window, "export_scenario").trigger()
    assert folders
    assert Path(folders[0]).resolve() != panel.library.folder.resolve()
    # one deleted scenario is "1 deleted scenario", not "scenario(s)"
    when_dialog(press(QMessageBox.StandardButton.Yes))
    click(panel.delete_button)
    trash = panel.show_trash()
    assert trash.hint.text().startswith("1 deleted scenario.")
    trash.close()


def test_a_dropped_scenario_file_joins_the_library(
    qtbot: Any, window: MainWindow, tmp_path: Path
) -> None:
    from .test_as_user import _drop

    sent = tmp_path / "from a teammate.llmplan.json"
    teammate = window.state.scenario.model_copy(update={"name": "Teammate plan", "num_gpus": 64})
    save_scenario_file(teammate, sent)
    sent_bytes = sent.read_bytes()
    panel = window.library
    assert panel is not None
    _drop(window, sent)
    names = [str(panel.proxy.index(r, 0).data()) for r in range(panel.proxy.rowCount())]
    assert "Teammate plan" in names
    assert window.state.scenario.num_gpus == 64
    assert window.state.path is not None
    assert Path(window.state.path).parent.resolve() == panel.library.folder.resolve()
    type_into(qtbot, window, window.bar.num_gpus, "128")
    action(window, "save").trigger()
    assert sent.read_bytes() == sent_bytes  # the sender's file is never written


def test_rl_legend_names_only_the_lines_drawn(
    qtbot: Any, window: MainWindow, tmp_path: Path, monkeypatch: Any
) -> None:
    open_heavy(window, tmp_path, monkeypatch, "whatif")
    action(window, "tab4").trigger()
    tab = window.page(4)
    window.flush()
    rl = tab.whatif.rl
    assert rl is not None
    assert all(p.rollout_seconds == float("inf") for p in rl.curve)  # one GPU per engine
    assert tab.rl_chart.legend_labels() == ["training"]
    assert "rollout" not in tab.rl_chart.legend.text()


# ---------------------------------------------------------------- 15. README


def test_readme_says_how_to_run_the_installed_command() -> None:
    text = README.read_text(encoding="utf-8")
    setup = text.index(".venv/bin/pip install -q -e '.[test]'")
    between = text[setup : text.index("## What it answers")]
    assert "source .venv/bin/activate" in between
    assert ".venv/bin/llm-planner" in between


@pytest.mark.parametrize("state", ["big", "nofit"])
def test_the_header_keeps_every_figure_whole_at_1024(
    qtbot: Any, window: MainWindow, tmp_path: Path, monkeypatch: Any, state: str
) -> None:
    """Only the model's name shortens ("Llama…", full in its tooltip); the figures beside it
    and the status dot stay whole at 1024×640 ("training peak 40.7/80 G…" was cut)."""
    window.resize(1024, 640)
    open_heavy(window, tmp_path, monkeypatch, state)
    QApplication.processEvents()
    strip = window.summary
    for key, label in strip.labels.items():
        if key == "model" or not label.isVisible():
            continue
        assert label.width() >= label.sizeHint().width(), key
    assert strip.dot.geometry().right() <= strip.contentsRect().right()
