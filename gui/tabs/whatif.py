"""The "What if" tab: the seed's open problems on the current scenario.

Four checkable groups (mixed cluster, RL in the loop, multimodal placement, compressed
communication); checking one plans it with defaults (an undo step), its fields edit it.
The figures come from ``core.composition.whatif.report`` (no formulas here); the chart is
the RL split: step time against the GPUs given to rollouts.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QFormLayout,
    QGroupBox,
    QLabel,
    QLineEdit,
    QSizePolicy,
    QSpinBox,
)

from llm_planner.core.composition.estimate import Report
from llm_planner.core.composition.scenario import Scenario
from llm_planner.core.composition.whatif.mixed import cluster_presets, preset_cluster
from llm_planner.core.inputs.whatif import (
    CompressionInputs,
    MultimodalInputs,
    RLInputs,
)
from llm_planner.core.primitives import units
from llm_planner.gui import colors
from llm_planner.gui.tabs.base import Tab

DEFAULTS: dict[str, Any] = {
    "rl": RLInputs,
    "multimodal": MultimodalInputs,
    "compression": CompressionInputs,
}
"""Each part's inputs when the user first checks it (the mixed cluster: the chosen preset)."""

COMM_KINDS = (
    ("data-parallel gradient sync", "data_parallel"),
    ("tensor-parallel all-reduce", "tensor_parallel"),
    ("pipeline send/receive", "pipeline_p2p"),
    ("MoE all-to-all", "expert_all_to_all"),
)


