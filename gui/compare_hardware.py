"""Compare and choose ▸ Cheapest hardware: every GPU kind × GPU counts ranked
(``core.composition.hardware``), as a table and a cost-against-time chart with the Pareto front."""

from __future__ import annotations

import datetime as dt
import math
from typing import Any

from PySide6.QtCore import (
    Qt,
)
from PySide6.QtGui import QBrush, QColor
from PySide6.QtWidgets import (
    QComboBox,
    QHBoxLayout,
    QLabel,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from llm_planner.core.composition.hardware import (
    DEFAULT_HORIZON_SECONDS,
    DEFAULT_MAX_GPUS,
    OBJECTIVES,
    TIERS,
    HardwareOption,
    HardwareRanking,
    PriceListError,
    load_price_list,
    rank_hardware,
)
from llm_planner.core.composition.scenario import Scenario
from llm_planner.core.primitives import units
from llm_planner.core.primitives.figures import format_value
from llm_planner.gui import colors
from llm_planner.gui.compare_common import (
    DISPLAY,
    SORT_ROLE,
    Runner,
    ScenarioHost,
    _button,
    _table,
)
from llm_planner.gui.table_model import RowsModel
from llm_planner.gui.widgets.charts import SeriesChart

HARDWARE_COLUMNS: tuple[tuple[str, str], ...] = (
    ("rank", "#"),
    ("gpu_name", "GPU"),
    ("num_gpus", "GPUs"),
    ("status", "Status"),
    ("time_seconds", "Time"),
    ("gpu_hours", "GPU-hours"),
    ("price_usd_per_gpu_hour", "$/GPU-h"),
    ("cost_usd", "Cost"),
    ("pareto", "Pareto"),
    ("layout_label", "Best layout"),
)
_UNITS = {"time_seconds": "seconds", "gpu_hours": "count", "cost_usd": "usd"}


class HardwareModel(RowsModel[HardwareOption]):
    """The ranked options: one row each (sorted through a proxy by the raw value)."""

    headers = tuple(title for _key, title in HARDWARE_COLUMNS)

    @property
    def options(self) -> list[HardwareOption]:
        return self.rows

    def set_options(self, options: list[HardwareOption]) -> None:
        self.set_rows(options)

    def text(self, option: HardwareOption, key: str) -> str:
        value = getattr(option, key)
        if key in _UNITS:
            return format_value(value, _UNITS[key])
        if key == "price_usd_per_gpu_hour":
            old = " (old)" if option.price_stale else ""
            return "—" if value is None else f"${value:.2f}{old}"
        if key == "pareto":
            return "●" if value else ""
        if key == "num_gpus":
            return f"{value:,}"
        return str(value)

    def cell(self, option: HardwareOption, column: int, role: int) -> Any:
        key = HARDWARE_COLUMNS[column][0]
        if role == DISPLAY:
            return self.text(option, key)
        if role == SORT_ROLE:
            value = getattr(option, key)
            if value is None:
                return math.inf
            return value if isinstance(value, int | float | str) else str(value)
        if role == Qt.ItemDataRole.ForegroundRole:
            if option.status in ("does not fit", "no datacenter interconnect"):
                return QBrush(QColor(colors.BAD))
            if option.status in ("misses deadline", "beyond horizon", "no price"):
                return QBrush(QColor(colors.WARN).darker(130))
        if role == Qt.ItemDataRole.ToolTipRole:
            flags = "".join(f"<br>⚠ {flag}" for flag in option.flags)
            return (
                f"{option.num_gpus:,} × {option.gpu_name}: {option.status}{flags}<br>"
                f"layout {option.layout_label}<br>"
                f"tokens/s {format_value(option.tokens_per_s, 'tokens/s')}<br>"
                f"price: {option.price_source}"
            )
        return None


class HardwareView(QWidget):
    """Rank every GPU kind × GPU counts; the table and the cost-vs-time chart."""

    def __init__(self, host: ScenarioHost, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.host = host
        self.ranking: HardwareRanking | None = None
        self.runner = Runner(self)
        self.runner.finished.connect(self._show)
        self.runner.failed.connect(self._failed)
        layout = QVBoxLayout(self)
        controls = QHBoxLayout()
        self.objective = QComboBox()
        self.objective.setObjectName("objective")
        for o in OBJECTIVES:
            self.objective.addItem(o.replace("_", "-"), o)
        self.tier = QComboBox()
        self.tier.setObjectName("tier")
        for t in TIERS:
            self.tier.addItem(t.replace("_", "-"), t)
        self.max_gpus = QComboBox()
        self.max_gpus.setObjectName("max_gpus")
        for n in (1024, 4096, DEFAULT_MAX_GPUS, 65536):
            self.max_gpus.addItem(f"{n:,}", n)
        self.max_gpus.setCurrentIndex(2)
        self.rank_button = _button(
            "Rank hardware", "rank_hardware", self.start, "Try every GPU kind at every count"
        )
        for label, widget in (
            ("Rank by", self.objective),
            ("Prices", self.tier),
            ("Up to GPUs", self.max_gpus),
        ):
            controls.addWidget(QLabel(label))
            controls.addWidget(widget)
        controls.addWidget(self.rank_button)
        self.busy = QLabel("")
        controls.addWidget(self.busy)
        controls.addStretch(1)
        layout.addLayout(controls)
        self.prices_label = QLabel()
        self.prices_label.setObjectName("prices_warning")
        self.prices_label.setWordWrap(True)
        self.prices_label.setTextFormat(Qt.TextFormat.RichText)
        layout.addWidget(self.prices_label)
        splitter = QSplitter(Qt.Orientation.Horizontal)
        self.model = HardwareModel(self)
        self.table = _table(self.model, sortable=True)
        self.chart = SeriesChart(
            "Cost against time (each point an option)",
            "time to train (days)",
            "cost ($)",
            log_x=True,
            log_y=True,
        )
        self.chart.add_markers("ok", "meets deadline", colors.SERIES[0], size=8)
        self.chart.add_markers(
            "late", "misses deadline or horizon", colors.WARN, symbol="t", size=8
        )
        self.chart.add_line("pareto", "Pareto front", colors.SERIES[2], symbol="o")
        self.chart.add_vline("deadline", colors.BAD, "deadline")
        self.chart.set_vline("deadline", None)
        splitter.addWidget(self.table)
        splitter.addWidget(self.chart)
        splitter.setSizes([720, 560])
        layout.addWidget(splitter, 1)
        self.ranked_for: Scenario | None = None
        self.show_price_age()
        host.state.changed.connect(lambda *_: self._scenario_changed())

    def _scenario_changed(self) -> None:
        self.show_price_age()
        if self.ranked_for is not None and self.ranked_for != self.host.state.scenario:
            self.busy.setText(
                "This ranking is for the scenario as it was: press Rank for the open one."
            )

    def show_price_age(self) -> None:
        try:
            prices = load_price_list()
        except PriceListError as error:
            self.prices_label.setText(f'<span style="color:{colors.BAD}">{error}</span>')
            return
        warning = prices.staleness_message(dt.date.today())
        deadline = self.host.state.scenario.compute.deadline_seconds
        text = (
            f"Deadline: {units.format_duration(deadline)}. "
            if deadline
            else f"No deadline: options are judged against a default horizon of "
            f"{DEFAULT_HORIZON_SECONDS / 86_400:.0f} days (set a deadline on the Compute "
            "budget tab to change it). "
        )
        text += f"Prices: resources/prices.json, updated {prices.updated.isoformat()}."
        if warning:
            text += f' <span style="color:{colors.BAD}"><b>Out of date:</b> {warning}.</span>'
        self.prices_label.setText(text)

    def start(self) -> None:
        scenario: Scenario = self.host.state.scenario
        objective = self.objective.currentData()
        tier = self.tier.currentData()
        max_gpus = int(self.max_gpus.currentData())
        self.busy.setText("ranking…")
        self.rank_button.setEnabled(False)
        self.ranked_for = scenario
        self.runner.start(
            lambda: rank_hardware(scenario, objective=objective, tier=tier, max_gpus=max_gpus)
        )

    def _failed(self, message: str) -> None:
        self.busy.setText(f"failed: {message}")
        self.rank_button.setEnabled(True)

    def _show(self, ranking: HardwareRanking) -> None:
        self.ranking = ranking
        self.rank_button.setEnabled(True)
        best = ranking.cheapest()
        self.busy.setText(
            f"{len(ranking.options)} options in {ranking.seconds:.1f} s; best: "
            + (
                f"{best.num_gpus:,} × {best.gpu_name}, {format_value(best.cost_usd, 'usd')}, "
                f"{format_value(best.time_seconds, 'seconds')}"
                if best
                else "none"
            )
        )
        self.busy.setToolTip(ranking.gpu_counts_rule)
        self.model.set_options(ranking.options)
        self.table.resizeColumnsToContents()
        day = 86_400.0
        # (option, days, cost) of each priced option: its time and cost known
        priced = [
            (o, o.time_seconds / day, o.cost_usd)
            for o in ranking.options
            if o.cost_usd is not None and o.time_seconds
        ]
        ok = [(d, c) for o, d, c in priced if o.status == "ok"]
        late = [(d, c) for o, d, c in priced if o.status in ("misses deadline", "beyond horizon")]
        front = sorted(((d, c) for o, d, c in priced if o.pareto), key=lambda p: p[0])
        self.chart.set_markers("ok", [d for d, _ in ok], [c for _, c in ok])
        self.chart.set_markers("late", [d for d, _ in late], [c for _, c in late])
        self.chart.set_line("pareto", [d for d, _ in front], [c for _, c in front])
        deadline = ranking.deadline_seconds
        self.chart.set_vline(
            "deadline",
            deadline / day if deadline else None,
            f"deadline {units.format_duration(deadline)}" if deadline else None,
        )
