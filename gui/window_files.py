"""The main window's file actions: new, open, save, import and export of scenarios and
reports, recent files and the folder dialogs start in, and what a drop on the window does."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtGui import QDragEnterEvent, QDropEvent
from PySide6.QtWidgets import QFileDialog, QMessageBox

from llm_planner.core.composition.scenario import default_scenario
from llm_planner.core.primitives.reading import FileReadError, check_regular
from llm_planner.gui import export_config, settings
from llm_planner.gui.widgets.measurements import LOG_SUFFIXES, drop_log
from llm_planner.gui.window_base import WindowBase

SUFFIX = ".llmplan.json"
FILE_FILTER = "LLM Planner scenarios (*.llmplan.json);;JSON (*.json);;All files (*)"


class WindowFiles(WindowBase):
    """File menu actions, recent files and drops (a part of :class:`.MainWindow`)."""

    def confirm_discard(self) -> bool:
        """True when there is nothing unsaved, or the user saved or chose to discard."""
        if self.state.undo_stack.isClean() or not self.ask_before_discard:
            return True
        answer = QMessageBox.question(
            self,
            "Unsaved changes",
            f"Save the changes to “{self.state.scenario.name}” first?",
            QMessageBox.StandardButton.Save
            | QMessageBox.StandardButton.Discard
            | QMessageBox.StandardButton.Cancel,
            QMessageBox.StandardButton.Save,
        )
        if answer == QMessageBox.StandardButton.Save:
            return self.save()
        return answer == QMessageBox.StandardButton.Discard

    def new_scenario(self) -> None:
        if self.confirm_discard():
            self.state.load(default_scenario(), None)

    def open_dialog(self) -> None:
        if not self.confirm_discard():
            return
        path, _ = QFileDialog.getOpenFileName(self, "Open scenario", self._folder(), FILE_FILTER)
        if path:
            self.open_file(path, confirm=False)

    def open_file(self, path: str | Path, confirm: bool = True) -> bool:
        """Open a scenario file; a bad file gets a message naming the field, nothing changes."""
        if confirm and not self.confirm_discard():
            return False
        from llm_planner.core.files import store

        try:
            scenario = store.load_scenario_file(Path(path))
        except (store.ScenarioFileError, OSError, ValueError) as error:
            self.show_message(str(error))
            return False
        self.state.load(scenario, str(path))
        self._remember(str(path))
        self.statusBar().showMessage(f"Opened {path}", 5000)
        return True

    def save(self) -> bool:
        if not self.state.path:
            return self.save_as()
        return self.save_to(self.state.path)

    def save_as(self) -> bool:
        suggested = str(Path(self._folder()) / f"{safe_name(self.state.scenario.name)}{SUFFIX}")
        path, _ = QFileDialog.getSaveFileName(self, "Save scenario", suggested, FILE_FILTER)
        if not path:
            return False
        if not path.endswith(".json"):
            path += SUFFIX
        return self.save_to(path)

    def save_to(self, path: str) -> bool:
        from llm_planner.core.files import store

        try:
            written = store.save_scenario_file(self.state.scenario, Path(path))
        except OSError as error:
            self.show_message(f"Could not save {path}: {error.strerror or error}")
            return False
        self.state.scenario = written  # stamped: modified time and app version; same inputs
        self.state.path = path
        self.state.undo_stack.setClean()
        self.discard_recovery()
        self._remember(path)
        if self.library is not None:
            self.library.reload()
        self._update_title()
        self.statusBar().showMessage(f"Saved {path}", 5000)
        return True

    def import_dialog(self) -> None:
        paths, _ = QFileDialog.getOpenFileNames(
            self, "Import scenarios into the library", self._folder(), FILE_FILTER
        )
        if paths and self.library is not None:
            self.library.import_files([Path(p) for p in paths])
            for p in paths:
                self._remember(p)

    def export_scenario_dialog(self) -> None:
        suggested = str(Path(self._folder()) / f"{safe_name(self.state.scenario.name)}{SUFFIX}")
        path, _ = QFileDialog.getSaveFileName(self, "Export scenario", suggested, FILE_FILTER)
        if path:
            from llm_planner.core.files import store

            try:
                store.save_scenario_file(self.state.scenario, Path(path))
            except OSError as error:
                self.show_message(f"Could not export {path}: {error.strerror or error}")
                return
            self._remember(path)
            self.statusBar().showMessage(f"Exported {path}", 10000)

    def report_text(self, kind: str) -> str:
        """The report as Markdown or CSV, exactly as ``core.report_export`` writes it."""
        from llm_planner.core.files.report_export import render_report

        return render_report(
            self.state.report, "markdown" if kind == "md" else "csv", self.state.scenario
        )

    def export_report_dialog(self, kind: str) -> None:
        suffix = ".md" if kind == "md" else ".csv"
        suggested = str(Path(self._folder()) / f"{safe_name(self.state.scenario.name)}{suffix}")
        path, _ = QFileDialog.getSaveFileName(self, "Export report", suggested, f"*{suffix}")
        if path:
            self.export_report(path, kind)

    def export_report(self, path: str, kind: str) -> None:
        from llm_planner.core.files import store

        try:
            store.atomic_write_bytes(Path(path), self.report_text(kind).encode("utf-8"))
        except OSError as error:
            self.show_message(f"Could not export {path}: {error.strerror or error}")
            return
        self._remember_folder(path)
        self.statusBar().showMessage(f"Exported {path}", 10000)

    def _fill_recent(self) -> None:
        self.recent_menu.clear()
        recent = [p for p in self.settings.get("recent", []) if isinstance(p, str)]
        for path in recent:
            action = self.recent_menu.addAction(path)
            action.triggered.connect(lambda _=False, p=path: self.open_file(p))
        if not recent:
            self.recent_menu.addAction("(none)").setEnabled(False)

    def _remember(self, path: str) -> None:
        """A scenario file opened, saved, imported or exported: Open Recent lists it. A
        library entry opened from the panel is the library's business, not a recent file."""
        if self._in_library(path):
            return
        settings.add_recent(self.settings, str(Path(path).resolve()))
        self._remember_folder(path)

    def _remember_folder(self, path: str) -> None:
        if self._in_library(path):
            return
        self.settings["last_folder"] = str(Path(path).resolve().parent)
        settings.save(self.settings)

    def _in_library(self, path: str | Path) -> bool:
        """Whether ``path`` lies in the library's own data folder."""
        if self.library is None:
            return False
        try:
            return Path(path).resolve().parent == self.library.library.folder.resolve()
        except OSError:
            return False

    def _folder(self) -> str:
        """Where file dialogs start: the last folder used, else the documents folder (never
        the library's own data folder)."""
        last = self.settings.get("last_folder")
        if isinstance(last, str) and Path(last).is_dir() and not self._in_library(Path(last) / "x"):
            return last
        from PySide6.QtCore import QStandardPaths

        documents = QStandardPaths.writableLocation(
            QStandardPaths.StandardLocation.DocumentsLocation
        )
        return documents if documents and Path(documents).is_dir() else str(Path.home())

    # ------------------------------------------------------------ drag and drop
    def dragEnterEvent(self, event: QDragEnterEvent) -> None:  # noqa: N802 (Qt API)
        urls = event.mimeData().urls()
        if urls and all(u.isLocalFile() and _droppable(u.toLocalFile()) for u in urls):
            event.acceptProposedAction()

    def dropEvent(self, event: QDropEvent) -> None:  # noqa: N802 (Qt API)
        for url in event.mimeData().urls():
            self.open_dropped(url.toLocalFile())
        event.acceptProposedAction()

    def import_and_open(self, path: str) -> bool:
        """A scenario file from elsewhere (a drop): copied into the library (as the library's
        hint says) and the copy opened, so saving never writes back to the sender's file."""
        if self.library is None:
            return self.open_file(path)
        if not self.confirm_discard():
            return False
        try:
            result = self.library.library.import_files([Path(path)])
        except (ValueError, OSError) as error:
            self.show_message(str(error))
            return False
        if result.failed:
            self.show_message("\n".join(message for _path, message in result.failed))
            return False
        saved = result.imported[0][1]
        self.library.reload()
        self.library.select_key(saved.key)
        if not self.open_file(saved.path, confirm=False):
            return False
        self.statusBar().showMessage(
            f"Imported {Path(path).name} into the library as “{saved.scenario.name}”", 8000
        )
        return True

    def open_dropped(self, path: str) -> bool:
        """A dropped ``.llmplan.json`` is imported into the library and opened; a
        ``config.json`` or a model folder (one with a ``config.json``) imports a model."""
        if Path(path).is_dir():
            return self.bar.import_config(Path(path))
        try:  # a FIFO or a device named *.log would block or flood the reader
            check_regular(path)
        except FileReadError as error:
            self.show_message(str(error))
            return False
        if path.endswith(SUFFIX):
            return self.import_and_open(path)
        if path.endswith(LOG_SUFFIXES):  # a training log: a measured run (calibration)
            return drop_log(self, self.state, Path(path))
        if export_config.is_stack_config(path):  # a training stack's launch config
            return export_config.import_dropped(self, path)
        return self.bar.import_config(Path(path))


def _droppable(path: str) -> bool:
    """What the window accepts from a drop: JSON files, training logs, stack configs and
    model folders."""
    target = Path(path)
    if path.endswith((".json", ".gguf", *LOG_SUFFIXES, *export_config.STACK_CONFIG_SUFFIXES)):
        return True
    return target.is_dir() and (target / "config.json").is_file()


def safe_name(name: str) -> str:
    """``name`` as a file name: letters, digits, space, ``-_.`` kept, the rest ``_``."""
    keep = "".join(c if c.isalnum() or c in " -_." else "_" for c in name).strip()
    return keep or "scenario"
