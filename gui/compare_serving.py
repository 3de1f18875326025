"""Compare and choose ▸ Cheapest serving: the cheapest GPU and replica size serving N users at
a latency target (``core.composition.serving_plan``, as ``llm-planner serve-plan``)."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import (
    Qt,
)
from PySide6.QtGui import QBrush, QColor
from PySide6.QtWidgets import (
    QComboBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QVBoxLayout,
    QWidget,
)

from llm_planner.core.composition.hardware import (
    TIERS,
)
from llm_planner.core.composition.scenario import Scenario
from llm_planner.core.composition.serving_plan import (
    ServingOption,
    ServingPlan,
    parse_latency,
    parse_users,
    plan_serving,
)
from llm_planner.core.quantities.engines import get_engine
from llm_planner.gui import colors
from llm_planner.gui.compare_common import (
    DISPLAY,
    Runner,
    ScenarioHost,
    _button,
    _table,
)
from llm_planner.gui.table_model import RowsModel

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
