"""The main window's autosave and recovery: unsaved edits copied to the library's recovery
folder a moment after each change, offered back at the next start after a crash."""

from __future__ import annotations

import contextlib
import logging
from pathlib import Path

from PySide6.QtWidgets import QMessageBox

from llm_planner.gui.window_base import WindowBase

log = logging.getLogger(__name__)
AUTOSAVE_DELAY_MS = 2000
"""Unsaved edits are copied to the recovery folder this long after the last change."""


class WindowRecovery(WindowBase):
    """Autosave, discard and offer recovered work (a part of :class:`.MainWindow`)."""

    def autosave(self) -> Path | None:
        """Copy unsaved edits to the library's recovery folder (survives a crash)."""
        if self.library is None or self.state.undo_stack.isClean():
            return None
        try:
            return Path(self.library.library.write_recovery(self.state.scenario, self._session_key))
        except (OSError, ValueError) as error:
            log.warning("autosave failed: %s", error)
            return None

    def discard_recovery(self) -> None:
        self._autosave_timer.stop()
        if self.library is not None:
            with contextlib.suppress(OSError, ValueError):
                self.library.library.discard_recovery(self._session_key)

    def offer_recovery(self, ask: bool = True) -> bool:
        """At start: reopen the newest unsaved work a crashed session left behind."""
        if self.library is None:
            return False
        try:
            pending = self.library.library.pending_recoveries()
        except (OSError, ValueError):
            return False
        if not pending:
            return False
        newest = pending[0]
        if ask:
            answer = QMessageBox.question(
                self,
                "Recover unsaved changes",
                f"“{newest.scenario.name}” ({newest.scenario.model.architecture.name} on "
                f"{newest.scenario.num_gpus:,} × {newest.scenario.gpu.name}) has unsaved "
                "changes from "
                f"{newest.saved.astimezone():%Y-%m-%d %H:%M}. Recover them?",
            )
            if answer != QMessageBox.StandardButton.Yes:
                for recovery in pending:
                    with contextlib.suppress(OSError, ValueError):
                        self.library.library.discard_recovery(recovery.key)
                return False
        self.state.load(newest.scenario, None)
        self.state.undo_stack.resetClean()  # recovered work is unsaved work
        self._update_title()
        for recovery in pending:
            with contextlib.suppress(OSError, ValueError):
                self.library.library.discard_recovery(recovery.key)
        self.autosave()
        return True
