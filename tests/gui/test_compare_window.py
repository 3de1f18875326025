"""The Compare-and-choose window: opened from the View menu, driven by its buttons."""

from __future__ import annotations

from typing import Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QAction
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QPushButton

from llm_planner.gui.compare import SERVING_COLUMNS, ChooseWindow


def open_window(window: Any, qtbot: Any) -> ChooseWindow:
    action = window.findChild(QAction, "compare")
    assert action is not None
    action.trigger()
    choose = window._choose_window
    qtbot.waitExposed(choose)
    return choose


def click(widget: Any, name: str) -> None:
    button = widget.findChild(QPushButton, name)
    assert button is not None, name
    QTest.mouseClick(button, Qt.MouseButton.LeftButton)


def test_duplicate_as_variant_then_edit(window: Any, qtbot: Any) -> None:
    choose = open_window(window, qtbot)
    view = choose.compare
    assert view.comparison is None  # one scenario: nothing to compare yet
    original = window.state.scenario
    click(view, "duplicate_variant")
    assert window.state.scenario.name == f"{original.name} (variant)"
    assert view.model.columnCount() == 2
    assert view.inputs_model.rowCount() == 0  # same inputs
    # a what-if on the variant in the main window: twice the GPUs
    window.state.set_field("num_gpus", 2 * original.num_gpus)
    model = view.model
    keys = [r.key for r in view.comparison.rows]
    gpus = keys.index("num_gpus")
    assert model.data(model.index(gpus, 1)) == f"{2 * original.num_gpus:,}  (+100.0%)"
    assert model.data(model.index(gpus, 1), Qt.ItemDataRole.BackgroundRole) is not None
    params = keys.index("params_total")
    assert model.data(model.index(params, 1), Qt.ItemDataRole.BackgroundRole) is None
    assert [d.path for d in view.comparison.inputs] == ["num_gpus"]
    assert view.inputs_model.rowCount() == 1
    assert len(view.bars.rows) == 2  # memory bars on one axis
    click(view, "pin_current")
    assert view.model.columnCount() == 3
    click(view, "remove_last")
    assert view.model.columnCount() == 2
    window.state.undo_stack.undo()  # the GPU change
    window.state.undo_stack.undo()  # the duplicate
    assert window.state.scenario.name == original.name


def test_hardware_ranking_and_chart(window: Any, qtbot: Any) -> None:
    choose = open_window(window, qtbot)
    choose.tabs.setCurrentIndex(1)
    view = choose.hardware
    assert "Out of date" in view.prices_label.text()  # the shipped list has late-2024 prices
    view.max_gpus.setCurrentIndex(0)  # up to 1,024 GPUs
    click(view, "rank_hardware")
    qtbot.waitUntil(lambda: view.model.rowCount() > 0, timeout=60_000)
    options = view.model.options
    assert all(o.num_gpus <= 1024 for o in options)
    ok = [o for o in options if o.status == "ok"]
    assert ok
    assert ok[0].rank == 1
    assert [o.cost_usd for o in ok] == sorted(o.cost_usd for o in ok)
    xs, _ys = view.chart.data("ok")
    assert len(xs) == len(ok)
    front_x, _ = view.chart.data("pareto")
    assert 0 < len(front_x) <= len(xs)
    assert front_x == sorted(front_x)
    # sorting the table by cost (through the proxy) keeps the cheapest on top
    view.table.sortByColumn(7, Qt.SortOrder.AscendingOrder)
    proxy = view.table.model()
    top = proxy.mapToSource(proxy.index(0, 0)).row()
    assert options[top].cost_usd == min(o.cost_usd for o in options if o.cost_usd is not None)


def test_sensitivity_tornado(window: Any, qtbot: Any) -> None:
    choose = open_window(window, qtbot)
    choose.tabs.setCurrentIndex(2)  # starts the computation
    view = choose.sensitivity
    qtbot.waitUntil(lambda: view.result is not None, timeout=60_000)
    changes = view.tornado.changes
    assert changes
    widths = [abs((hi or 0) - (lo or 0)) for _, lo, hi in changes]
    assert widths == sorted(widths, reverse=True)
    price = next(c for c in changes if c[0] == "Price per GPU-hour")
    assert price[1] == pytest.approx(-20.0)
    assert price[2] == pytest.approx(20.0)
    view.quantity.setCurrentIndex(1)  # time: the price moves nothing
    price = next(c for c in view.tornado.changes if c[0] == "Price per GPU-hour")
    assert price[1] == pytest.approx(0.0, abs=1e-9)
    assert view.model.rowCount() == len(view.result.bars)


def _type(qtbot: Any, edit: Any, text: str) -> None:
    edit.setFocus()
    edit.selectAll()
    qtbot.keyClick(edit, Qt.Key.Key_Backspace)
    qtbot.keyClicks(edit, text)


def test_cheapest_serving_for_users_at_a_latency_target(window: Any, qtbot: Any) -> None:
    """1,000 users at TPOT ≤ 50 ms, typed and planned with the button: each priced row
    needs ⌈1000 ÷ users per replica⌉ replicas of its GPUs, shown in the table, cheapest
    first; 0 users is refused with a line naming the users and nothing is planned."""
    import math

    choose = open_window(window, qtbot)
    choose.tabs.setCurrentIndex(3)
    view = choose.serving
    assert "vLLM, 1,024 prompt + 256 output tokens" in view.workload.text()
    _type(qtbot, view.users, "0")
    click(view, "plan_serving")
    assert "users" in view.busy.text()
    assert view.plan is None
    _type(qtbot, view.users, "1k")  # decimal: 1,000 users
    _type(qtbot, view.tpot, "50 ms")
    click(view, "plan_serving")
    qtbot.waitUntil(lambda: view.plan is not None, timeout=60_000)
    plan = view.plan
    assert (plan.users, plan.tpot_target_seconds, plan.ttft_target_seconds) == (1000, 0.05, None)
    model = view.model
    assert model.rowCount() == len(plan.options)
    ok = [o for o in plan.options if o.status == "ok"]
    assert ok
    assert plan.best == ok[0] == plan.options[0]
    costs = [o.usd_per_hour for o in ok]
    assert costs == sorted(costs)
    replicas = [title for _, title in SERVING_COLUMNS].index("Replicas")
    for row, option in enumerate(plan.options[: len(ok)]):
        need = math.ceil(1000 / option.concurrency_per_replica)
        assert option.replicas == need
        assert model.data(model.index(row, replicas)) == f"{need:,}"
    assert f"{ok[0].replicas:,} × {ok[0].gpus_per_replica} {ok[0].gpu_name}" in view.busy.text()
