"""Compare and choose: scenarios side by side, the cheapest hardware, the tornado chart,
the cheapest serving deployment.

One window of its own (:class:`ChooseWindow`), opened from the main window's View menu; it
follows the main window's scenario live. Four tabs:

- **Compare**: 2–4 scenarios (the current one, variants of it, library entries, files),
  the headline figures aligned with the differences highlighted, the input fields that
  differ, and the memory bars on one shared axis;
- **Hardware**: every GPU kind × GPU counts with its best layout, ranked, as a table
  (a Qt model) and a cost-against-time chart with the Pareto front;
- **Sensitivity**: the tornado chart of time or cost and its figures;
- **Serving**: the cheapest GPU and replica size serving N users at a latency target
  (``core.composition.serving_plan``, as ``llm-planner serve-plan``).

No formulas here: the numbers come from ``core.composition.compare``, ``.hardware``,
``.sensitivity`` and ``.serving_plan``, the same the ``compare``, ``hardware``,
``sensitivity`` and ``serve-plan`` commands print.
The ranking and the sensitivity run off the UI thread (``QThreadPool``); a newer request
supersedes an older one.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

import numpy as np
from PySide6.QtCore import (
    QAbstractTableModel,
    QModelIndex,
    QObject,
    QPersistentModelIndex,
    QRunnable,
    QSortFilterProxyModel,
    Qt,
    QThreadPool,
    Signal,
)
from PySide6.QtGui import QBrush, QColor, QFont
from PySide6.QtWidgets import (
    QComboBox,
    QFileDialog,
    QHBoxLayout,
    QHeaderView,
    QInputDialog,
    QLabel,
    QLineEdit,
    QMainWindow,
    QMessageBox,
    QPushButton,
    QSplitter,
    QTableView,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

import pyqtgraph as pg  # isort: skip  (after PySide6)

from llm_planner.core.composition.compare import (
    MAX_SCENARIOS,
    CompareRow,
    Comparison,
    InputDifference,
    compare,
    duplicate_as_variant,
)
from llm_planner.core.composition.hardware import (
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
from llm_planner.core.composition.sensitivity import Sensitivity, SensitivityBar, sensitivity
from llm_planner.core.composition.serving_plan import (
    ServingOption,
    ServingPlan,
    parse_latency,
    parse_users,
    plan_serving,
)
from llm_planner.core.primitives import units
from llm_planner.core.primitives.figures import format_value
from llm_planner.core.quantities.engines import get_engine
from llm_planner.gui import colors
from llm_planner.gui.table_model import RowsModel
from llm_planner.gui.widgets.charts import BarRow, MemoryBars, SeriesChart, ThemedPlot

Index = QModelIndex | QPersistentModelIndex
DISPLAY = Qt.ItemDataRole.DisplayRole
SORT_ROLE = Qt.ItemDataRole.UserRole + 1
HIGHLIGHT = QColor(colors.WARN)
HIGHLIGHT.setAlpha(70)


class ScenarioHost(Protocol):
    """What the window needs of the main window: its scenario state and its library."""

    state: Any
    library: Any


# --------------------------------------------------------------------- background work


class _Signals(QObject):
    done = Signal(int, object)
    failed = Signal(int, str)


class _Job(QRunnable):
    def __init__(self, ticket: int, work: Callable[[], Any], signals: _Signals) -> None:
        super().__init__()
        self.ticket, self.work, self.signals = ticket, work, signals

    def run(self) -> None:
        try:
            result = self.work()
        except Exception as error:  # reported in the window, never a crash
            self.signals.failed.emit(self.ticket, str(error).splitlines()[0])
        else:
            self.signals.done.emit(self.ticket, result)


class Runner(QObject):
    """Runs one job at a time off the UI thread; only the newest job's result is shown."""

    finished = Signal(object)
    failed = Signal(str)

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.ticket = 0
        self.busy = False
        self.signals = _Signals(self)
        self.signals.done.connect(self._done)
        self.signals.failed.connect(self._failed)

    def start(self, work: Callable[[], Any]) -> None:
        self.ticket += 1
        self.busy = True
        QThreadPool.globalInstance().start(_Job(self.ticket, work, self.signals))

    def _done(self, ticket: int, result: object) -> None:
        if ticket == self.ticket:
            self.busy = False
            self.finished.emit(result)

    def _failed(self, ticket: int, message: str) -> None:
        if ticket == self.ticket:
            self.busy = False
            self.failed.emit(message)


