"""Work slower than a frame (the layout search, the scaling curve) off the UI thread.

A :class:`Latest` runs one function at a time on ``QThreadPool``; each request gets a
generation number and only the newest request's result comes back (``done``), so a run
started for an older scenario is superseded, never shown. Core is pure Python on frozen
inputs, so running it in a worker thread shares nothing mutable with the window.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QObject, QRunnable, QThreadPool, QTimer, Signal

log = logging.getLogger(__name__)


class _Signals(QObject):
    finished = Signal(int, object, str)
    """(generation, result or None, error message or "")."""


class _Job(QRunnable):
    def __init__(self, generation: int, function: Callable[[], Any], signals: _Signals):
        super().__init__()
        self.generation, self.function, self.signals = generation, function, signals
        self.setAutoDelete(True)

    def run(self) -> None:
        try:
            result = self.function()
        except Exception as error:  # an estimator bug must not take the window down
            log.exception("background job failed")
            self.signals.finished.emit(self.generation, None, f"{type(error).__name__}: {error}")
            return
        self.signals.finished.emit(self.generation, result, "")


class Latest(QObject):
    """Run the newest request in the background; ``done(result)`` for it alone."""

    done = Signal(object)
    failed = Signal(str)
    busy_changed = Signal(bool)

    def __init__(
        self, parent: QObject | None = None, pool: QThreadPool | None = None, delay_ms: int = 0
    ):
        """``delay_ms``: start a request only once no newer one came for that long (a worker
        thread holds the GIL in turns with the window: while keys come fast, the window
        gets the processor, and the job starts when typing pauses)."""
        super().__init__(parent)
        self.pool = pool or QThreadPool.globalInstance()
        self.generation = 0
        self.running = False
        self._pending: Callable[[], Any] | None = None
        self._signals = _Signals(self)
        self._signals.finished.connect(self._finished)
        self._timer: QTimer | None = None
        if delay_ms > 0:
            self._timer = QTimer(self)
            self._timer.setSingleShot(True)
            self._timer.setInterval(delay_ms)
            self._timer.timeout.connect(self._start_if_idle)

    @property
    def busy(self) -> bool:
        return self.running or self._pending is not None

    def _waiting(self) -> bool:
        return self._timer is not None and self._timer.isActive()

    def submit(self, function: Callable[[], Any]) -> None:
        """Supersede whatever was asked before; start now (or after the delay), or when the
        running job ends."""
        self.generation += 1
        self._pending = function
        if self._timer is not None:
            self._timer.start()  # restarts: each newer request defers the start
        elif not self.running:
            self._start()
        self.busy_changed.emit(True)

    def cancel(self) -> None:
        """Forget the pending and running requests: nothing comes back for them."""
        self.generation += 1
        self._pending = None
        if self._timer is not None:
            self._timer.stop()
        if not self.running:
            self.busy_changed.emit(False)

    def _start_if_idle(self) -> None:
        if not self.running:
            self._start()

    def _start(self) -> None:
        function, self._pending = self._pending, None
        if function is None:
            return
        self.running = True
        self.pool.start(_Job(self.generation, function, self._signals))

    def _finished(self, generation: int, result: Any, error: str) -> None:
        self.running = False
        if self._pending is not None:  # a newer request came in: run it, drop this one
            if not self._waiting():
                self._start()
            return
        self.busy_changed.emit(False)
        if generation != self.generation:
            return
        if error:
            self.failed.emit(error)
        else:
            self.done.emit(result)

    def wait(self, msecs: int = 30000) -> None:
        """Block until the pool is idle and deliver results (tests, screenshots)."""
        from PySide6.QtCore import QCoreApplication

        for _round in range(100):  # each round delivers one result (and starts the next)
            if self._waiting():
                assert self._timer is not None
                self._timer.stop()
                self._start_if_idle()
            if not self.busy:
                return
            self.pool.waitForDone(msecs)
            QCoreApplication.processEvents()
