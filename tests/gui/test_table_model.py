"""The one table-model base: counts, headers, cells and one reset per new list."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QModelIndex, Qt

from llm_planner.gui.table_model import RowsModel

DISPLAY = Qt.ItemDataRole.DisplayRole


class Pairs(RowsModel[tuple[str, int]]):
    headers = ("name", "count")
    header_tips = ("the name",)

    def cell(self, row: tuple[str, int], column: int, role: int) -> Any:
        return str(row[column]) if role == DISPLAY else None


def test_counts_headers_and_cells(qtbot: Any) -> None:
    del qtbot  # a QApplication for the model
    model = Pairs()
    resets: list[int] = []
    model.modelReset.connect(lambda: resets.append(1))
    model.set_rows([("a", 1), ("b", 2), ("c", 3)])
    assert resets == [1]  # one reset for the whole list
    assert (model.rowCount(), model.columnCount()) == (3, 2)
    assert model.data(model.index(1, 1), DISPLAY) == "2"
    assert model.data(model.index(2, 0), DISPLAY) == "c"
    assert model.data(model.index(5, 0), DISPLAY) is None  # out of range: nothing
    assert model.headerData(1, Qt.Orientation.Horizontal, DISPLAY) == "count"
    assert model.headerData(0, Qt.Orientation.Horizontal, Qt.ItemDataRole.ToolTipRole) == (
        "the name"
    )
    assert model.headerData(1, Qt.Orientation.Horizontal, Qt.ItemDataRole.ToolTipRole) is None
    assert model.headerData(0, Qt.Orientation.Vertical, DISPLAY) is None
    # a table has no children: a valid parent has no rows or columns
    assert model.rowCount(model.index(0, 0)) == 0
    assert model.columnCount(model.index(0, 0)) == 0
    assert model.rowCount(QModelIndex()) == 3
