"""The local scenario library: search, open on double-click, rename, duplicate, delete, notes."""

from __future__ import annotations

import html
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, cast

from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import (
    QGridLayout,
    QInputDialog,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QMessageBox,
    QPlainTextEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

if TYPE_CHECKING:
    from PySide6.QtWidgets import QStatusBar

    from llm_planner.gui.binding import ScenarioState


class LibraryHost(Protocol):
    """What the panel needs of the window it sits in (the main window provides it)."""

    state: ScenarioState

    def open_file(self, path: str | Path) -> bool: ...

    def show_message(self, message: str) -> None: ...

    def statusBar(self) -> QStatusBar: ...  # noqa: N802 (Qt's name)


log = logging.getLogger(__name__)


class LibraryPanel(QWidget):
    """A view of ``core.library.Library``; every operation goes through it."""

    def __init__(self, window: QWidget):
        super().__init__(window)
        from llm_planner.core.files.library import Library

        self.window_ = cast("LibraryHost", window)
        self.library = Library()
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        self.search = QLineEdit()
        self.search.setObjectName("library_search")
        self.search.setPlaceholderText("Search names and notes")
        self.search.setClearButtonEnabled(True)
        self.search.textChanged.connect(lambda _t: self.reload())
        layout.addWidget(self.search)
        self.list = QListWidget()
        self.list.setObjectName("library_list")
        self.list.itemDoubleClicked.connect(self._open_item)
        self.list.currentItemChanged.connect(lambda *_: self._selection_changed())
        layout.addWidget(self.list, 1)
        layout.addLayout(self._buttons())
        layout.addWidget(QLabel("Notes (this scenario)"))
        self.notes = QPlainTextEdit()
        self.notes.setObjectName("notes")
        self.notes.setPlaceholderText("Assumptions, links, decisions…")
        self.notes.setMaximumHeight(140)
        self._notes_timer = QTimer(self)
        self._notes_timer.setSingleShot(True)
        self._notes_timer.setInterval(400)
        self._notes_timer.timeout.connect(self._commit_notes)
        self.notes.textChanged.connect(self._notes_timer.start)
        layout.addWidget(self.notes)
        self.problems = QLabel()
        self.problems.setWordWrap(True)
        self.problems.setStyleSheet("color: #D62728;")
        self.problems.hide()
        layout.addWidget(self.problems)
        window.state.changed.connect(self._scenario_changed)
        self._scenario_changed(window.state.scenario)
        self.setMinimumWidth(200)  # listing: after the first paint (MainWindow)
        self._selection_changed()

    def _buttons(self) -> QGridLayout:
        buttons = QGridLayout()
        self.add_button = QPushButton("Save to library")
        self.add_button.setToolTip("Save the current scenario into the library as a new entry")
        self.add_button.clicked.connect(self.save_current)
        self.rename_button = QPushButton("Rename")
        self.rename_button.clicked.connect(self.rename_selected)
        self.duplicate_button = QPushButton("Duplicate")
        self.duplicate_button.clicked.connect(self.duplicate_selected)
        self.delete_button = QPushButton("Delete")
        self.delete_button.setToolTip("Move to the library's trash (recoverable)")
        self.delete_button.clicked.connect(self.delete_selected)
        for index, button in enumerate(
            (self.add_button, self.rename_button, self.duplicate_button, self.delete_button)
        ):
            buttons.addWidget(button, index // 2, index % 2)
        return buttons

    # -- listing
    def reload(self) -> None:
        query = self.search.text().strip()
        try:
            listing = self.library.listing()
        except OSError as error:
            self.problems.setText(f"Library unavailable: {error}")
            self.problems.show()
            return
        entries = listing.entries
        if query:
            words = query.casefold().split()
            entries = [
                e for e in entries if all(w in f"{e.name}\n{e.notes}".casefold() for w in words)
            ]
        current = self.selected_key()
        self.list.clear()
        for entry in entries:
            item = QListWidgetItem(entry.name)
            item.setData(Qt.ItemDataRole.UserRole, entry.key)
            # names and notes may come from a file someone sent: shown as text, never markup
            item.setToolTip(
                f"<b>{html.escape(entry.name)}</b><br>{html.escape(entry.model)} on "
                f"{entry.num_gpus} × {html.escape(entry.gpu)}<br>"
                f"modified {entry.modified:%Y-%m-%d %H:%M}"
                + (f"<br><br>{html.escape(entry.notes[:400])}" if entry.notes else "")
            )
            self.list.addItem(item)
            if entry.key == current:
                self.list.setCurrentItem(item)
        if listing.problems:
            self.problems.setText(
                f"{len(listing.problems)} unreadable file(s) set aside: "
                + "; ".join(p.message for p in listing.problems[:3])
            )
            self.problems.show()
        else:
            self.problems.hide()
        self._selection_changed()

    def keys(self) -> list[str]:
        return [self.list.item(i).data(Qt.ItemDataRole.UserRole) for i in range(self.list.count())]

    def selected_key(self) -> str | None:
        item = self.list.currentItem()
        return item.data(Qt.ItemDataRole.UserRole) if item is not None else None

    def _selection_changed(self) -> None:
        has = self.selected_key() is not None
        for button in (self.rename_button, self.duplicate_button, self.delete_button):
            button.setEnabled(has)

    # -- operations
    def _open_item(self, item: QListWidgetItem) -> None:
        self.open_key(item.data(Qt.ItemDataRole.UserRole))

    def open_key(self, key: str) -> bool:
        return self.window_.open_file(self.library.path_of(key))

    def save_current(self) -> Any:
        saved = self._guard(lambda: self.library.save_as(self.window_.state.scenario))
        if saved is not None:
            self.window_.state.path = str(saved.path)
            self.window_.state.scenario = saved.scenario
            self.window_.state.undo_stack.setClean()
            self.reload()
        return saved

    def rename_selected(self, new_name: str | None = None) -> None:
        key = self.selected_key()
        if key is None:
            return
        if new_name is None:
            text, ok = QInputDialog.getText(
                self, "Rename scenario", "New name:", text=self.list.currentItem().text()
            )
            if not ok or not text.strip():
                return
            new_name = text.strip()
        old_path = str(self.library.path_of(key))
        saved = self._guard(lambda: self.library.rename(key, new_name))
        if (
            saved is not None
            and self.window_.state.path
            and Path(self.window_.state.path) == Path(old_path)
        ):
            self.window_.state.path = str(saved.path)
            self.window_.state.scenario = self.window_.state.scenario.model_copy(
                update={"name": new_name}
            )
        self.reload()

    def duplicate_selected(self) -> None:
        key = self.selected_key()
        if key is not None:
            self._guard(lambda: self.library.duplicate(key))
            self.reload()

    def delete_selected(self, confirm: bool = True) -> None:
        key = self.selected_key()
        if key is None:
            return
        if confirm:
            answer = QMessageBox.question(
                self, "Delete scenario", f"Move “{self.list.currentItem().text()}” to the trash?"
            )
            if answer != QMessageBox.StandardButton.Yes:
                return
        self._guard(lambda: self.library.delete(key))
        self.reload()

    def import_files(self, paths: list[Path]) -> None:
        result = self._guard(lambda: self.library.import_files(paths))
        self.reload()
        if result is not None and result.failed:
            self.window_.show_message("\n".join(message for _path, message in result.failed))

    def _guard(self, operation: Any) -> Any:
        try:
            return operation()
        except (ValueError, OSError) as error:
            self.window_.show_message(str(error))
            return None

    # -- notes of the current scenario
    def _scenario_changed(self, scenario: Any, _report: Any = None) -> None:
        if self.notes.toPlainText() != scenario.notes and not self.notes.hasFocus():
            blocked = self.notes.blockSignals(True)
            self.notes.setPlainText(scenario.notes)
            self.notes.blockSignals(blocked)

    def _commit_notes(self) -> None:
        text = self.notes.toPlainText()
        try:
            self.window_.state.set_field("notes", text, text="Edit notes")
        except ValueError as error:
            self.window_.statusBar().showMessage(str(error), 5000)
