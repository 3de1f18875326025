"""Unexpected exceptions: a dialog with a copyable report, a log file, and the app goes on."""

from __future__ import annotations

import logging
import platform
import sys
import traceback
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType

from PySide6.QtWidgets import QApplication, QMessageBox, QWidget

from llm_planner.gui import settings

log = logging.getLogger(__name__)
LOG_NAME = "errors.log"


def log_path() -> Path:
    return settings.log_dir() / LOG_NAME


def error_report(kind: type[BaseException], error: BaseException, tb: TracebackType | None) -> str:
    from llm_planner import __version__

    lines = [
        f"LLM Planner {__version__} — unexpected error at "
        f"{datetime.now(UTC).isoformat(timespec='seconds')}",
        f"Python {platform.python_version()} on {platform.platform()}",
        "",
        *traceback.format_exception(kind, error, tb),
    ]
    return "\n".join(line.rstrip("\n") for line in lines)


def write_log(report: str) -> Path | None:
    path = log_path()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a", encoding="utf-8") as handle:
            handle.write(report + "\n\n")
    except OSError:
        return None
    return path


def show_error(parent: QWidget | None, report: str, where: Path | None) -> None:
    box = QMessageBox(parent)
    box.setIcon(QMessageBox.Icon.Critical)
    box.setWindowTitle("Unexpected error")
    first = report.strip().splitlines()[-1] if report.strip() else "error"
    box.setText(
        f"Something went wrong. Your scenario is kept and the app keeps running.\n\n{first}"
    )
    box.setInformativeText(f"The full report is below{f' and in {where}' if where else ''}.")
    box.setDetailedText(report)
    copy = box.addButton("Copy report", QMessageBox.ButtonRole.ActionRole)
    box.addButton(QMessageBox.StandardButton.Ok)
    copy.clicked.disconnect()
    copy.clicked.connect(lambda: QApplication.clipboard().setText(report))
    box.open()


class ExceptionHook:
    """``sys.excepthook`` for the GUI: log and show; never exit."""

    def __init__(self, parent_getter: object = None):
        self.parent_getter = parent_getter
        self.previous = sys.excepthook
        self.reports: list[str] = []
        self.show_dialogs = True

    def __call__(
        self, kind: type[BaseException], error: BaseException, tb: TracebackType | None
    ) -> None:
        if issubclass(kind, KeyboardInterrupt):
            self.previous(kind, error, tb)
            return
        report = error_report(kind, error, tb)
        self.reports.append(report)
        log.error("unexpected error\n%s", report)
        where = write_log(report)
        sys.stderr.write(report + "\n")
        if self.show_dialogs and QApplication.instance() is not None:
            parent = self.parent_getter() if callable(self.parent_getter) else None
            show_error(parent if isinstance(parent, QWidget) else None, report, where)

    def install(self) -> None:
        sys.excepthook = self

    def uninstall(self) -> None:
        sys.excepthook = self.previous
