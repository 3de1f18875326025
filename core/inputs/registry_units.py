"""The input registry's types (:class:`Input`, :class:`Unit`) and each unit's parser and
formatter (:mod:`.registry`). Imports only ``units``."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from llm_planner.core.primitives import units

Kind = Literal["text", "choice", "switch"]
"""How an input is given: typed text read by its unit, one of a catalog's ids, or on/off."""


@dataclass(frozen=True)
class Unit:
    """How one kind of quantity is read from text and written back (both faces)."""

    name: str
    parse: Callable[[str, str], Any]
    """(text, the input's label for messages) → the value in SI units; raises ValueError."""
    format: Callable[[Any], str]
    metavar: str


@dataclass(frozen=True)
class Input:
    """One scenario input, described once."""

    path: str
    """Dotted scenario path (``"training.seq_len"``)."""
    label: str
    """The window's row label; error messages name it."""
    help: str
    """One line for ``--help`` and the window's tooltip."""
    unit: Unit | None = None
    """How typed text is read (``kind == "text"``)."""
    kind: Kind = "text"
    flag: str | None = None
    """The command-line option; None: set on the command line another way (see ``cli``)."""
    group: str = ""
    """The ``--help`` group the option is listed in."""
    metavar: str = ""
    optional: bool = False
    """Empty text in the window means None (the default the help names)."""
    also: Mapping[str, Any] = field(default_factory=dict)
    """Other fields set with it (``--tflops`` also chooses the measured-TFLOP/s source)."""
    exclusive: str = ""
    """Options sharing a name here are mutually exclusive on the command line."""
    repeat: bool = False
    """The option may be given more than once; the values join into one list."""
    negatable: bool = True
    """A switch also has ``--no-…``."""
    cli: str = ""
    """For an input without its own flag: how the command line writes it, ``{}`` standing
    for the text (``--recompute threshold:{}``)."""
    names: Callable[[], Iterable[str]] | None = None
    """A choice's known ids, looked up only when ``--help`` is printed."""
    fmt: Callable[[Any], str] | None = None
    """How the window shows the value, when not the unit's own formatter."""

    def parse(self, text: str) -> Any:
        """The value ``text`` means (a ValueError, e.g. :class:`.units.UnitError`, when it
        means none); for a choice the text itself, validated with the scenario."""
        if self.unit is None:
            return text.strip()
        return self.unit.parse(text, self.label)

    def format(self, value: Any) -> str:
        """The value as the window shows it (parses back to the same value)."""
        if self.fmt is not None:
            return self.fmt(value)
        return self.unit.format(value) if self.unit is not None else str(value)

    @property
    def dest(self) -> str:
        """argparse's attribute name for the flag (``--seq-len`` → ``seq_len``)."""
        return (self.flag or "").lstrip("-").replace("-", "_")


# ------------------------------------------------------------------ parsers


def parse_length(text: str, what: str) -> int:
    """A GPU count, parallel degree, sequence length or context (``k`` = 1024)."""
    return units.parse_length(text, what)


def parse_whole(text: str, what: str) -> int:
    """A whole number of sequences or a rank (``k`` = 1000)."""
    try:
        return units.parse_int_count(text, what)
    except units.UnitError:
        raise units.UnitError(
            f"{what}: {text.strip()!r} is not a whole number; write e.g. 1, 4, 16"
        ) from None


def parse_names(text: str, what: str) -> tuple[str, ...]:
    """A comma-separated list of ids (``core_attn, mlp``), lower-cased; the field that takes
    it says which ids it knows."""
    del what  # every text is a list; its ids are checked by the field
    return tuple(part.strip().lower() for part in text.split(",") if part.strip())


def format_names(value: Any) -> str:
    return ",".join(value or ())


def parse_chunks(text: str, what: str) -> int:
    """Model chunks per GPU of the interleaved schedule: a whole number, at least 2 (one
    chunk per GPU is no interleaving; Narayanan et al. 2021 section 2.2.2)."""
    value = parse_whole(text, what)
    if value < 2:
        raise units.UnitError(f"{what}: interleaving needs v ≥ 2 model chunks per GPU")
    return value


def parse_count(text: str, what: str) -> float:
    """Tokens, parameters, FLOPs, a rate (decimal suffixes k, M, B, T, P)."""
    return units.parse_count(text, what)


def parse_fraction(text: str, what: str) -> float:
    """``0.4`` or ``40%`` → 0.4."""
    stripped = text.strip()
    if stripped.endswith("%"):
        return units.parse_count(stripped[:-1], what) / 100
    return units.parse_count(stripped, what)


def format_fraction(value: float) -> str:
    return f"{value:.4g}"


def format_int(value: Any) -> str:
    return str(int(value))


