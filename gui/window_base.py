"""What the main window's parts (``window_files``, ``window_export``, ``window_recovery``)
need of the window: its state, library, settings and a few of its methods. For the type
checker only: at run time the parts are plain mixins of :class:`.main_window.MainWindow`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pathlib import Path

    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QMainWindow, QMenu, QTabWidget

    from llm_planner.gui.binding import ScenarioState
    from llm_planner.gui.tabs.base import Tab
    from llm_planner.gui.widgets.library_panel import LibraryPanel
    from llm_planner.gui.widgets.scenario_bar import ScenarioBar

    class WindowBase(QMainWindow):
        """The attributes and methods of :class:`.main_window.MainWindow` its parts use."""

        state: ScenarioState
        library: LibraryPanel | None
        settings: dict[str, Any]
        ask_before_discard: bool
        bar: ScenarioBar
        tabs: QTabWidget
        recent_menu: QMenu
        _session_key: str
        _autosave_timer: QTimer

        def page(self, index: int) -> Tab:
            raise NotImplementedError

        def show_message(self, message: str) -> None:
            raise NotImplementedError

        def _update_title(self) -> None:
            raise NotImplementedError

        # one part calls another's
        def discard_recovery(self) -> None:
            raise NotImplementedError

        def open_file(self, path: str | Path, confirm: bool = True) -> bool:
            raise NotImplementedError

        def _folder(self) -> str:
            raise NotImplementedError

        def _remember_folder(self, path: str) -> None:
            raise NotImplementedError

else:
    WindowBase = object
