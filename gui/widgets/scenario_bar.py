"""Model and GPU pickers (presets, import config.json, custom size) and the GPU count."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from PySide6.QtCore import QSortFilterProxyModel, Qt, Signal
from PySide6.QtGui import QStandardItem, QStandardItemModel
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from llm_planner.core.composition.scenario import Scenario
from llm_planner.core.primitives import units
from llm_planner.core.primitives.architecture import Architecture
from llm_planner.core.primitives.gpus import get_gpu, gpu_catalog
from llm_planner.core.primitives.presets import get_preset, model_presets
from llm_planner.gui.binding import Binder, ScenarioState, validation_message
from llm_planner.gui.formatting import gpu_tooltip
from llm_planner.gui.widgets.elided import ElidedCombo

log = logging.getLogger(__name__)
IMPORT = "__import__"
FIND = "__find__"
CUSTOM = "__custom__"


def model_kind(arch: Architecture) -> str:
    """Dense, MoE, state-space (RWKV, Mamba) or hybrid, from the architecture's own fields."""
    recurrent = arch.recurrent
    if recurrent is not None:
        kind = str(recurrent.kind)
        return f"hybrid {kind} + attention" if arch.attention_layers else kind
    return "MoE" if arch.moe is not None else "dense"


def preset_rows() -> list[tuple[str, str, str, str]]:
    """(id, name, kind, size) of every preset, size as "47B (13B active)"."""
    from llm_planner.core.primitives.architecture import count_parameters

    rows = []
    for preset in model_presets().values():
        counts = count_parameters(preset.architecture)
        size = units.format_count(counts.total)
        if counts.active != counts.total:
            size += f" ({units.format_count(counts.active)} active)"
        rows.append((preset.id, preset.architecture.name, model_kind(preset.architecture), size))
    return rows


def _words(text: str) -> list[str]:
    """Lower-case words, hyphens, dots and underscores counted as spaces: "Llama-3.1-8B" →
    llama, 3, 1, 8b."""
    for separator in "-._/,·()":
        text = text.replace(separator, " ")
    return text.casefold().split()


class WordFilter(QSortFilterProxyModel):
    """Rows with a word starting with each typed word, in any column and order, separators
    ignored: "llama 3" finds Llama-3.1-8B and not Llama-2-13B (a fixed string would look for
    "llama 3", space included, and find nothing)."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self._typed: list[str] = []

    def set_typed(self, text: str) -> None:
        self._typed = _words(text)
        self.invalidateFilter()

    def filterAcceptsRow(self, row: int, parent: Any) -> bool:  # noqa: N802 (Qt API)
        if not self._typed:
            return True
        source = self.sourceModel()
        words = [
            word
            for column in range(source.columnCount())
            for word in _words(str(source.index(row, column, parent).data() or ""))
        ]
        return all(any(word.startswith(typed) for word in words) for typed in self._typed)


class ModelFinder(QDialog):
    """Search the presets by name, kind or size; Enter or a double-click picks one."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setWindowTitle("Find a model")
        self.resize(520, 420)
        layout = QVBoxLayout(self)
        self.search = QLineEdit()
        self.search.setObjectName("model_search")
        self.search.setPlaceholderText("Search presets: name, family, MoE, mamba, 70B…")
        self.search.setClearButtonEnabled(True)
        layout.addWidget(self.search)
        source = QStandardItemModel(0, 3, self)
        source.setHorizontalHeaderLabels(["Model", "Kind", "Parameters"])
        for preset_id, name, kind, size in preset_rows():
            items = [QStandardItem(name), QStandardItem(kind), QStandardItem(size)]
            for item in items:
                item.setData(preset_id, Qt.ItemDataRole.UserRole)
                item.setEditable(False)
            source.appendRow(items)
        self.proxy = WordFilter(self)
        self.proxy.setSourceModel(source)
        self.search.textChanged.connect(self.proxy.set_typed)
        self.view = QTableView()
        self.view.setObjectName("model_list")
        self.view.setModel(self.proxy)
        self.view.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.view.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.view.verticalHeader().setVisible(False)
        self.view.horizontalHeader().setStretchLastSection(True)
        self.view.setSortingEnabled(True)
        self.view.resizeColumnsToContents()
        self.view.doubleClicked.connect(lambda _index: self.accept())
        layout.addWidget(self.view)
        buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel
        )
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        layout.addWidget(buttons)
        self.search.returnPressed.connect(self.accept)
        self.search.textChanged.connect(lambda _text: self.view.selectRow(0))
        self.view.selectRow(0)

    def chosen(self) -> str | None:
        """The selected preset id (the first match if none is selected), or None."""
        rows = self.view.selectionModel().selectedRows()
        index = rows[0] if rows else self.proxy.index(0, 0)
        value = index.data(Qt.ItemDataRole.UserRole) if index.isValid() else None
        return str(value) if value is not None else None


