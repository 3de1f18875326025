"""Property runs over the readers and commands of issue 29: whatever a log, a stack config,
a price list, a GGUF header or a what-if holds, the answer is a value or one refusal line.

Each property draws hostile input (valid files with numbers, brackets, quotes, control
characters and lines spliced in; numbers from the boundary and absurd sets: 1e308, 1e999,
400-digit integers, NaN), runs the reader or the command in-process and checks:

- no exception but the reader's own one-line error (a command: exit status 0 or 2, and on
  2 one ``llm-planner: error:`` line);
- at most 5 s of CPU per example (and 60 s of wall clock: a blocking open spends no CPU)
  and at most 1 MB of output;
- the process's peak memory grows by at most 500 MB over the run.

CI runs a small budget. The full run (issue 29's ≥ 20,000 examples)::

    LLM_PLANNER_PROPERTY_EXAMPLES=20000 .venv/bin/python -m pytest -q -s \\
        tests/test_properties_readers.py

prints, per property, the examples tried, refused and accepted, the slowest example and
the memory growth. The command properties (calibrate, whatif, hardware) each run an
estimate per example and take a twentieth of the budget.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import os
import resource
import shutil
import struct
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from llm_planner.cli import main
from llm_planner.core.composition.hardware import PriceListError, load_price_list
from llm_planner.core.composition.scenario import default_scenario
from llm_planner.core.files import gguf, logs
from llm_planner.core.files import stack_configs as sc
from llm_planner.core.primitives.resources import read_text

EXAMPLES = int(os.environ.get("LLM_PLANNER_PROPERTY_EXAMPLES", "40"))
COMMAND_EXAMPLES = max(10, EXAMPLES // 20)
MAX_SECONDS = 5.0
"""CPU seconds per example: the work an example costs, whatever else the machine runs (a
wall-clock bound failed at random on a shared machine at load 8 on 2 cores)."""
MAX_WALL_SECONDS = 60.0
"""Wall-clock seconds per example: a hang (a blocking open spends no CPU) fails here."""
MAX_OUTPUT_BYTES = 1_000_000
MAX_GROWTH_BYTES = 500 * 2**20
FIXTURES = Path(__file__).parent.parent / "fixtures"
SCRATCH = Path(tempfile.mkdtemp(prefix="llm-planner-property-"))
"""The examples' files (hypothesis reruns a test body many times within one tmp_path);
removed when the module's tests end."""

STATS: dict[str, Counter[str]] = {}
SLOWEST: dict[str, float] = {}
_START_RSS = 0


