"""Measured runs: enter one, or drop a training log, and watch the calibrated parameters.

A panel on the parallelism tab. It holds no formulas: a typed run becomes a
``core.composition.calibration.Measurement`` of the scenario's layout, a log goes through
``core.files.logs``; the fitted parameters, residuals and band checks are the report's
``calibration`` section (``llm-planner report`` prints the same).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtCore import QModelIndex, QPersistentModelIndex, Qt
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QFormLayout,
    QFrame,
    QGroupBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QMessageBox,
    QPlainTextEdit,
    QPushButton,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from llm_planner.core.composition.calibration import Measurement
from llm_planner.core.composition.estimate import Report
from llm_planner.core.composition.scenario import Scenario
from llm_planner.core.files import logs
from llm_planner.core.primitives import units
from llm_planner.gui.binding import ScenarioState
from llm_planner.gui.table_model import RowsModel

LOG_SUFFIXES = (".log", ".txt", ".out", ".err")
"""Files a drop treats as training logs."""

Index = QModelIndex | QPersistentModelIndex


class StillText(QPlainTextEdit):
    """Read-only wrapped text of a fixed height (``lines``; longer text scrolls, nothing is
    cut). A label whose text changes on every edit re-lays out and repaints the whole input
    column it sits in; this keeps its size."""

    def __init__(self, lines: int, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setReadOnly(True)
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setLineWrapMode(QPlainTextEdit.LineWrapMode.WidgetWidth)
        self.viewport().setAutoFillBackground(False)
        self.setStyleSheet("QPlainTextEdit { background: transparent; }")
        margins = self.contentsMargins()
        self.document().setDocumentMargin(1)
        height = lines * self.fontMetrics().lineSpacing() + 4 + margins.top() + margins.bottom()
        self.setFixedHeight(height)

    def text(self) -> str:
        return self.toPlainText()

    def setText(self, text: str) -> None:  # noqa: N802 (the QLabel name it replaces)
        if text != self.toPlainText():
            self.setPlainText(text)
            self.setToolTip(text)


class MeasurementModel(RowsModel[tuple[str, str, str, str, str]]):
    """One row per measurement: label, GPUs, measured tokens/s per GPU, error before/after."""

    headers = ("run", "GPUs", "tokens/s/GPU", "model before", "after")

    def cell(self, row: tuple[str, str, str, str, str], column: int, role: int) -> Any:
        return row[column] if role == Qt.ItemDataRole.DisplayRole else None

    def set_measurements(self, scenario: Scenario, report: Report) -> None:
        """The scenario's measurements with the calibration's residuals."""
        residuals = {
            r["index"]: r
            for r in (report.calibration.residuals if report.calibration else [])
            if r["quantity"] == "tokens_per_s_per_gpu"
        }
        aside = {s.index for s in report.calibration.set_aside} if report.calibration else set()
        rows = []
        for i, m in enumerate(scenario.measurements):
            res = residuals.get(i)
            if i in aside:  # another model's or GPU's run: not fitted, not drawn
                rows.append((m.label or m.source, str(m.gpus), "set aside", "—", "—"))
                continue
            rows.append(
                (
                    m.label or m.source,
                    str(m.gpus),
                    units.format_count(res["measured"]) if res else "—",
                    f"{100 * res['error_before']:+.1f}%" if res else "—",
                    f"{100 * res['error_after']:+.1f}%" if res else "—",
                )
            )
        if rows != self.rows:  # a reset re-measures every column: only when a row changed
            self.set_rows(rows)


class MeasurementsPanel(QGroupBox):
    """Measured runs of this scenario and what they calibrate."""

    def __init__(self, state: ScenarioState, parent: QWidget | None = None) -> None:
        super().__init__("Measured runs (calibration)", parent)
        self.state = state
        layout = QVBoxLayout(self)
        form = QFormLayout()
        self.gpus = QLineEdit()
        self.gpus.setObjectName("measurement.gpus")
        self.gpus.setPlaceholderText("the scenario's")
        self.gpus.setToolTip("GPUs of the measured run; its layout is the scenario's")
        form.addRow("GPUs", self.gpus)
        self.rate = QLineEdit()
        self.rate.setObjectName("measurement.tokens_per_s_per_gpu")
        self.rate.setToolTip("Measured tokens/s per GPU, steady state (e.g. 3.2k)")
        form.addRow("tokens/s per GPU", self.rate)
        layout.addLayout(form)
        buttons = QHBoxLayout()
        self.add_button = QPushButton("Add measured run")
        self.add_button.setObjectName("measurement.add")
        self.add_button.clicked.connect(self._add_clicked)
        self.remove_button = QPushButton("Remove")
        self.remove_button.setObjectName("measurement.remove")
        self.remove_button.clicked.connect(self._remove_clicked)
        buttons.addWidget(self.add_button)
        buttons.addWidget(self.remove_button)
        layout.addLayout(buttons)
        self.enabled = QCheckBox("Calibrate the model with these runs")
        self.enabled.setObjectName("calibration.enabled")
        self.enabled.setToolTip("Off: the uncalibrated model, for comparison")
        self.enabled.toggled.connect(self._enabled_toggled)
        layout.addWidget(self.enabled)
        self._build_table(layout)
        state.changed.connect(self.update_from)
        self.update_from(state.scenario, state.report)

    def _build_table(self, layout: QVBoxLayout) -> None:
        self.model = MeasurementModel(self)
        self.table = QTableView()
        self.table.setObjectName("measurement.table")
        self.table.setModel(self.model)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.table.setMinimumHeight(90)
        layout.addWidget(self.table)
        self.summary = StillText(lines=5)
        self.summary.setObjectName("calibration.summary")
        layout.addWidget(self.summary)
        self.message = QLabel()
        self.message.setObjectName("measurement.message")
        self.message.setWordWrap(True)
        layout.addWidget(self.message)
        self.hint = QLabel(
            "Drop a Megatron-LM, torchtitan, DeepSpeed, Trainer or nanotron log on the window "
            "to add it as a run of this layout."
        )
        self.hint.setWordWrap(True)
        layout.addWidget(self.hint)

    # -- view
    def update_from(self, scenario: Scenario, report: Report) -> None:
        self.enabled.blockSignals(True)
        self.enabled.setChecked(scenario.calibration.enabled)
        self.enabled.blockSignals(False)
        self.model.set_measurements(scenario, report)
        self.summary.setText(calibration_text(report))

    # -- actions
    def _add_clicked(self, _checked: bool = False) -> None:
        scenario = self.state.scenario
        try:
            gpus = units.parse_int_count(self.gpus.text()) if self.gpus.text().strip() else None
            rate = units.parse_count(self.rate.text())
            m = Measurement(
                label=f"typed run {len(scenario.measurements) + 1}",
                source="typed",
                gpus=gpus or scenario.num_gpus,
                tokens_per_s_per_gpu=rate,
                stack=scenario.training.stack,
                **logs.layout_of(scenario),
            )
        except (ValueError, units.UnitError) as error:
            self.message.setText(f"tokens/s per GPU: {str(error).splitlines()[0]}")
            return
        self.message.setText("")
        self.add(m, "Add measured run")

    def _remove_clicked(self, _checked: bool = False) -> None:
        rows = self.table.selectionModel().selectedRows()
        scenario = self.state.scenario
        if not rows or not scenario.measurements:
            return
        kept = [m for i, m in enumerate(scenario.measurements) if i != rows[0].row()]
        self.state.replace(
            scenario.model_copy(update={"measurements": kept}), "Remove measured run"
        )

    def _enabled_toggled(self, on: bool) -> None:
        calibration = self.state.scenario.calibration.model_copy(update={"enabled": on})
        self.state.replace(
            self.state.scenario.model_copy(update={"calibration": calibration}),
            "Calibration on" if on else "Calibration off",
        )

    def add(self, m: Measurement, text: str) -> None:
        scenario = self.state.scenario
        self.state.replace(
            scenario.model_copy(update={"measurements": [*scenario.measurements, m]}), text
        )


def add_log(state: ScenarioState, path: Path) -> tuple[bool, str]:
    """A training log as a measurement of the scenario's run (one undoable step): (added,
    message). The message names unread lines, or says why nothing could be read."""
    try:
        m, unread = logs.measurement_from_file(path, state.scenario)
    except logs.LogError as error:
        return False, str(error)
    scenario = state.scenario
    state.replace(
        scenario.model_copy(update={"measurements": [*scenario.measurements, m]}),
        f"Add log {path.name}",
    )
    return True, ("; ".join(unread[:3]) if unread else f"read {path.name}: {m.source}")


def drop_log(parent: QWidget, state: ScenarioState, path: Path) -> bool:
    """The window's drop of a log: add it, or show why not."""
    added, message = add_log(state, path)
    if not added:
        QMessageBox.warning(parent, "Training log", message)
    return added


def calibration_text(report: Report) -> str:
    """The report's calibration lines (parameters, errors, band checks) as panel text."""
    cal = report.calibration
    if cal is None:
        return ""
    lines = [f"{f.label.strip()}: {f.text()}" for f in cal.figures() if f.key != "skipped"]
    lines += [f"Set aside: {s.reason}" for s in cal.set_aside]
    return "\n".join(lines)
