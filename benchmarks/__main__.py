"""Every figure of the speed-and-size table in one run: ``python -m benchmarks``.

Each figure is measured several times and printed as min / median / max, beside its goal:

- ``report --json`` wall time of the installed command (a fresh process each time);
- of which imports: the modules the report command loads, timed inside a fresh
  interpreter (numpy and pydantic shown on their own), and the interpreter's own start;
- ``estimate()`` on the default scenario, in process, warm (the first call apart), from
  scratch and after a one-input change on each tab (see :func:`estimate_times`);
- cold start to the first painted window (``bench_gui.cold_start``, offscreen);
- vectorised layout pricing, candidates/s (``bench_search.evaluator_rates``);
- Llama-3.1-405B on 16,384 H100s, the whole search in process;
- the cheapest-hardware ranking (``rank_hardware``, what ``llm-planner hardware`` prints)
  on the default scenario, in process, wall and CPU time;
- the frozen one-folder bundle on disk (``dist/llm-planner``, when it was built).

Options: ``--repeats N`` (default 10), ``--quick`` (fewer repeats, for a smoke run),
``--json`` (the figures as one JSON object), ``--bundle DIR``. Not a timed test: the
machine's load moves these figures, so run it on a quiet machine and read the minimum
as the best case and the median as the typical one.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("LLM_PLANNER_HOME", tempfile.mkdtemp(prefix="llm-planner-bench-"))

ROOT = Path(__file__).resolve().parent.parent
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
CHILD_ENV = dict(os.environ)
"""Children (bench_gui's too) may cache bytecode, as an installed app does: pip compiles at
install and the frozen bundle holds bytecode; without it every run would recompile the
app's modules (≈ 0.1 s)."""
REPORT_ARGS = ["report", "--model", "llama-2-7b", "--json"]

IMPORTS_CHILD = """
import time
t0 = time.perf_counter()
import numpy
t1 = time.perf_counter()
import pydantic
t2 = time.perf_counter()
from llm_planner import cli
from llm_planner.core.composition import estimate
t3 = time.perf_counter()
print(t1 - t0, t2 - t1, t3 - t2, t3 - t0)
"""
"""Timed inside the child so the interpreter's start is apart; numpy and pydantic first
so their share is theirs alone (the report command loads both)."""


def summary(samples: list[float]) -> dict[str, float]:
    return {
        "min": min(samples),
        "median": statistics.median(samples),
        "max": max(samples),
        "n": float(len(samples)),
    }


def _wall(command: list[str], repeats: int, cpu: list[float] | None = None) -> list[float]:
    """Wall seconds of ``repeats`` runs; their CPU seconds (user + system) go to ``cpu``."""
    samples = []
    for _ in range(repeats):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        subprocess.run(
            command,
            check=True,
            stdout=subprocess.DEVNULL,
            cwd=tempfile.gettempdir(),
            env=CHILD_ENV,
        )
        samples.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if cpu is not None:
            cpu.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return samples


def _command() -> list[str]:
    """The installed ``llm-planner`` beside this interpreter, else ``python -m llm_planner``."""
    script = Path(sys.executable).with_name("llm-planner")
    return [str(script)] if script.exists() else [sys.executable, "-m", "llm_planner"]


def cli_report(repeats: int, cpu: list[float]) -> list[float]:
    _wall([*_command(), *REPORT_ARGS], 2)  # warm the file and bytecode caches
    return _wall([*_command(), *REPORT_ARGS], repeats, cpu)


def interpreter_start(repeats: int) -> list[float]:
    return _wall([sys.executable, "-c", "pass"], repeats)


def imports(repeats: int) -> dict[str, list[float]]:
    parts: dict[str, list[float]] = {"numpy": [], "pydantic": [], "app": [], "total": []}
    for _ in range(repeats):
        out = subprocess.run(
            [sys.executable, "-c", IMPORTS_CHILD],
            check=True,
            capture_output=True,
            text=True,
            env=CHILD_ENV,
        ).stdout
        for name, value in zip(parts, out.split(), strict=True):
            parts[name].append(float(value))
    return parts


def estimate_times(repeats: int) -> tuple[float, dict[str, list[float]]]:
    """The first call in a fresh interpreter (model schemas built), then warm calls:

    - ``from scratch``: the default scenario with the memo cleared before each call, all
      sections computed (the figure the goal is about);
    - ``<tab> input changed``: one input of a tab set to a value never seen before, as a
      keystroke in the window sends: only the sections it invalidates are recomputed;
    - ``same scenario``: estimated again, every section from the memo.
    """
    child = (
        "import time\n"
        "from llm_planner.core.composition.estimate import estimate\n"
        "from llm_planner.core.composition.scenario import default_scenario\n"
        "s = default_scenario(); t = time.perf_counter(); estimate(s)\n"
        "print(time.perf_counter() - t)\n"
    )
    first = float(
        subprocess.run(
            [sys.executable, "-c", child], check=True, capture_output=True, text=True, env=CHILD_ENV
        ).stdout
    )
    from llm_planner.core.composition import estimate as est
    from llm_planner.core.composition.scenario import default_scenario

    base = default_scenario()
    clear = getattr(est, "clear_memo", lambda: None)  # absent before the memo existed

    def changed(section: str, field: str, value: Any) -> Any:
        inputs = getattr(base, section).model_copy(update={field: value})
        return base.model_copy(update={section: inputs})

    cases: dict[str, Callable[[int], Any]] = {
        "from scratch": lambda _i: (clear(), base)[1],
        "compute input changed (tokens)": lambda i: changed("compute", "tokens", 1e12 + i),
        "inference input changed (context)": lambda i: changed("inference", "context", 999 + i),
        "training input changed (seq_len)": lambda i: changed("training", "seq_len", 1000 + i),
        "same scenario": lambda _i: base,
    }
    est.estimate(base)
    samples: dict[str, list[float]] = {}
    cpu: list[float] = []
    for name, make in cases.items():
        samples[name] = []
        for i in range(repeats):
            scenario = make(i)
            start, start_cpu = time.perf_counter(), time.process_time()
            est.estimate(scenario)
            samples[name].append(time.perf_counter() - start)
            if name == "from scratch":
                cpu.append(time.process_time() - start_cpu)
    samples["from scratch, CPU time"] = cpu  # a loaded machine moves the wall time
    return first, samples


def cold_start(repeats: int) -> list[float] | None:
    try:
        from benchmarks import bench_gui
    except ImportError:  # no Qt here
        return None
    figures: dict[str, Any] = bench_gui.cold_start(repeats)
    samples = figures.get("samples")
    if isinstance(samples, list):
        return [float(s) for s in samples]
    return [figures["min_s"], figures["median_s"], figures["max_s"]]


def pricing(repeats: int) -> list[float]:
    from benchmarks.bench_search import evaluator_rates

    return evaluator_rates(2_000_000, repeats)


def hardware_ranking(repeats: int, cpu: list[float]) -> list[float]:
    """``rank_hardware`` on the default scenario, in process, from scratch (the search's
    kept candidates forgotten before each run); its CPU seconds go to ``cpu``."""
    from llm_planner.core.composition import search
    from llm_planner.core.composition.hardware import load_price_list, rank_hardware
    from llm_planner.core.composition.scenario import default_scenario

    scenario, prices = default_scenario(), load_price_list()
    forget = getattr(getattr(search, "_screened", None), "cache_clear", lambda: None)
    samples = []
    for _ in range(repeats):
        forget()
        start, start_cpu = time.perf_counter(), time.process_time()
        rank_hardware(scenario, prices=prices)
        samples.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    return samples


def search_405b(repeats: int) -> list[float]:
    from benchmarks.bench_search import search_times

    search_times("llama-3.1-405b", 16_384, 2048, 8192, repeats=2)  # warm
    times, _ = search_times("llama-3.1-405b", 16_384, 2048, 8192, repeats=repeats)
    return times


def bundle_size(folder: Path) -> dict[str, float] | None:
    """Bytes on disk (``du``: allocated blocks) and apparent bytes of the bundle folder."""
    if not folder.is_dir():
        return None
    files = [p for p in folder.rglob("*") if p.is_file() and not p.is_symlink()]
    apparent = sum(p.stat().st_size for p in files)
    on_disk = apparent
    if shutil.which("du"):
        out = subprocess.run(
            ["du", "-sk", str(folder)], check=False, capture_output=True, text=True
        ).stdout
        on_disk = int(out.split()[0]) * 1024
    return {
        "on_disk_bytes": float(on_disk),
        "apparent_bytes": float(apparent),
        "files": float(len(files)),
    }


def _row(name: str, samples: list[float] | None, scale: float, unit: str, goal: str) -> str:
    if not samples:
        return f"{name:<46} {'not measured':>28}  goal {goal}"
    s = summary(samples)
    cells = " / ".join(
        f"{s[k] * scale:,.{_digits(s[k] * scale)}f}" for k in ("min", "median", "max")
    )
    return f"{name:<46} {cells:>28} {unit:<5} goal {goal}  (n={s['n']:.0f})"


def _digits(value: float) -> int:
    return 0 if abs(value) >= 1000 else 1 if abs(value) >= 10 else 2 if abs(value) >= 1 else 3


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--quick", action="store_true", help="3 repeats, for a smoke run")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--bundle", type=Path, default=ROOT / "dist" / "llm-planner")
    parser.add_argument("--no-gui", action="store_true", help="skip the window's cold start")
    args = parser.parse_args(argv)
    n = 3 if args.quick else args.repeats

    cli_cpu: list[float] = []
    hardware_cpu: list[float] = []
    steps: dict[str, Callable[[], Any]] = {
        "cli_report_s": lambda: cli_report(n, cli_cpu),
        "interpreter_start_s": lambda: interpreter_start(n),
        "imports_s": lambda: imports(n),
        "estimate_s": lambda: estimate_times(max(n, 20) * 3),
        "cold_start_s": lambda: None if args.no_gui else cold_start(max(3, n // 2)),
        "pricing_per_s": lambda: pricing(max(3, n // 3)),
        "search_405b_s": lambda: search_405b(n),
        "hardware_ranking_s": lambda: hardware_ranking(max(3, n // 2), hardware_cpu),
    }
    results: dict[str, Any] = {name: step() for name, step in steps.items()}
    results["cli_report_cpu_s"] = cli_cpu
    results["hardware_ranking_cpu_s"] = hardware_cpu
    first, warm = results["estimate_s"]
    size = bundle_size(args.bundle)

    if args.json:
        out: dict[str, Any] = {}
        for name, value in results.items():
            if name == "imports_s":
                out[name] = {part: summary(v) for part, v in value.items()}
            elif name == "estimate_s":
                out[name] = {"first": first, **{k: summary(v) for k, v in warm.items()}}
            else:
                out[name] = summary(value) if value else None
        out["bundle"] = size
        json.dump(out, sys.stdout, indent=2)
        sys.stdout.write("\n")
        return 0

    print(f"{'figure':<46} {'min / median / max':>28}")
    report_label = "report --model llama-2-7b --json (wall)"
    print(_row(report_label, results["cli_report_s"], 1, "s", "≤ 0.25 s"))
    print(_row("  its CPU time (user + system)", cli_cpu, 1, "s", "-"))
    print(_row("  interpreter start (python -c pass)", results["interpreter_start_s"], 1, "s", "-"))
    for part, label in (
        ("total", "imports of the report command"),
        ("numpy", "  of which numpy"),
        ("pydantic", "  of which pydantic"),
        ("app", "  of which llm_planner"),
    ):
        print(_row(f"  {label}", results["imports_s"][part], 1, "s", "as little as needed"))
    print(
        _row(
            "estimate() default scenario, from scratch", warm["from scratch"], 1e3, "ms", "≤ 1.5 ms"
        )
    )
    for case, values in warm.items():
        if case != "from scratch":
            print(_row(f"  {case}", values, 1e3, "ms", "-"))
    print(f"  (first call in a fresh interpreter: {first * 1e3:.1f} ms)")
    print(_row("cold start to first painted window", results["cold_start_s"], 1, "s", "≤ 0.50 s"))
    print(_row("vectorised layout pricing", results["pricing_per_s"], 1e-6, "M/s", "≥ 2 M/s"))
    print(_row("405B on 16,384 H100, whole search", results["search_405b_s"], 1e3, "ms", "≤ 15 ms"))
    ranking = results["hardware_ranking_s"]
    print(_row("cheapest-hardware ranking, in process", ranking, 1, "s", "≤ 0.50 s"))
    print(_row("  its CPU time", hardware_cpu, 1, "s", "-"))
    if size is None:
        print(f"{'frozen bundle':<46} {'not built':>28}  (packaging/build.sh)  goal ≤ 150 MB")
    else:
        mb = size["on_disk_bytes"] / 1e6
        print(
            f"{'frozen bundle on disk':<46} {mb:>28.1f} MB    goal ≤ 150 MB"
            f"  ({size['apparent_bytes'] / 1e6:.1f} MB apparent, {size['files']:.0f} files)"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
