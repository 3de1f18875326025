"""Opening the window from the command line: whether a display exists, a child process
that tries Qt first (Qt aborts the process when its platform cannot start), and the report
printed instead when no window can open."""

from __future__ import annotations

import gc
import os
import sys
from typing import TYPE_CHECKING

from llm_planner.cli_common import format_report_text
from llm_planner.cli_scenario import load_scenario_file

if TYPE_CHECKING:
    import subprocess


def _has_display() -> bool:
    """Whether a Qt window can be shown: on Linux/BSD an X11 or Wayland display must exist."""
    if os.environ.get("QT_QPA_PLATFORM"):
        return True
    if sys.platform.startswith(("linux", "freebsd", "openbsd", "netbsd")):
        return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))
    return True


QT_PROBE_FLAG = "--qt-probe"
"""Hidden argument: start Qt's GUI platform and exit 0 (run in a child process)."""


def qt_probe() -> int:
    from PySide6.QtGui import QGuiApplication

    QGuiApplication(sys.argv[:1])
    return 0


_QT_PROBE_CODE = "from PySide6.QtGui import QGuiApplication; QGuiApplication([])"


def _start_qt_probe() -> subprocess.Popen[str] | None:
    """Start a child process that opens Qt's GUI platform, or None where none is needed.

    Qt aborts the whole process when its platform plugin cannot start (an X display that
    is set but unreachable, or a missing system library such as libxcb-cursor0), which no
    ``try`` can catch; so a child tries first, while this process imports the window's
    modules (the two overlap: about 0.35 s on an X server here), and the window opens only
    if the child succeeded. Skipped where the platform is forced (QT_QPA_PLATFORM) and on
    macOS and Windows, whose platform plugins do not depend on a display server.
    """
    if os.environ.get("QT_QPA_PLATFORM") or not sys.platform.startswith(
        ("linux", "freebsd", "openbsd", "netbsd")
    ):
        return None
    if getattr(sys, "frozen", False):
        command = [sys.executable, QT_PROBE_FLAG]
    else:
        command = [sys.executable, "-c", _QT_PROBE_CODE]
    import subprocess  # the window's path only: not on every command's

    try:
        return subprocess.Popen(
            command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
        )
    except OSError:
        return None  # cannot even start a child: let Qt try in this process


def _qt_probe_problem(probe: subprocess.Popen[str] | None) -> str | None:
    """Why Qt cannot open a window here (from the probe child), or None if it can."""
    if probe is None:
        return None
    import subprocess

    try:
        _, stderr = probe.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        probe.kill()
        probe.communicate()
        return "Qt did not start within 30 s"
    if probe.returncode == 0:
        return None
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    reason = next((line for line in lines if "xcb" in line or "display" in line), None)
    return f"Qt could not start on this display ({reason or f'exit status {probe.returncode}'})"


def _print_report_instead(file: str | None, why: str) -> int:
    sys.stderr.write(
        f"llm-planner: {why}, so the window cannot open; printing the "
        + ("scenario's" if file else "default scenario's")
        + " report instead. Set QT_QPA_PLATFORM=offscreen to force Qt.\n"
    )
    from llm_planner.core.composition.estimate import estimate
    from llm_planner.core.composition.scenario import default_scenario

    scenario = load_scenario_file(file) if file else default_scenario()
    sys.stdout.write(format_report_text(estimate(scenario)))
    return 0


INTERPRETER_GC_THRESHOLD = gc.get_threshold()
"""The collector's thresholds when this module loads, before ``cli.main`` raises them for a
command's start: the window, which runs for hours, gets them back."""


def cmd_window(file: str | None, smoke_test: bool = False) -> int:
    """Open the window; with no display, say so and print the default report instead."""
    probe = None
    if not smoke_test:
        if not _has_display():
            return _print_report_instead(
                file, "no display available (neither DISPLAY nor WAYLAND_DISPLAY is set)"
            )
        probe = _start_qt_probe()
    try:
        from llm_planner.gui.app import run_app

        if probe is not None:  # import the window's modules while the probe runs
            import llm_planner.gui.main_window  # noqa: F401
    except ImportError as error:
        sys.stderr.write(f"llm-planner: the window is not available ({error}).\n")
        return 1
    gc.set_threshold(*INTERPRETER_GC_THRESHOLD)  # the modules are loaded
    problem = _qt_probe_problem(probe)
    if problem is not None:
        return _print_report_instead(file, problem)
    return int(run_app(file=file, smoke_test=smoke_test))