def _rss() -> int:
    """Peak resident memory of this process in bytes (Linux reports kB, macOS bytes)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024


@pytest.fixture(scope="module", autouse=True)
def _report() -> Iterator[None]:
    global _START_RSS  # noqa: PLW0603 (one module-wide baseline)
    _START_RSS = _rss()
    yield
    growth = (_rss() - _START_RSS) / 2**20
    for name, counts in STATS.items():
        print(
            f"\n{name}: tried {sum(counts.values())}, refused {counts['refused']}, "
            f"accepted {counts['accepted']}; slowest {SLOWEST[name]:.3f} s of CPU"
        )
    print(f"peak memory growth over the run: {growth:.0f} MiB")
    shutil.rmtree(SCRATCH, ignore_errors=True)


def _check(name: str, run: Callable[[], str]) -> None:
    """Run one example: ``run`` returns "accepted" or "refused" (any other exception fails
    the property); time, output and memory within the bounds."""
    start, cpu = time.monotonic(), time.process_time()
    outcome = run()
    seconds, wall = time.process_time() - cpu, time.monotonic() - start
    STATS.setdefault(name, Counter())[outcome] += 1
    SLOWEST[name] = max(SLOWEST.get(name, 0.0), seconds)
    assert seconds < MAX_SECONDS, f"{name}: {seconds:.1f} s of CPU"
    assert wall < MAX_WALL_SECONDS, f"{name}: {wall:.1f} s (a hang)"
    assert _rss() - _START_RSS < MAX_GROWTH_BYTES, f"{name}: memory grew past 500 MB"


PROPERTY = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    database=None,
    derandomize=True,
)
COMMAND = settings(PROPERTY, max_examples=COMMAND_EXAMPLES)

# ------------------------------------------------------------------ hostile pieces

ABSURD_NUMBERS = [
    "0",
    "-1",
    "1e308",
    "1e999",
    "-1e999",
    "1e-320",
    "nan",
    "inf",
    "NaN",
    "Infinity",
    "9" * 400,
    "9" * 5000,
    "1,000,000",
    "0x10",
    "1_000",
    ".5",
    "5.",
    "1e",
    "",
]
plain_numbers = st.one_of(
    st.integers(1, 100_000).map(str),
    st.floats(0.01, 1e5, allow_nan=False).map(lambda x: f"{x:.2f}"),
)
numbers = st.one_of(
    plain_numbers,
    plain_numbers,
    plain_numbers,
    st.sampled_from(ABSURD_NUMBERS),
    st.integers(-(10**30), 10**30).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
)
noise = st.one_of(
    numbers,
    st.sampled_from(
        ["[", "]", "{", "}", "[" * 200, "{a = " * 100, "'", '"', ":", ",", "|", "=", "-", "#"]
    ),
    st.sampled_from(["\n", "\r\n", "\t", "\x00", "\x1b[31m", "\u202e", "\udc80", "  "]),
    st.text(max_size=20),
)


def splice(text: str, pieces: list[tuple[float, str]]) -> str:
    """``text`` with each piece inserted at a relative position (0 … 1)."""
    out = text
    for where, piece in pieces:
        at = int(where * len(out))
        out = out[:at] + piece + out[at:]
    return out


def spliced(base: str) -> st.SearchStrategy[str]:
    return st.lists(st.tuples(st.floats(0, 1), noise), max_size=8).map(
        lambda pieces: splice(base, pieces)
    )


def _write(name: str, data: str | bytes) -> Path:
    path = SCRATCH / name
    if isinstance(data, str):
        path.write_bytes(data.encode("utf-8", errors="surrogateescape"))
    else:
        path.write_bytes(data)
    return path


@contextlib.contextmanager
def captured() -> Iterator[tuple[io.StringIO, io.StringIO]]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        yield out, err


def _refused(error: Exception) -> str:
    """A reader's refusal: one non-empty line."""
    message = str(error).strip()
    if not message or "\n" in message:
        raise AssertionError(f"not one line: {message[:2000]!r}")
    return "refused"


def command(argv: list[str], answers: tuple[int, ...] = (0,)) -> str:
    """Run ``llm-planner ARGV`` in-process: "accepted" on a status in ``answers``, "refused"
    on 2 with one line."""
    with captured() as (out, err):
        status = main(argv)
    assert len(out.getvalue().encode()) <= MAX_OUTPUT_BYTES, argv
    if status == 2:
        lines = err.getvalue().strip().splitlines()
        assert len(lines) == 1, err.getvalue()[:2000]
        assert lines[0].startswith("llm-planner: error:")
        return "refused"
    assert status in answers, (argv, status, err.getvalue()[:2000])
    return "accepted"


# ------------------------------------------------------------------ logs

