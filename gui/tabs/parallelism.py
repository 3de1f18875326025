"""Parallelism: per-GPU memory under ZeRO 0–3, the pipeline timeline, the ranked search."""

from __future__ import annotations

import logging
from typing import Any

from PySide6.QtCore import (
    QEvent,
    QModelIndex,
    QObject,
    Qt,
    QTimer,
    Signal,
)
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QProgressBar,
    QPushButton,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from llm_planner.core.composition.estimate import Report, zero_stages
from llm_planner.core.composition.scenario import Scenario
from llm_planner.core.composition.search import SearchResult, search_scenario
from llm_planner.core.inputs.registry import format_bandwidth
from llm_planner.core.primitives import units
from llm_planner.core.sections.parallelism.schedule import pipeline_timeline
from llm_planner.core.sections.parallelism.workload import network_bytes_per_s_per_node
from llm_planner.gui import export_config
from llm_planner.gui.background import Latest
from llm_planner.gui.table_model import RowsModel
from llm_planner.gui.tabs.base import (
    Tab,
    safe_call,
)
from llm_planner.gui.tabs.training import PARTS
from llm_planner.gui.widgets.measurements import MeasurementsPanel
from llm_planner.gui.widgets.still_splitter import StillSplitter

log = logging.getLogger(__name__)

SEARCH_DELAY_MS = 250
"""The search (a fraction of a second) runs once typing pauses this long."""
SEARCH_TOP = 50
"""Rows the ranked table shows."""
MAX_DRAWN_MICROBATCHES = 32
"""The timeline draws at most this many micro-batches (readable; the bubble figure is exact)."""


COLUMNS = (
    ("rank", "#", "Rank (best first)"),
    ("tp", "TP", "Tensor-parallel degree"),
    ("pp", "PP", "Pipeline-parallel degree"),
    ("dp", "DP", "Data-parallel degree"),
    ("cp", "CP", "Context-parallel degree (long sequences split over cp GPUs)"),
    ("zero_stage", "ZeRO", "ZeRO stage"),
    ("micro_batch", "µb", "Micro-batch (sequences)"),
    ("recompute", "recomp.", "Activation recomputation"),
    ("sequence_parallel", "SP", "Sequence parallel"),
    ("peak_bytes", "peak/GPU", "Peak memory per GPU (training estimator)"),
    ("step_seconds", "step", "Modeled step time"),
    ("tokens_per_s", "tok/s", "Tokens per second, whole cluster"),
    ("mfu", "MFU", "Model FLOPs utilisation"),
    (
        "measured_spread",
        "meas.÷model",
        "Measured ÷ modeled tokens/s over measured runs of the same mechanisms (25th-75th "
        "percentile, runs); the ranking multiplies tok/s by the low end",
    ),
    ("bottleneck", "bottleneck", "What limits the step"),
)
"""(row key, short header, header tooltip) of the ranked table."""


def cell_text(key: str, value: Any) -> str:
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


def spread_text(row: dict[str, Any]) -> str | None:
    """'0.56-0.84 (14)': a row's measured ÷ modeled spread, None where nothing was measured."""
    low, high = row.get("measured_ratio_low"), row.get("measured_ratio_high")
    if low is None or high is None:
        return None
    return f"{low:.2f}-{high:.2f} ({row.get('uncertainty_runs', 0)})"


class SearchModel(RowsModel[dict[str, Any]]):
    """The ranked rows as a Qt model: one reset per search, no per-cell widgets."""

    headers = tuple(header for _key, header, _tip in COLUMNS)
    header_tips = tuple(tip for _key, _header, tip in COLUMNS)

    def cell(self, row: dict[str, Any], column: int, role: int) -> Any:
        key = COLUMNS[column][0]
        value = spread_text(row) if key == "measured_spread" else row.get(key)
        if role in (Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.ToolTipRole):
            text = cell_text(key, value)
            if role == Qt.ItemDataRole.ToolTipRole:
                return f"{COLUMNS[column][2]}: {text}"
            return text
        if role == Qt.ItemDataRole.TextAlignmentRole and isinstance(value, int | float):
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        if role == Qt.ItemDataRole.UserRole:
            return value
        return None

    def sort(self, column: int, order: Qt.SortOrder = Qt.SortOrder.AscendingOrder) -> None:
        key = COLUMNS[column][0]

        def value(row: dict[str, Any]) -> tuple[int, Any]:
            v = row.get("measured_ratio_low" if key == "measured_spread" else key)
            return (1, 0) if v is None else (0, v if not isinstance(v, str) else v.casefold())

        self.layoutAboutToBeChanged.emit()
        self.rows.sort(key=value, reverse=order == Qt.SortOrder.DescendingOrder)
        self.layoutChanged.emit()