def _table(model: QAbstractTableModel, sortable: bool = False) -> QTableView:
    view = QTableView()
    if sortable:
        proxy = QSortFilterProxyModel(view)
        proxy.setSourceModel(model)
        proxy.setSortRole(SORT_ROLE)
        view.setModel(proxy)
        view.setSortingEnabled(True)
        view.sortByColumn(0, Qt.SortOrder.AscendingOrder)
    else:
        view.setModel(model)
    view.verticalHeader().hide()
    view.setAlternatingRowColors(True)
    view.setWordWrap(False)
    view.horizontalHeader().setStretchLastSection(True)
    view.setSelectionBehavior(QTableView.SelectionBehavior.SelectRows)
    return view


def _button(text: str, name: str, slot: Callable[[], None], tip: str) -> QPushButton:
    button = QPushButton(text)
    button.setObjectName(name)
    button.setToolTip(tip)
    button.clicked.connect(lambda _=False: slot())
    return button


# --------------------------------------------------------------------- compare


class CompareModel(RowsModel[CompareRow]):
    """Headline figures: one row per figure, one column per scenario; differences marked."""

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.comparison: Comparison | None = None

    def set_comparison(self, comparison: Comparison | None) -> None:
        self.comparison = comparison
        self.set_rows(comparison.rows if comparison is not None else [])

    def columns(self) -> list[str]:
        return list(self.comparison.names) if self.comparison is not None else []

    def row_header(self, section: int) -> Any:
        return self.rows[section].label if 0 <= section < len(self.rows) else None

    def cell_text(self, r: CompareRow, column: int) -> str:
        """A figure's value for one scenario, with its change from the first if it differs."""
        text = r.texts()[column]
        if r.values[column] is None and self._not_priced(r, column):
            assert self.comparison is not None
            fits = self.comparison.fits[column] if self.comparison.fits else True
            return f"— ({'not priced' if fits else 'does not fit'})"
        ratio = r.ratios[column]
        if column and r.differs[column] and ratio is not None:
            text += f"  ({100 * ratio:+.1f}%)"
        return text

    def _not_priced(self, r: CompareRow, column: int) -> str | None:
        """Why a compute figure of this scenario is null (None for other rows)."""
        assert self.comparison is not None
        reasons = self.comparison.not_priced
        if not r.source.startswith("compute.") or column >= len(reasons):
            return None
        return reasons[column]

    def cell(self, r: CompareRow, c: int, role: int) -> Any:
        if self.comparison is None:
            return None
        if role == DISPLAY:
            return self.cell_text(r, c)
        if role == Qt.ItemDataRole.BackgroundRole and c and r.differs[c]:
            return QBrush(HIGHLIGHT)
        if role == Qt.ItemDataRole.FontRole and c and r.differs[c]:
            font = QFont()
            font.setBold(True)
            return font
        if role == Qt.ItemDataRole.TextAlignmentRole:
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        if role == Qt.ItemDataRole.ToolTipRole:
            diff = r.differences[c]
            lines = [f"<b>{r.label}</b>: {r.texts()[c]}"]
            if c and diff is not None:
                lines.append(
                    f"difference from {self.comparison.names[0]}: {format_value(diff, r.unit)}"
                )
            why = self._not_priced(r, c) if r.values[c] is None else None
            if why:
                lines.append(f"Not priced: {why}")
            lines.append(f"<i>From:</i> report {r.source}")
            return "<br>".join(lines)
        return None


