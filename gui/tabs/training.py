"""Training memory per GPU: after-load vs peak bars, the activation ledger, the pickers."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHeaderView,
    QTableWidget,
    QTableWidgetItem,
)

from llm_planner.core.composition.estimate import Report
from llm_planner.core.composition.scenario import Scenario
from llm_planner.core.inputs.registry import input_at
from llm_planner.core.primitives import units
from llm_planner.core.quantities.activation_tensors import LedgerEntry
from llm_planner.core.quantities.activations import PROFILES
from llm_planner.core.quantities.cuda_graphs import CUDA_GRAPHS
from llm_planner.core.quantities.optimizers import OPTIMIZERS, PRECISIONS
from llm_planner.core.sections.training import TrainingReport
from llm_planner.gui.tabs.base import (
    FitPanel,
    Tab,
    context_warning,
    named_items,
    with_fit_panel,
)
from llm_planner.gui.widgets.still_splitter import StillSplitter

if TYPE_CHECKING:
    from llm_planner.gui.widgets.charts import BarRow

PARTS = {
    "weights": "weights_bytes",
    "gradients": "gradients_bytes",
    "optimizer": "optimizer_bytes",
    "activations": "activations_bytes",
    "temporaries": "temporary_bytes",
    "overhead": "overhead_bytes",
}
PERSISTENT = ("weights", "gradients", "optimizer")


def training_rows(scenario: Scenario, section: TrainingReport) -> tuple[list[BarRow], float]:
    """After-load and peak rows from the report's per-GPU fields (no arithmetic here)."""
    from llm_planner.gui.widgets.charts import BarRow

    formulas = {figure.key: figure.formula for figure in section.figures()}
    values = {
        "weights": section.weights_bytes,
        "gradients": section.gradients_bytes,
        "optimizer": section.optimizer_bytes,
        "activations": section.activations_bytes,
        "temporaries": section.temporary_bytes,
        "overhead": section.overhead_bytes,
    }
    explain = {name: formulas.get(key, "") for name, key in PARTS.items()}
    after_parts = {k: values[k] for k in PERSISTENT}
    after_parts["overhead"] = section.cuda_context_bytes
    after_explain = {**explain, "overhead": formulas.get("cuda_context_bytes", "CUDA context")}
    capacity = section.capacity_bytes or scenario.gpu.memory_bytes
    return [
        BarRow("after load", after_parts, section.after_load_bytes, after_explain),
        BarRow("peak", values, section.peak_bytes, explain),
    ], float(capacity)


