""" "Drop tensors above X" can be chosen in the window: X starts at the largest tensor a layer
saves (nothing dropped), then typing a smaller X drops the tensors above it. Before, the
choice was refused (no X yet) while the X field stayed disabled (the policy not chosen)."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QCheckBox, QComboBox, QLineEdit

from llm_planner.core.composition.estimate import estimate
from llm_planner.core.inputs.scenario import with_changes
from llm_planner.gui.main_window import MainWindow

from .helpers import choose, type_into


def test_choose_threshold_then_lower_x(qtbot: Any, window: MainWindow) -> None:
    combo = window.findChild(QComboBox, "training.recompute")
    edit = window.findChild(QLineEdit, "training.recompute_threshold_bytes")
    assert combo is not None
    assert edit is not None
    index = next(i for i in range(window.tabs.count()) if window.tabs.widget(i).isAncestorOf(edit))
    window.tabs.setCurrentIndex(index)
    window.flush()
    assert not edit.isEnabled()
    choose(window, combo, "threshold")
    training = window.state.scenario.training
    assert training.recompute == "threshold"
    assert combo not in window.binder.errors
    assert edit.isEnabled()
    # X = the largest saved tensor: nothing is above it, so the layers keep what "none" keeps
    none = with_changes(
        window.state.scenario,
        {"training.recompute": "none", "training.recompute_threshold_bytes": None},
    )
    kept_all = estimate(none).training.activations_bytes
    assert window.state.report.training.activations_bytes == kept_all
    # 1 MB: Llama-3.1-8B's 4096-token tensors (≥ 4096·4096·2 bytes = 33.6 MB) are dropped
    type_into(qtbot, window, edit, "1 MB")
    assert window.state.scenario.training.recompute_threshold_bytes == 1e6
    assert window.state.report.training.activations_bytes < kept_all
    # choosing the policy and its starting X was one step: two undos go back to selective
    QTest.keyClick(window, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)
    QTest.keyClick(window, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)
    window.flush()
    assert window.state.scenario.training.recompute == "selective"
    assert window.state.scenario.training.recompute_threshold_bytes is None


def test_each_recompute_option_is_enabled_with_its_policy(qtbot: Any, window: MainWindow) -> None:
    """Full recomputation's method, N and checkpoint placement apply under "full" only,
    Megatron's module list under "selective" only, and the MoE inputs to a model with
    experts: elsewhere they are greyed out (typing in them would change nothing)."""
    combo = window.findChild(QComboBox, "training.recompute")
    full_only = [
        window.findChild(QComboBox, "training.recompute_method"),
        window.findChild(QLineEdit, "training.recompute_layers"),
        window.findChild(QComboBox, "training.recompute_checkpoint"),
    ]
    modules = window.findChild(QLineEdit, "training.recompute_modules")
    moe = [
        window.findChild(QLineEdit, "training.moe_capacity_factor"),
        window.findChild(QLineEdit, "training.moe_load_imbalance"),
        window.findChild(QComboBox, "training.moe_dispatcher"),
    ]
    assert combo is not None
    assert modules is not None
    assert all(w is not None for w in full_only + moe)
    window.tabs.setCurrentIndex(2)
    window.flush()
    assert window.state.scenario.training.recompute == "selective"
    assert [w.isEnabled() for w in full_only] == [False, False, False]
    assert modules.isEnabled()
    assert [w.isEnabled() for w in moe] == [False, False, False]  # Llama-3.1-8B is dense
    choose(window, combo, "full")
    assert [w.isEnabled() for w in full_only] == [True, True, True]
    assert not modules.isEnabled()
    type_into(qtbot, window, full_only[1], "4")
    assert window.state.scenario.training.recompute_layers == 4
    choose(window, window.bar.model, "mixtral-8x7b")
    assert [w.isEnabled() for w in moe] == [True, True, True]
    # keeping weights only in FP8 needs an FP8 recipe (its quantized copy)
    low = window.findChild(QCheckBox, "training.low_precision_params")
    assert low is not None
    assert not low.isEnabled()  # mixed bf16
    choose(window, window.findChild(QComboBox, "training.precision"), "fp8_current")
    assert low.isEnabled()
