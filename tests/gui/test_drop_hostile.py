"""Issue 29: the window survives every hostile file of the issue dropped on it.

Each file is dropped as a user would (a real drag-enter and drop event on the window); the
window must answer with one message naming the file, leave the scenario untouched and raise
nothing (pytest-qt fails a test on an exception inside an event handler). A FIFO or an
endless device that the old readers opened blocked the event loop, so each drop runs under
a deadline: an alarm signal whose handler raises inside the blocked open or read (where
the system has SIGALRM), so a regression fails instead of freezing the run.
"""

from __future__ import annotations

import contextlib
import os
import signal
import struct
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from PySide6.QtCore import QMimeData, QPoint, QPointF, Qt, QUrl
from PySide6.QtGui import QDragEnterEvent, QDropEvent
from PySide6.QtWidgets import QApplication

from llm_planner.gui.main_window import MainWindow


@contextlib.contextmanager
def deadline(seconds: float) -> Iterator[None]:
    """Raise TimeoutError in the main thread after ``seconds`` (SIGALRM; a no-op without)."""
    if not hasattr(signal, "SIGALRM"):
        yield
        return

    def expire(_signum: int, _frame: object) -> None:
        raise TimeoutError(f"still running after {seconds} s (a hang)")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def drop(window: MainWindow, path: Path) -> float:
    """Drag ``path`` onto the window and drop it (within a 10 s deadline); the seconds the
    drop took."""
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(path))])
    buttons, keys = Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier
    enter = QDragEnterEvent(QPoint(200, 200), Qt.DropAction.CopyAction, mime, buttons, keys)
    QApplication.sendEvent(window, enter)
    assert enter.isAccepted(), f"the window refused {path.name}"
    start = time.monotonic()
    with deadline(10):
        QApplication.sendEvent(
            window, QDropEvent(QPointF(200, 200), Qt.DropAction.CopyAction, mime, buttons, keys)
        )
    return time.monotonic() - start


def _gguf_with_giant_string_array(path: Path) -> None:
    def text(b: bytes) -> bytes:
        return struct.pack("<Q", len(b)) + b

    head = b"GGUF" + struct.pack("<IQQ", 3, 0, 1)
    head += text(b"tokenizer.ggml.tokens") + struct.pack("<IIQ", 9, 8, 50_000_000)
    with path.open("wb") as file:
        file.write(head)
        file.truncate(401_000_000)  # sparse


def _hostile_files(folder: Path) -> list[tuple[Path, str]]:
    """(file, a word its message must hold) for each reproducer a drop can reach."""
    files: list[tuple[Path, str]] = []
    if hasattr(os, "mkfifo"):
        for name in ("run.log", "ds_config.yaml", "job.toml"):
            fifo = folder / f"fifo-{name}"
            os.mkfifo(fifo)
            files.append((fifo, "FIFO"))
    if Path("/dev/zero").exists():
        device = folder / "zero.log"
        device.symlink_to("/dev/zero")
        files.append((device, "character device"))
    runtime = folder / "runtime.log"
    runtime.write_text("{'train_runtime': 1e999, 'train_samples_per_second': 1.5}\n", "utf-8")
    files.append((runtime, "train_runtime"))
    batch = folder / "batch.log"
    batch.write_text(
        " iteration 3/ 10 | elapsed time per iteration (ms): 100.0 | global batch size: 1e308 |\n",
        "utf-8",
    )
    files.append((batch, "global_batch"))
    trainer = folder / "trainer.log"
    trainer.write_text(
        "{'train_samples_per_second': " + "(" * 3000 + "1" + ")" * 3000 + "}\n", "utf-8"
    )
    files.append((trainer, "Hugging Face Trainer metrics"))
    huge = folder / "job_huge.toml"
    huge.write_text("[parallelism]\ntensor_parallel_degree = " + "9" * 5000 + "\n", "utf-8")
    files.append((huge, "5,000 digits"))
    deep = folder / "job_deep.toml"
    deep.write_text("[parallelism]\nx = " + "[" * 3000 + "]" * 3000 + "\n", "utf-8")
    files.append((deep, "nested"))
    ds = folder / "ds_config.json"
    ds.write_text('{"train_batch_size": 8, "x": ' + "[" * 3000 + "]" * 3000 + "}", "utf-8")
    files.append((ds, "nested"))
    gguf = folder / "giant.gguf"
    _gguf_with_giant_string_array(gguf)
    files.append((gguf, "50,000,000 strings"))
    return files


def test_the_window_survives_every_hostile_drop(
    window: MainWindow, messages: list[str], tmp_path: Path
) -> None:
    before = window.state.scenario
    for path, word in _hostile_files(tmp_path):
        shown = len(messages)
        seconds = drop(window, path)
        assert seconds < 5, f"dropping {path.name} took {seconds:.1f} s"
        assert len(messages) == shown + 1, f"no message for {path.name}"
        message = messages[-1]
        assert path.name in message, message
        assert word in message, message
        assert "\n" not in message.strip(), message
        assert window.state.scenario == before, f"{path.name} changed the scenario"
    assert window.isVisible()


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_dropped_never_reaches_a_reader(
    window: MainWindow, messages: list[str], tmp_path: Path
) -> None:
    """The drop checks the kind of file before choosing a reader: a FIFO named like a
    scenario file is refused by the same one line as one named like a log."""
    fifo = tmp_path / "plan.llmplan.json"
    os.mkfifo(fifo)
    drop(window, fifo)
    assert messages[-1] == f"{fifo}: a FIFO (named pipe), not a regular file"