class SearchTable(QWidget):
    """The ranked layouts; double-click (or Apply) applies a row to the scenario."""

    apply_row = Signal(dict)

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        top = QHBoxLayout()
        self.title = QLabel("<b>Ranked layouts that fit</b>")
        self.title.setWordWrap(True)
        self.title.setObjectName("search_title")
        self.busy = QProgressBar()
        self.busy.setObjectName("search_busy")
        self.busy.setRange(0, 0)  # indeterminate: a moving bar while the search runs
        self.busy.setMaximumWidth(90)
        self.busy.setMaximumHeight(14)
        self.busy.setTextVisible(False)
        self.busy.hide()
        self.apply_button = QPushButton("Apply row")
        self.apply_button.setObjectName("apply_row")
        self.apply_button.setToolTip(
            "Apply the selected layout to the scenario (undoable); a double-click on a row "
            "does the same"
        )
        self.apply_button.setEnabled(False)
        self.apply_button.clicked.connect(self._apply_selected)
        self.run_button = QPushButton("Search now")
        self.run_button.setObjectName("search_now")
        top.addWidget(self.title, 1)
        top.addWidget(self.busy)
        top.addWidget(self.apply_button)
        top.addWidget(self.run_button)
        layout.addLayout(top)
        # the stack's FP8 recipe, proposed beside a 16-bit plan where the GPU runs it
        self.low_precision = QLabel()
        self.apply_low_precision = QPushButton("Apply FP8")
        layout.addLayout(self._low_precision_row())
        self.model = SearchModel(self)
        self.table = QTableView()
        self.table.setObjectName("search_table")
        self.table.setModel(self.model)
        self.table.verticalHeader().setVisible(False)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setAlternatingRowColors(True)
        self.table.setSortingEnabled(True)
        self.table.setWordWrap(False)
        self.table.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        header = self.table.horizontalHeader()
        # every column as wide as its numbers; only the last (a sentence) elides
        header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        header.setMinimumSectionSize(24)
        self.table.viewport().installEventFilter(self)
        self.table.verticalHeader().setDefaultSectionSize(self.fontMetrics().height() + 6)
        self.table.doubleClicked.connect(self._double_clicked)
        self.table.selectionModel().selectionChanged.connect(
            lambda *_: self.apply_button.setEnabled(self.selected_row() is not None)
        )
        layout.addWidget(self.table)

    @property
    def rows(self) -> list[dict[str, Any]]:
        return self.model.rows

    def set_rows(self, rows: list[dict[str, Any]]) -> None:
        self.model.set_rows(rows)
        self.apply_button.setEnabled(False)
        self.fit_columns()

    def fit_columns(self) -> None:
        """Column widths from their texts (header and cells). Numbers are never cut: every
        column but the last (what limits the step, a sentence) is as wide as its widest text;
        the last takes the room left (elided, full text in the tooltip) down to a minimum,
        and below that the table scrolls sideways."""
        metrics = self.table.fontMetrics()
        needed = []
        for key, header, _tip in COLUMNS:
            texts = [header, *(cell_text(key, row.get(key)) for row in self.model.rows)]
            needed.append(max(metrics.horizontalAdvance(t) for t in texts) + 14)
        available = self.table.viewport().width()
        if available <= 50:
            return
        last_min = metrics.horizontalAdvance("tensor-parallel") + 14
        needed[-1] = max(min(needed[-1], available - sum(needed[:-1])), last_min)
        if sum(needed) < available:  # the spare room goes to the last column
            needed[-1] += available - sum(needed)
        policy = (
            Qt.ScrollBarPolicy.ScrollBarAsNeeded
            if sum(needed) > available
            else Qt.ScrollBarPolicy.ScrollBarAlwaysOff
        )
        if self.table.horizontalScrollBarPolicy() != policy:
            self.table.setHorizontalScrollBarPolicy(policy)
        for column, width in enumerate(needed):
            if self.table.columnWidth(column) != width:
                self.table.setColumnWidth(column, width)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 (Qt API)
        if watched is self.table.viewport() and event.type() == QEvent.Type.Resize:
            self.fit_columns()
        return False

    def set_busy(self, busy: bool) -> None:
        self.busy.setVisible(busy)

    def _low_precision_row(self) -> QHBoxLayout:
        row = QHBoxLayout()
        self.low_precision.setObjectName("search_low_precision")
        self.low_precision.setWordWrap(True)
        self.apply_low_precision.setObjectName("apply_low_precision")
        self.apply_low_precision.setToolTip(
            "Apply the FP8 recipe with its best layout to the scenario (undoable)"
        )
        row.addWidget(self.low_precision, 1)
        row.addWidget(self.apply_low_precision)
        self.show_low_precision(None)
        return row

    def show_low_precision(self, text: str | None, can_apply: bool = False) -> None:
        """The FP8 proposal's line (None: hidden) and whether its layout can be applied."""
        self.low_precision.setText(f"<b>FP8 here</b>: {text}" if text else "")
        self.low_precision.setVisible(text is not None)
        self.apply_low_precision.setVisible(text is not None)
        self.apply_low_precision.setEnabled(can_apply)

    def selected_row(self) -> dict[str, Any] | None:
        chosen = self.table.selectionModel().selectedRows()
        if not chosen:
            return None
        return self.model.rows[chosen[0].row()]

    def _apply_selected(self) -> None:
        row = self.selected_row()
        if row is not None:
            self.apply_row.emit(row)

    def _double_clicked(self, index: QModelIndex) -> None:
        if 0 <= index.row() < len(self.model.rows):
            self.apply_row.emit(self.model.rows[index.row()])


