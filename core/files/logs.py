"""Training logs in, measurements out: the lines the common stacks print.

Each parser reads one framework's own line format (cited at the framework's file) and
turns numbers into SI units; a line that looks like one of them (its marker is there) but
does not parse is *named* (line number and text) in :attr:`ParsedLog.problems`, never
guessed. What a log does not carry (GPU count, layout, sequence length for samples/s) the
user fills in: :func:`measurement_from_log` takes them as arguments.

Steady state: a run's first logged step includes warm-up (compilation, allocator growth,
NCCL set-up), so with three or more readings the first is dropped and the median of the
rest is used.

Formats:

- **Megatron-LM** iteration line (``megatron/training/training.py``, ``training_log``):
  ``iteration N/ M | … | elapsed time per iteration (ms): X | throughput per GPU
  (TFLOP/s/GPU): Y | … | global batch size: B |`` and the memory report
  (``megatron/training/utils.py``, ``report_memory``): ``memory (MB) | allocated: … |
  max allocated: A | reserved: … | max reserved: R`` with MB = 2^20 bytes
  (``mega_bytes = 1024.0 * 1024.0``).
- **torchtitan** step line (``torchtitan/components/metrics.py``, ``log``): ``step: N
  loss: … memory: X GiB(P%) tps: T tflops: F mfu: M%``; memory is
  ``max_reserved_gib`` (2^30 bytes), tps is tokens/s per GPU (tokens of the data-parallel
  rank ÷ time ÷ non-data-parallel size), tflops per GPU, mfu in percent of the device's
  table peak.
- **DeepSpeed** throughput timer (``deepspeed/utils/timer.py``, ``ThroughputTimer.stop``):
  ``SamplesPerSec=X, MemAllocated=AGB, MaxMemAllocated=MGB`` (older) or
  ``RunningAvgSamplesPerSec=X, CurrSamplesPerSec=Y, MemAllocated=…GB,
  MaxMemAllocated=…GB``; the GB there are ``/ 1024**3`` (GiB) of
  ``torch.cuda.max_memory_allocated``; samples are the engine's ``train_batch_size`` (the
  global batch) per step.
- **Hugging Face Trainer** final metrics (``transformers/trainer_utils.py``,
  ``speed_metrics``): ``{'train_runtime': S, 'train_samples_per_second': X, …}``; samples
  of all processes together.
- **nanotron** iteration line (``src/nanotron/trainer.py``, ``train_step_logs``):
  ``iteration: N / M | … | elapsed_time_per_iteration_ms: X | tokens_per_sec: T |
  tokens_per_sec_per_gpu: G | global_batch_size: B | … | model_tflops_per_gpu: F | …``;
  numbers in nanotron's ``human_format`` (``src/nanotron/logging.py``): three significant
  digits and a 1000-based suffix K, M, B (billions, not bytes), T, P; memory fields
  (``cuda_memory_allocated``, ``cuda_max_memory_reserved``) in bytes in the same format.
"""

from __future__ import annotations

import math
import re
import statistics
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from pydantic import ValidationError

from llm_planner.core.inputs.calibration import Measurement
from llm_planner.core.primitives.limits import describe_error
from llm_planner.core.primitives.reading import FileReadError, open_regular

MIB = 2**20
GIB = 2**30
MAX_LOG_BYTES = 200 * 2**20
"""Logs larger than this are refused (a multi-day run's log is tens of MB); within it, the
reading is bounded by :data:`MAX_FORMAT_LINES` and :data:`MAX_CANDIDATE_LINES`."""

Stack = str


@dataclass(frozen=True)
class Reading:
    """One parsed line: where it was and what it says (SI units)."""

    line: int
    stack: Stack
    values: dict[str, float]


@dataclass
class ParsedLog:
    """What a log file gave: readings by line, and the lines that could not be read."""

    source: str
    readings: list[Reading] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    @property
    def stacks(self) -> list[Stack]:
        seen: list[Stack] = []
        for r in self.readings:
            if r.stack not in seen:
                seen.append(r.stack)
        return seen

    def steady(self, key: str) -> float | None:
        """The steady-state value of ``key``: median of its readings, the first dropped
        when there are three or more (warm-up)."""
        values = [r.values[key] for r in self.readings if key in r.values]
        if not values:
            return None
        if len(values) >= 3:
            values = values[1:]
        return float(statistics.median(values))

    def peak(self, key: str) -> float | None:
        """The largest value of ``key`` (peak memory over the run)."""
        values = [r.values[key] for r in self.readings if key in r.values]
        return max(values) if values else None


