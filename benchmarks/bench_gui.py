"""GUI benchmark: input change → redrawn bars latency, and cold start to the first paint.

Run: ``QT_QPA_PLATFORM=offscreen .venv/bin/python benchmarks/bench_gui.py [--changes N]``.
Not a timed test: it prints figures (median and p95 latency in ms; cold start in s).

- Latency: a value typed into a real input field (``textEdited``, as a keystroke sends)
  → one validated scenario → ``estimate`` → the visible tab's bars and figures redrawn
  → the paint events processed. Measured on all four tabs (compute: tokens; inference:
  context; training: micro-batch and sequence length; parallelism: TP), alternating values
  so every change is a real change. Work deferred off the keystroke (the layout search, the
  scaling curve and the fit suggestions, in worker threads) is not part of the figure: it
  arrives later. The values repeat, so after the first round the core's memo answers
  (as it does when a user flips between values or undoes); ``--cold`` clears it before
  every change, timing each value as if typed for the first time.
  The window thread's CPU time is printed beside the wall time: on a shared machine the
  wall time also counts the time other processes held the processor.
- Cold start: a fresh interpreter, from process launch to the first paint event of the
  main window (the median of several launches).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
# never touch the user's real library, settings or recovery folder (child processes inherit it)
os.environ.setdefault("LLM_PLANNER_HOME", tempfile.mkdtemp(prefix="llm-planner-bench-"))


def _value(text: str) -> float:
    from llm_planner.core.primitives import units

    return units.parse_int_count(text) if text.isdigit() else units.parse_count(text)


def _percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def latency(changes: int, cold: bool = False) -> dict[str, dict[str, float]]:
    """``cold``: the core memo is cleared before every change (outside the timed span), so
    each change is timed as a value typed for the first time."""
    from PySide6.QtWidgets import QApplication

    from llm_planner.core.composition.estimate import clear_memo, estimate
    from llm_planner.gui.app import make_application
    from llm_planner.gui.binding import with_changes
    from llm_planner.gui.main_window import MainWindow

    app = make_application()
    assert isinstance(app, QApplication)
    window = MainWindow(restore=False)
    window.ask_before_discard = False
    window.resize(1366, 768)
    window.show()
    app.processEvents()
    window.flush()
    results: dict[str, dict[str, float]] = {}
    cases = (
        (0, "tokens", ("15T", "10T", "2T", "1T")),
        (1, "context", ("4096", "8192", "16384", "32768")),
        (2, "micro_batch", ("1", "2", "3", "4")),
        (2, "seq_len", ("2048", "4096", "8192")),
        (3, "tp", ("1", "2", "4", "8")),
    )
    for tab_index, attribute, values in cases:
        window.tabs.setCurrentIndex(tab_index)
        window.flush()
        app.processEvents()
        tab = window.page(tab_index)
        edit = getattr(tab, attribute)
        samples: list[float] = []
        cpu: list[float] = []
        for i in range(changes):
            text = values[i % len(values)]
            if cold:
                clear_memo()
            start, start_cpu = time.perf_counter(), time.thread_time()
            edit.setText(text)
            edit.textEdited.emit(text)  # what a keystroke sends
            app.processEvents()  # paint
            samples.append((time.perf_counter() - start) * 1e3)
            cpu.append((time.thread_time() - start_cpu) * 1e3)
        window._slow_timer.stop()
        # the same changes through core alone: the GUI's share is the difference
        path = next(b.path for b in window.binder.bindings if b.widget is edit)
        core_ms: list[float] = []
        for i in range(changes):
            text = values[i % len(values)]
            scenario = with_changes(window.state.scenario, {path: _value(text)})
            if cold:
                clear_memo()
            start = time.perf_counter()
            estimate(scenario, suggest=False)  # as the keystroke's path calls it
            core_ms.append((time.perf_counter() - start) * 1e3)
        warm = samples[5:]
        results[f"{tab.title}: {attribute}"] = {
            "median_ms": statistics.median(warm),
            "p95_ms": _percentile(warm, 0.95),
            "cpu_median_ms": statistics.median(cpu[5:]),
            "cpu_p95_ms": _percentile(cpu[5:], 0.95),
            "max_ms": max(warm),
            "n": float(len(warm)),
            "estimate_median_ms": statistics.median(core_ms[5:]),
            "estimate_p95_ms": _percentile(core_ms[5:], 0.95),
        }
    window.close()
    return results


def _child_first_paint() -> None:
    """In a fresh interpreter: build the window and print the wall clock at its first paint."""
    from PySide6.QtCore import QEvent, QObject

    from llm_planner.gui.app import make_application
    from llm_planner.gui.main_window import MainWindow

    app = make_application()

    class FirstPaint(QObject):
        def eventFilter(self, _obj: QObject, event: QEvent) -> bool:  # noqa: N802 (Qt API)
            if event.type() == QEvent.Type.Paint:
                print(f"{time.time():.6f}", flush=True)
                os._exit(0)  # measured; skip teardown
            return False

    window = MainWindow(restore=False)
    window.ask_before_discard = False
    watcher = FirstPaint()
    window.installEventFilter(watcher)
    window.show()
    app.exec()  # type: ignore[attr-defined]


def cold_start(runs: int) -> dict[str, float]:
    samples = []
    for _ in range(runs):
        launched = time.time()
        out = subprocess.run(
            [sys.executable, __file__, "--child-first-paint"],
            check=True,
            capture_output=True,
            text=True,
            env={**os.environ, "QT_QPA_PLATFORM": os.environ["QT_QPA_PLATFORM"]},
        ).stdout
        painted = float(out.strip().splitlines()[-1])
        samples.append(painted - launched)
    return {"median_s": statistics.median(samples), "min_s": min(samples), "max_s": max(samples)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--changes", type=int, default=200)
    parser.add_argument("--launches", type=int, default=5)
    parser.add_argument(
        "--cold",
        action="store_true",
        help="clear the core memo before each change: every value as if typed the first time",
    )
    parser.add_argument("--child-first-paint", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child_first_paint:
        _child_first_paint()
        return 0
    if args.launches > 0:
        start = cold_start(args.launches)
        print(
            f"cold start to first paint: median {start['median_s']:.3f} s "
            f"(min {start['min_s']:.3f}, max {start['max_s']:.3f}; {args.launches} launches)"
        )
    if args.cold:
        print("core memo cleared before every change (values as if typed the first time)")
    for name, figures in latency(args.changes, cold=args.cold).items():
        print(
            f"input change → redrawn bars, {name}: median {figures['median_ms']:.2f} ms, "
            f"p95 {figures['p95_ms']:.2f} ms, max {figures['max_ms']:.2f} ms "
            f"({figures['n']:.0f} changes; window thread CPU: median "
            f"{figures['cpu_median_ms']:.2f} ms, p95 {figures['cpu_p95_ms']:.2f} ms); "
            "of which core estimate(): median "
            f"{figures['estimate_median_ms']:.2f} ms, p95 {figures['estimate_p95_ms']:.2f} ms"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
