"""Compare and choose ▸ Sensitivity: the tornado chart of time or cost
(``core.composition.sensitivity``) and its figures."""

from __future__ import annotations

from typing import Any

import numpy as np
from PySide6.QtCore import (
    QObject,
    Qt,
)
from PySide6.QtWidgets import (
    QComboBox,
    QHBoxLayout,
    QLabel,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

import pyqtgraph as pg  # isort: skip  (after PySide6)

from llm_planner.core.composition.scenario import Scenario
from llm_planner.core.composition.sensitivity import Sensitivity, SensitivityBar, sensitivity
from llm_planner.core.primitives.figures import format_value
from llm_planner.gui import colors
from llm_planner.gui.compare_common import (
    DISPLAY,
    Runner,
    ScenarioHost,
    _button,
    _table,
)
from llm_planner.gui.table_model import RowsModel
from llm_planner.gui.widgets.charts import ThemedPlot


class SensitivityModel(RowsModel[SensitivityBar]):
    """The tornado's figures: input, its range, time and cost at each end."""

    headers = ("Input", "Low → high", "Time (low)", "Time (high)", "Cost (low)", "Cost (high)")

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.result: Sensitivity | None = None

    def set_result(self, result: Sensitivity | None) -> None:
        self.result = result
        self.set_rows(result.bars if result is not None else [])

    def cell(self, bar: SensitivityBar, column: int, role: int) -> Any:
        if role == Qt.ItemDataRole.ToolTipRole:
            return bar.note or f"{bar.key}: one-at-a-time, the scenario re-estimated at each end"
        if role != DISPLAY:
            return None
        return (
            bar.label,
            f"{format_value(bar.low_value, bar.unit)} → {format_value(bar.high_value, bar.unit)}",
            format_value(bar.time_low_seconds, "seconds"),
            format_value(bar.time_high_seconds, "seconds"),
            format_value(bar.cost_low_usd, "usd"),
            format_value(bar.cost_high_usd, "usd"),
        )[column]


class TornadoChart(QWidget):
    """Horizontal bars: the change of time or cost (%) when each input goes down or up."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        self.plot = ThemedPlot()
        item = self.plot.getPlotItem()
        item.setLabel("bottom", "change from as-is (%)")
        self.down = pg.BarGraphItem(
            x0=[], width=[], y=[], height=0.6, brush=colors.SERIES[0], name="input down"
        )
        self.up = pg.BarGraphItem(
            x0=[], width=[], y=[], height=0.6, brush=colors.SERIES[1], name="input up"
        )
        item.addItem(self.down)
        item.addItem(self.up)
        zero = pg.InfiniteLine(angle=90, pos=0, movable=False, pen=pg.mkPen("#888888"))
        item.addItem(zero)
        layout.addWidget(self.plot)
        from llm_planner.gui.widgets.charts import legend_row

        layout.addWidget(
            legend_row([("input down", colors.SERIES[0]), ("input up", colors.SERIES[1])])
        )
        self.changes: list[tuple[str, float | None, float | None]] = []

    def set_bars(self, result: Sensitivity, quantity: str) -> None:
        """``quantity`` 'cost' or 'time'; the widest bar on top."""
        base = result.base_cost_usd if quantity == "cost" else result.base_time_seconds
        rows = []
        for bar in result.bars:
            low = bar.cost_low_usd if quantity == "cost" else bar.time_low_seconds
            high = bar.cost_high_usd if quantity == "cost" else bar.time_high_seconds
            rel = [None if v is None or not base else 100 * (v / base - 1) for v in (low, high)]
            rows.append((bar.label, rel[0], rel[1]))
        rows.sort(key=lambda r: -abs((r[2] or 0.0) - (r[1] or 0.0)))
        self.changes = rows
        n = len(rows)
        ys = np.arange(n, dtype=float)[::-1]
        for item, k in ((self.down, 1), (self.up, 2)):
            values = np.array([r[k] or 0.0 for r in rows], dtype=float)
            item.setOpts(x0=np.minimum(values, 0.0), width=np.abs(values), y=ys, height=0.6)
        axis = self.plot.getPlotItem().getAxis("left")
        axis.setTicks([[(float(y), r[0]) for y, r in zip(ys, rows, strict=True)]])
        widest = max((self.fontMetrics().horizontalAdvance(r[0]) for r in rows), default=0)
        axis.setWidth(widest + 16)
        span = max([abs(v) for r in rows for v in r[1:] if v is not None] or [1.0])
        self.plot.getPlotItem().setXRange(-span * 1.1, span * 1.1, padding=0)
        self.plot.getPlotItem().setYRange(-0.6, n - 0.4, padding=0)
        self.plot.setTitle(f"What moves the {quantity} most")


class SensitivityView(QWidget):
    """The tornado chart and its figures, for the current scenario."""

    def __init__(self, host: ScenarioHost, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.host = host
        self.result: Sensitivity | None = None
        self.result_for: Scenario | None = None
        """The scenario ``result`` was computed for (a result of another is not shown)."""
        self.running_for: Scenario | None = None
        self.runner = Runner(self)
        self.runner.finished.connect(self._show)
        self.runner.failed.connect(self._failed)
        layout = QVBoxLayout(self)
        controls = QHBoxLayout()
        self.quantity = QComboBox()
        self.quantity.setObjectName("quantity")
        self.quantity.addItem("cost", "cost")
        self.quantity.addItem("time", "time")
        self.quantity.currentIndexChanged.connect(lambda _i: self._redraw())
        self.run_button = _button(
            "Recompute", "sensitivity_run", self.start, "Move each input down and up; re-estimate"
        )
        host.state.changed.connect(lambda *_: self.start() if self.isVisible() else None)
        controls.addWidget(QLabel("Show"))
        controls.addWidget(self.quantity)
        controls.addWidget(self.run_button)
        self.status = QLabel("")
        controls.addWidget(self.status, 1)
        layout.addLayout(controls)
        splitter = QSplitter(Qt.Orientation.Vertical)
        self.tornado = TornadoChart()
        self.model = SensitivityModel(self)
        self.table = _table(self.model)
        splitter.addWidget(self.tornado)
        splitter.addWidget(self.table)
        splitter.setSizes([380, 200])
        layout.addWidget(splitter, 1)

    def _failed(self, message: str) -> None:
        self.status.setText(f"failed: {message}")

    def start(self) -> None:
        scenario: Scenario = self.host.state.scenario
        self.status.setText("computing…")
        self.running_for = scenario
        self.runner.start(lambda: sensitivity(scenario))

    def stale(self) -> bool:
        """The result shown (or being computed) is not the open scenario's."""
        current = self.host.state.scenario
        return current not in (self.result_for, self.running_for)

    def showEvent(self, event: Any) -> None:  # noqa: N802 (Qt API)
        super().showEvent(event)
        if self.stale():  # another scenario was opened or edited while hidden
            self.start()

    def _show(self, result: Sensitivity) -> None:
        self.result, self.result_for = result, self.running_for
        self.status.setText(
            f"As is: {format_value(result.base_time_seconds, 'seconds')}, "
            f"{format_value(result.base_cost_usd, 'usd')} — {result.throughput_source}"
        )
        self.model.set_result(result)
        self.table.resizeColumnsToContents()
        self._redraw()

    def _redraw(self) -> None:
        if self.result is not None:
            self.tornado.set_bars(self.result, self.quantity.currentData())
