"""The main window: summary strip, model/GPU bar, the live tabs, library panel, menus."""

from __future__ import annotations

import base64
import contextlib
import gc
import logging
import os
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QByteArray, Qt, QTimer
from PySide6.QtGui import (
    QAction,
    QCloseEvent,
    QGuiApplication,
    QKeySequence,
    QPaintEvent,
    QResizeEvent,
    QScreen,
    QShortcut,
    QShowEvent,
)
from PySide6.QtWidgets import (
    QDockWidget,
    QLabel,
    QMainWindow,
    QMessageBox,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from llm_planner.core.composition.estimate import Report
from llm_planner.core.composition.scenario import Scenario, default_scenario
from llm_planner.gui import settings
from llm_planner.gui.binding import Binder, ScenarioState, guard_wheel, validation_message
from llm_planner.gui.widgets.scenario_bar import ScenarioBar
from llm_planner.gui.widgets.summary import SummaryStrip
from llm_planner.gui.window_export import WindowExport
from llm_planner.gui.window_files import WindowFiles
from llm_planner.gui.window_recovery import AUTOSAVE_DELAY_MS, WindowRecovery

if TYPE_CHECKING:
    from llm_planner.gui.compare import ChooseWindow
    from llm_planner.gui.tabs.base import Tab

log = logging.getLogger(__name__)
DEFAULT_SIZE = (1366, 820)
"""Preferred size; never more than the screen's available area (a 1366×768 laptop)."""
MIN_WIDTH, MIN_HEIGHT = 1024, 640
LIBRARY_WIDTH = 290
"""The library's starting width: name, model, GPUs and date readable at 1366 px."""
NARROW_WIDTH, NARROW_LIBRARY_WIDTH = 1200, 170
"""Below this window width the library narrows to this (names elide; tooltips have them):
at 1024 px the tabs' charts and tables need the room."""
TAB_CLASSES = (
    ("llm_planner.gui.tabs.compute", "ComputeTab", "Compute budget"),
    ("llm_planner.gui.tabs.inference", "InferenceTab", "Inference memory"),
    ("llm_planner.gui.tabs.training", "TrainingTab", "Training memory"),
    ("llm_planner.gui.tabs.parallelism", "ParallelismTab", "Parallelism"),
    ("llm_planner.gui.tabs.whatif", "WhatIfTab", "What if"),
)


class MainWindow(WindowFiles, WindowExport, WindowRecovery, QMainWindow):
    """Every view is a function of ``self.state.scenario``: the shell (layout, tabs, menus,
    window state) around its parts: file actions and drops (``window_files``), chart export
    and figures (``window_export``), autosave and recovery (``window_recovery``)."""

    def __init__(
        self, scenario: Scenario | None = None, path: str | None = None, restore: bool = True
    ):
        super().__init__()
        self._starting = True  # the first page defers its charts until after the first paint
        self._painted = False
        self._narrow = False
        self.setAcceptDrops(True)
        self.state = ScenarioState(scenario or default_scenario(), self)
        self.state.path = path
        self.binder = Binder(self.state, self)
        self.settings: dict[str, Any] = settings.load() if restore else {}
        self.ask_before_discard = True

        self.setCentralWidget(self._build_central())
        self.library = None
        self._build_library()
        self._build_menus()
        self.statusBar()
        guard_wheel(self)

        self.binder.error_changed.connect(self._show_input_error)
        self.binder.echoed.connect(lambda text: self.statusBar().showMessage(text, 6000))
        self.state.changed.connect(self._changed)
        self.state.estimate_failed.connect(self._estimate_failed)
        self.state.undo_stack.cleanChanged.connect(self._clean_changed)
        self.tabs.currentChanged.connect(self._tab_shown)
        self._slow_timer = QTimer(self)
        self._slow_timer.setSingleShot(True)
        self._slow_timer.setInterval(30)
        self._slow_timer.timeout.connect(self._redraw_slow)
        self._stale: set[int] = set()
        self._session_key = f"session-{os.getpid()}"
        self._autosave_timer = QTimer(self)
        self._autosave_timer.setSingleShot(True)
        self._autosave_timer.setInterval(AUTOSAVE_DELAY_MS)
        self._autosave_timer.timeout.connect(self.autosave)

        self.setMinimumSize(MIN_WIDTH, MIN_HEIGHT)
        self._fit_screen()
        if restore:
            self._restore()
            self._fit_screen(only_if_larger=True)
        self._tab_shown(self.tabs.currentIndex())
        self._starting = False
        self.summary.update_from(self.state.scenario, self.state.report)
        self._update_title()

    def _fit_screen(self, only_if_larger: bool = False) -> None:
        """Size the window within the screen's available geometry (taskbars excluded)."""
        # Qt returns no screen while none is attached, whatever the stubs say
        screen: QScreen | None = self.screen() or QGuiApplication.primaryScreen()
        if screen is None:
            if not only_if_larger:
                self.resize(*DEFAULT_SIZE)
            return
        area = screen.availableGeometry()
        frame = 32  # title bar and borders the window manager adds around the client area
        width = min(DEFAULT_SIZE[0], area.width())
        height = min(DEFAULT_SIZE[1], area.height() - frame)
        if only_if_larger:
            if self.width() <= area.width() and self.height() <= area.height() - frame:
                return
            width, height = min(self.width(), width), min(self.height(), height)
        self.resize(max(width, MIN_WIDTH), max(height, MIN_HEIGHT))
        if not only_if_larger:
            self.move(area.topLeft())

    def _build_central(self) -> QWidget:
        central = QWidget()
        layout = QVBoxLayout(central)
        layout.setContentsMargins(6, 6, 6, 2)
        layout.setSpacing(4)
        self.summary = SummaryStrip()
        layout.addWidget(self.summary)
        self.bar = ScenarioBar(self.state, self.binder)
        self.bar.import_failed.connect(self.show_message)
        layout.addWidget(self.bar)
        self.tabs = QTabWidget()
        self.tabs.setDocumentMode(True)
        self.pages: list[Tab | None] = [None] * len(TAB_CLASSES)
        for _module, _cls, title in TAB_CLASSES:
            holder = QWidget()
            QVBoxLayout(holder).setContentsMargins(0, 0, 0, 0)
            self.tabs.addTab(holder, title)
        layout.addWidget(self.tabs, 1)
        self.error_label = QLabel()
        self.error_label.setObjectName("input_error")
        self.error_label.setStyleSheet("color: #D62728;")
        self.error_label.setWordWrap(True)
        self.error_label.hide()
        layout.addWidget(self.error_label)
        return central

    # ------------------------------------------------------------ tabs
    def page(self, index: int) -> Tab:
        """Tab ``index``'s page, built on first use (keeps the first paint cheap)."""
        built = self.pages[index]
        if built is not None:
            return built
        tab = _tab_class(index)(self.state, self.binder, defer_charts=self._starting)
        tab.setObjectName(tab.section)
        holder = self.tabs.widget(index)
        layout = holder.layout() if holder is not None else None
        assert layout is not None, "every tab holder is built with a layout"
        layout.addWidget(tab)
        guard_wheel(tab)
        self.pages[index] = tab
        self._chain_focus()
        return tab

    def _chain_focus(self) -> None:
        """Tab order: the header's fields, the tab bar, then the inputs of the page shown
        (hidden pages are skipped), then the library. A page is built on first use, so its
        fields would otherwise come last, after the library and its notes."""
        anchor: QWidget = self.bar.num_gpus
        QWidget.setTabOrder(anchor, self.tabs.tabBar())
        anchor = self.tabs.tabBar()
        for page in self.pages:
            if page is None:
                continue
            for widget in _focus_chain(page):
                QWidget.setTabOrder(anchor, widget)
                anchor = widget

    def build_all_tabs(self) -> list[Tab]:
        pages = [self.page(i) for i in range(len(TAB_CLASSES))]
        for page in pages:
            page.ensure_charts()
        return pages

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802 (Qt API)
        super().resizeEvent(event)
        narrow = event.size().width() < NARROW_WIDTH
        if narrow != self._narrow:  # on crossing only: a width the user dragged stays
            self._narrow = narrow
            if narrow and self.library_dock.width() > NARROW_LIBRARY_WIDTH:
                self.resizeDocks(
                    [self.library_dock], [NARROW_LIBRARY_WIDTH], Qt.Orientation.Horizontal
                )
            elif not narrow and self.library_dock.width() < LIBRARY_WIDTH:
                self.resizeDocks([self.library_dock], [LIBRARY_WIDTH], Qt.Orientation.Horizontal)

    def paintEvent(self, event: QPaintEvent) -> None:  # noqa: N802 (Qt API)
        super().paintEvent(event)
        if not self._painted:  # the first paint is on screen: now the charts
            QTimer.singleShot(0, self._after_first_paint)

    def showEvent(self, event: QShowEvent) -> None:  # noqa: N802 (Qt API)
        super().showEvent(event)
        if not self._painted and not self.settings.get("geometry"):  # the docks exist now
            width = NARROW_LIBRARY_WIDTH if self._narrow else LIBRARY_WIDTH
            self.resizeDocks([self.library_dock], [width], Qt.Orientation.Horizontal)
        if not self._painted:  # in case the frame itself gets no paint event
            QTimer.singleShot(100, self._after_first_paint)

    def _after_first_paint(self) -> None:
        if self._painted:
            return
        self._painted = True
        # what exists now (modules, catalogs, widgets) lives as long as the app: keep it out
        # of the cyclic collector's full passes, which otherwise cost milliseconds per edit
        gc.freeze()
        page = self.pages[self.tabs.currentIndex()]
        if page is not None:
            page.ensure_charts()
        self._slow_timer.start()
        if self.library is not None:
            self.library.reload()

    def _tab_shown(self, index: int) -> None:
        if index < 0:
            return
        fresh = self.pages[index] is None
        page = self.page(index)
        if index in self._stale and not fresh:
            page.update_view(self.state.scenario, self.state.report)
        self._stale.discard(index)
        self._slow_timer.start()

    def _changed(self, scenario: Scenario, report: Report) -> None:
        """Redraw what is visible now; the rest when shown. Slow curves shortly after."""
        self.summary.update_from(scenario, report)
        current = self.tabs.currentIndex()
        for index, page in enumerate(self.pages):
            if page is None:
                continue
            if index == current:
                page.update_view(scenario, report)
            else:
                self._stale.add(index)
        self._update_title()
        self._slow_timer.start()
        self._autosave_timer.start()

    def _redraw_slow(self) -> None:
        page = self.pages[self.tabs.currentIndex()]
        if page is not None:
            page.update_slow(self.state.scenario, self.state.report)

    def flush(self) -> None:
        """Run pending deferred redraws now (tests, screenshots, smoke test)."""
        self.state.fit_worker.wait()
        self._slow_timer.stop()
        page = self.pages[self.tabs.currentIndex()]
        if page is not None:
            page.ensure_charts()
            self._redraw_slow()
            page.flush()

    def _show_input_error(self, message: str) -> None:
        self.error_label.setText(message)
        self.error_label.setVisible(bool(message))

    def show_message(self, message: str) -> None:
        self.statusBar().showMessage(message, 10000)
        QMessageBox.warning(self, "LLM Planner", message)

    def _estimate_failed(self, message: str) -> None:
        self.statusBar().showMessage(f"Estimate failed: {message}", 8000)

    def _clean_changed(self, _clean: bool) -> None:
        self._update_title()

    def _update_title(self) -> None:
        scenario = self.state.scenario
        name = scenario.name
        self.setWindowTitle(
            f"LLM Planner — {name}[*] ({scenario.model.architecture.name} on "
            f"{scenario.num_gpus:,} × {scenario.gpu.name})"
        )
        self.setWindowModified(not self.state.undo_stack.isClean())

    # ------------------------------------------------------------ library
    def _build_library(self) -> None:
        from llm_planner.gui.widgets.library_panel import LibraryPanel

        self.library = LibraryPanel(self)
        dock = QDockWidget("Scenarios", self)
        dock.setObjectName("library_dock")
        dock.setWidget(self.library)
        dock.setFeatures(
            QDockWidget.DockWidgetFeature.DockWidgetMovable
            | QDockWidget.DockWidgetFeature.DockWidgetClosable
        )
        self.addDockWidget(Qt.DockWidgetArea.LeftDockWidgetArea, dock)
        self.resizeDocks([dock], [LIBRARY_WIDTH], Qt.Orientation.Horizontal)
        self.library_dock = dock

    # ------------------------------------------------------------ menus
    def _action(
        self, menu: Any, text: str, slot: Any, shortcut: Any = None, name: str = ""
    ) -> QAction:
        action = QAction(text, self)
        if shortcut is not None:
            action.setShortcut(QKeySequence(shortcut))
        action.triggered.connect(slot)
        action.setObjectName(name or text)
        menu.addAction(action)
        return action

    def _build_menus(self) -> None:
        bar = self.menuBar()
        file = bar.addMenu("&File")
        S = QKeySequence.StandardKey  # noqa: N806
        self._action(file, "&New", self.new_scenario, S.New, "new")
        self._action(file, "&Open…", self.open_dialog, S.Open, "open")
        self.recent_menu = file.addMenu("Open &Recent")
        self.recent_menu.aboutToShow.connect(self._fill_recent)
        file.addSeparator()
        self._action(file, "&Save", self.save, S.Save, "save")
        self._action(file, "Save &As…", self.save_as, S.SaveAs, "save_as")
        file.addSeparator()
        self._action(file, "&Import scenario into library…", self.import_dialog, None, "import")
        self._action(
            file, "&Export scenario…", self.export_scenario_dialog, None, "export_scenario"
        )
        report = file.addMenu("Export &report")
        self._action(
            report, "as &Markdown…", lambda: self.export_report_dialog("md"), None, "export_md"
        )
        self._action(
            report, "as &CSV…", lambda: self.export_report_dialog("csv"), None, "export_csv"
        )
        chart = file.addMenu("Export &chart")
        self._action(chart, "as &PNG…", lambda: self.export_chart_dialog("png"), None, "export_png")
        self._action(chart, "as &SVG…", lambda: self.export_chart_dialog("svg"), None, "export_svg")
        file.addSeparator()
        self._action(file, "&Quit", self.close, S.Quit, "quit")

        edit = bar.addMenu("&Edit")
        undo = self.state.undo_stack.createUndoAction(self, "&Undo")
        undo.setShortcut(QKeySequence(S.Undo))
        redo = self.state.undo_stack.createRedoAction(self, "&Redo")
        redo.setShortcuts([QKeySequence(S.Redo), QKeySequence("Ctrl+Y")])
        edit.addAction(undo)
        edit.addAction(redo)
        edit.addSeparator()
        self._action(edit, "&Copy figures", self.copy_figures, "Ctrl+Shift+C", "copy_figures")

        view = bar.addMenu("&View")
        for index, (_m, _c, title) in enumerate(TAB_CLASSES):
            self._action(
                view,
                title,
                lambda _=False, i=index: self.tabs.setCurrentIndex(i),
                f"Ctrl+{index + 1}",
                f"tab{index}",
            )
        view.addSeparator()
        view.addAction(self.library_dock.toggleViewAction())
        choose = lambda _=False: self.compare_and_choose()  # noqa: E731 (one menu entry)
        self._action(view, "Compare and &choose…", choose, "Ctrl+Shift+K", "compare")

        help_menu = bar.addMenu("&Help")
        self._action(
            help_menu, "&Formulas and sources", self.show_formulas, S.HelpContents, "formulas"
        )
        self._action(help_menu, "&About LLM Planner", self.show_about, None, "about")

    def compare_and_choose(self) -> ChooseWindow:
        """Open (or raise) Compare and choose; Esc closes it, as it does a dialog. Imported
        here: its charts load pyqtgraph, which the first paint does not need."""
        from llm_planner.gui.compare import open_choose_window

        window = open_choose_window(self)
        if window.findChild(QShortcut, "close_on_escape") is None:
            shortcut = QShortcut(QKeySequence(Qt.Key.Key_Escape), window)
            shortcut.setObjectName("close_on_escape")
            shortcut.activated.connect(window.close)
        return window

    # ------------------------------------------------------------ window state
    def _restore(self) -> None:
        geometry = self.settings.get("geometry")
        if isinstance(geometry, str):
            with contextlib.suppress(ValueError):
                self.restoreGeometry(QByteArray(base64.b64decode(geometry)))
        tab = self.settings.get("tab")
        if isinstance(tab, int) and 0 <= tab < self.tabs.count():
            self.tabs.setCurrentIndex(tab)

    def save_window_state(self) -> None:
        self.settings["geometry"] = base64.b64encode(bytes(self.saveGeometry().data())).decode(
            "ascii"
        )
        self.settings["tab"] = self.tabs.currentIndex()
        settings.save(self.settings)

    def closeEvent(self, event: QCloseEvent) -> None:  # noqa: N802 (Qt API)
        if not self.confirm_discard():
            event.ignore()
            return
        self.save_window_state()
        self.discard_recovery()
        event.accept()


def _tab_class(index: int) -> type[Tab]:
    """Tab ``index``'s class, imported on first use (plain imports: bundlers see them)."""
    if index == 0:
        from llm_planner.gui.tabs.compute import ComputeTab

        return ComputeTab
    if index == 1:
        from llm_planner.gui.tabs.inference import InferenceTab

        return InferenceTab
    if index == 2:
        from llm_planner.gui.tabs.training import TrainingTab

        return TrainingTab
    if index == 3:
        from llm_planner.gui.tabs.parallelism import ParallelismTab

        return ParallelismTab
    from llm_planner.gui.tabs.whatif import WhatIfTab

    return WhatIfTab


def _focus_chain(root: QWidget) -> list[QWidget]:
    """The widgets under ``root`` that take focus by Tab, in their present focus order."""
    found: list[QWidget] = []
    widget: QWidget | None = root.nextInFocusChain()
    seen = 0
    while widget is not None and widget is not root and seen < 5000:
        seen += 1
        if root.isAncestorOf(widget) and widget.focusPolicy() & Qt.FocusPolicy.TabFocus:
            found.append(widget)
        widget = widget.nextInFocusChain()
    return found


__all__ = ["MainWindow", "validation_message"]