class LogError(ValueError):
    """A log that gives no reading; the message says why in one line."""


# ------------------------------------------------------------------ numbers

_NUM = r"[-+]?(?:\d[\d,]*+(?:\.\d*+)?|\.\d++)(?:[eE][-+]?\d++)?"
r"""A number as the stacks print it. Possessive runs: ``\d[\d,]*\.?\d*`` split a digit run
every way before failing (a 16,000-digit "iteration" took 18 s a line)."""
_HUMAN = _NUM + r"[KMGBTPE]?"
_HUMAN_SCALE = {"": 1.0, "K": 1e3, "M": 1e6, "G": 1e9, "B": 1e9, "T": 1e12, "P": 1e15, "E": 1e18}
"""nanotron's suffixes (B = billions); G also seen for 1e9 in its consumed-token counts."""


def number(text: str) -> float:
    """A number as printed (thousands separators allowed)."""
    return float(text.replace(",", ""))


def human_number(text: str) -> float:
    """nanotron's ``human_format``: ``11.4K`` = 11,400, ``1.2B`` = 1.2e9 (1000-based)."""
    text = text.strip()
    suffix = text[-1] if text and text[-1].isalpha() and text[-1] in _HUMAN_SCALE else ""
    body = text[:-1] if suffix else text
    return number(body) * _HUMAN_SCALE[suffix]


# ------------------------------------------------------------------ parsers


@dataclass(frozen=True)
class LineFormat:
    """One framework's line: a marker that says "this is my line", and the fields."""

    stack: Stack
    name: str
    marker: re.Pattern[str]
    parse: Callable[[str], dict[str, float] | None]


class _OutOfRangeError(ValueError):
    """A field whose number is not finite or beyond any measured quantity."""

    def __init__(self, key: str, text: str) -> None:
        self.key = key
        self.text = text if len(text) <= 40 else text[:39] + "…"
        super().__init__(f"{key} {self.text} is out of range")


MAX_VALUE = 1e30
"""Largest magnitude a log field may convert to in SI units: no measured quantity comes
near it (FLOP/s per GPU stay under 1e18), and sums or medians of such values stay finite."""


def _checked(key: str, text: str, value: float) -> float:
    if not math.isfinite(value) or abs(value) > MAX_VALUE:
        raise _OutOfRangeError(key, text)
    return value


def _fields(
    line: str, spec: dict[str, tuple[str, Callable[[str], float], float]]
) -> dict[str, float]:
    """Each ``name: (regex with one group, converter, scale)`` found in the line; a number
    out of range (1e308, 1e999, a 400-digit integer) raises :class:`_OutOfRangeError`."""
    out: dict[str, float] = {}
    for key, (pattern, convert, scale) in spec.items():
        match = re.search(pattern, line)
        if match:
            out[key] = _checked(key, match.group(1), convert(match.group(1)) * scale)
    return out


def _megatron_iteration(line: str) -> dict[str, float] | None:
    values = _fields(
        line,
        {
            "step_seconds": (rf"elapsed time per iteration \(ms\):\s*({_NUM})", number, 1e-3),
            "flops_per_gpu_per_s": (
                rf"throughput per GPU \(TFLOP/s/GPU\):\s*({_NUM})",
                number,
                1e12,
            ),
            "global_batch": (rf"global batch size:\s*({_NUM})", number, 1.0),
            "iteration": (rf"iteration\s+({_NUM})\s*/", number, 1.0),
        },
    )
    return values if "step_seconds" in values and "iteration" in values else None


def _megatron_memory(line: str) -> dict[str, float] | None:
    values = _fields(
        line,
        {
            "peak_allocated_bytes": (rf"max allocated:\s*({_NUM})", number, MIB),
            "peak_reserved_bytes": (rf"max reserved:\s*({_NUM})", number, MIB),
        },
    )
    return values if len(values) == 2 else None


