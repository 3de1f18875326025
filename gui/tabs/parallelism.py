"""Parallelism: per-GPU memory under ZeRO 0–3, the pipeline timeline, the ranked search."""

from __future__ import annotations

import logging
from typing import Any

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from llm_planner.core.composition.estimate import Report
from llm_planner.core.composition.scenario import Scenario
from llm_planner.core.primitives import units
from llm_planner.gui import export_config
from llm_planner.gui.tabs.base import (
    Tab,
    core_attr,
    field,
    format_bandwidth,
    format_fraction,
    format_int,
    parse_bandwidth,
    parse_fraction,
    safe_call,
)
from llm_planner.gui.tabs.training import PARTS
from llm_planner.gui.widgets.measurements import MeasurementsPanel

log = logging.getLogger(__name__)

SEARCH_DELAY_MS = 250
"""The search (a fraction of a second) runs once typing pauses this long."""
SEARCH_TOP = 50
"""Rows the ranked table shows."""
MAX_DRAWN_MICROBATCHES = 32
"""The timeline draws at most this many micro-batches (readable; the bubble figure is exact)."""


def report_stage(report: Report, scenario: Scenario) -> int:
    stage = field(report.parallelism, "zero_stage")
    return int(stage) if stage is not None else scenario.parallelism.zero_stage


class NumericItem(QTableWidgetItem):
    """Sorts by the number stored in UserRole, not by the text."""

    def __lt__(self, other: QTableWidgetItem) -> bool:
        mine = self.data(Qt.ItemDataRole.UserRole)
        theirs = other.data(Qt.ItemDataRole.UserRole)
        if isinstance(mine, int | float) and isinstance(theirs, int | float):
            return mine < theirs
        return super().__lt__(other)


class SearchTable(QWidget):
    """The ranked layouts; double-click applies a row to the scenario."""

    apply_row = Signal(dict)
    COLUMNS = (
        ("rank", "#"),
        ("tp", "TP"),
        ("pp", "PP"),
        ("dp", "DP"),
        ("zero_stage", "ZeRO"),
        ("micro_batch", "micro"),
        ("recompute", "recompute"),
        ("sequence_parallel", "SP"),
        ("peak_bytes", "peak / GPU"),
        ("step_seconds", "step"),
        ("tokens_per_s", "tokens/s"),
        ("mfu", "MFU"),
        ("bottleneck", "bottleneck"),
    )

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        top = QHBoxLayout()
        self.title = QLabel("<b>Ranked layouts that fit</b> (double-click a row to apply it)")
        self.run_button = QPushButton("Search now")
        self.title.setWordWrap(True)
        top.addWidget(self.title, 1)
        top.addWidget(self.run_button)
        layout.addLayout(top)
        self.table = QTableWidget(0, len(self.COLUMNS))
        self.table.setObjectName("search_table")
        self.table.setHorizontalHeaderLabels([label for _, label in self.COLUMNS])
        self.table.verticalHeader().setVisible(False)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setAlternatingRowColors(True)
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.table.horizontalHeader().setStretchLastSection(True)
        self.table.verticalHeader().setDefaultSectionSize(self.fontMetrics().height() + 6)
        self.table.itemDoubleClicked.connect(self._double_clicked)
        layout.addWidget(self.table)
        self.rows: list[dict[str, Any]] = []

    def set_rows(self, rows: list[dict[str, Any]]) -> None:
        self.rows = rows
        self.table.setSortingEnabled(False)
        self.table.setRowCount(len(rows))
        for r, row in enumerate(rows):
            for c, (key, _) in enumerate(self.COLUMNS):
                value = row.get(key)
                item = NumericItem(self._text(key, value))
                if isinstance(value, int | float) and not isinstance(value, bool):
                    item.setData(Qt.ItemDataRole.UserRole, float(value))
                    item.setTextAlignment(
                        Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter
                    )
                item.setData(Qt.ItemDataRole.UserRole + 1, r)
                self.table.setItem(r, c, item)
        self.table.setSortingEnabled(True)
        self.table.sortByColumn(0, Qt.SortOrder.AscendingOrder)

    @staticmethod
    def _text(key: str, value: Any) -> str:
        if value is None:
            return "—"
        if isinstance(value, bool):
            return "on" if value else "off"
        if key == "peak_bytes":
            return units.format_gb(float(value))
        if key == "step_seconds":
            return units.format_duration(float(value))
        if key == "tokens_per_s":
            return units.format_count(float(value))
        if key == "mfu":
            return f"{100 * float(value):.1f}%"
        return str(value)

    def _double_clicked(self, item: QTableWidgetItem) -> None:
        index = item.data(Qt.ItemDataRole.UserRole + 1)
        if isinstance(index, int) and 0 <= index < len(self.rows):
            self.apply_row.emit(self.rows[index])