class InputDiffModel(RowsModel[InputDifference]):
    """The input fields that differ: one row per dotted path, one column per scenario."""

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.comparison: Comparison | None = None

    def set_comparison(self, comparison: Comparison | None) -> None:
        self.comparison = comparison
        self.set_rows(comparison.inputs if comparison is not None else [])

    def columns(self) -> list[str]:
        if self.comparison is None:
            return []
        return ["Input that differs", *self.comparison.names]

    def cell(self, diff: InputDifference, column: int, role: int) -> Any:
        if role in (DISPLAY, Qt.ItemDataRole.ToolTipRole):
            if column == 0:
                return diff.path
            value = diff.values[column - 1]
            text = "—" if value is None else str(value)
            return text if role != DISPLAY or len(text) <= 48 else text[:45] + "…"
        differs = column > 1 and diff.values[column - 1] != diff.values[0]
        if role == Qt.ItemDataRole.BackgroundRole and differs:
            return QBrush(HIGHLIGHT)
        return None


class CompareView(QWidget):
    """2–4 scenarios side by side. Column 'current' follows the main window live."""

    LIVE = None

    def __init__(self, host: ScenarioHost, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.host = host
        # each entry: a pinned scenario, or None for the main window's current scenario
        self.entries: list[Scenario | None] = [self.LIVE]
        self.comparison: Comparison | None = None
        layout = QVBoxLayout(self)
        buttons = QHBoxLayout()
        self.variant_button = _button(
            "Duplicate as variant",
            "duplicate_variant",
            self.duplicate_as_variant,
            "Pin the current scenario as it is, and go on editing a copy of it (named "
            "'… (variant)') in the main window: a what-if in one click",
        )
        self.add_current_button = _button(
            "Pin current", "pin_current", self.pin_current, "Add the current scenario as it is now"
        )
        self.add_library_button = _button(
            "Add from library…", "add_library", self.add_from_library, "Add a saved scenario"
        )
        self.add_file_button = _button(
            "Add file…", "add_file", self.add_file, "Add a scenario file (.llmplan.json)"
        )
        self.remove_button = _button(
            "Remove last", "remove_last", self.remove_last, "Remove the rightmost scenario"
        )
        for b in (
            self.variant_button,
            self.add_current_button,
            self.add_library_button,
            self.add_file_button,
            self.remove_button,
        ):
            buttons.addWidget(b)
        buttons.addStretch(1)
        layout.addLayout(buttons)
        self.hint = QLabel()
        self.hint.setWordWrap(True)
        layout.addWidget(self.hint)
        splitter = QSplitter(Qt.Orientation.Vertical)
        self.model = CompareModel(self)
        self.table = _table(self.model)
        self.table.verticalHeader().show()
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Stretch)
        self.inputs_model = InputDiffModel(self)
        self.inputs_table = _table(self.inputs_model)
        self.bars = MemoryBars("Training memory per GPU (one axis for all)")
        splitter.addWidget(self.table)
        bottom = QSplitter(Qt.Orientation.Horizontal)
        bottom.addWidget(self.bars)
        bottom.addWidget(self.inputs_table)
        bottom.setSizes([600, 500])
        splitter.addWidget(bottom)
        splitter.setSizes([330, 260])
        layout.addWidget(splitter, 1)
        host.state.changed.connect(self._scenario_changed)
        self.refresh()

    def _scenario_changed(self, *_: Any) -> None:
        if self.LIVE in self.entries and self.isVisible():
            self.refresh()

    def showEvent(self, event: Any) -> None:  # noqa: N802 (Qt API)
        super().showEvent(event)
        self.refresh()  # edits made while hidden

    # ------------------------------------------------------------ entries
    def scenarios(self) -> list[Scenario]:
        current: Scenario = self.host.state.scenario
        return [current if s is None else s for s in self.entries]

    def names(self) -> list[str]:
        return [
            f"{s.name} (current)" if e is None else s.name
            for e, s in zip(self.entries, self.scenarios(), strict=True)
        ]

    def _add(self, scenario: Scenario) -> None:
        if len(self.entries) >= MAX_SCENARIOS:
            QMessageBox.information(
                self, "Compare", f"At most {MAX_SCENARIOS} scenarios: remove one first."
            )
            return
        self.entries.append(scenario)
        self.refresh()

    def duplicate_as_variant(self) -> None:
        """Pin the current scenario, then edit a copy of it in the main window (undoable)."""
        if len(self.entries) >= MAX_SCENARIOS:
            QMessageBox.information(
                self, "Compare", f"At most {MAX_SCENARIOS} scenarios: remove one first."
            )
            return
        current: Scenario = self.host.state.scenario
        live = self.entries.index(self.LIVE) if self.LIVE in self.entries else len(self.entries)
        self.entries.insert(live, current)
        if self.LIVE not in self.entries:
            self.entries.append(self.LIVE)
        self.host.state.replace(duplicate_as_variant(current), "Duplicate as variant", detach=True)
        self.refresh()

    def pin_current(self) -> None:
        self._add(self.host.state.scenario)

    def add_from_library(self) -> None:
        panel = self.host.library
        if panel is None:
            return
        entries = panel.library.listing(set_aside=False).entries
        if not entries:
            QMessageBox.information(self, "Compare", "The library is empty.")
            return
        labels = [f"{e.name} — {e.model}, {e.num_gpus} × {e.gpu}" for e in entries]
        choice, ok = QInputDialog.getItem(self, "Add from library", "Scenario:", labels, 0, False)
        if ok and choice in labels:
            self._add(panel.library.open(entries[labels.index(choice)].key))

    def add_file(self) -> None:
        from llm_planner.core.files.store import ScenarioFileError, load_scenario_file

        path, _ = QFileDialog.getOpenFileName(
            self, "Add scenario file", "", "Scenarios (*.llmplan.json *.json)"
        )
        if not path:
            return
        try:
            self._add(load_scenario_file(Path(path)))
        except ScenarioFileError as error:
            QMessageBox.warning(self, "Cannot add the file", str(error))

    def remove_last(self) -> None:
        if len(self.entries) > 1:
            self.entries.pop()
            self.refresh()

    # ------------------------------------------------------------ redraw
    def refresh(self) -> None:
        scenarios = self.scenarios()
        if len(scenarios) < 2:
            self.comparison = None
            self.hint.setText(
                "Add a scenario to compare with, or press <b>Duplicate as variant</b> to keep "
                "this one as it is and try a change on a copy."
            )
            self.hint.show()
            self.model.set_comparison(None)
            self.inputs_model.set_comparison(None)
            self.bars.set_rows([], scenarios[0].gpu.memory_bytes)
            return
        self.hint.hide()
        named = [
            s.model_copy(update={"name": n}) for s, n in zip(scenarios, self.names(), strict=True)
        ]
        try:
            self.comparison = compare(named)
        except ValueError as error:
            self.hint.setText(f"Cannot compare: {str(error).splitlines()[0]}")
            self.hint.show()
            return
        self.model.set_comparison(self.comparison)
        self.inputs_model.set_comparison(self.comparison)
        self.inputs_table.resizeColumnToContents(0)
        rows = [
            BarRow(
                label=name if len(name) <= 28 else name[:27] + "…",
                parts=memory.components,
                total=memory.peak_bytes,
            )
            for name, memory in zip(self.comparison.names, self.comparison.memory, strict=True)
        ]
        self.bars.set_rows(rows, min(m.capacity_bytes for m in self.comparison.memory))