def _torchtitan_step(line: str) -> dict[str, float] | None:
    values = _fields(
        line,
        {
            "iteration": (rf"step:\s*({_NUM})", number, 1.0),
            "peak_reserved_bytes": (rf"memory:\s*({_NUM})\s*GiB", number, GIB),
            "tokens_per_s_per_gpu": (rf"tps:\s*({_NUM})", number, 1.0),
            "flops_per_gpu_per_s": (rf"tflops:\s*({_NUM})", number, 1e12),
            "mfu": (rf"mfu:\s*({_NUM})%", number, 0.01),
        },
    )
    return values if "tokens_per_s_per_gpu" in values and "iteration" in values else None


def _deepspeed_throughput(line: str) -> dict[str, float] | None:
    values = _fields(
        line,
        {
            "samples_per_s": (rf"(?<![A-Za-z])(?:Curr)?SamplesPerSec=({_NUM})", number, 1.0),
            "peak_allocated_bytes": (rf"MaxMemAllocated=({_NUM})GB", number, GIB),
        },
    )
    current = re.search(rf"CurrSamplesPerSec=({_NUM})", line)
    if current:
        values["samples_per_s"] = number(current.group(1))
    return values if "samples_per_s" in values else None


_TRAINER_KEY = r"""(?:'([A-Za-z_][A-Za-z0-9_./-]{0,79})'|"([A-Za-z_][A-Za-z0-9_./-]{0,79})")"""
_TRAINER_VALUE = (
    r"""([-+]?(?:\d{1,400}+(?:\.\d{0,400}+)?|\.\d{1,400}+)(?:[eE][-+]?\d{1,6}+)?"""
    r"""|[-+]?(?:inf|nan)|'[^'\\\n]{0,200}'|"[^"\\\n]{0,200}"|True|False|None)"""
)
# possessive digit runs (``\d{1,400}+``): a 5,000-digit value fails at once instead of
# backtracking over every split of its digits (50 ms a line before)
_TRAINER_PAIR = re.compile(r"\s*" + _TRAINER_KEY + r"\s*:\s*" + _TRAINER_VALUE + r"\s*([,}])")
_TRAINER_MAX_PAIRS = 200
_TRAINER_FIELDS = (
    ("train_samples_per_second", "samples_per_s"),
    ("train_runtime", "train_runtime_seconds"),
    ("train_steps_per_second", "steps_per_s"),
)


def trainer_metrics(line: str) -> dict[str, str] | None:
    """The Trainer's metrics dict (``{'train_runtime': 101.9, …}``) as key → value text, by a
    small strict grammar: a flat dict of quoted keys and scalar values (numbers, short
    strings, True/False/None). Anything else (nesting, expressions, a value over 400
    digits) is not a metrics line: None. Never evaluates the text."""
    start = line.find("{")
    if start < 0:
        return None
    pos = start + 1
    out: dict[str, str] = {}
    if line[pos:].lstrip().startswith("}"):
        return out
    for _ in range(_TRAINER_MAX_PAIRS):
        match = _TRAINER_PAIR.match(line, pos)
        if match is None:
            return None
        out[match.group(1) or match.group(2)] = match.group(3)
        pos = match.end()
        if match.group(4) == "}":
            return out
    return None


def _hf_trainer(line: str) -> dict[str, float] | None:
    metrics = trainer_metrics(line)
    if metrics is None:
        return None
    out: dict[str, float] = {}
    for key, name in _TRAINER_FIELDS:
        text = metrics.get(key)
        if text is None or text == "None":
            continue
        try:
            value = float(text)
        except ValueError:  # a string or a boolean where a number belongs
            return None
        out[name] = _checked(key, text, value)
    return out if "samples_per_s" in out else None


def _nanotron_iteration(line: str) -> dict[str, float] | None:
    values = _fields(
        line,
        {
            "iteration": (rf"iteration:\s*({_NUM})\s*/", number, 1.0),
            "step_seconds": (rf"elapsed_time_per_iteration_ms:\s*({_HUMAN})", human_number, 1e-3),
            "tokens_per_s": (rf"tokens_per_sec:\s*({_HUMAN})", human_number, 1.0),
            "tokens_per_s_per_gpu": (rf"tokens_per_sec_per_gpu:\s*({_HUMAN})", human_number, 1.0),
            "global_batch": (rf"global_batch_size:\s*({_HUMAN})", human_number, 1.0),
            "flops_per_gpu_per_s": (rf"model_tflops_per_gpu:\s*({_HUMAN})", human_number, 1e12),
            "peak_reserved_bytes": (rf"cuda_max_memory_reserved:\s*({_HUMAN})", human_number, 1.0),
        },
    )
    return values if "iteration" in values and "step_seconds" in values else None


