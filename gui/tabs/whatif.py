"""The "What if" tab: the seed's open problems on the current scenario.

Four checkable groups (mixed cluster, RL in the loop, multimodal placement, compressed
communication); checking one plans it with defaults (an undo step), its fields edit it
through the shared binder (:class:`llm_planner.gui.binding.Binder`), as every tab's do.
The figures come from ``core.composition.whatif.report`` (no formulas here); the chart is
the RL split: step time against the GPUs given to rollouts.
"""

from __future__ import annotations

from collections.abc import Callable
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
from llm_planner.core.composition.whatif.report import WhatIfReport
from llm_planner.core.inputs.registry import format_count
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


def _default(part: str, name: str) -> Callable[[], Any]:
    """What a field of a part not planned yet shows (disabled): the part's default."""
    return lambda: getattr(DEFAULTS[part](), name)


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
        self.binder.spin(spin, f"whatif.{part}.{name}", label, unset=_default(part, name))
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
        self.binder.combo(
            self.placement, "whatif.rl.placement", "Placement", unset=_default("rl", "placement")
        )
        rl.addRow("Placement", self.placement)
        self.overlap = QCheckBox("next rollout during training")
        self.overlap.setObjectName("whatif.rl.overlap")
        self.binder.check(
            self.overlap, "whatif.rl.overlap", "Overlap", unset=_default("rl", "overlap")
        )
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
        self.binder.line(
            self.encoder,
            "whatif.multimodal.encoder_params",
            lambda text: units.parse_count(text, "Encoder params"),
            format_count,
            "Encoder params",
            "Encoder parameters, e.g. 600M or 6B",
            unset=_default("multimodal", "encoder_params"),
        )
        mm.addRow("Encoder params", self.encoder)
        self._spin(mm, "Tokens/image", ("multimodal", "tokens_per_image"), lo=1, hi=1_000_000)
        self.trained = QCheckBox("encoder trained (off: frozen, forward only)")
        self.trained.setObjectName("whatif.multimodal.encoder_trained")
        self.binder.check(
            self.trained,
            "whatif.multimodal.encoder_trained",
            "Encoder trained",
            unset=_default("multimodal", "encoder_trained"),
        )
        mm.addRow("", self.trained)

        comp = self._part_box(
            "Compressed communication", "compression", "Fewer bytes on the wire, a kernel to pay"
        )
        self.kind = self._fit(QComboBox())
        self.kind.setObjectName("whatif.compression.kind")
        for text, value in COMM_KINDS:
            self.kind.addItem(text, value)
        self.binder.combo(
            self.kind,
            "whatif.compression.kind",
            "Collective",
            unset=_default("compression", "kind"),
        )
        comp.addRow("Collective", self.kind)
        self.ratio = QDoubleSpinBox()
        self.ratio.setObjectName("whatif.compression.ratio")
        self.ratio.setRange(1.0, 1000.0)
        self.ratio.setDecimals(1)
        self.ratio.setKeyboardTracking(False)
        self.binder.spin(
            self.ratio, "whatif.compression.ratio", "Ratio", unset=_default("compression", "ratio")
        )
        comp.addRow("Ratio", self.ratio)
        self.problem = QLabel()
        self.problem.setObjectName("whatif_problem")
        self.problem.setWordWrap(True)
        self.problem.setStyleSheet(f"color: {colors.BAD};")
        self.inputs_layout.addWidget(self.problem)

    # ------------------------------------------------------------ changes
    # the fields go through the shared binder (gui/binding.py); planning a part and choosing
    # a cluster preset set a whole part, one undo step each, through the same state
    def _toggle(self, part: str, on: bool) -> None:
        w = self.state.scenario.whatif
        if on == (getattr(w, part) is not None):
            return
        value: Any = None
        if on and part == "mixed_cluster":
            value = preset_cluster(str(self.cluster.currentData())).model_dump()
        elif on:
            value = DEFAULTS[part]().model_dump()
        verb = "Plan" if on else "Stop planning"
        self.state.set_fields({f"whatif.{part}": value}, f"{verb} {part.replace('_', ' ')}")

    def _cluster_chosen(self, index: int) -> None:
        if self.state.scenario.whatif.mixed_cluster is None:
            return
        chosen = preset_cluster(str(self.cluster.itemData(index)))
        self.state.set_fields({"whatif.mixed_cluster": chosen.model_dump()}, "Choose cluster")

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
        self.whatif: WhatIfReport | None = None

    def _sync_boxes(self, scenario: Scenario) -> None:
        """Check the boxes of the parts the scenario plans (the fields follow the binder)."""
        for part, box in self.boxes.items():
            planned = getattr(scenario.whatif, part) is not None
            if box.isChecked() != planned:
                blocked = box.blockSignals(True)
                box.setChecked(planned)
                box.blockSignals(blocked)

    def redraw(self, scenario: Scenario, report: Report) -> None:
        del report  # the plans read it in redraw_slow
        self._sync_boxes(scenario)
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
        self.problem.setText("")
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