LOG_LINES = [
    " iteration {a}/ 1000 | elapsed time per iteration (ms): {b} | throughput per GPU "
    "(TFLOP/s/GPU): {c} | global batch size: {d} |",
    "[Rank 0] memory (MB) | allocated: {a} | max allocated: {b} | reserved: {c} | "
    "max reserved: {d}",
    "step: {a}  loss: 2.0  memory: {b}GiB(50%)  tps: {c}  tflops: {d}  mfu: {a}%",
    "SamplesPerSec={a}, MemAllocated={b}GB, MaxMemAllocated={c}GB",
    "RunningAvgSamplesPerSec={a}, CurrSamplesPerSec={b}, MemAllocated=1GB, MaxMemAllocated={c}GB",
    "{{'train_runtime': {a}, 'train_samples_per_second': {b}, 'train_steps_per_second': {c}}}",
    "iteration: {a} / 100 | elapsed_time_per_iteration_ms: {b}K | tokens_per_sec: {c}M | "
    "tokens_per_sec_per_gpu: {d}K | global_batch_size: {a} | model_tflops_per_gpu: {b}",
]

log_line = st.builds(
    lambda template, a, b, c, d: template.format(a=a, b=b, c=c, d=d),
    st.sampled_from(LOG_LINES),
    numbers,
    numbers,
    numbers,
    numbers,
).flatmap(spliced)
log_text = st.lists(st.one_of(log_line, noise), max_size=30).map("\n".join)


@PROPERTY
@given(log_text)
def test_logs_are_read_or_refused_in_one_line(text: str) -> None:
    def run() -> str:
        path = _write("run.log", text)
        try:
            measurement, unread = logs.measurement_from_file(path, default_scenario())
        except logs.LogError as error:
            return _refused(error)
        assert len(unread) <= logs.MAX_PROBLEMS + 2
        for value in measurement.model_dump().values():
            if isinstance(value, float):
                assert not math.isnan(value)
        return "accepted"

    _check("logs", run)


@COMMAND
@given(log_text)
def test_calibrate_answers_or_refuses(text: str) -> None:
    path = _write("calibrate.log", text)
    _check(
        "calibrate",
        lambda: command(["calibrate", str(path), "--num-gpus", "16", "--seq-len", "4096"]),
    )


trainer_dicts = st.dictionaries(
    st.sampled_from(["train_runtime", "train_samples_per_second", "epoch", "x", "a b", "'"]),
    st.one_of(numbers, st.sampled_from(["None", "True", "'s'", "[1]", "{}", "(1)", "9**9**9"])),
    max_size=6,
).map(lambda d: "{" + ", ".join(f"'{k}': {v}" for k, v in d.items()) + "}")


@PROPERTY
@given(st.one_of(trainer_dicts, trainer_dicts.flatmap(spliced), st.text(max_size=300)))
def test_the_trainer_grammar_never_raises(text: str) -> None:
    def run() -> str:
        return "accepted" if logs.trainer_metrics(text) is not None else "refused"

    _check("trainer grammar", run)


# ------------------------------------------------------------------ stack configs

_SCENARIO = default_scenario()
CONFIGS = {
    "deepspeed": ("ds.json", sc.export_config(_SCENARIO, "deepspeed").text),
    "torchtitan": ("job.toml", sc.export_config(_SCENARIO, "torchtitan").text),
    "accelerate": ("acc.yaml", sc.export_config(_SCENARIO, "accelerate").text),
    "nanotron": ("nano.yaml", sc.export_config(_SCENARIO, "nanotron").text),
    "megatron": ("run.sh", sc.export_config(_SCENARIO, "megatron").text),
}


@PROPERTY
@given(
    st.sampled_from(sorted(CONFIGS)).flatmap(
        lambda k: st.tuples(st.just(k), spliced(CONFIGS[k][1]))
    )
)
def test_stack_configs_are_read_or_refused_in_one_line(case: tuple[str, str]) -> None:
    fmt, text = case

    def run() -> str:
        path = _write(CONFIGS[fmt][0], text)
        try:
            imported = sc.read_config(path)
            sc.apply_import(_SCENARIO, imported)
        except ValueError as error:  # StackConfigError, or the scenario's own refusal
            return _refused(error)
        return "accepted"

    _check("stack configs", run)


