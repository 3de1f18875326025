"""Pickers that never cut their text: the closed box elides with "…", the tooltip and the
open list show the whole name."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QPaintEvent
from PySide6.QtWidgets import QComboBox, QStyle, QStyleOptionComboBox, QStylePainter, QWidget


class ElidedCombo(QComboBox):
    """A ``QComboBox`` that elides the current text to its width (tooltip: the full text);
    the popup is as wide as its longest entry."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.currentIndexChanged.connect(self._current_changed)

    def _current_changed(self, _index: int) -> None:
        text = self.currentText()
        base = self.property("baseTooltip") or ""
        self.setToolTip(f"{text}<br>{base}" if base else text)

    def set_base_tooltip(self, tooltip: str) -> None:
        self.setProperty("baseTooltip", tooltip)
        self._current_changed(self.currentIndex())

    def showPopup(self) -> None:  # noqa: N802 (Qt API)
        view = self.view()
        view.setMinimumWidth(max(self.width(), view.sizeHintForColumn(0) + 30))
        super().showPopup()

    def paintEvent(self, event: QPaintEvent) -> None:  # noqa: N802 (Qt API)
        del event
        if self.property("shownText") != self.currentText():  # signals may have been blocked
            self.setProperty("shownText", self.currentText())
            self._current_changed(self.currentIndex())
        painter = QStylePainter(self)
        option = QStyleOptionComboBox()
        self.initStyleOption(option)
        painter.drawComplexControl(QStyle.ComplexControl.CC_ComboBox, option)
        field = self.style().subControlRect(
            QStyle.ComplexControl.CC_ComboBox, option, QStyle.SubControl.SC_ComboBoxEditField, self
        )
        option.currentText = self.fontMetrics().elidedText(
            option.currentText, Qt.TextElideMode.ElideRight, max(field.width() - 4, 10)
        )
        painter.drawControl(QStyle.ControlElement.CE_ComboBoxLabel, option)
