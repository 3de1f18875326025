"""A two-column table of a section's figures; hovering a row explains it."""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QResizeEvent
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHeaderView,
    QTableWidget,
    QTableWidgetItem,
    QWidget,
)

from llm_planner.core.primitives.figures import Figure
from llm_planner.gui.formatting import figure_text, figure_tooltip

TRIM_DELAY_MS = 400
"""Rows a shorter list of figures leaves blank are removed this long after the last change
(typing pauses), not on the keystroke."""


class FigureTable(QTableWidget):
    """Label | value for each figure, updated in place (items reused)."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(0, 2, parent)
        self.setHorizontalHeaderLabels(["Figure", "Value"])
        self.verticalHeader().setVisible(False)
        self.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.setAlternatingRowColors(True)
        # a narrow table wraps a label or value onto a second line rather than eliding it
        # ("128 ×…nodes"): a figure is read, not guessed from its tooltip
        self.setWordWrap(True)
        self.setTextElideMode(Qt.TextElideMode.ElideMiddle)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        header = self.horizontalHeader()
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        # Interactive, sized on demand: ResizeToContents re-measures every row on every
        # setText, which costs milliseconds per change
        header.setSectionResizeMode(1, QHeaderView.ResizeMode.Interactive)
        self._widest = 0
        self.verticalHeader().setDefaultSectionSize(self.fontMetrics().height() + 6)
        self.figures: list[Figure] = []
        self.setMinimumWidth(200)
        self._trim = QTimer(self)
        self._trim.setSingleShot(True)
        self._trim.setInterval(TRIM_DELAY_MS)
        self._trim.timeout.connect(self._drop_blank_rows)
        # a column's new width (the label column stretches with the table) re-wraps the
        # texts: the rows take their new heights once the header has settled
        self._rewrap = QTimer(self)
        self._rewrap.setSingleShot(True)
        self._rewrap.setInterval(0)
        self._rewrap.timeout.connect(self.resizeRowsToContents)
        header.sectionResized.connect(lambda *_: self._rewrap.start())

    def set_figures(self, figures: Sequence[Figure]) -> None:
        """Rewrite only the rows whose figure changed (a figure is a frozen value: equal
        figures have equal text and tooltip), so an edit touches a few cells, not all."""
        old, self.figures = self.figures, list(figures)
        # rows only grow; those past the figures are blanked: a line that comes and goes with
        # an input (a layout problem) then repaints one row, where a new row count re-lays
        # out and repaints the whole table (2 ms a change on the parallelism tab)
        if self.rowCount() < len(self.figures):
            self.setRowCount(len(self.figures))
        self._blank(range(len(self.figures), min(len(old), self.rowCount())))
        widest = self._widest
        changed: list[int] = []
        for row, figure in enumerate(self.figures):
            if row < len(old) and old[row] == figure and self.item(row, 1) is not None:
                continue
            changed.append(row)
            tip = figure_tooltip(figure)
            for column, text in enumerate((figure.label, figure_text(figure))):
                item = self.item(row, column)
                if item is None:
                    item = QTableWidgetItem()
                    if column == 1:
                        item.setTextAlignment(
                            Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter
                        )
                    self.setItem(row, column, item)
                if item.text() != text:
                    item.setText(text)
                if column == 1:
                    widest = max(widest, len(text))
                if item.toolTip() != tip:  # each set repaints the cell
                    item.setToolTip(tip)
                if item.data(Qt.ItemDataRole.UserRole) != figure.key:
                    item.setData(Qt.ItemDataRole.UserRole, figure.key)
        if widest > self._widest:
            self._widest = widest
            self._fit_columns()
        for row in changed:  # a row's height follows its text (no change: no relayout)
            self.resizeRowToContents(row)

    def _blank(self, rows: range) -> None:
        """Empty ``rows`` (past the figures); they are removed once typing pauses."""
        for row in rows:
            for column in (0, 1):
                item = self.item(row, column)
                if item is not None:
                    item.setText("")
                    item.setToolTip("")
                    item.setData(Qt.ItemDataRole.UserRole, None)
        if self.rowCount() > len(self.figures):
            self._trim.start()

    def _drop_blank_rows(self) -> None:
        if self.rowCount() > len(self.figures):
            self.setRowCount(len(self.figures))

    def _fit_columns(self) -> None:
        """The value column takes what its longest value needs on one line; the labels wrap
        in the rest, which is never narrower than their longest word (nothing elides: a
        long value wraps at its spaces instead)."""
        fm = self.fontMetrics()
        needed = max(
            (fm.horizontalAdvance(figure_text(f)) for f in self.figures),
            default=self.sizeHintForColumn(1),
        )
        needed = max(needed + 14, fm.horizontalAdvance("Value") + 14)
        longest_word = max(
            (fm.horizontalAdvance(w) for f in self.figures for w in f.label.split()),
            default=60,
        )
        cap = max(self.viewport().width() - longest_word - 24, 80)
        width = min(needed, cap)
        if self.columnWidth(1) != width:
            self.setColumnWidth(1, width)

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802 (Qt API)
        super().resizeEvent(event)
        self._fit_columns()
        self._rewrap.start()

    def value_text(self, key: str) -> str | None:
        """The text shown for figure ``key`` (for tests and copy)."""
        for row, figure in enumerate(self.figures):
            if figure.key == key:
                item = self.item(row, 1)
                return item.text() if item else None
        return None