class WhatIfTab(Tab):
    title = "What if"
    section = "whatif"

    # ------------------------------------------------------------ inputs
    def _part_box(self, title: str, part: str, tooltip: str) -> QFormLayout:
        box = QGroupBox(title)
        box.setObjectName(f"whatif.{part}")
        box.setCheckable(True)
        box.setChecked(False)
        box.setToolTip(tooltip)
        box.toggled.connect(lambda on, p=part: self._toggle(p, on))
        form = QFormLayout(box)
        form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
        form.setLabelAlignment(Qt.AlignmentFlag.AlignRight)
        self.inputs_layout.addWidget(box)
        self.boxes[part] = box
        return form

    def _spin(
        self, form: QFormLayout, label: str, field: tuple[str, str], *, lo: int, hi: int
    ) -> QSpinBox:
        part, name = field
        spin = QSpinBox()
        spin.setObjectName(f"whatif.{part}.{name}")
        spin.setRange(lo, hi)
        spin.setKeyboardTracking(False)  # one change when typing ends, not per digit
        spin.valueChanged.connect(lambda v, p=part, n=name: self._set(p, {n: int(v)}))
        form.addRow(label, spin)
        self.fields[(part, name)] = spin
        return spin

    @staticmethod
    def _fit(combo: QComboBox) -> QComboBox:
        """Elide long item names instead of widening the column (full name in the tooltip)."""
        combo.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        combo.setMinimumContentsLength(8)
        combo.currentIndexChanged.connect(lambda _i, c=combo: c.setToolTip(c.currentText()))
        return combo

    def build_inputs(self) -> None:
        self.boxes: dict[str, QGroupBox] = {}
        self.fields: dict[tuple[str, str], Any] = {}
        self.note(
            "Plans on top of this scenario's model, training setup and layout. "
            "Check a part to plan it; its figures appear on the right."
        )
        mixed = self._part_box(
            "Mixed cluster",
            "mixed_cluster",
            "Node groups with different GPUs and networks: the slowest sets the pace",
        )
        self.cluster = self._fit(QComboBox())
        self.cluster.setObjectName("whatif.mixed_cluster.preset")
        for preset_id, preset in cluster_presets().items():
            self.cluster.addItem(str(preset["name"]), preset_id)
            self.cluster.setItemData(
                self.cluster.count() - 1, str(preset["source"]), Qt.ItemDataRole.ToolTipRole
            )
        self.cluster.setCurrentIndex(max(0, self.cluster.findData("h100-a100-mixed")))
        self.cluster.activated.connect(self._cluster_chosen)
        mixed.addRow("Cluster", self.cluster)

        rl = self._part_box(
            "RL in the loop", "rl", "Rollout (generation) GPUs against training GPUs per RL step"
        )
        self._spin(rl, "GPUs", ("rl", "num_gpus"), lo=2, hi=1_000_000)
        self._spin(rl, "Prompts/step", ("rl", "prompts_per_step"), lo=1, hi=10_000_000)
        self._spin(rl, "Samples/prompt", ("rl", "samples_per_prompt"), lo=1, hi=1024)
        self._spin(rl, "Prompt tokens", ("rl", "prompt_tokens"), lo=1, hi=10_000_000)
        self._spin(rl, "Response tokens", ("rl", "response_tokens"), lo=1, hi=10_000_000)
        self._spin(rl, "GPUs per engine", ("rl", "engine_gpus"), lo=1, hi=64)
        self.placement = self._fit(QComboBox())
        self.placement.setObjectName("whatif.rl.placement")
        self.placement.addItem("separate pools", "separate")
        self.placement.addItem("colocated (reshard)", "colocated")
        self.placement.activated.connect(
            lambda i: self._set("rl", {"placement": self.placement.itemData(i)})
        )
        rl.addRow("Placement", self.placement)
        self.overlap = QCheckBox("next rollout during training")
        self.overlap.setObjectName("whatif.rl.overlap")
        self.overlap.toggled.connect(lambda on: self._set("rl", {"overlap": bool(on)}))
        rl.addRow("", self.overlap)

        self._build_multimodal_and_compression()

    def _build_multimodal_and_compression(self) -> None:
        mm = self._part_box(
            "Multimodal placement",
            "multimodal",
            "Where a vision encoder runs beside the text model",
        )
        self.encoder = QLineEdit()
        self.encoder.setObjectName("whatif.multimodal.encoder_params")
        self.encoder.setToolTip("Encoder parameters, e.g. 600M or 6B")
        self.encoder.editingFinished.connect(self._encoder_edited)
        mm.addRow("Encoder params", self.encoder)
        self._spin(mm, "Tokens/image", ("multimodal", "tokens_per_image"), lo=1, hi=1_000_000)
        self.frozen = QCheckBox("frozen encoder (forward only)")
        self.frozen.setObjectName("whatif.multimodal.frozen")
        self.frozen.toggled.connect(lambda on: self._set("multimodal", {"encoder_trained": not on}))
        mm.addRow("", self.frozen)

        comp = self._part_box(
            "Compressed communication", "compression", "Fewer bytes on the wire, a kernel to pay"
        )
        self.kind = self._fit(QComboBox())
        self.kind.setObjectName("whatif.compression.kind")
        for text, value in COMM_KINDS:
            self.kind.addItem(text, value)
        self.kind.activated.connect(
            lambda i: self._set("compression", {"kind": self.kind.itemData(i)})
        )
        comp.addRow("Collective", self.kind)
        self.ratio = QDoubleSpinBox()
        self.ratio.setObjectName("whatif.compression.ratio")
        self.ratio.setRange(1.0, 1000.0)
        self.ratio.setDecimals(1)
        self.ratio.setKeyboardTracking(False)
        self.ratio.valueChanged.connect(lambda v: self._set("compression", {"ratio": float(v)}))
        comp.addRow("Ratio", self.ratio)
        self.problem = QLabel()
        self.problem.setObjectName("whatif_problem")
        self.problem.setWordWrap(True)
        self.problem.setStyleSheet(f"color: {colors.BAD};")
        self.inputs_layout.addWidget(self.problem)

    # ------------------------------------------------------------ changes
    def _replace(self, whatif: Any, text: str) -> None:
        scenario = self.state.scenario.model_copy(update={"whatif": whatif})
        self.state.replace(scenario, text)

    def _toggle(self, part: str, on: bool) -> None:
        w = self.state.scenario.whatif
        if on == (getattr(w, part) is not None):
            return
        if not on:
            value = None
        elif part == "mixed_cluster":
            value = preset_cluster(str(self.cluster.currentData()))
        else:
            value = DEFAULTS[part]()
        verb = "Plan" if on else "Stop planning"
        self._replace(w.model_copy(update={part: value}), f"{verb} {part.replace('_', ' ')}")

    def _set(self, part: str, changes: dict[str, Any]) -> None:
        if self._syncing:
            return
        w = self.state.scenario.whatif
        current = getattr(w, part)
        if current is None:
            return
        try:
            value = type(current).model_validate({**current.model_dump(), **changes})
        except ValueError as error:
            self.problem.setText(f"{part.replace('_', ' ')}: {str(error).splitlines()[-1]}")
            return
        self.problem.setText("")
        if value != current:
            self._replace(w.model_copy(update={part: value}), f"Change {part.replace('_', ' ')}")

    def _cluster_chosen(self, index: int) -> None:
        w = self.state.scenario.whatif
        if w.mixed_cluster is None:
            return
        chosen = preset_cluster(str(self.cluster.itemData(index)))
        self._replace(w.model_copy(update={"mixed_cluster": chosen}), "Choose cluster")

    def _encoder_edited(self) -> None:
        text = self.encoder.text().strip()
        try:
            value = units.parse_count(text)
        except (units.UnitError, ValueError) as error:
            self.problem.setText(f"Encoder params: {error}")
            return
        self._set("multimodal", {"encoder_params": value})

    # ------------------------------------------------------------ view
    def build_charts(self) -> None:
        from llm_planner.gui.widgets.charts import SeriesChart

        self.rl_chart = SeriesChart("RL step against rollout GPUs", "rollout GPUs", "seconds")
        self.rl_chart.add_line("step", "RL step", colors.SERIES[0], symbol="o")
        self.rl_chart.add_line("rollout", "rollout", colors.SERIES[1], dashed=True)
        self.rl_chart.add_line("training", "training", colors.SERIES[2], dashed=True)
        self.rl_chart.add_markers("best", "best split", colors.OK, symbol="star", size=16)
        self.empty = QLabel(
            "Nothing planned yet: check a part on the left (a mixed cluster, RL in the loop, "
            "a vision encoder's placement or compressed communication) to see its figures."
        )
        self.empty.setObjectName("whatif_empty")
        self.empty.setWordWrap(True)
        self.empty.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.right.addWidget(self.empty)
        self.right.addWidget(self.rl_chart)
        self.whatif: Any = None

    _syncing = False

    def _sync_inputs(self, scenario: Scenario) -> None:
        """Show the scenario's what-if inputs without writing them back."""
        self._syncing = True
        try:
            w = scenario.whatif
            for part, box in self.boxes.items():
                blocked = box.blockSignals(True)
                box.setChecked(getattr(w, part) is not None)
                box.blockSignals(blocked)
            for (part, name), spin in self.fields.items():
                value = getattr(getattr(w, part) or DEFAULTS[part](), name)
                blocked = spin.blockSignals(True)
                spin.setValue(int(value))
                spin.blockSignals(blocked)
            rl = w.rl or RLInputs()
            self.placement.setCurrentIndex(self.placement.findData(rl.placement))
            self.overlap.blockSignals(True)
            self.overlap.setChecked(rl.overlap)
            self.overlap.blockSignals(False)
            mm = w.multimodal or MultimodalInputs()
            if not self.encoder.hasFocus():
                self.encoder.setText(units.format_count(mm.encoder_params))
            self.frozen.blockSignals(True)
            self.frozen.setChecked(not mm.encoder_trained)
            self.frozen.blockSignals(False)
            comp = w.compression or CompressionInputs()
            self.kind.setCurrentIndex(self.kind.findData(comp.kind))
            self.ratio.blockSignals(True)
            self.ratio.setValue(comp.ratio)
            self.ratio.blockSignals(False)
        finally:
            self._syncing = False

    def redraw(self, scenario: Scenario, report: Report) -> None:
        del report  # the plans read it in redraw_slow
        self._sync_inputs(scenario)
        self.empty.setVisible(not scenario.whatif.any)
        self.figures.setVisible(scenario.whatif.any)
        self.rl_chart.setVisible(scenario.whatif.rl is not None)
        if not scenario.whatif.any:
            self.whatif = None
            self.figures.set_figures([])
            for key in ("step", "rollout", "training"):
                self.rl_chart.set_line(key, [], [])
            self.rl_chart.set_markers("best", [], [])

    def redraw_slow(self, scenario: Scenario, report: Report) -> None:
        """The plans, priced by ``estimate()`` (``report.whatif``): drawn once typing pauses."""
        if not scenario.whatif.any:
            return
        self.whatif = report.whatif
        if self.whatif is None:  # the estimate failed: the last report stays on screen
            self.problem.setText("This what-if could not be computed (see the log).")
            return
        self.figures.set_figures(self.whatif.figures())
        rl = self.whatif.rl
        curve = rl.curve if rl is not None else []
        xs = [float(p.rollout_gpus) for p in curve]
        self.rl_chart.set_line("step", xs, [p.step_seconds for p in curve])
        self.rl_chart.set_line("rollout", xs, [p.rollout_seconds for p in curve])
        self.rl_chart.set_line("training", xs, [p.training_seconds for p in curve])
        self.rl_chart.set_markers(
            "best",
            [float(rl.rollout_gpus)] if rl is not None else [],
            [rl.step_seconds] if rl is not None else [],
        )
