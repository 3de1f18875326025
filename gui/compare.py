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

from pathlib import Path
from typing import Any

from PySide6.QtCore import (
    QObject,
    Qt,
)
from PySide6.QtGui import QBrush, QFont
from PySide6.QtWidgets import (
    QFileDialog,
    QHBoxLayout,
    QHeaderView,
    QInputDialog,
    QLabel,
    QMainWindow,
    QMessageBox,
    QSplitter,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from llm_planner.core.composition.compare import (
    MAX_SCENARIOS,
    CompareRow,
    Comparison,
    InputDifference,
    compare,
    duplicate_as_variant,
)
from llm_planner.core.composition.scenario import Scenario
from llm_planner.core.primitives.figures import format_value
from llm_planner.gui.compare_common import (
    DISPLAY,
    HIGHLIGHT,
    ScenarioHost,
    _button,
    _table,
)
from llm_planner.gui.compare_hardware import HardwareView
from llm_planner.gui.compare_sensitivity import SensitivityView
from llm_planner.gui.compare_serving import SERVING_COLUMNS, ServingPlanView
from llm_planner.gui.table_model import RowsModel
from llm_planner.gui.widgets.charts import BarRow, MemoryBars

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
        memory = self.comparison.memory
        self.bars.set_rows(
            rows,
            min(m.capacity_bytes for m in memory),
            capacities=[m.capacity_bytes for m in memory],  # each scenario's own GPU
        )


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
        if index == 2 and self.sensitivity.stale():
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


__all__ = ["SERVING_COLUMNS", "ChooseWindow", "CompareView", "open_choose_window"]