FORMATS: tuple[LineFormat, ...] = (
    LineFormat(
        "megatron",
        "Megatron-LM iteration line",
        re.compile(r"elapsed time per iteration \(ms\)|\biteration\s+\d+/\s*\d+\s*\|"),
        _megatron_iteration,
    ),
    LineFormat(
        "megatron",
        "Megatron-LM memory report",
        re.compile(r"memory \(MB\) \|"),
        _megatron_memory,
    ),
    LineFormat(
        "nanotron",
        "nanotron iteration line",
        re.compile(r"elapsed_time_per_iteration_ms:"),
        _nanotron_iteration,
    ),
    LineFormat(
        "torchtitan",
        "torchtitan step line",
        re.compile(r"\bstep:\s*\d.*\btps:"),
        _torchtitan_step,
    ),
    LineFormat(
        "deepspeed",
        "DeepSpeed throughput line",
        re.compile(r"SamplesPerSec="),
        _deepspeed_throughput,
    ),
    LineFormat(
        "hf_trainer",
        "Hugging Face Trainer metrics",
        re.compile(r"'train_samples_per_second'"),
        _hf_trainer,
    ),
)
"""Every line format known, tried in this order (the first marker that matches wins)."""


MAX_LINE_CHARS = 16_384
"""Longest line read as a metrics line (Megatron's iteration line is about 400 characters);
a longer line that carries a marker is named as unread."""

MAX_FORMAT_LINES = 50_000
"""Lines of a known format read from one log (readings and unreadable ones together): a
steady state and a peak are long settled by then (Megatron logging every 10 iterations:
500,000 iterations). The rest of the log is not read, and the problems say so."""

MAX_CANDIDATE_LINES = 200_000
"""Lines holding one of the formats' key words that are read at all (most are then matched
by no format): bounds the time a log of near-miss lines costs."""

MAX_PROBLEMS = 100
"""Unreadable lines named one by one; past this many they are counted."""

_CHUNK_BYTES = 1 << 20

_KEY_WORDS = re.compile(
    rb"iteration|memory \(MB\) \||tps:|SamplesPerSec=|'train_samples_per_second'"
)
"""A word every format's marker contains: lines without one are skipped unread (a C-speed
search over each chunk, so blank or chatty lines cost almost nothing)."""


class _Scan:
    """The state of one pass over a log: readings, problems and the bounds."""

    def __init__(self, source: str) -> None:
        self.parsed = ParsedLog(source=source)
        self.format_lines = 0
        self.candidates = 0
        self.unnamed = 0
        self.stopped = ""

    def problem(self, text: str) -> None:
        if len(self.parsed.problems) < MAX_PROBLEMS:
            self.parsed.problems.append(text)
        else:
            self.unnamed += 1

    def long(self, number_: int) -> None:
        """A line over :data:`MAX_LINE_CHARS` that holds a key word: named, not read."""
        self.candidates += 1
        self.format_lines += 1
        self.problem(
            f"{self.parsed.source}:{number_}: a line over {MAX_LINE_CHARS:,} characters, not read"
        )

    def line(self, number_: int, raw: bytes) -> None:
        if len(raw) > MAX_LINE_CHARS:
            self.long(number_)
            return
        self.candidates += 1
        source = self.parsed.source
        line = _strip_ansi(raw.decode("utf-8", errors="replace"))
        for fmt in FORMATS:
            if not fmt.marker.search(line):
                continue
            self.format_lines += 1
            try:
                values = fmt.parse(line)
            except _OutOfRangeError as error:
                self.problem(f"{source}:{number_}: a {fmt.name} with {error}")
                return
            if values is None:
                excerpt = line.strip()
                excerpt = excerpt if len(excerpt) <= 160 else excerpt[:157] + "..."
                self.problem(f"{source}:{number_}: a {fmt.name} that could not be read: {excerpt}")
            else:
                self.parsed.readings.append(Reading(number_, fmt.stack, values))
            return

    @property
    def full(self) -> bool:
        if self.format_lines >= MAX_FORMAT_LINES:
            self.stopped = f"{MAX_FORMAT_LINES:,} lines of a known format"
        elif self.candidates >= MAX_CANDIDATE_LINES:
            self.stopped = f"{MAX_CANDIDATE_LINES:,} lines naming a format's key word"
        return bool(self.stopped)

    def finish(self, last_line: int) -> ParsedLog:
        source = self.parsed.source
        if self.unnamed:
            self.parsed.problems.append(f"{source}: {self.unnamed:,} more lines not read")
        if self.stopped:
            self.parsed.problems.append(
                f"{source}: reading stopped at line {last_line:,} after {self.stopped}; "
                "the rest of the log is not read"
            )
        return self.parsed