class TrainingTab(Tab):
    title = "Training memory"
    section = "training"

    def build_inputs(self) -> None:
        self.context_warning = self.warning()
        self.layout_note = self.note("")
        self.layout_note.setObjectName("training_layout_note")
        recipe = self.group("Precision and optimizer")
        self.precision = self.combo(
            recipe,
            "Precision",
            "training.precision",
            named_items(PRECISIONS),
            "Bytes per parameter for weights, gradients and optimizer state",
        )
        self.optimizer = self.combo(
            recipe,
            "Optimizer",
            "training.optimizer",
            named_items(OPTIMIZERS),
            "Optimizer (its state per parameter)",
        )
        self.low_precision_params = self.check(
            recipe,
            "Low-precision parameters",
            "training.low_precision_params",
            "FP8/FP4 recipes: weights kept only in FP8/FP4 and gathered so "
            "(Megatron --fp8-param-gather)",
        )
        self.grad_reduce_16bit = self.check(
            recipe,
            "16-bit gradient reduce",
            "training.grad_reduce_16bit",
            "Main gradients kept and reduced in 16 bits (Megatron --grad-reduce-in-bf16)",
        )
        shape = self.group("Batch")
        self.seq_len = self.input(shape, "training.seq_len")
        self.micro_batch = self.input(shape, "training.micro_batch")
        objective = self.group("Multi-token prediction")
        self.mtp_layers = self.input(objective, "training.mtp_layers")
        acts = self.group("Activations")
        self.recompute = self.combo(
            acts,
            "Recompute",
            "training.recompute",
            [
                ("none", "none"),
                ("selective (as the stack defines it)", "selective"),
                ("full (layer inputs only)", "full"),
                ("drop tensors above X", "threshold"),
            ],
            "Activation recomputation policy",
            also=self._threshold_start,
        )
        self.threshold = self.input(acts, "training.recompute_threshold_bytes")
        self.recompute_method = self.combo(
            acts,
            "Full recompute method",
            "training.recompute_method",
            [
                ("uniform (chunks of N layers)", "uniform"),
                ("block (first N layers per stage)", "block"),
                ("every N-th layer (torchtitan)", "every"),
            ],
            "How full recomputation covers a stage's layers (Megatron --recompute-method, "
            "torchtitan selective_ac_option N)",
        )
        self.recompute_layers = self.input(acts, "training.recompute_layers")
        self.recompute_checkpoint = self.combo(
            acts,
            "Checkpoints on",
            "training.recompute_checkpoint",
            [
                ("GPU", "gpu"),
                ("partitioned over TP", "partitioned"),
                ("CPU (host memory)", "cpu"),
            ],
            "Where full recomputation's layer inputs live (DeepSpeed partition_activations, "
            "cpu_checkpointing; Megatron --distribute-saved-activations)",
        )
        self.recompute_modules = self.input(acts, "training.recompute_modules")
        self.activation_offload = self.input(acts, "training.activation_offload_layers")
        self.flash = self.check(
            acts,
            "FlashAttention",
            "training.flash_attention",
            "No s² score tensors; keeps output and log-sum-exp",
        )
        self.implementation = self.combo(
            acts,
            "Implementation",
            "training.implementation",
            named_items(PROFILES),
            "Which tensors the training stack saves (activation-ledger profile)",
        )
        self.cuda_graphs = self.combo(
            acts,
            input_at("training.cuda_graphs").label,
            "training.cuda_graphs",
            [(scope, scope) for scope in CUDA_GRAPHS],
            input_at("training.cuda_graphs").help,
        )
        tune = self.group("Fine-tuning")
        self.lora = self.input(tune, "training.lora_rank")
        self.qlora = self.check(
            tune, "QLoRA (4-bit frozen base)", "training.qlora", "Frozen base weights in 4 bits"
        )
        self.dropout = self.check(
            acts,
            "Dropout",
            "training.dropout",
            "Dropout on attention probabilities and residuals (GPT-3 style; Llama uses none)",
        )
        offload = self.group("Offload (DeepSpeed ZeRO)")
        devices = [("none", "none"), ("host RAM (cpu)", "cpu"), ("NVMe", "nvme")]
        self.offload_optimizer = self.combo(
            offload,
            input_at("training.offload_optimizer").label,
            "training.offload_optimizer",
            devices,
            input_at("training.offload_optimizer").help,
        )
        self.offload_params = self.combo(
            offload,
            input_at("training.offload_params").label,
            "training.offload_params",
            devices,
            input_at("training.offload_params").help,
        )
        self.host_memory = self.input(offload, "training.host_memory_bytes_per_node")
        self.host_link = self.input(offload, "training.pcie_bandwidth_bytes_per_s")
        experts = self.group("Mixture of experts")
        self.moe_capacity = self.input(experts, "training.moe_capacity_factor")
        self.moe_imbalance = self.input(experts, "training.moe_load_imbalance")
        self.moe_paged_stash = self.input(experts, "training.moe_paged_stash")
        self.moe_dispatcher = self.combo(
            experts,
            "MoE dispatcher",
            "training.moe_dispatcher",
            [("all-to-all", "alltoall"), ("all-gather", "allgather")],
            "How MoE tokens reach their experts (Megatron-Core's token dispatchers)",
        )
        allowances = self.group("Allowances (per GPU)")
        self.cuda_context = self.input(allowances, "training.cuda_context_bytes")
        self.fragmentation = self.input(allowances, "training.fragmentation_fraction")

    def _threshold_start(self, policy: Any) -> dict[str, Any]:
        """Choosing "drop tensors above X" with no X yet starts X at the largest tensor one
        layer saves (the report's ledger): nothing is dropped until X is lowered, and the
        choice is never refused for want of an X (the command line gives both at once)."""
        if policy != "threshold" or self.state.scenario.training.recompute_threshold_bytes:
            return {}
        largest = max((entry.bytes for entry in self.state.report.training.ledger), default=1.0)
        return {"training.recompute_threshold_bytes": max(largest, 1.0)}

    def build_charts(self) -> None:
        from llm_planner.gui.widgets.charts import MemoryBars

        row = StillSplitter(Qt.Orientation.Vertical)
        self.bars = MemoryBars(
            "Per-GPU memory: after load and at peak",
            ["weights", "gradients", "optimizer", "activations", "temporaries", "overhead"],
        )
        self.bars.setObjectName("training_bars")
        self.ledger = QTableWidget(0, 5)
        self.ledger.setObjectName("ledger")
        self.ledger.setHorizontalHeaderLabels(
            ["Saved tensor (per layer, per GPU)", "Block", "Shape", "dtype", "Bytes"]
        )
        self.ledger.verticalHeader().setVisible(False)
        self.ledger.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.ledger.setAlternatingRowColors(True)
        self.ledger.setSortingEnabled(False)
        header = self.ledger.horizontalHeader()
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        for column in (1, 2, 3, 4):
            header.setSectionResizeMode(column, QHeaderView.ResizeMode.Interactive)
        self.ledger.verticalHeader().setDefaultSectionSize(self.fontMetrics().height() + 6)
        self.fit_panel = FitPanel(
            self.state, lambda r: (r.training_fit_suggestions, r.training.fits)
        )
        self.fit_panel.setObjectName("training_fit")
        row.addWidget(with_fit_panel(self.bars, self.fit_panel))
        row.addWidget(self.ledger)
        self.right.addWidget(row)

    def redraw(self, scenario: Scenario, report: Report) -> None:
        super().redraw(scenario, report)
        policy = scenario.training.recompute
        self.threshold.setEnabled(policy == "threshold")
        # each option applies to one policy (full: how it covers a stage and where its
        # checkpoints live; selective: Megatron's module list) and the MoE inputs to a model
        # with experts: the others are greyed out, as X is
        for widget in (self.recompute_method, self.recompute_layers, self.recompute_checkpoint):
            widget.setEnabled(policy == "full")
        self.recompute_modules.setEnabled(policy == "selective")
        # Megatron's --fp8-param-gather applies to an FP8/FP4 recipe's quantized weights only
        recipe = PRECISIONS.get(scenario.training.precision)
        self.low_precision_params.setEnabled(
            recipe is not None and recipe.low_precision_copy_bytes > 0
        )
        has_experts = scenario.model.architecture.moe is not None
        for widget in (
            self.moe_capacity,
            self.moe_imbalance,
            self.moe_paged_stash,
            self.moe_dispatcher,
        ):
            widget.setEnabled(has_experts)
        section = report.training
        par = report.parallelism
        self.layout_note.setText(
            f"Per GPU under the layout set on the <b>Parallelism</b> tab: "
            f"{par.layout_label} (ZeRO, TP, PP and DP are set there)."
        )
        self.set_warning(
            self.context_warning,
            context_warning(
                scenario.model.architecture.max_context,
                scenario.training.seq_len,
                "Sequence length",
            ),
        )
        rows, capacity = training_rows(scenario, section)
        self.bars.set_rows(rows, capacity)
        self.fit_panel.show_report(report)
        self.fill_ledger([*section.ledger, *section.outside_ledger])

    def fill_ledger(self, ledger: list[LedgerEntry]) -> None:
        """One row per saved tensor, as the training estimator itemises it."""
        resize = self.ledger.rowCount() != len(ledger)
        self.ledger.setRowCount(len(ledger))
        for row, entry in enumerate(ledger):
            texts = [
                entry.name,
                entry.block,
                entry.shape,
                entry.dtype,
                units.format_bytes(entry.bytes),
            ]
            tip = (
                f"{texts[0]}: {texts[2]} elements of {texts[3]}"
                + (" (dropped by selective recomputation)" if entry.attention_core else "")
                + (f" — sharded over {entry.shard}" if entry.shard else "")
            )
            for column, text in enumerate(texts):
                item = self.ledger.item(row, column)
                if item is None:
                    item = QTableWidgetItem()
                    if column == 4:
                        item.setTextAlignment(
                            Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter
                        )
                    self.ledger.setItem(row, column, item)
                if item.text() != text:
                    item.setText(text)
                if item.toolTip() != tip:
                    item.setToolTip(tip)
        if resize:
            for column in (1, 2, 3, 4):
                self.ledger.resizeColumnToContents(column)