def _text_width(edit: QLineEdit, sample: str) -> int:
    """Pixels a line edit needs to show ``sample`` whole (text, margins and frame)."""
    margins = edit.textMargins()
    return edit.fontMetrics().horizontalAdvance(sample) + margins.left() + margins.right() + 14


def _parse_name(text: str) -> str:
    name = text.strip()
    if not name:
        raise ValueError("Name: a scenario needs a name")
    return name


def _add_catalog_gpus(combo: QComboBox) -> None:
    """Every catalog GPU as an item of ``combo`` ("name (memory)", its id as data), its
    datasheet as the item's tooltip."""
    for gpu in gpu_catalog().values():
        combo.addItem(f"{gpu.name} ({units.format_gb(gpu.memory_bytes)})", gpu.id)
        combo.setItemData(combo.count() - 1, gpu_tooltip(gpu), Qt.ItemDataRole.ToolTipRole)


class ScenarioBar(QWidget):
    """Model ▾, size override, GPU ▾, GPU count — shared by every tab."""

    import_failed = Signal(str)

    def __init__(self, state: ScenarioState, binder: Binder, parent: QWidget | None = None):
        super().__init__(parent)
        self.state = state
        self.binder = binder
        layout = QHBoxLayout(self)
        layout.setContentsMargins(4, 2, 4, 2)
        self.name = QLineEdit()
        self.name.setObjectName("name")
        self.name.setMinimumWidth(80)
        binder.line(
            self.name,
            "name",
            _parse_name,
            str,
            "Name",
            "The scenario's name (shown in the title, the library and exported files)",
        )
        self.model = ElidedCombo()
        self.model.setObjectName("model_picker")
        self.model.setMinimumContentsLength(10)
        self.model.setSizeAdjustPolicy(
            QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon
        )
        for preset_id, name, kind, size in preset_rows():
            self.model.addItem(f"{name} · {size}", preset_id)
            self.model.setItemData(
                self.model.count() - 1, f"{name}: {kind}, {size}", Qt.ItemDataRole.ToolTipRole
            )
        self.model.insertSeparator(self.model.count())
        self.model.addItem("Find a model…", FIND)
        self.model.addItem("Import config.json, model folder or GGUF…", IMPORT)
        self.model.setToolTip(
            "Model preset (published architecture), or import a Hugging Face config.json"
        )
        self.model.currentIndexChanged.connect(self._model_chosen)
        self.params = QLineEdit()
        self.params.setObjectName("model.params_override")
        self.params.setMaximumWidth(110)
        binder.described(self.params, "model.params_override")
        self.params.setPlaceholderText("exact count")
        self.gpu = ElidedCombo()
        self.gpu.setObjectName("gpu_picker")
        _add_catalog_gpus(self.gpu)
        self.gpu.setToolTip("GPU model (catalog datasheet figures)")
        self.gpu.setMinimumContentsLength(10)
        self.gpu.setSizeAdjustPolicy(
            QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon
        )
        self.gpu.currentIndexChanged.connect(self._gpu_chosen)
        self.num_gpus = QLineEdit()
        self.num_gpus.setObjectName("num_gpus")
        self.num_gpus.setMaximumWidth(90)
        binder.described(self.num_gpus, "num_gpus")
        self.gpu_memory = QLineEdit()
        self.gpu_memory.setObjectName("gpu.memory_bytes")
        self.gpu_memory.setMaximumWidth(90)
        binder.described(self.gpu_memory, "gpu.memory_bytes")
        # at the window's narrowest the layout squeezes the fields: never below their usual
        # text ("memory .00 GB" at 1024 px)
        for edit, sample in ((self.gpu_memory, "000.00 GB"), (self.num_gpus, "16384")):
            edit.setMinimumWidth(_text_width(edit, sample))
        for text, widget in (
            ("Name", self.name),
            ("Model", self.model),
            ("Params", self.params),
            ("GPU", self.gpu),
            ("memory", self.gpu_memory),
            ("GPUs", self.num_gpus),
        ):
            label = QLabel(text)
            label.setBuddy(widget)
            layout.addWidget(label)
            layout.addWidget(widget)
        layout.setStretchFactor(self.name, 2)
        layout.setStretchFactor(self.model, 2)
        layout.setStretchFactor(self.gpu, 2)
        state.changed.connect(self.refresh)
        self.refresh(state.scenario)

    def refresh(self, scenario: Scenario, _report: Any = None) -> None:
        blocked = self.model.blockSignals(True)
        preset = scenario.model.preset
        index = self.model.findData(preset) if preset else -1
        if index < 0:
            custom = self.model.findData(CUSTOM)
            text = f"{scenario.model.architecture.name} (custom)"
            if custom < 0:
                self.model.insertItem(0, text, CUSTOM)
                custom = 0
            self.model.setItemText(custom, text)
            index = custom
        self.model.setCurrentIndex(index)
        self.model.setToolTip(
            f"{self.model.currentText()}: model preset (published architecture), or import a "
            "Hugging Face config.json or model folder"
        )
        self.model.blockSignals(blocked)
        blocked = self.gpu.blockSignals(True)
        gpu = scenario.gpu
        gpu_index = -1 if gpu.custom else self.gpu.findData(gpu.id)
        if gpu_index < 0:  # a custom or edited GPU: one "(custom)" entry shows it
            gpu_index = self.gpu.findData(CUSTOM)
            text = f"{gpu.name}, {units.format_gb(gpu.memory_bytes)} (custom)"
            if gpu_index < 0:
                self.gpu.addItem(text, CUSTOM)
                gpu_index = self.gpu.count() - 1
            self.gpu.setItemText(gpu_index, text)
        self.gpu.setCurrentIndex(gpu_index)
        self.gpu.setToolTip(f"{self.gpu.currentText()}: GPU model (catalog datasheet figures)")
        self.gpu.blockSignals(blocked)

    def _model_chosen(self, index: int) -> None:
        data = self.model.itemData(index)
        if data == FIND:
            self.refresh(self.state.scenario)
            finder = ModelFinder(self)
            if finder.exec() == QDialog.DialogCode.Accepted and (chosen := finder.chosen()):
                self.choose_preset(chosen)
            return
        if data == IMPORT:
            self.refresh(self.state.scenario)
            path, _ = QFileDialog.getOpenFileName(
                self,
                "Import a model",
                "",
                "Model config or GGUF (*.json *.gguf);;All files (*)",
            )
            if path:
                self.import_config(Path(path))
            return
        if data == CUSTOM or data is None:
            return
        self.choose_preset(str(data))

    def choose_preset(self, preset_id: str) -> None:
        """Make preset ``preset_id`` the scenario's model (one undo step)."""
        preset = get_preset(preset_id)
        self.state.set_fields(
            {
                "model": {
                    "preset": preset.id,
                    "architecture": preset.architecture.model_dump(),
                    "params_override": None,
                },
                **self._renamed(preset.architecture.name),
            },
            f"Choose model {preset.architecture.name}",
        )

    def _renamed(self, new_model: str) -> dict[str, Any]:
        """A name that still names the old model follows the new one ("Llama-3.1-8B
        pretraining" → "Llama-3.1-70B pretraining"); a name the user chose stays."""
        scenario = self.state.scenario
        old = scenario.model.architecture.name
        if old and old in scenario.name and old != new_model:
            return {"name": scenario.name.replace(old, new_model)[:200]}
        return {}

    def import_config(self, path: Path) -> bool:
        """Import a Hugging Face config.json, a model folder or a GGUF file as the model: its
        architecture, the weights format and stored bytes its files state, and (for a Hugging
        Face config) the Hugging Face training stack; one undo step, as the command line's
        ``--model PATH`` sets the same fields."""
        from llm_planner.core.files.hf_import import (
            HFImportError,
            architecture_from_path,
            imported_fields,
        )

        try:
            imported = architecture_from_path(path)
            arch = imported.architecture
            changes: dict[str, Any] = {
                "model": {
                    "preset": None,
                    "architecture": arch.model_dump(),
                    "params_override": None,
                },
                **self._renamed(arch.name),
            }
            changes |= imported_fields(imported, self.state.scenario.training)
            self.state.set_fields(changes, f"Import model from {path.name}")
        except (HFImportError, ValueError, OSError) as error:
            self.import_failed.emit(f"{path.name}: {validation_message(error)}")
            return False
        return True

    def _gpu_chosen(self, index: int) -> None:
        gpu_id = self.gpu.itemData(index)
        if gpu_id == CUSTOM:
            return
        try:
            gpu = get_gpu(str(gpu_id))
        except KeyError:
            return
        self.state.set_fields({"gpu": gpu.model_dump()}, f"Choose GPU {gpu.name}")