def _scan(chunks: Iterable[bytes], source: str) -> ParsedLog:
    """Every line of a known format in ``chunks`` (a log's bytes in pieces), bounded in
    line length, in lines read and in problems kept; memory stays one chunk and the
    readings."""
    scan = _Scan(source)
    carry = b""  # the start of a line the next chunk ends
    line_no = 1  # the number of the line ``carry`` (or the next byte) belongs to
    long_line = 0  # the number of a line already over MAX_LINE_CHARS, until it ends
    long_marked = False
    for piece in chunks:
        chunk = piece
        if long_line:
            end = chunk.find(b"\n")
            stop = len(chunk) if end < 0 else end
            long_marked = long_marked or _KEY_WORDS.search(chunk, 0, stop) is not None
            if end < 0:
                continue
            if long_marked:
                scan.long(long_line)
            long_line, long_marked = 0, False
            line_no += 1
            chunk = chunk[end + 1 :]
        buffer = carry + chunk if carry else chunk
        cut = buffer.rfind(b"\n") + 1
        pos = counted = 0
        while pos < cut:
            match = _KEY_WORDS.search(buffer, pos, cut)
            if match is None:
                break
            start = buffer.rfind(b"\n", 0, match.start()) + 1
            end = buffer.find(b"\n", match.start())
            line_no += buffer.count(b"\n", counted, start)
            counted = start
            scan.line(line_no, buffer[start:end])
            if scan.full:
                return scan.finish(line_no)
            pos = end + 1
        line_no += buffer.count(b"\n", counted, cut)
        carry = buffer[cut:]
        if len(carry) > MAX_LINE_CHARS:
            long_line, long_marked = line_no, _KEY_WORDS.search(carry) is not None
            carry = b""
    if long_line and long_marked:
        scan.long(long_line)
    elif carry:
        scan.line(line_no, carry)
    return scan.finish(line_no)


def parse_log_text(text: str, source: str = "<log>") -> ParsedLog:
    """Read every line; readings for the lines of a known format, problems for lines whose
    marker matches but whose fields do not parse (bounded as :func:`read_log`)."""
    return _scan([text.encode("utf-8", errors="replace")], source)


_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _strip_ansi(line: str) -> str:
    """torchtitan colours its fields with ANSI escapes."""
    return _ANSI.sub("", line)


def _chunks(handle: BinaryIO, path: Path) -> Iterator[bytes]:
    while True:
        try:
            chunk = handle.read(_CHUNK_BYTES)
        except OSError as error:
            raise LogError(f"{path}: cannot read ({error.strerror or error})") from None
        if not chunk:
            return
        yield chunk


def read_log(path: Path) -> ParsedLog:
    """Parse a log file: a regular file of at most :data:`MAX_LOG_BYTES` (a FIFO, a device
    or a folder is refused without waiting on it), streamed in chunks with the bounds of
    :func:`_scan`; undecodable bytes replaced."""
    path = Path(path)
    try:
        handle = open_regular(path, MAX_LOG_BYTES, "a training log")
    except FileReadError as error:
        raise LogError(str(error)) from None
    with handle:
        parsed = _scan(_chunks(handle, path), path.name)
    if not parsed.readings:
        why = parsed.problems[0] if parsed.problems else "no line of a known training stack"
        raise LogError(f"{path.name}: no measurement read ({why})")
    return parsed


# ------------------------------------------------------------------ to a measurement