def search_rows(scenario: Scenario, top: int = SEARCH_TOP) -> SearchResult:
    """Ranked layouts from ``core.composition.search.search_scenario`` (worker thread)."""
    return search_scenario(scenario, top=top)


class ParallelismTab(Tab):
    title = "Parallelism"
    section = "parallelism"

    def build_inputs(self) -> None:
        cluster = self.group("Cluster")
        self.per_node = self.input(cluster, "parallelism.gpus_per_node")
        self.nvlink_domain = self.input(cluster, "parallelism.nvlink_domain")
        layout = self.group("Layout")
        self.tp = self.input(layout, "parallelism.tp")
        self.pp = self.input(layout, "parallelism.pp")
        self.first_stage_layers = self.input(layout, "training.first_stage_layers")
        self.last_stage_layers = self.input(layout, "training.last_stage_layers")
        self.cp = self.input(layout, "parallelism.cp")
        self.dp = self.input(layout, "parallelism.dp")
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
        self.global_batch = self.input(batch, "parallelism.global_batch")
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
        self.chunks = self.input(batch, "parallelism.interleave_chunks")
        self.build_network_inputs()
        self.measurements = MeasurementsPanel(self.state)
        self.inputs_layout.addWidget(self.measurements)

    def build_network_inputs(self) -> None:
        net = self.group("Network and efficiency")
        self.intra_bw = self.input(net, "parallelism.intra_node_bandwidth_bytes_per_s")
        self.inter_bw = self.input(net, "parallelism.inter_node_bandwidth_bytes_per_s")
        for attribute, path in (
            ("intra_eff", "intra_node_efficiency"),
            ("inter_eff", "inter_node_efficiency"),
            ("kernel_eff", "kernel_efficiency"),
            ("dp_overlap", "dp_overlap"),
            ("tp_overlap", "tp_overlap"),
        ):
            setattr(self, attribute, self.input(net, f"parallelism.{path}"))
        self.ep = self.input(net, "parallelism.expert_parallel")

    def build_charts(self) -> None:
        from llm_planner.gui.widgets.charts import MemoryBars, TimelineChart

        self.top = StillSplitter(Qt.Orientation.Horizontal)
        self.zero_bars = MemoryBars(
            "Per-GPU memory (peak) under ZeRO 0–3",
            ["weights", "gradients", "optimizer", "activations", "temporaries", "overhead"],
        )
        self.zero_bars.setObjectName("zero_bars")
        self.timeline = TimelineChart("Pipeline schedule")
        self.timeline.setObjectName("timeline")
        self.top.addWidget(self.zero_bars)
        self.top.addWidget(self.timeline)
        self.top.addWidget(self.figures)
        self.top.setSizes([440, 300, 360])
        # the charts' wrapped titles, axis names and legends need this much height at the
        # window's narrowest; less, and the layout draws them over the plots
        self.top.setMinimumHeight(320)
        self.search = SearchTable()
        self.search.apply_row.connect(self.apply_layout)
        self.search.apply_low_precision.clicked.connect(
            lambda _checked=False: self.apply_low_precision()
        )
        self.search.run_button.clicked.connect(lambda _checked=False: self.run_search(force=True))
        export_config.hook_search(self.search, lambda: self.state.scenario)
        self.right.addWidget(self.top)
        self.right.addWidget(self.search)
        self.right.setSizes([330, 300])
        self._searched_for: Scenario | None = None
        self.result: SearchResult | None = None
        self.worker = Latest(self)
        self.worker.done.connect(self._search_done)
        self.worker.failed.connect(self._search_failed)
        self.worker.busy_changed.connect(self.search.set_busy)
        self._search_timer = QTimer(self)
        self._search_timer.setSingleShot(True)
        self._search_timer.setInterval(SEARCH_DELAY_MS)
        self._search_timer.timeout.connect(self.run_search)

    def redraw(self, scenario: Scenario, report: Report) -> None:
        super().redraw(scenario, report)
        self.chunks.setEnabled(scenario.parallelism.schedule == "interleaved")
        # a stated first/last stage needs a pipeline; kept enabled while it holds a value, so
        # a plan that went back to pp 1 can clear it
        piped = scenario.parallelism.pp > 1
        self.first_stage_layers.setEnabled(
            piped or scenario.training.first_stage_layers is not None
        )
        self.last_stage_layers.setEnabled(piped or scenario.training.last_stage_layers is not None)
        # empty means "the GPU's own link": say which, rather than "(none)"
        gpu = scenario.gpu
        self.intra_bw.setPlaceholderText(
            f"{format_bandwidth(gpu.link_bandwidth_bytes_per_s)} ({gpu.link_name})"
        )
        # empty means one NIC per GPU: say how much that is for these GPUs per node
        per_node = network_bytes_per_s_per_node(gpu, scenario.parallelism)
        per_gpu = per_node / max(scenario.parallelism.gpus_per_node, 1)
        self.inter_bw.setPlaceholderText(
            f"{format_bandwidth(per_node)} ({scenario.parallelism.gpus_per_node} × "
            f"{format_bandwidth(per_gpu)} per GPU)"
        )
        self.draw_zero(scenario, report)
        self.draw_timeline(scenario, report)
        if self._searched_for is not None and self._searched_for != scenario:
            self._mark_stale(scenario)

    def _mark_stale(self, scenario: Scenario) -> None:
        """Rows ranked for another scenario are not shown next to this one's figures."""
        if self.search.rows:
            self.search.set_rows([])
        self.search.title.setText(
            f"<b>Ranked layouts</b> for {scenario.num_gpus:,} × {scenario.gpu.name}: searching…"
        )
        self._searched_for = None

    def draw_zero(self, scenario: Scenario, report: Report) -> None:
        """ZeRO 0–3 side by side from ``core.sections.parallelism.memory``."""
        from llm_planner.gui.widgets.charts import BarRow

        result = safe_call(zero_stages, scenario)
        if not result:
            return
        rows: list[BarRow] = []
        for entry in result:
            stage = int(entry.get("zero_stage", len(rows)))
            parts = {name: float(entry.get(key) or 0.0) for name, key in PARTS.items()}
            mark = "  ◀" if stage == report.parallelism.zero_stage else ""
            rows.append(BarRow(f"ZeRO {stage}{mark}", parts, entry.get("peak_bytes")))
        self.zero_bars.set_rows(rows, scenario.gpu.memory_bytes)

    def draw_timeline(self, scenario: Scenario, report: Report) -> None:
        """The schedule from ``core.sections.parallelism.schedule``; gaps are bubbles.
        With one stage there is no pipeline: the chart gives its room to the others."""
        from llm_planner.gui.widgets.charts import Block

        del scenario
        layout = report.parallelism
        pp = int(layout.pp)
        self.timeline.setVisible(pp > 1)
        if pp <= 1:
            return
        m = int(layout.gradient_accumulation_steps)
        shown = min(m, MAX_DRAWN_MICROBATCHES)
        v = layout.interleave_chunks or 1
        events = safe_call(pipeline_timeline, pp, shown, str(layout.schedule), v)
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
        bubble = layout.bubble_fraction
        self.timeline.info.setText(
            f"{pp} stages × {m} micro-batch{'es' if m > 1 else ''}{more}"
            + f" · bubble {100 * bubble:.1f}% of the step"
        )

    def redraw_slow(self, scenario: Scenario, report: Report) -> None:
        del scenario, report  # the search reads the state's scenario when it runs
        self._search_timer.start()

    def flush(self) -> None:
        """Run a pending search now and wait for it (tests, screenshots)."""
        if self._search_timer.isActive():
            self._search_timer.stop()
            self.run_search()
        self.worker.wait()

    def run_search(self, force: bool = False) -> None:
        """Start the search in a worker thread; a newer scenario supersedes an older run."""
        scenario = self.state.scenario
        if self._searched_for == scenario and not force:
            return
        self._searched_for = scenario
        self.search.title.setText(
            f"<b>Ranked layouts</b> for {scenario.num_gpus:,} × {scenario.gpu.name}: searching…"
        )
        self.worker.submit(lambda: (scenario, search_rows(scenario)))

    def _search_done(self, payload: tuple[Scenario, SearchResult]) -> None:
        scenario, result = payload
        if scenario != self.state.scenario:
            return  # the scenario moved on while it ran; its own run is queued
        self.result = result
        rows = [row.model_dump() for row in result.rows]
        self.search.set_rows(rows)
        alt = result.low_precision
        self.search.show_low_precision(
            alt.describe() if alt else None, alt is not None and alt.row is not None
        )
        where = f"{scenario.num_gpus:,} × {scenario.gpu.name}"
        if rows:
            self.search.title.setText(
                f"<b>{len(rows)} best of {result.fitting:,} layouts that fit</b> on {where}"
            )
        else:
            self.search.title.setText(
                f"<b>No layout of {where} fits</b> ({result.candidates:,} tried). Try more "
                "GPUs, a GPU with more memory, a shorter sequence, full recomputation or LoRA; "
                "the training tab lists the smallest changes that would fit."
            )

    def _search_failed(self, message: str) -> None:
        self.search.title.setText(f"<b>Search failed</b>: {message}")

    def apply_layout(self, row: dict[str, Any]) -> None:
        """Apply a search row's layout to the scenario as one undoable step."""
        from llm_planner.core.composition.search import SearchRow, apply_row

        try:
            scenario = apply_row(self.state.scenario, SearchRow.model_validate(row))
        except ValueError as error:
            log.warning("search row does not apply: %s", error)
            return
        self.state.replace(scenario, "Apply layout from search")

    def apply_low_precision(self) -> None:
        """Apply the proposed FP8 recipe with its best layout as one undoable step."""
        from llm_planner.core.composition.search import apply_row
        from llm_planner.core.inputs.scenario import with_changes

        alt = self.result.low_precision if self.result else None
        if alt is None or alt.row is None:
            return
        scenario = with_changes(
            apply_row(self.state.scenario, alt.row), {"training.precision": alt.precision}
        )
        self.state.replace(scenario, f"Apply {alt.precision} from search")