@COMMAND
@given(
    st.sampled_from(sorted(CONFIGS)).flatmap(
        lambda k: st.tuples(st.just(k), spliced(CONFIGS[k][1]))
    )
)
def test_import_config_and_check_answer_or_refuse(case: tuple[str, str]) -> None:
    fmt, text = case
    path = _write(CONFIGS[fmt][0], text)
    _check("import-config", lambda: command(["import-config", str(path), "--json"]))
    # check's status 1 is its answer "this launch would fail"
    _check("check", lambda: command(["check", str(path)], answers=(0, 1)))


# ------------------------------------------------------------------ price lists

PRICES = read_text("prices.json")


@PROPERTY
@given(spliced(PRICES))
def test_price_lists_are_read_or_refused_in_one_line(text: str) -> None:
    def run() -> str:
        path = _write("prices.json", text)
        try:
            load_price_list(path)
        except PriceListError as error:
            return _refused(error)
        return "accepted"

    _check("price lists", run)


@COMMAND
@given(spliced(PRICES))
def test_prices_and_hardware_answer_or_refuse(text: str) -> None:
    path = _write("hw-prices.json", text)
    _check("prices", lambda: command(["prices", "--prices", str(path), "--json"]))
    _check("hardware", lambda: command(["hardware", "--prices", str(path), "--max-gpus", "16"]))


# ------------------------------------------------------------------ GGUF headers


def _gguf_prefix(count: int, kind: int) -> bytes:
    def text(b: bytes) -> bytes:
        return struct.pack("<Q", len(b)) + b

    head = b"GGUF" + struct.pack("<IQQ", 3, 0, 2)
    head += text(b"general.architecture") + struct.pack("<I", 8) + text(b"llama")
    return head + text(b"tokenizer.ggml.tokens") + struct.pack("<IIQ", 9, kind, count)


gguf_bytes = st.builds(
    lambda count, kind, tail: _gguf_prefix(count, kind) + tail,
    st.one_of(st.integers(0, 2**64 - 1), st.sampled_from([0, 1, 50_000_000, 2**63])),
    st.integers(0, 13),
    st.binary(max_size=512),
)


@PROPERTY
@given(gguf_bytes)
def test_gguf_headers_are_read_or_refused_in_one_line(data: bytes) -> None:
    def run() -> str:
        path = _write("model.gguf", data)
        try:
            gguf.read_gguf_header(path)
        except gguf.GGUFError as error:
            return _refused(error)
        return "accepted"

    _check("gguf", run)


# ------------------------------------------------------------------ what-if

MODELS = ["mixtral-8x7b", "llama-3.1-8b", "llama-3.1-405b", "deepseek-v3", "jamba-v0.1"]
counts = st.sampled_from(["1", "2", "3", "64", "1_000", "1_000_000", "0", "-5", "1e300"])


@COMMAND
@given(
    model=st.sampled_from(MODELS),
    gpus=counts,
    engine=counts,
    prompt=st.sampled_from(["1", "1024", "1_000_000", "0"]),
    overlap=st.booleans(),
    colocated=st.booleans(),
)
def test_whatif_answers_in_strict_json_or_refuses(
    *, model: str, gpus: str, engine: str, prompt: str, overlap: bool, colocated: bool
) -> None:
    argv = ["whatif", "--model", model, "--rl", "--rl-gpus", gpus, "--engine-gpus", engine]
    argv += ["--prompt-tokens", prompt, "--json"]
    argv += ["--overlap"] if overlap else []
    argv += ["--colocated"] if colocated else []

    def run() -> str:
        with captured() as (out, err):
            status = main(argv)
        assert status in (0, 2), err.getvalue()[:2000]
        if status == 0:
            assert len(out.getvalue().encode()) <= MAX_OUTPUT_BYTES

            def refuse(name: str) -> Any:
                raise AssertionError(f"{name} in whatif --json")

            json.loads(out.getvalue(), parse_constant=refuse)
            return "accepted"
        assert len(err.getvalue().strip().splitlines()) == 1
        return "refused"

    _check("whatif", run)