def layout_of(scenario: Any) -> dict[str, Any]:
    """The :class:`Measurement` fields a scenario describes, its model and GPU and layout:
    the run a log comes from is described by the scenario it is added to (a log does not
    carry them), and the run stays that model's and GPU's when the scenario changes."""
    par, tr = scenario.parallelism, scenario.training
    layout: dict[str, Any] = {
        "model": scenario.model.architecture.name,
        "gpu": scenario.gpu.id,
        "gpus_per_node": par.gpus_per_node,
        "tp": par.tp,
        "pp": par.pp,
        "dp": par.dp,
        "ep": par.expert_parallel,
        "zero_stage": par.zero_stage,
        "fsdp_strategy": par.fsdp_strategy,
        "sequence_parallel": par.sequence_parallel,
        "micro_batch": tr.micro_batch,
        "global_batch": par.global_batch,
        "seq_len": tr.seq_len,
        "schedule": par.schedule,
        "interleave_chunks": par.interleave_chunks,
    }
    if tr.recompute in ("none", "selective", "full"):
        layout["recompute"] = tr.recompute
    return {k: v for k, v in layout.items() if v is not None}


def measurement_from_file(path: Path, scenario: Any) -> tuple[Measurement, list[str]]:
    """A log file as a measurement of the scenario's run (its GPUs, layout and sequence
    length; the log's own global batch when it prints one), and its unread lines."""
    parsed = read_log(path)
    layout = layout_of(scenario)
    if parsed.steady("global_batch") is not None:
        layout.pop("global_batch", None)
    try:
        m = measurement_from_log(
            parsed,
            gpus=scenario.num_gpus,
            seq_len=scenario.training.seq_len,
            label=path.name,
            layout=layout,
        )
    except ValueError as error:
        raise LogError(str(error).splitlines()[0]) from None
    return m, parsed.problems


def measurement_from_log(
    parsed: ParsedLog,
    *,
    gpus: int,
    seq_len: int | None = None,
    label: str = "",
    layout: dict[str, Any] | None = None,
) -> Measurement:
    """A :class:`Measurement` from a parsed log plus what the log does not carry.

    ``gpus`` is required (no stack prints it on every line); ``seq_len`` turns samples/s
    (DeepSpeed, Trainer) into tokens/s; ``layout`` holds the other Measurement layout
    fields (tp, pp, dp, zero_stage, micro_batch, global_batch, …). A log's own global
    batch (Megatron, nanotron) is used when ``layout`` does not give one."""
    if not parsed.readings:
        raise LogError(f"{parsed.source}: no measurement read")
    given = dict(layout or {})
    values: dict[str, Any] = {}
    stack = parsed.stacks[0]
    batch = parsed.steady("global_batch")
    if batch is not None and "global_batch" not in given:
        given["global_batch"] = round(batch)
    for key in (
        "step_seconds",
        "tokens_per_s",
        "tokens_per_s_per_gpu",
        "flops_per_gpu_per_s",
        "mfu",
    ):
        value = parsed.steady(key)
        if value is not None and value > 0:
            values[key] = value
    samples = parsed.steady("samples_per_s")
    if (
        samples is not None
        and "tokens_per_s" not in values
        and "tokens_per_s_per_gpu" not in values
    ):
        length = seq_len or given.get("seq_len")
        if length is None:
            raise LogError(
                f"{parsed.source}: the log gives samples/s; the sequence length (--seq-len) "
                "turns them into tokens/s"
            )
        values["tokens_per_s"] = samples * float(length)
    if "step_seconds" in values and "global_batch" not in given:
        # a step time without the batch it carried cannot be priced
        values.pop("step_seconds")
    for key in ("peak_allocated_bytes", "peak_reserved_bytes"):
        value = parsed.peak(key)
        if value is not None and value > 0:
            values[key] = value
    if seq_len is not None:
        given.setdefault("seq_len", seq_len)
    first, last = parsed.readings[0].line, parsed.readings[-1].line
    try:
        return Measurement(
            label=label or parsed.source,
            source=f"{parsed.source}:{first}-{last}",
            stack=_STACK_IDS.get(stack, stack),
            gpus=gpus,
            **given,
            **values,
        )
    except ValidationError as error:
        name, detail = describe_error(error.errors(include_url=False)[0])
        raise LogError(
            f"{parsed.source}:{first}-{last}: {name or 'measurement'}: {detail}"
        ) from None


_STACK_IDS = {"hf_trainer": "hf"}
"""Parser names → ``training.stack`` ids (:mod:`llm_planner.core.quantities.stacks`)."""
