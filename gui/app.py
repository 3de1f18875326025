"""Start the window: ``run_app(file, smoke_test)`` (called by ``llm-planner``)."""

from __future__ import annotations

import logging
import os
import sys
import time
from pathlib import Path

START = time.perf_counter()


def _needs_offscreen() -> bool:
    if os.environ.get("QT_QPA_PLATFORM"):
        return False
    if sys.platform.startswith(("linux", "freebsd", "openbsd", "netbsd")):
        return not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))
    return False


def make_application(argv: list[str] | None = None) -> object:
    """The QApplication (created once), with high-DPI rounding and app metadata."""
    from PySide6.QtCore import Qt
    from PySide6.QtGui import QGuiApplication, QIcon
    from PySide6.QtWidgets import QApplication

    # a worker thread (the layout search, the fit suggestions, the scaling curve) keeps the
    # GIL up to the switch interval once the window needs it: 5 ms by default, a visible
    # share of a keystroke's redraw; 1 ms hands it back sooner
    sys.setswitchinterval(0.001)
    app = QApplication.instance()
    if app is not None:
        return app
    QGuiApplication.setHighDpiScaleFactorRoundingPolicy(
        Qt.HighDpiScaleFactorRoundingPolicy.PassThrough
    )
    app = QApplication(argv if argv is not None else sys.argv[:1])
    app.setApplicationName("LLM Planner")
    app.setOrganizationName("llm-planner")
    app.setDesktopFileName("io.github.llm_planner.LLMPlanner")  # the .desktop entry
    try:
        from importlib import resources

        icon = resources.files("llm_planner.resources").joinpath("icons")
        for name in ("llm-planner.svg", "llm-planner-256.png"):
            if icon.joinpath(name).is_file():
                app.setWindowIcon(QIcon(str(icon.joinpath(name))))
                break
    except (ModuleNotFoundError, OSError):
        pass
    return app


def run_smoke_test(window: object) -> int:
    """Visit every tab, change an input, check the figures moved; 0 when all went well."""
    from PySide6.QtWidgets import QApplication

    from llm_planner.gui.main_window import MainWindow

    assert isinstance(window, MainWindow)
    for index in range(window.tabs.count()):
        window.tabs.setCurrentIndex(index)
        QApplication.processEvents()
        window.flush()
    before = window.state.report
    edit = window.bar.num_gpus
    target = window.state.scenario.num_gpus * 2
    edit.setText(str(target))
    edit.textEdited.emit(str(target))
    QApplication.processEvents()
    window.flush()
    ok = window.state.scenario.num_gpus == target and window.state.report is not before
    window.state.undo_stack.undo()
    ok = ok and window.state.scenario.num_gpus == target // 2
    window.ask_before_discard = False
    sys.stdout.write(
        f"smoke test: {window.tabs.count()} tabs visited, input changed and undone: "
        f"{'ok' if ok else 'FAILED'}\n"
    )
    return 0 if ok else 1


def run_app(file: str | None = None, smoke_test: bool = False) -> int:
    """Open the main window (on ``file`` if given); with ``smoke_test``, exercise and exit."""
    if smoke_test and _needs_offscreen():
        os.environ["QT_QPA_PLATFORM"] = "offscreen"
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    app = make_application()
    from PySide6.QtWidgets import QApplication

    from llm_planner.gui.errors import ExceptionHook
    from llm_planner.gui.main_window import MainWindow

    window = MainWindow(restore=not smoke_test)
    hook = ExceptionHook(lambda: window)
    hook.install()
    if file and smoke_test:  # headless: a bad file is a message and exit 2, never a dialog
        from llm_planner.core.files import store

        try:
            store.load_scenario_file(Path(file))
        except (store.ScenarioFileError, OSError, ValueError) as error:
            sys.stderr.write(f"llm-planner: error: {error}\n")
            hook.uninstall()
            return 2
    if file and not window.open_file(Path(file), confirm=False) and smoke_test:
        return 1
    window.show()
    if not smoke_test and not file:
        window.offer_recovery()
    if smoke_test:
        hook.show_dialogs = False
        status = run_smoke_test(window)
        window.close()
        hook.uninstall()
        return 1 if hook.reports else status
    assert isinstance(app, QApplication)
    try:
        return int(app.exec())
    finally:
        hook.uninstall()
