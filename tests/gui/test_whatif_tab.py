"""The "What if" tab, driven as a user does: click a part's checkbox, type into its fields,
read the figures and the RL split chart, undo with the keyboard."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QPoint, Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QGroupBox, QStyle, QStyleOptionGroupBox

from llm_planner.gui.main_window import MainWindow


def _whatif_tab(window: MainWindow) -> Any:
    index = next(i for i in range(window.tabs.count()) if window.tabs.tabText(i) == "What if")
    window.tabs.setCurrentIndex(index)
    window.flush()
    return window.page(index)


def _click_check(qtbot: Any, box: QGroupBox) -> None:
    """Click the group box's own checkbox, where the style draws it."""
    option = QStyleOptionGroupBox()
    box.initStyleOption(option)
    rect = box.style().subControlRect(
        QStyle.ComplexControl.CC_GroupBox, option, QStyle.SubControl.SC_GroupBoxCheckBox, box
    )
    qtbot.mouseClick(box, Qt.MouseButton.LeftButton, pos=QPoint(rect.center()))


def test_plan_rl_by_clicking_and_typing(qtbot: Any, window: MainWindow) -> None:
    tab = _whatif_tab(window)
    assert window.state.scenario.whatif.rl is None
    assert tab.figures.value_text("rl.step") is None
    _click_check(qtbot, tab.boxes["rl"])
    window.flush()
    assert window.state.scenario.whatif.rl is not None
    xs, ys = tab.rl_chart.data("step")
    assert len(xs) > 1
    _, best_y = tab.rl_chart.data("best")
    assert list(best_y) == [min(ys)]
    assert tab.figures.value_text("rl.step")
    # type a new GPU count into its field and press Enter
    spin = tab.fields[("rl", "num_gpus")]
    spin.setFocus()
    spin.selectAll()
    QTest.keyClicks(spin, "128")
    QTest.keyClick(spin, Qt.Key.Key_Return)
    window.flush()
    assert window.state.scenario.whatif.rl.num_gpus == 128
    xs, _ = tab.rl_chart.data("step")
    assert max(xs) <= 127
    # Ctrl+Z undoes the edit, then the planning itself
    QTest.keyClick(window, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)
    window.flush()
    assert window.state.scenario.whatif.rl.num_gpus == 64
    QTest.keyClick(window, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)
    window.flush()
    assert window.state.scenario.whatif.rl is None
    assert not tab.boxes["rl"].isChecked()


def test_every_part_can_be_planned_from_the_window(qtbot: Any, window: MainWindow) -> None:
    tab = _whatif_tab(window)
    for part in ("mixed_cluster", "rl", "multimodal", "compression"):
        _click_check(qtbot, tab.boxes[part])
        window.flush()
    w = window.state.scenario.whatif
    assert w.mixed_cluster is not None
    assert w.rl is not None
    assert w.multimodal is not None
    assert w.compression is not None
    for key in ("mixed.step_even", "rl.step", "mm.best", "comp.step_after"):
        assert tab.figures.value_text(key), key
    # a bad encoder size is refused with a message naming the field
    tab.encoder.setFocus()
    tab.encoder.selectAll()
    QTest.keyClicks(tab.encoder, "lots")
    QTest.keyClick(tab.encoder, Qt.Key.Key_Return)
    assert "Encoder params" in window.error_label.text()
    assert tab.encoder.property("inputError")
    assert window.state.scenario.whatif.multimodal.encoder_params == 0.6e9  # unchanged


def test_fields_go_through_the_shared_binder(qtbot: Any, window: MainWindow) -> None:
    """The ratio (a float spin box), the trained switch and an unplanned part's defaults."""
    tab = _whatif_tab(window)
    # a part not planned shows its defaults, disabled (RLInputs: 64 GPUs)
    spin = tab.fields[("rl", "num_gpus")]
    assert spin.value() == 64
    assert not spin.isEnabled()
    _click_check(qtbot, tab.boxes["compression"])
    _click_check(qtbot, tab.boxes["multimodal"])
    window.flush()
    tab.ratio.setFocus()
    tab.ratio.selectAll()
    QTest.keyClicks(tab.ratio, "2.5")
    QTest.keyClick(tab.ratio, Qt.Key.Key_Return)
    window.flush()
    assert window.state.scenario.whatif.compression.ratio == 2.5
    assert tab.trained.isChecked()
    qtbot.mouseClick(tab.trained, Qt.MouseButton.LeftButton)
    window.flush()
    assert window.state.scenario.whatif.multimodal.encoder_trained is False
    # Ctrl+Z takes back the switch alone
    QTest.keyClick(window, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)
    window.flush()
    assert window.state.scenario.whatif.multimodal.encoder_trained is True
    assert window.state.scenario.whatif.compression.ratio == 2.5