def search_rows(scenario: Scenario, top: int = SEARCH_TOP) -> list[dict[str, Any]] | None:
    """Ranked layouts from ``core.search.search_scenario`` as dicts; None without a search."""
    function = core_attr("search", "search_scenario")
    result = safe_call(function, scenario, top=top) if function else None
    if result is None:
        return None
    return [row.model_dump() for row in result.rows]


class ParallelismTab(Tab):
    title = "Parallelism"
    section = "parallelism"

    def build_inputs(self) -> None:
        cluster = self.group("Cluster")
        self.per_node = self.line(
            cluster,
            "GPUs per node",
            "parallelism.gpus_per_node",
            units.parse_int_count,
            format_int,
            "GPUs in one node (NVLink domain)",
        )
        layout = self.group("Layout")
        self.tp = self.line(
            layout,
            "Tensor parallel",
            "parallelism.tp",
            units.parse_int_count,
            format_int,
            "Tensor-parallel degree t",
        )
        self.pp = self.line(
            layout,
            "Pipeline parallel",
            "parallelism.pp",
            units.parse_int_count,
            format_int,
            "Pipeline-parallel degree p",
        )
        self.dp = self.line(
            layout,
            "Data parallel",
            "parallelism.dp",
            units.parse_int_count,
            format_int,
            "Data-parallel degree; empty: GPUs / (t·p)",
            optional=True,
        )
        self.zero = self.combo(
            layout,
            "ZeRO stage",
            "parallelism.zero_stage",
            [
                ("0 — none (NO_SHARD)", 0),
                ("1 — optimizer states", 1),
                ("2 — + gradients (SHARD_GRAD_OP)", 2),
                ("3 — + parameters (FULL_SHARD)", 3),
            ],
            "What is sharded across data-parallel ranks",
        )
        self.sp = self.check(
            layout,
            "Sequence parallel",
            "parallelism.sequence_parallel",
            "Split the non-tensor-parallel activations across t (Korthikanti 2022)",
        )
        batch = self.group("Batch and schedule")
        self.global_batch = self.line(
            batch,
            "Global batch",
            "parallelism.global_batch",
            units.parse_int_count,
            format_int,
            "Sequences per optimizer step",
        )
        self.schedule = self.combo(
            batch,
            "Schedule",
            "parallelism.schedule",
            [("GPipe", "gpipe"), ("1F1B", "1f1b"), ("interleaved 1F1B", "interleaved")],
            "Pipeline schedule",
        )
        self.fsdp = self.combo(
            layout,
            "FSDP name",
            "parallelism.fsdp_strategy",
            [
                ("— (use the ZeRO stage)", None),
                ("NO_SHARD", "NO_SHARD"),
                ("SHARD_GRAD_OP", "SHARD_GRAD_OP"),
                ("FULL_SHARD", "FULL_SHARD"),
                ("HYBRID_SHARD", "HYBRID_SHARD"),
            ],
            "PyTorch FSDP sharding strategy; when set it overrides the ZeRO stage",
        )
        self.chunks = self.line(
            batch,
            "Virtual stages v",
            "parallelism.interleave_chunks",
            units.parse_int_count,
            format_int,
            "Model chunks per GPU (interleaved schedule)",
        )
        self.build_network_inputs()
        self.measurements = MeasurementsPanel(self.state)
        self.inputs_layout.addWidget(self.measurements)

    def build_network_inputs(self) -> None:
        net = self.group("Network and efficiency")
        self.intra_bw = self.line(
            net,
            "Intra-node link",
            "parallelism.intra_node_bandwidth_bytes_per_s",
            parse_bandwidth,
            format_bandwidth,
            "GPU-to-GPU bandwidth per GPU, one direction (empty: the GPU's catalog link)",
            optional=True,
        )
        self.inter_bw = self.line(
            net,
            "Network per node",
            "parallelism.inter_node_bandwidth_bytes_per_s",
            parse_bandwidth,
            format_bandwidth,
            "Inter-node bandwidth per node, one direction (8 × 400 Gb/s InfiniBand = 400 GB/s)",
        )
        for attribute, label, path, tip in (
            ("intra_eff", "Intra achieved", "intra_node_efficiency", "Achieved share of the link"),
            ("inter_eff", "Network achieved", "inter_node_efficiency", "Achieved share"),
            ("kernel_eff", "Kernel efficiency", "kernel_efficiency", "Share of peak FLOP/s"),
            ("dp_overlap", "DP overlap", "dp_overlap", "Share of backward hiding DP comm"),
            ("tp_overlap", "TP overlap", "tp_overlap", "Share of TP comm hidden"),
        ):
            edit = self.line(
                net, label, f"parallelism.{path}", parse_fraction, format_fraction, tip
            )
            setattr(self, attribute, edit)
        self.ep = self.line(
            net,
            "Expert parallel",
            "parallelism.expert_parallel",
            units.parse_int_count,
            format_int,
            "Expert-parallel degree (MoE; divides data parallel)",
        )

    def build_charts(self) -> None:
        from llm_planner.gui.widgets.charts import MemoryBars, TimelineChart

        top = QSplitter(Qt.Orientation.Horizontal)
        self.zero_bars = MemoryBars(
            "Per-GPU memory (peak) under ZeRO 0–3",
            ["weights", "gradients", "optimizer", "activations", "temporaries", "overhead"],
        )
        self.zero_bars.setObjectName("zero_bars")
        self.timeline = TimelineChart("Pipeline schedule")
        top.addWidget(self.zero_bars)
        top.addWidget(self.timeline)
        top.setSizes([550, 450])
        self.search = SearchTable()
        self.search.apply_row.connect(self.apply_layout)
        self.search.run_button.clicked.connect(self.run_search)
        export_config.hook_search(self.search, lambda: self.state.scenario)
        bottom = QSplitter(Qt.Orientation.Horizontal)
        bottom.addWidget(self.search)
        bottom.addWidget(self.figures)
        bottom.setSizes([520, 380])
        self.right.addWidget(top)
        self.right.addWidget(bottom)
        self._searched_for: Scenario | None = None
        self._search_timer = QTimer(self)
        self._search_timer.setSingleShot(True)
        self._search_timer.setInterval(SEARCH_DELAY_MS)
        self._search_timer.timeout.connect(self.run_search)

    def redraw(self, scenario: Scenario, report: Report) -> None:
        super().redraw(scenario, report)
        self.chunks.setEnabled(scenario.parallelism.schedule == "interleaved")
        # empty means "the GPU's own link": say which, rather than "(none)"
        gpu = scenario.gpu
        self.intra_bw.setPlaceholderText(
            f"{format_bandwidth(gpu.link_bandwidth_bytes_per_s)} ({gpu.link_name})"
        )
        self.draw_zero(scenario, report)
        self.draw_timeline(scenario, report)

    def draw_zero(self, scenario: Scenario, report: Report) -> None:
        """ZeRO 0–3 side by side from ``core.parallelism.zero_stage_comparison``."""
        from llm_planner.gui.widgets.charts import BarRow

        function = core_attr("parallelism", "zero_stage_comparison")
        if function is None:
            return
        result = safe_call(
            function,
            scenario.model.architecture,
            scenario.training,
            scenario.gpu,
            scenario.parallelism,
            scenario.num_gpus,
            params_override=scenario.model.params_override,
        )
        if not result:
            return
        rows = []
        for entry in result:
            stage = int(entry.get("zero_stage", len(rows)))
            parts = {name: float(entry.get(key) or 0.0) for name, key in PARTS.items()}
            mark = "  ◀" if stage == report_stage(report, scenario) else ""
            rows.append(BarRow(f"ZeRO {stage}{mark}", parts, entry.get("peak_bytes")))
        self.zero_bars.set_rows(rows, scenario.gpu.memory_bytes)

    def draw_timeline(self, scenario: Scenario, report: Report) -> None:
        """The schedule from ``core.parallelism.pipeline_timeline``; gaps are bubbles."""
        from llm_planner.gui.widgets.charts import Block

        function = core_attr("parallelism", "pipeline_timeline")
        layout: Any = report.parallelism
        if layout is None:  # section not wired yet: the layout as core resolves it
            resolve = core_attr("parallelism", "resolve_layout")
            layout = safe_call(
                resolve,
                scenario.parallelism,
                scenario.num_gpus,
                scenario.training.micro_batch,
                scenario.training.recompute,
                scenario.model.architecture.layers,
            )
        if function is None or layout is None:
            return
        pp = int(layout.pp)
        m = int(layout.gradient_accumulation_steps)
        shown = min(m, MAX_DRAWN_MICROBATCHES)
        v = int(field(layout, "interleave_chunks", "v") or 1)
        events = safe_call(function, pp, shown, str(layout.schedule), v)
        if not events:
            return
        end = max(e[3] for e in events)
        rows = min(pp, 1 + max(e[0] for e in events))  # the drawing is cut to what is readable
        blocks = [Block(stage, 0.0, end, "bubble") for stage in range(rows)]
        blocks += [
            Block(stage, start, stop - start, kind, str(micro + 1) if shown <= 8 else "")
            for stage, micro, start, stop, kind in events
        ]
        self.timeline.set_blocks(blocks, pp)
        more = f" (first {shown} of {m})" if shown < m else ""
        bubble = field(layout, "bubble_fraction")
        self.timeline.info.setText(
            f"{pp} stage{'s' if pp > 1 else ''} × {m} micro-batch{'es' if m > 1 else ''}{more}"
            + (f" · bubble {100 * bubble:.1f}% of the step" if bubble is not None else "")
        )

    def redraw_slow(self, scenario: Scenario, report: Report) -> None:
        del scenario, report  # the search reads the state's scenario when it runs
        self._search_timer.start()

    def flush(self) -> None:
        if self._search_timer.isActive():
            self._search_timer.stop()
            self.run_search()

    def run_search(self) -> None:
        scenario = self.state.scenario
        if self._searched_for == scenario:
            return
        rows = search_rows(scenario)
        self._searched_for = scenario
        if rows is None:
            self.search.title.setText("<b>Ranked layouts</b>: the search is not available yet")
            return
        self.search.title.setText(
            f"<b>{len(rows)} best layouts that fit</b> (double-click a row to apply it)"
        )
        self.search.set_rows(rows)

    def apply_layout(self, row: dict[str, Any]) -> None:
        """Apply a search row's layout to the scenario as one undoable step."""
        from llm_planner.core.composition.search import SearchRow, apply_row

        try:
            scenario = apply_row(self.state.scenario, SearchRow.model_validate(row))
        except ValueError as error:
            log.warning("search row does not apply: %s", error)
            return
        self.state.replace(scenario, "Apply layout from search")