# --------------------------------------------------------------------- hardware

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
            if option.status == "does not fit":
                return QBrush(QColor(colors.BAD))
            if option.status in ("misses deadline", "no price"):
                return QBrush(QColor(colors.WARN).darker(130))
        if role == Qt.ItemDataRole.ToolTipRole:
            return (
                f"{option.num_gpus:,} × {option.gpu_name}: {option.status}<br>"
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
        self.chart.add_markers("late", "misses deadline", colors.WARN, symbol="t", size=8)
        self.chart.add_line("pareto", "Pareto front", colors.SERIES[2], symbol="o")
        self.chart.add_vline("deadline", colors.BAD, "deadline")
        self.chart.set_vline("deadline", None)
        splitter.addWidget(self.table)
        splitter.addWidget(self.chart)
        splitter.setSizes([720, 560])
        layout.addWidget(splitter, 1)
        self.show_price_age()
        host.state.changed.connect(lambda *_: self.show_price_age())

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
            else "No deadline (set one on the Compute budget tab to mark the options that "
            "miss it). "
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
        late = [(d, c) for o, d, c in priced if o.status == "misses deadline"]
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


# --------------------------------------------------------------------- serving

SERVING_COLUMNS: tuple[tuple[str, str], ...] = (
    ("gpu_name", "GPU"),
    ("gpus_per_replica", "GPUs/replica"),
    ("status", "Status"),
    ("concurrency_per_replica", "Users/replica"),
    ("replicas", "Replicas"),
    ("total_gpus", "GPUs"),
    ("tpot_seconds", "TPOT"),
    ("ttft_seconds", "TTFT"),
    ("usd_per_hour", "$/hour"),
    ("usd_per_million_output_tokens", "$/M output tokens"),
)


class ServingPlanModel(RowsModel[ServingOption]):
    """The serving options, cheapest first (core's order), one row each."""

    headers = tuple(title for _key, title in SERVING_COLUMNS)

    def text(self, option: ServingOption, key: str) -> str:
        value = getattr(option, key)
        fits = option.status in ("ok", "no price")
        if key in ("tpot_seconds", "ttft_seconds"):
            return "—" if value is None else f"{1e3 * value:,.1f} ms"
        if key == "usd_per_hour":
            return "—" if value is None else f"${value:,.2f}"
        if key == "usd_per_million_output_tokens":
            return "—" if value is None else f"${value:,.3f}"
        if key in ("concurrency_per_replica", "replicas", "total_gpus"):
            return f"{value:,}" if fits else "—"
        return str(value)

    def cell(self, option: ServingOption, column: int, role: int) -> Any:
        key = SERVING_COLUMNS[column][0]
        if role == DISPLAY:
            return self.text(option, key)
        if role == Qt.ItemDataRole.ForegroundRole:
            if option.status == "does not fit":
                return QBrush(QColor(colors.BAD))
            if option.status in ("misses latency", "no price"):
                return QBrush(QColor(colors.WARN).darker(130))
        if role == Qt.ItemDataRole.ToolTipRole:
            return f"{option.gpus_per_replica} × {option.gpu_name}: {option.status}<br>" + (
                f"price: {option.price_source}" if option.price_source else "no price"
            )
        return None


class ServingPlanView(QWidget):
    """The cheapest GPU and replica size serving N users at a latency target
    (``core.composition.serving_plan``, as ``llm-planner serve-plan``), on the scenario's
    engine and workload (the Inference memory tab's serving inputs)."""

    def __init__(self, host: ScenarioHost, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.host = host
        self.plan: ServingPlan | None = None
        self.runner = Runner(self)
        self.runner.finished.connect(self._show)
        self.runner.failed.connect(self._failed)
        layout = QVBoxLayout(self)
        controls = QHBoxLayout()
        self.users = QLineEdit("100")
        self.users.setObjectName("serving_users")
        self.users.setToolTip("Concurrent users (requests), e.g. 100 or 2k")
        self.tpot = QLineEdit("50 ms")
        self.tpot.setObjectName("serving_tpot")
        self.tpot.setToolTip("Time per output token at most, e.g. 50 ms")
        self.ttft = QLineEdit("")
        self.ttft.setObjectName("serving_ttft")
        self.ttft.setPlaceholderText("(none)")
        self.ttft.setToolTip("Time to first token at most, e.g. 2 s; empty: no target")
        self.tier = QComboBox()
        self.tier.setObjectName("serving_tier")
        for t in TIERS:
            self.tier.addItem(t.replace("_", "-"), t)
        self.plan_button = _button(
            "Plan serving",
            "plan_serving",
            self.start,
            "Try every GPU kind at 1, 2, 4 and 8 GPUs per replica",
        )
        for label, widget in (
            ("Users", self.users),
            ("TPOT ≤", self.tpot),
            ("TTFT ≤", self.ttft),
            ("Prices", self.tier),
        ):
            controls.addWidget(QLabel(label))
            controls.addWidget(widget)
        controls.addWidget(self.plan_button)
        controls.addStretch(1)
        layout.addLayout(controls)
        self.workload = QLabel()
        self.workload.setObjectName("serving_workload")
        self.workload.setWordWrap(True)
        layout.addWidget(self.workload)
        self.busy = QLabel("")
        self.busy.setObjectName("serving_status")
        self.busy.setWordWrap(True)
        layout.addWidget(self.busy)
        self.model = ServingPlanModel(self)
        self.table = _table(self.model)
        layout.addWidget(self.table, 1)
        self.show_workload()
        host.state.changed.connect(lambda *_: self.show_workload())

    def show_workload(self) -> None:
        inputs = self.host.state.scenario.inference
        self.workload.setText(
            f"Workload (Inference memory tab): {get_engine(inputs.engine).name}, "
            f"{inputs.prompt_tokens:,} prompt + {inputs.output_tokens:,} output tokens per "
            f"request, {inputs.weights_format} weights, {inputs.kv_dtype} KV cache."
        )

    def _targets(self) -> tuple[int, float, float | None] | None:
        """The typed users and targets, or None with the field that does not read named."""
        try:
            users = parse_users(self.users.text())
            tpot = parse_latency(self.tpot.text(), "TPOT")
            ttft_text = self.ttft.text().strip()
            ttft = parse_latency(ttft_text, "TTFT") if ttft_text else None
        except ValueError as error:
            self.busy.setText(f'<span style="color:{colors.BAD}">{error}</span>')
            return None
        return users, tpot, ttft

    def start(self) -> None:
        targets = self._targets()
        if targets is None:
            return
        users, tpot, ttft = targets
        scenario: Scenario = self.host.state.scenario
        tier = self.tier.currentData()
        self.busy.setText("planning…")
        self.plan_button.setEnabled(False)
        self.runner.start(
            lambda: plan_serving(scenario, users, tpot, ttft_target_seconds=ttft, tier=tier)
        )

    def _failed(self, message: str) -> None:
        self.busy.setText(f"failed: {message}")
        self.plan_button.setEnabled(True)

    def _show(self, plan: ServingPlan) -> None:
        self.plan = plan
        self.plan_button.setEnabled(True)
        best = plan.best
        self.busy.setText(
            f"{len(plan.options)} options for {plan.users:,} users; cheapest: "
            + (
                f"{best.replicas:,} × {best.gpus_per_replica} {best.gpu_name}, "
                f"${best.usd_per_hour:,.2f}/h, "
                f"${best.usd_per_million_output_tokens:,.3f} per million output tokens"
                if best is not None
                and best.usd_per_hour is not None
                and best.usd_per_million_output_tokens is not None
                else "none meets the targets"
            )
        )
        self.model.set_rows(plan.options)
        self.table.resizeColumnsToContents()


# --------------------------------------------------------------------- sensitivity


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
        self.runner.start(lambda: sensitivity(scenario))

    def _show(self, result: Sensitivity) -> None:
        self.result = result
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


# --------------------------------------------------------------------- the window


class ChooseWindow(QMainWindow):
    """Compare, Hardware, Sensitivity and Serving on the main window's scenario."""

    def __init__(self, host: ScenarioHost, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Compare and choose — LLM Planner")
        self.setObjectName("choose_window")
        self.host = host
        self.tabs = QTabWidget()
        self.compare = CompareView(host)
        self.hardware = HardwareView(host)
        self.sensitivity = SensitivityView(host)
        self.serving = ServingPlanView(host)
        self.tabs.addTab(self.compare, "Compare")
        self.tabs.addTab(self.hardware, "Cheapest hardware")
        self.tabs.addTab(self.sensitivity, "Sensitivity")
        self.tabs.addTab(self.serving, "Cheapest serving")
        self.tabs.currentChanged.connect(self._tab_shown)
        self.setCentralWidget(self.tabs)
        self.resize(1280, 720)

    def _tab_shown(self, index: int) -> None:
        if index == 2 and self.sensitivity.result is None and not self.sensitivity.runner.busy:
            self.sensitivity.start()


def open_choose_window(host: Any) -> ChooseWindow:
    """Show (or raise) the one Compare-and-choose window of ``host`` (the main window)."""
    window = getattr(host, "_choose_window", None)
    if window is None:
        window = ChooseWindow(host, host if isinstance(host, QWidget) else None)
        window.setWindowFlag(Qt.WindowType.Window, True)
        host._choose_window = window
    window.show()
    window.raise_()
    window.activateWindow()
    return window
