"""From plan to launch in the window: *Export for…* (the parallelism tab's button and a
search row's context menu) writes the layout as a stack's config; a stack config dropped
on the window imports its layout. The formats and their notes are core's
(:mod:`llm_planner.core.files.stack_configs`); this module only asks where to save and
says what the stack cannot express."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from PySide6.QtCore import QPoint, Qt
from PySide6.QtWidgets import QFileDialog, QMenu, QPushButton, QTableView, QWidget

from llm_planner.core.composition.scenario import Scenario

FORMAT_LABELS: dict[str, str] = {
    "deepspeed": "DeepSpeed (config JSON)…",
    "megatron": "Megatron-LM (arguments)…",
    "torchtitan": "torchtitan (job TOML)…",
    "accelerate": "Hugging Face accelerate (YAML + TrainingArguments)…",
    "nanotron": "nanotron (config YAML)…",
}
STACK_CONFIG_SUFFIXES = (".json", ".toml", ".yaml", ".yml", ".sh", ".args")


def _status(widget: QWidget, text: str) -> None:
    window: Any = widget.window()
    if hasattr(window, "statusBar"):
        window.statusBar().showMessage(text, 10000)


def export_to_file(parent: QWidget, scenario: Scenario, fmt: str) -> Path | None:
    """Ask where to save ``scenario``'s layout as ``fmt`` and write it (and any companion)."""
    from llm_planner.core.files import stack_configs
    from llm_planner.core.files.store import atomic_write_bytes

    exported = stack_configs.export_config(scenario, fmt)
    name = f"{fmt}-{scenario.name}".replace("/", "-").replace(" ", "_") + exported.suffix
    path_text, _ = QFileDialog.getSaveFileName(parent, f"Export for {fmt}", name)
    if not path_text:
        return None
    path = Path(path_text)
    stem = path.name[: -len(path.suffix)] if path.suffix else path.name
    try:
        atomic_write_bytes(path, exported.text.encode("utf-8"))
        for suffix, text in exported.companions.items():
            atomic_write_bytes(path.with_name(stem + suffix), text.encode("utf-8"))
    except OSError as error:
        _status(parent, f"Could not write {path}: {error.strerror or error}")
        return None
    notes = f"; not expressible: {'; '.join(exported.unexpressed)}" if exported.unexpressed else ""
    _status(parent, f"Wrote {path}{notes}")
    parent.setToolTip("\n".join(exported.unexpressed) or f"Wrote {path}")
    return path


def export_menu(parent: QWidget, scenario: Callable[[], Scenario]) -> QMenu:
    """A menu with one action per stack; each exports ``scenario()`` when triggered."""
    menu = QMenu("Export for", parent)
    for fmt, label in FORMAT_LABELS.items():
        action = menu.addAction(label)
        action.setObjectName(f"export_{fmt}")
        action.triggered.connect(
            lambda _checked=False, f=fmt: export_to_file(parent, scenario(), f)
        )
    return menu


def export_button(parent: QWidget, scenario: Callable[[], Scenario]) -> QPushButton:
    """The *Export for…* button of the parallelism tab (its menu exports the tab's layout)."""
    button = QPushButton("Export for…", parent)
    button.setObjectName("export_for_button")
    button.setToolTip(
        "Write this layout as a DeepSpeed, Megatron-LM, torchtitan, accelerate or nanotron config"
    )
    button.setMenu(export_menu(button, scenario))
    return button


def attach_row_menu(
    table: QTableView, rows: Callable[[], list[dict[str, Any]]], scenario: Callable[[], Scenario]
) -> None:
    """A search table's context menu: *Export for…* the row under the mouse."""
    from llm_planner.core.files.stack_configs import apply_row

    def row_scenario(index: int) -> Scenario:
        return apply_row(scenario(), rows()[index])

    def show(pos: QPoint) -> None:
        cell = table.indexAt(pos)  # the model's row i is the search's row i
        index = cell.row() if cell.isValid() else -1
        if not 0 <= index < len(rows()):
            return
        menu = row_context_menu(table, lambda: row_scenario(index))
        menu.popup(table.viewport().mapToGlobal(pos))

    table.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
    table.customContextMenuRequested.connect(show)


def row_context_menu(table: QTableView, scenario: Callable[[], Scenario]) -> QMenu:
    menu = QMenu(table)
    menu.setObjectName("search_row_menu")
    sub = export_menu(table, scenario)
    sub.setTitle("Export for…")
    menu.addMenu(sub)
    table.setProperty("last_row_menu", menu)  # tests reach the menu that opened
    return menu


def is_stack_config(path: str) -> bool:
    """A file the window should import as a stack config (not a scenario or model file)."""
    name = Path(path).name
    if name.endswith(".llmplan.json") or name == "config.json":
        return False
    if not name.lower().endswith(STACK_CONFIG_SUFFIXES):
        return False
    from llm_planner.core.files.stack_configs import detect_format
    from llm_planner.core.primitives.reading import FileReadError, read_head

    try:
        head = read_head(path, 200_000).decode("utf-8", errors="replace")
    except (OSError, FileReadError):
        return False
    return detect_format(head, name) is not None and (
        not name.endswith(".json") or detect_format(head, "") == "deepspeed"
    )


def import_dropped(window: Any, path: str) -> bool:
    """Import a dropped stack config's layout into the window's scenario (one undo step)."""
    from llm_planner.core.files import stack_configs
    from llm_planner.core.primitives.presets import get_preset, model_presets

    try:
        imported = stack_configs.read_config(Path(path))
        fields = dict(imported.fields)
        if imported.model and imported.model in model_presets():
            preset = get_preset(imported.model)
            fields["model"] = {
                "preset": preset.id,
                "architecture": preset.architecture.model_dump(mode="json"),
                "params_override": None,
            }
        scenario = stack_configs.apply_import(
            window.state.scenario, replace(imported, fields=fields)
        )
    except ValueError as error:  # StackConfigError is one
        window.show_message(str(error))
        return False
    window.state.replace(scenario, f"Import {imported.stack} config")
    window.statusBar().showMessage(
        f"Imported {path} ({imported.stack}): read {len(imported.read)} keys, "
        f"ignored {len(imported.ignored)}"
        + (
            f"; {len(imported.auto)} left to the launcher ('auto': the scenario's values "
            f"stand): {', '.join(imported.auto)}"
            if imported.auto
            else ""
        ),
        10000,
    )
    return True


def hook_search(search: Any, scenario: Callable[[], Scenario]) -> None:
    """Put *Export for…* beside the search's button and on its rows' context menu. With a
    row selected the button exports that row's layout (what the user is looking at), else
    the scenario's."""
    from llm_planner.core.files.stack_configs import apply_row

    def shown() -> Scenario:
        row = search.selected_row()
        return scenario() if row is None else apply_row(scenario(), row)

    search.export_button = export_button(search, shown)

    def selection_changed(*_args: Any) -> None:
        row = search.selected_row()
        search.export_button.setToolTip(
            "Write this layout as a DeepSpeed, Megatron-LM, torchtitan, accelerate or nanotron "
            "config"
            if row is None
            else f"Write the selected row (#{row.get('rank')}) as a stack's config"
        )

    search.table.selectionModel().selectionChanged.connect(selection_changed)
    top = search.layout().itemAt(0).layout()
    top.addWidget(search.export_button)
    attach_row_menu(search.table, lambda: search.rows, scenario)
