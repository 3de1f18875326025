"""What the Compare-and-choose tabs share: the host protocol, the background runner, table
and button helpers, roles and the highlight colour."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from PySide6.QtCore import (
    QAbstractTableModel,
    QModelIndex,
    QObject,
    QPersistentModelIndex,
    QRunnable,
    QSortFilterProxyModel,
    Qt,
    QThreadPool,
    Signal,
)
from PySide6.QtGui import QColor
from PySide6.QtWidgets import (
    QPushButton,
    QTableView,
)

from llm_planner.gui import colors

if TYPE_CHECKING:
    from llm_planner.gui.binding import ScenarioState
    from llm_planner.gui.widgets.library_panel import LibraryPanel

Index = QModelIndex | QPersistentModelIndex
DISPLAY = Qt.ItemDataRole.DisplayRole
SORT_ROLE = Qt.ItemDataRole.UserRole + 1
HIGHLIGHT = QColor(colors.WARN)
HIGHLIGHT.setAlpha(70)


class ScenarioHost(Protocol):
    """What the window needs of the main window: its scenario state and its library."""

    state: ScenarioState
    library: LibraryPanel | None


# --------------------------------------------------------------------- background work


class _Signals(QObject):
    done = Signal(int, object)
    failed = Signal(int, str)


class _Job(QRunnable):
    def __init__(self, ticket: int, work: Callable[[], Any], signals: _Signals) -> None:
        super().__init__()
        self.ticket, self.work, self.signals = ticket, work, signals

    def run(self) -> None:
        try:
            result = self.work()
        except Exception as error:  # reported in the window, never a crash
            self.signals.failed.emit(self.ticket, str(error).splitlines()[0])
        else:
            self.signals.done.emit(self.ticket, result)


class Runner(QObject):
    """Runs one job at a time off the UI thread; only the newest job's result is shown."""

    finished = Signal(object)
    failed = Signal(str)

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.ticket = 0
        self.busy = False
        self.signals = _Signals(self)
        self.signals.done.connect(self._done)
        self.signals.failed.connect(self._failed)

    def start(self, work: Callable[[], Any]) -> None:
        self.ticket += 1
        self.busy = True
        QThreadPool.globalInstance().start(_Job(self.ticket, work, self.signals))

    def _done(self, ticket: int, result: object) -> None:
        if ticket == self.ticket:
            self.busy = False
            self.finished.emit(result)

    def _failed(self, ticket: int, message: str) -> None:
        if ticket == self.ticket:
            self.busy = False
            self.failed.emit(message)


def _table(model: QAbstractTableModel, sortable: bool = False) -> QTableView:
    view = QTableView()
    if sortable:
        proxy = QSortFilterProxyModel(view)
        proxy.setSourceModel(model)
        proxy.setSortRole(SORT_ROLE)
        view.setModel(proxy)
        view.setSortingEnabled(True)
        view.sortByColumn(0, Qt.SortOrder.AscendingOrder)
    else:
        view.setModel(model)
    view.verticalHeader().hide()
    view.setAlternatingRowColors(True)
    view.setWordWrap(False)
    view.horizontalHeader().setStretchLastSection(True)
    view.setSelectionBehavior(QTableView.SelectionBehavior.SelectRows)
    return view


def _button(text: str, name: str, slot: Callable[[], None], tip: str) -> QPushButton:
    button = QPushButton(text)
    button.setObjectName(name)
    button.setToolTip(tip)
    button.clicked.connect(lambda _=False: slot())
    return button
