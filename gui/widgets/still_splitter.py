"""A splitter that re-places its panes only when a pane's size constraints changed."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QEvent
from PySide6.QtWidgets import QSplitter


class StillSplitter(QSplitter):
    """``QSplitter`` answers every ``LayoutRequest`` (a label's new text anywhere inside a
    pane posts one) by re-placing every pane and repainting itself whole: on a tab that is
    the whole tab, milliseconds per keystroke. This one passes a request on only when a
    pane's constraints (shown, minimum, maximum, hint, policy) differ from the last ones it
    laid out with; a resize of the splitter itself is handled as before."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self._laid_out: tuple[Any, ...] | None = None

    def _constraints(self) -> tuple[Any, ...]:
        panes = (pane for i in range(self.count()) if (pane := self.widget(i)) is not None)
        return tuple(
            (
                pane.isHidden(),
                pane.minimumSizeHint(),
                pane.minimumSize(),
                pane.maximumSize(),
                pane.sizeHint(),
                pane.sizePolicy(),
            )
            for pane in panes
        )

    def event(self, event: QEvent) -> bool:
        if event.type() == QEvent.Type.LayoutRequest:
            constraints = self._constraints()
            if constraints == self._laid_out:
                return True  # nothing a pane asks for has changed: nothing to re-place
            self._laid_out = constraints
        return super().event(event)
