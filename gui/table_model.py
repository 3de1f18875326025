"""The one base for the window's tables: a list of rows under a header, as a Qt model.

Every table (the ranked layouts, the library and its trash, the measured runs, the
comparison, the hardware ranking, the tornado's figures) is a list of plain values, one per
row, drawn by a ``QTableView``. :class:`RowsModel` holds the list and answers what Qt asks of
every such model (row and column counts, the horizontal header, an index out of range);
a table says only what its cells show (:meth:`RowsModel.cell`). A new list is one
``modelReset``, never per-cell writes.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Generic, TypeVar

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QObject, QPersistentModelIndex, Qt

Row = TypeVar("Row")
Index = QModelIndex | QPersistentModelIndex
_ROOT = QModelIndex()

DISPLAY = Qt.ItemDataRole.DisplayRole
TOOLTIP = Qt.ItemDataRole.ToolTipRole


class RowsModel(QAbstractTableModel, Generic[Row]):
    """A table of ``rows`` under ``headers`` (one column each).

    Subclasses set ``headers`` (and ``header_tips``), or override :meth:`columns` when the
    columns depend on the data, and implement :meth:`cell`."""

    headers: Sequence[str] = ()
    header_tips: Sequence[str] = ()

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.rows: list[Row] = []

    def set_rows(self, rows: Iterable[Row]) -> None:
        """Show ``rows``: one reset."""
        self.beginResetModel()
        self.rows = list(rows)
        self.endResetModel()

    def columns(self) -> Sequence[str]:
        """The column titles."""
        return self.headers

    def cell(self, row: Row, column: int, role: int) -> Any:
        """What cell (``row``, ``column``) shows for ``role`` (None: nothing)."""
        del row, column, role
        return None

    def row_header(self, section: int) -> Any:
        """The vertical header of row ``section`` (None: the view's numbering)."""
        del section
        return None

    # -- what Qt asks
    def rowCount(self, parent: Index = _ROOT) -> int:  # noqa: N802 (Qt API)
        return 0 if parent.isValid() else len(self.rows)

    def columnCount(self, parent: Index = _ROOT) -> int:  # noqa: N802 (Qt API)
        return 0 if parent.isValid() else len(self.columns())

    def data(self, index: Index, role: int = DISPLAY) -> Any:
        if not index.isValid() or not 0 <= index.row() < len(self.rows):
            return None
        return self.cell(self.rows[index.row()], index.column(), role)

    def headerData(  # noqa: N802 (Qt API)
        self, section: int, orientation: Qt.Orientation, role: int = DISPLAY
    ) -> Any:
        if orientation == Qt.Orientation.Vertical:
            return self.row_header(section) if role == DISPLAY else None
        columns = self.columns()
        if not 0 <= section < len(columns):
            return None
        if role == DISPLAY:
            return columns[section]
        if role == TOOLTIP and section < len(self.header_tips):
            return self.header_tips[section]
        return None
