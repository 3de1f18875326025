"""The local scenario library: a sortable, searchable table (name, model, GPUs, date);
open on double-click; rename, duplicate, delete to the trash, restore from it; notes."""

from __future__ import annotations

import html
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, cast

from PySide6.QtCore import (
    QModelIndex,
    QObject,
    QPersistentModelIndex,
    QSize,
    QSortFilterProxyModel,
    Qt,
    QTimer,
)
from PySide6.QtGui import QColor, QFont, QFontMetrics, QPainter, QPalette
from PySide6.QtWidgets import (
    QAbstractItemView,
    QApplication,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QGridLayout,
    QHBoxLayout,
    QHeaderView,
    QInputDialog,
    QLabel,
    QLineEdit,
    QMessageBox,
    QPlainTextEdit,
    QPushButton,
    QStyle,
    QStyledItemDelegate,
    QStyleOptionViewItem,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from llm_planner.core.files.library_index import LibraryEntry
from llm_planner.core.primitives import units
from llm_planner.gui.table_model import RowsModel

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


def model_name(entry_model: str) -> str:
    """A listing's model id as its human name (presets by id; imported models by name)."""
    from llm_planner.core.primitives.presets import model_presets

    preset = model_presets().get(entry_model)
    return preset.architecture.name if preset is not None else entry_model


def gpu_name(entry_gpu: str) -> str:
    from llm_planner.core.primitives.gpus import gpu_catalog

    gpu = gpu_catalog().get(entry_gpu)
    name = gpu.name if gpu is not None else entry_gpu
    for vendor in ("NVIDIA ", "AMD ", "Google ", "Intel "):
        name = name.removeprefix(vendor)  # the column is narrow; the tooltip has it all
    return name


class LibraryModel(RowsModel[LibraryEntry]):
    """Library entries as a Qt model (name, model, GPUs, modified); sorted by a proxy."""

    headers = ("Name", "Model", "GPUs", "Modified")

    @property
    def entries(self) -> list[LibraryEntry]:
        return self.rows

    def set_entries(self, entries: list[LibraryEntry]) -> None:
        self.set_rows(entries)

    def cell(self, entry: LibraryEntry, column: int, role: int) -> Any:
        if role == Qt.ItemDataRole.DisplayRole:
            return (
                entry.name,
                model_name(entry.model),
                f"{gpu_name(entry.gpu)} × {entry.num_gpus:,}",
                f"{entry.modified.astimezone():%Y-%m-%d}",
            )[column]
        if role == Qt.ItemDataRole.UserRole:  # the sort key
            return (
                entry.name.casefold(),
                entry.model.casefold(),
                f"{gpu_name(entry.gpu).casefold()}\t{entry.num_gpus:012d}",  # Qt sorts text
                entry.modified.timestamp(),
            )[column]
        if role == Qt.ItemDataRole.UserRole + 1:
            return entry.key
        if role == Qt.ItemDataRole.UserRole + 2:  # what the search box matches
            return (
                f"{entry.name}\n{model_name(entry.model)}\n{entry.model}\n"
                f"{gpu_name(entry.gpu)}\n{entry.notes}"
            ).casefold()
        if role == Qt.ItemDataRole.ToolTipRole:
            # names and notes may come from a file someone sent: shown as text, never markup
            return (
                f"<b>{html.escape(entry.name)}</b><br>{html.escape(model_name(entry.model))} on "
                f"{entry.num_gpus:,} × {html.escape(gpu_name(entry.gpu))}<br>"
                f"modified {entry.modified.astimezone():%Y-%m-%d %H:%M}<br>{html.escape(entry.key)}"
                + (f"<br><br>{html.escape(entry.notes[:400])}" if entry.notes else "")
            )
        return None


class EntryDelegate(QStyledItemDelegate):
    """Paints an entry as two lines: the name, then model · GPU × count · date (dimmed)."""

    def paint(
        self,
        painter: QPainter,
        option: QStyleOptionViewItem,
        index: QModelIndex | QPersistentModelIndex,
    ) -> None:
        opt = QStyleOptionViewItem(option)
        self.initStyleOption(opt, index)
        opt.text = ""
        widget = opt.widget
        style = widget.style() if widget is not None else QApplication.style()
        style.drawControl(QStyle.ControlElement.CE_ItemViewItem, opt, painter, widget)
        model = index.model()
        row = index.row()
        details = " · ".join(
            str(model.index(row, column, index.parent()).data()) for column in (1, 2, 3)
        )
        rect = opt.rect.adjusted(6, 4, -6, -4)
        selected = bool(opt.state & QStyle.StateFlag.State_Selected)
        role = QPalette.ColorRole.HighlightedText if selected else QPalette.ColorRole.Text
        painter.save()
        bold = QFont(opt.font)
        bold.setBold(True)
        painter.setFont(bold)
        painter.setPen(opt.palette.color(role))
        line = QFontMetrics(bold).height()
        name = QFontMetrics(bold).elidedText(
            str(index.data()), Qt.TextElideMode.ElideRight, rect.width()
        )
        painter.drawText(rect.x(), rect.y(), rect.width(), line, 0, name)
        painter.setFont(opt.font)
        if not selected:
            dim = QColor(opt.palette.color(role))
            dim.setAlpha(170)
            painter.setPen(dim)
        small = QFontMetrics(opt.font).elidedText(
            details, Qt.TextElideMode.ElideRight, rect.width()
        )
        painter.drawText(rect.x(), rect.y() + line + 1, rect.width(), line, 0, small)
        painter.restore()

    def sizeHint(  # noqa: N802
        self, option: QStyleOptionViewItem, index: QModelIndex | QPersistentModelIndex
    ) -> QSize:
        del index
        height = QFontMetrics(option.font).height()
        return QSize(200, 2 * height + 10)


class LibraryFilter(QSortFilterProxyModel):
    """Every word of the search box must appear in the name, model, GPU or notes."""

    def __init__(self, parent: QObject | None = None):
        super().__init__(parent)
        self.words: list[str] = []
        self.setSortRole(Qt.ItemDataRole.UserRole)

    def set_query(self, text: str) -> None:
        if hasattr(self, "beginFilterChange"):  # Qt 6.10+: invalidateRowsFilter is deprecated
            self.beginFilterChange()
            self.words = text.casefold().split()
            self.endFilterChange(QSortFilterProxyModel.Direction.Rows)
            return
        self.words = text.casefold().split()
        self.invalidateRowsFilter()

    def filterAcceptsRow(self, row: int, parent: QModelIndex | QPersistentModelIndex) -> bool:  # noqa: N802
        haystack = self.sourceModel().index(row, 0, parent).data(Qt.ItemDataRole.UserRole + 2)
        return all(word in str(haystack) for word in self.words)


class TrashDialog(QDialog):
    """Deleted scenarios: restore one, or empty the trash (asks first)."""

    def __init__(self, panel: LibraryPanel):
        super().__init__(panel)
        self.panel = panel
        self.setObjectName("trash_dialog")
        self.setWindowTitle("Trash")
        layout = QVBoxLayout(self)
        self.hint = QLabel()
        self.hint.setWordWrap(True)
        layout.addWidget(self.hint)
        self.table = QTableView()
        self.table.setObjectName("trash_table")
        self.model = _TrashModel(self)
        self.table.setModel(self.model)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.verticalHeader().setVisible(False)
        self.table.horizontalHeader().setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        self.table.doubleClicked.connect(lambda _index: self.restore_selected())
        layout.addWidget(self.table)
        buttons = QDialogButtonBox()
        self.restore_button = buttons.addButton("Restore", QDialogButtonBox.ButtonRole.ActionRole)
        self.restore_button.setObjectName("trash_restore")
        self.restore_button.clicked.connect(lambda _checked=False: self.restore_selected())
        self.empty_button = buttons.addButton(
            "Empty trash…", QDialogButtonBox.ButtonRole.ActionRole
        )
        self.empty_button.setObjectName("trash_empty")
        self.empty_button.clicked.connect(lambda _checked=False: self.empty_trash())
        close = buttons.addButton(QDialogButtonBox.StandardButton.Close)
        close.clicked.connect(self.accept)
        layout.addWidget(buttons)
        self.resize(520, 320)
        self.reload()

    def reload(self) -> None:
        items = self.panel._guard(self.panel.library.trash) or []
        self.model.set_items(items)
        self.hint.setText(
            f"{units.count_of(len(items), 'deleted scenario')}. Restore puts one back in the "
            "library."
            if items
            else "The trash is empty."
        )
        if items:
            self.table.selectRow(0)
        self.restore_button.setEnabled(bool(items))
        self.empty_button.setEnabled(bool(items))

    def restore_selected(self) -> None:
        rows = self.table.selectionModel().selectedRows()
        if not rows:
            return
        item = self.model.items[rows[0].row()]
        saved = self.panel._guard(lambda: self.panel.library.restore(item.id))
        if saved is not None:
            self.panel.window_.statusBar().showMessage(f"Restored “{saved.scenario.name}”", 5000)
        self.panel.reload()
        self.reload()

    def empty_trash(self) -> None:
        answer = QMessageBox.question(
            self,
            "Empty trash",
            f"Delete the {units.count_of(len(self.model.items), 'scenario')} in the trash for "
            "good?",
        )
        if answer != QMessageBox.StandardButton.Yes:
            return
        self.panel._guard(self.panel.library.purge_trash)
        self.reload()


class _TrashModel(RowsModel[Any]):
    headers = ("Name", "Deleted")

    @property
    def items(self) -> list[Any]:
        return self.rows

    def set_items(self, items: list[Any]) -> None:
        self.set_rows(items)

    def cell(self, item: Any, column: int, role: int) -> Any:
        if role != Qt.ItemDataRole.DisplayRole:
            return None
        return (item.name, f"{item.deleted.astimezone():%Y-%m-%d %H:%M}")[column]


def _notes_editor() -> QPlainTextEdit:
    notes = QPlainTextEdit()
    notes.setObjectName("notes")
    notes.setPlaceholderText("Assumptions, links, decisions…")
    notes.setMaximumHeight(110)
    notes.setTabChangesFocus(True)  # Tab moves on, as in every other field
    return notes


class LibraryPanel(QWidget):
    """A view of ``core.files.library.Library``; every operation goes through it."""

    def __init__(self, window: QWidget):
        super().__init__(window)
        from llm_planner.core.files.library import Library

        self.window_ = cast("LibraryHost", window)
        self.library = Library()
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        self.search = QLineEdit()
        self.search.setObjectName("library_search")
        self.search.setPlaceholderText("Search name, model, GPU, notes")
        self.search.setClearButtonEnabled(True)
        layout.addWidget(self.search)
        self.model = LibraryModel(self)
        self.proxy = LibraryFilter(self)
        self.proxy.setSourceModel(self.model)
        self.search.textChanged.connect(self.proxy.set_query)
        self.list = self._table()
        self.sort = self._sort_picker()
        sort_row = QHBoxLayout()
        sort_row.addWidget(QLabel("Sort"))
        sort_row.addWidget(self.sort, 1)
        layout.addLayout(sort_row)
        self.list.doubleClicked.connect(self._open_index)
        self.list.selectionModel().selectionChanged.connect(lambda *_: self._selection_changed())
        layout.addWidget(self.list, 1)
        self.empty_hint = QLabel(
            "No saved scenarios yet. <b>Save to library</b> keeps the current one here; "
            "drop a .llmplan.json file on the window to import one."
        )
        self.empty_hint.setObjectName("library_empty")
        self.empty_hint.setWordWrap(True)
        self.empty_hint.hide()
        layout.addWidget(self.empty_hint)
        layout.addLayout(self._buttons())
        layout.addWidget(QLabel("Notes (this scenario)"))
        self.notes = _notes_editor()
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
        self.window_.state.changed.connect(self._scenario_changed)
        self._scenario_changed(self.window_.state.scenario)
        self.setMinimumWidth(190)  # listing: after the first paint (MainWindow)
        self._selection_changed()

    def _table(self) -> QTableView:
        table = QTableView()
        table.setObjectName("library_list")
        table.setModel(self.proxy)
        self.proxy.sort(3, Qt.SortOrder.DescendingOrder)  # newest first
        table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        table.verticalHeader().setVisible(False)
        table.setWordWrap(False)
        table.verticalHeader().setDefaultSectionSize(self.fontMetrics().height() + 6)
        table.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        # one column, two lines per entry: the name, then model · GPU × count · date, so a
        # narrow panel still tells entries apart; the sort picker orders by any of them
        for column in (1, 2, 3):
            table.setColumnHidden(column, True)
        table.horizontalHeader().setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        table.horizontalHeader().hide()
        table.setItemDelegateForColumn(0, EntryDelegate(table))
        table.verticalHeader().setDefaultSectionSize(2 * self.fontMetrics().height() + 10)
        return table

    def _sort_picker(self) -> QComboBox:
        picker = QComboBox()
        picker.setObjectName("library_sort")
        for text, column, order in (
            ("Newest first", 3, Qt.SortOrder.DescendingOrder),
            ("Name", 0, Qt.SortOrder.AscendingOrder),
            ("Model", 1, Qt.SortOrder.AscendingOrder),
            ("GPUs", 2, Qt.SortOrder.AscendingOrder),
            ("Oldest first", 3, Qt.SortOrder.AscendingOrder),
        ):
            picker.addItem(text, (column, order))
        picker.setToolTip("Order the library by date, name, model or GPUs")
        picker.currentIndexChanged.connect(self._sort)
        return picker

    def _sort(self, index: int) -> None:
        column, order = self.sort.itemData(index)
        self.proxy.sort(column, order)

    def _buttons(self) -> QGridLayout:
        # every slot ignores clicked(bool): a flag landing in a name or "confirm" was a bug
        buttons = QGridLayout()
        self.add_button = QPushButton("Save to library")
        self.add_button.setObjectName("library_save")
        self.add_button.setToolTip(
            "Save the current scenario into the library (over its own entry if it has one)"
        )
        self.add_button.clicked.connect(lambda _checked=False: self.save_current())
        self.rename_button = QPushButton("Rename…")
        self.rename_button.setObjectName("library_rename")
        self.rename_button.clicked.connect(lambda _checked=False: self.rename_selected())
        self.duplicate_button = QPushButton("Duplicate")
        self.duplicate_button.setObjectName("library_duplicate")
        self.duplicate_button.clicked.connect(lambda _checked=False: self.duplicate_selected())
        self.delete_button = QPushButton("Delete…")
        self.delete_button.setObjectName("library_delete")
        self.delete_button.setToolTip("Move to the trash (Trash… restores it)")
        self.delete_button.clicked.connect(lambda _checked=False: self.delete_selected())
        self.trash_button = QPushButton("Trash…")
        self.trash_button.setObjectName("library_trash")
        self.trash_button.setToolTip("Deleted scenarios: restore or empty the trash")
        self.trash_button.clicked.connect(lambda _checked=False: self.show_trash())
        for index, button in enumerate(
            (
                self.add_button,
                self.rename_button,
                self.duplicate_button,
                self.delete_button,
                self.trash_button,
            )
        ):
            buttons.addWidget(button, index // 2, index % 2)
        return buttons

    # -- listing
    def reload(self) -> None:
        try:
            listing = self.library.listing()
        except OSError as error:
            self.problems.setText(f"Library unavailable: {error}")
            self.problems.show()
            return
        current = self.selected_key()
        self.model.set_entries(listing.entries)
        self.empty_hint.setVisible(not listing.entries)
        if current is not None:
            self.select_key(current)
        if listing.problems:
            self.problems.setText(
                f"{units.count_of(len(listing.problems), 'unreadable file')} set aside: "
                + "; ".join(p.message for p in listing.problems[:3])
            )
            self.problems.show()
        else:
            self.problems.hide()
        self._selection_changed()

    def keys(self) -> list[str]:
        """Keys in the order shown (sorted and filtered)."""
        return [
            self.proxy.index(row, 0).data(Qt.ItemDataRole.UserRole + 1)
            for row in range(self.proxy.rowCount())
        ]

    def select_key(self, key: str) -> bool:
        for row in range(self.proxy.rowCount()):
            if self.proxy.index(row, 0).data(Qt.ItemDataRole.UserRole + 1) == key:
                self.list.selectRow(row)
                return True
        return False

    def selected_key(self) -> str | None:
        rows = self.list.selectionModel().selectedRows() if self.list.selectionModel() else []
        return rows[0].data(Qt.ItemDataRole.UserRole + 1) if rows else None

    def selected_name(self) -> str:
        rows = self.list.selectionModel().selectedRows()
        return str(rows[0].data(Qt.ItemDataRole.DisplayRole)) if rows else ""

    def _selection_changed(self) -> None:
        has = self.selected_key() is not None
        for button in (self.rename_button, self.duplicate_button, self.delete_button):
            button.setEnabled(has)

    # -- operations
    def _open_index(self, index: QModelIndex) -> None:
        key = index.siblingAtColumn(0).data(Qt.ItemDataRole.UserRole + 1)
        if key:
            self.open_key(str(key))

    def open_key(self, key: str) -> bool:
        return self.window_.open_file(self.library.path_of(key))

    def _own_key(self) -> str | None:
        """The library key of the scenario in the window, if it is a library file."""
        path = self.window_.state.path
        if path and Path(path).parent.resolve() == self.library.folder.resolve():
            key = Path(path).name.removesuffix(".llmplan.json")
            return key if self.library.path_of(key).exists() else None
        return None

    def save_current(self, as_new: bool = False) -> Any:
        """Save the window's scenario: over its own library entry, or as a new one."""
        key = None if as_new else self._own_key()
        state = self.window_.state
        saved = self._guard(
            lambda: (
                self.library.save(state.scenario, key)
                if key is not None
                else self.library.save_as(state.scenario)
            )
        )
        if saved is not None:
            state.path = str(saved.path)
            state.scenario = saved.scenario
            state.undo_stack.setClean()
            self.reload()
            self.select_key(saved.key)
            self.window_.statusBar().showMessage(
                f"Saved “{saved.scenario.name}” to the library", 5000
            )
        return saved

    def rename_selected(self) -> None:
        """Ask for a new name (prefilled) and rename the selected entry."""
        key = self.selected_key()
        if key is None:
            return
        dialog = QInputDialog(self)
        dialog.setObjectName("rename_dialog")
        dialog.setWindowTitle("Rename scenario")
        dialog.setLabelText("New name:")
        dialog.setTextValue(self.selected_name())
        # the static getText is as narrow as its label: window managers then elide the
        # title ("Renam… nario"); wide enough for the title and a long name
        width = max(380, 3 * dialog.fontMetrics().horizontalAdvance("Rename scenario"))
        edit = dialog.findChild(QLineEdit)
        if edit is not None:
            edit.setMinimumWidth(width)
        dialog.resize(width, dialog.sizeHint().height())
        if dialog.exec() == QDialog.DialogCode.Accepted and dialog.textValue().strip():
            self.rename_key(key, dialog.textValue().strip())

    def rename_key(self, key: str, new_name: str) -> Any:
        old_path = self.library.path_of(key)
        saved = self._guard(lambda: self.library.rename(key, new_name))
        state = self.window_.state
        if saved is not None and state.path and Path(state.path) == old_path:
            state.path = str(saved.path)
            state.scenario = state.scenario.model_copy(update={"name": saved.scenario.name})
            state.changed.emit(state.scenario, state.report)
        self.reload()
        if saved is not None:
            self.select_key(saved.key)
        return saved

    def duplicate_selected(self) -> None:
        """Copy the selected entry and open the copy: what the user goes on to edit is the
        duplicate, never the original."""
        key = self.selected_key()
        if key is not None:
            saved = self._guard(lambda: self.library.duplicate(key))
            self.reload()
            if saved is not None:
                self.select_key(saved.key)
                self.open_key(saved.key)

    def delete_selected(self) -> None:
        """Ask, then move the selected entry to the trash (Trash… restores it)."""
        key = self.selected_key()
        if key is None:
            return
        answer = QMessageBox.question(
            self,
            "Delete scenario",
            f"Move “{self.selected_name()}” to the trash? Trash… restores it.",
        )
        if answer != QMessageBox.StandardButton.Yes:
            return
        item = self._guard(lambda: self.library.delete(key))
        if item is not None:
            self.window_.statusBar().showMessage(f"Moved “{item.name}” to the trash", 5000)
        self.reload()

    def show_trash(self) -> TrashDialog:
        dialog = TrashDialog(self)
        dialog.open()
        return dialog

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