def format_count(value: Any) -> str:
    return units.format_count(float(value), digits=4)


def format_bytes_input(value: float) -> str:
    """An allowance as it was most likely meant: a whole number of GiB shows as GiB
    (``1 GiB``, the inference default), anything else in GB (``1.000 GB``). Explicit
    either way, so the same 2^30 bytes never reads 1.074 GB on one tab and 1 GiB on another."""
    gib = value / units.GiB
    if value and gib == round(gib):
        return f"{round(gib)} GiB"
    return units.format_gb(value, digits=4)


def parse_bytes(text: str, what: str) -> float:
    return units.parse_bytes(text, what)


def parse_bandwidth(text: str, what: str) -> float:
    """Bytes per second, or bits as network links are sold (``400 Gb/s`` = ``400 Gbps`` =
    50e9 bytes per second): :func:`.units.parse_bandwidth`, the one reader of data rates."""
    return units.parse_bandwidth(text, what)


def format_bandwidth(value: float) -> str:
    return f"{units.format_gb(value, digits=4)}/s"


_FLOPS_UNITS = {
    "": 1e12,
    "flop/s": 1.0,
    "flops": 1.0,
    "gflop/s": 1e9,
    "gflops": 1e9,
    "tflop/s": 1e12,
    "tflops": 1e12,
    "pflop/s": 1e15,
    "pflops": 1e15,
}


def parse_tflops(text: str, what: str) -> float:
    """Achieved FLOP/s per GPU, typed in TFLOP/s: ``400`` → 4e14 FLOP/s. A stated unit is
    read as stated (``4e14 FLOP/s``, ``0.4 PFLOP/s``, ``400 TFLOPS``); a bare number is
    always TFLOP/s, however large (no guessing)."""
    compact = text.strip().replace(" ", "")
    for unit in sorted(_FLOPS_UNITS, key=len, reverse=True):
        if unit and compact.lower().endswith(unit):
            return units.parse_count(compact[: -len(unit)], what) * _FLOPS_UNITS[unit]
    return units.parse_count(compact, what) * _FLOPS_UNITS[""]


def format_tflops(value: float) -> str:
    return f"{value / 1e12:.4g}"


def parse_points(text: str, what: str) -> list[tuple[int, float]]:
    """``64: 1.1M, 256: 4.2M`` → [(64, 1.1e6), (256, 4.2e6)]: GPUs (``k`` = 1024, as every
    GPU count) and tokens/s (decimal); ``,`` or ``;`` between points."""
    points: list[tuple[int, float]] = []
    for part in text.replace(";", ",").split(","):
        if not part.strip():
            continue
        gpus, sep, rate = part.partition(":")
        if not sep:
            raise units.UnitError(
                f"{what}: {part.strip()!r} is not GPUs: tokens/s; write e.g. 64: 1.1M"
            )
        points.append((units.parse_length(gpus, "GPUs"), units.parse_count(rate, "tokens/s")))
    return points


def format_points(points: Any) -> str:
    return ", ".join(f"{g}: {units.format_count(r, 4)}" for g, r in points or [])


def parse_price(text: str, what: str) -> float:
    return units.parse_price_per_hour(text, what)


def format_price(value: float) -> str:
    return f"{value:.4g}"


def parse_usd(text: str, what: str) -> float:
    return units.parse_usd(text, what)


def parse_duration(text: str, what: str) -> float:
    return units.parse_duration(text, what)


LENGTH = Unit("length", parse_length, format_int, "N")
WHOLE = Unit("whole", parse_whole, format_int, "N")
CHUNKS = Unit("chunks", parse_chunks, format_int, "V")
NAMES = Unit("names", parse_names, format_names, "LIST")
COUNT = Unit("count", parse_count, format_count, "N")
FRACTION = Unit("fraction", parse_fraction, format_fraction, "F")
BYTES = Unit("bytes", parse_bytes, format_bytes_input, "BYTES")
BANDWIDTH = Unit("bandwidth", parse_bandwidth, format_bandwidth, "BYTES_PER_S")
PRICE = Unit("price", parse_price, format_price, "USD_PER_GPU_HOUR")
USD = Unit("usd", parse_usd, format_count, "USD")
DURATION = Unit("duration", parse_duration, units.format_duration, "TIME")
TFLOPS = Unit("tflops", parse_tflops, format_tflops, "F")
POINTS = Unit("points", parse_points, format_points, "GPUS:TOKENS_PER_S")


MODEL = "model and hardware"
COMPUTE = "compute budget"
INFERENCE = "inference memory"
SCHEDULE = "schedule, budget and failures"
TRAINING = "training memory"
PARALLEL = "parallelism"
"""The groups of inputs (the command line's help sections)."""
