"""Parse and format human quantities at the edges of ``core``.

Inside ``core`` every quantity is an SI base unit (bytes, FLOP, seconds, USD, FLOP/s).
This module is the only place where ``7B``, ``80 GiB`` or ``$2.50/h`` are turned into
numbers, or numbers back into text.

Conventions (stated once, used everywhere):

- Count suffixes are decimal: ``k`` = 1e3, ``M`` = 1e6, ``B`` or ``G`` = 1e9, ``T`` = 1e12,
  ``P`` = 1e15 (``B`` is the ML habit for "billion parameters").
- Byte units: ``KB MB GB TB PB`` are decimal (10^3n), ``KiB MiB GiB TiB PiB`` binary
  (2^10n), per IEC 80000-13. GPU memory is sold in GB and reported in GiB by nvidia-smi and
  PyTorch; :func:`format_bytes` always prints both.
"""

from __future__ import annotations

import math
import re

GB = 1e9
"""Bytes in a decimal gigabyte (10^9)."""
GiB = float(2**30)
"""Bytes in a binary gibibyte (2^30)."""

SECONDS_PER_HOUR = 3600.0
SECONDS_PER_DAY = 86400.0

_COUNT_SUFFIXES: dict[str, float] = {
    "": 1.0,
    "k": 1e3,
    "K": 1e3,
    "m": 1e6,  # lower-case m is accepted as million for counts (never milli here)
    "M": 1e6,
    "b": 1e9,
    "B": 1e9,
    "G": 1e9,
    "g": 1e9,
    "t": 1e12,
    "T": 1e12,
    "P": 1e15,
    "p": 1e15,
}

_BYTE_UNITS: dict[str, float] = {
    "b": 1.0,
    "byte": 1.0,
    "bytes": 1.0,
    "kb": 1e3,
    "mb": 1e6,
    "gb": 1e9,
    "tb": 1e12,
    "pb": 1e15,
    "kib": 2.0**10,
    "mib": 2.0**20,
    "gib": 2.0**30,
    "tib": 2.0**40,
    "pib": 2.0**50,
}

_DURATION_UNITS: dict[str, float] = {
    "ms": 1e-3,
    "msec": 1e-3,
    "millisecond": 1e-3,
    "milliseconds": 1e-3,
    "s": 1.0,
    "sec": 1.0,
    "secs": 1.0,
    "second": 1.0,
    "seconds": 1.0,
    "min": 60.0,
    "mins": 60.0,
    "minute": 60.0,
    "minutes": 60.0,
    "h": SECONDS_PER_HOUR,
    "hr": SECONDS_PER_HOUR,
    "hrs": SECONDS_PER_HOUR,
    "hour": SECONDS_PER_HOUR,
    "hours": SECONDS_PER_HOUR,
    "d": SECONDS_PER_DAY,
    "day": SECONDS_PER_DAY,
    "days": SECONDS_PER_DAY,
    "w": 7 * SECONDS_PER_DAY,
    "week": 7 * SECONDS_PER_DAY,
    "weeks": 7 * SECONDS_PER_DAY,
}

_NUMBER = r"[+-]?(?:\d[\d_,]*\.?\d*|\.\d+)(?:[eE][+-]?\d+)?"
_COUNT_RE = re.compile(rf"^\s*(?P<num>{_NUMBER})\s*(?P<suffix>[a-zA-Z]?)\s*$")
_UNIT_RE = re.compile(rf"^\s*(?P<num>{_NUMBER})\s*(?P<unit>[a-zA-Z]*)\s*$")
_PRICE_RE = re.compile(
    rf"^\s*\$?\s*(?P<num>{_NUMBER})\s*(?:usd|\$)?\s*(?:(?:/|per)\s*(?:gpu[\s-]*)?(?P<per>[a-z]+))?\s*$",
    re.IGNORECASE,
)


class UnitError(ValueError):
    """A human quantity could not be read; the message says what and why."""


def _number(text: str, what: str, original: str) -> float:
    try:
        value = float(text.replace("_", "").replace(",", ""))
    except ValueError:
        raise UnitError(f"{what}: {original!r} is not a number") from None
    if not math.isfinite(value):
        raise UnitError(f"{what}: {original!r} is not a finite number")
    return value


def _check_sign(value: float, what: str, original: str, allow_negative: bool) -> float:
    if value < 0 and not allow_negative:
        raise UnitError(f"{what}: {original!r} is negative")
    return value


def parse_count(
    text: str | float | int, what: str = "value", allow_negative: bool = False
) -> float:
    """Read a count such as ``7B``, ``6.7e9``, ``1.4T``, ``2k`` or ``70_000_000_000``.

    Suffixes are decimal (k, M, B/G, T, P). ``what`` names the field in error messages.
    """
    if isinstance(text, bool):
        raise UnitError(f"{what}: {text!r} is not a number")
    if isinstance(text, int | float):
        value = float(text)
        if not math.isfinite(value):
            raise UnitError(f"{what}: {text!r} is not a finite number")
        return _check_sign(value, what, str(text), allow_negative)
    match = _COUNT_RE.match(text)
    if not match:
        raise UnitError(
            f"{what}: cannot read {text!r}; write a number with an optional suffix "
            "k, M, B, T (e.g. 7B, 1.4T, 6.7e9)"
        )
    suffix = match["suffix"]
    if suffix not in _COUNT_SUFFIXES:
        raise UnitError(f"{what}: unknown suffix {suffix!r} in {text!r}; use k, M, B, T or P")
    value = _number(match["num"], what, text) * _COUNT_SUFFIXES[suffix]
    return _check_sign(value, what, text, allow_negative)


def parse_int_count(text: str | float | int, what: str = "value") -> int:
    """Like :func:`parse_count` but the result must be a whole number (e.g. ``2k`` → 2000)."""
    value = parse_count(text, what)
    if value != round(value):
        raise UnitError(f"{what}: {text!r} is not a whole number")
    return round(value)


def parse_length(text: str | float | int, what: str = "value") -> int:
    """A sequence length, context or GPU count: ``k`` is 1024 (``8k`` → 8192, ``16k`` →
    16384, ``1.5k`` → 1536), ``M`` is 1024²; plain numbers and ``8192`` stay as written.

    The ML convention (a "4k context" is 4,096 tokens, Llama-2's ``max_position_embeddings``);
    tokens, parameters, FLOPs and money stay decimal (:func:`parse_count`).
    """
    if isinstance(text, str):
        match = _COUNT_RE.match(text)
        if match and match["suffix"] in ("k", "K", "M"):
            scale = 1024 if match["suffix"] in ("k", "K") else 1024**2
            value = _check_sign(_number(match["num"], what, text) * scale, what, text, False)
            if value != round(value):
                raise UnitError(f"{what}: {text!r} is not a whole number")
            return round(value)
    return parse_int_count(text, what)


def parse_bytes(text: str | float | int, what: str = "memory") -> float:
    """Read a size such as ``80 GB`` (80e9 bytes), ``80 GiB`` (80·2^30) or ``141GB``.

    A bare number is bytes. Units: B, KB, MB, GB, TB, PB (decimal) and KiB ... PiB (binary).
    """
    if isinstance(text, int | float) and not isinstance(text, bool):
        return parse_count(text, what)
    if not isinstance(text, str):
        raise UnitError(f"{what}: {text!r} is not a size")
    match = _UNIT_RE.match(text)
    if not match:
        raise UnitError(f"{what}: cannot read {text!r}; write e.g. 80 GB or 80 GiB")
    unit = match["unit"].lower() or "b"
    if unit not in _BYTE_UNITS:
        raise UnitError(
            f"{what}: unknown unit {match['unit']!r} in {text!r}; use B, KB, MB, GB, TB "
            "(decimal) or KiB, MiB, GiB, TiB (binary)"
        )
    value = _number(match["num"], what, text) * _BYTE_UNITS[unit]
    return _check_sign(value, what, text, allow_negative=False)


_RATE_RE = re.compile(
    rf"^\s*(?P<num>{_NUMBER})\s*(?P<unit>[a-zA-Z]*)\s*(?P<per>/\s*s(?:ec(?:ond)?)?|ps)?\s*$"
)
_BIT_PREFIXES: dict[str, float] = {"": 1.0, "k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12, "p": 1e15}


def parse_bandwidth(text: str | float | int, what: str = "bandwidth") -> float:
    """Read a data rate into bytes per second. Bytes: ``400 GB/s``, ``400GBps``, ``50 GiB/s``,
    ``400 GB`` (the ``/s`` may be left out). Bits, as networks are sold: ``400 Gb/s``,
    ``400Gbps``, ``400 gbps``, ``400 Gbit/s`` = 400e9 / 8 = 50e9 bytes/s. A bare number is
    bytes/s. The case of ``b`` decides (SI: b bit, B byte); an all-lower-case ``gb`` or
    ``gb/s`` could mean either and is refused with both readings rather than guessed.
    """
    if isinstance(text, int | float) and not isinstance(text, bool):
        return _check_sign(float(text), what, str(text), allow_negative=False)
    if not isinstance(text, str):
        raise UnitError(f"{what}: {text!r} is not a data rate")
    match = _RATE_RE.match(text)
    if not match:
        raise UnitError(f"{what}: cannot read {text!r}; write e.g. 400 GB/s or 400 Gb/s")
    unit, per = match["unit"], match["per"] or ""
    if not per and len(unit) > 2 and unit.lower().endswith("ps"):  # "Gbps", "GBps"
        unit, per = unit[:-2], "ps"
    value = _number(match["num"], what, text)
    bits = re.fullmatch(r"(?P<prefix>[kKmMgGtTpP]?)(?:b|bit|bits)", unit)
    if bits and (unit.endswith(("bit", "bits")) or per == "ps" or unit != unit.lower()):
        rate = value * _BIT_PREFIXES[bits["prefix"].lower()] / 8.0
    elif bits and unit:  # "gb", "gb/s": lower case throughout
        number = match["num"]
        raise UnitError(
            f"{what}: {text!r} could be bits or bytes; write {number} G{unit[-1:].lower()}"
            f"/s for bits (network links) or {number} GB/s for bytes"
            if unit.lower().startswith("g")
            else f"{what}: {text!r} could be bits or bytes; write b for bits or B for bytes "
            "with an upper-case prefix (Mb/s, MB/s)"
        )
    elif unit.lower() in _BYTE_UNITS or (unit == "" and per):
        rate = value * _BYTE_UNITS[unit.lower() or "b"]
    elif unit == "":
        rate = value
    else:
        raise UnitError(
            f"{what}: unknown unit {unit!r} in {text!r}; use GB/s, GiB/s (bytes) or Gb/s, "
            "Gbps (bits)"
        )
    return _check_sign(rate, what, text, allow_negative=False)


def parse_duration(text: str | float | int, what: str = "duration") -> float:
    """Read a duration such as ``30 days``, ``12h``, ``90 min`` or ``50 ms`` (a serving latency)
    into seconds (bare number: s)."""
    if isinstance(text, int | float) and not isinstance(text, bool):
        return parse_count(text, what)
    if not isinstance(text, str):
        raise UnitError(f"{what}: {text!r} is not a duration")
    match = _UNIT_RE.match(text)
    if not match:
        raise UnitError(f"{what}: cannot read {text!r}; write e.g. 30 days, 12 h, 90 min")
    unit = match["unit"].lower() or "s"
    if unit not in _DURATION_UNITS:
        raise UnitError(
            f"{what}: unknown unit {match['unit']!r} in {text!r}; use ms, s, min, h, d, w"
        )
    value = _number(match["num"], what, text) * _DURATION_UNITS[unit]
    return _check_sign(value, what, text, allow_negative=False)


def parse_price_per_hour(text: str | float | int, what: str = "price") -> float:
    """Read a price per GPU-hour such as ``$2.50/h``, ``2.5``, ``2.5 $/h`` into USD per hour.

    A bare number is USD per GPU-hour. ``/s``, ``/min``, ``/day`` are converted to per hour.
    """
    if isinstance(text, int | float) and not isinstance(text, bool):
        return parse_count(text, what)
    if not isinstance(text, str):
        raise UnitError(f"{what}: {text!r} is not a price")
    match = _PRICE_RE.match(text)
    if not match:
        raise UnitError(f"{what}: cannot read {text!r}; write e.g. $2.50/h or 2.5")
    value = _number(match["num"], what, text)
    per = (match["per"] or "h").lower()
    if per not in _DURATION_UNITS:
        raise UnitError(f"{what}: unknown time unit {per!r} in {text!r}; use /h")
    value = value * SECONDS_PER_HOUR / _DURATION_UNITS[per]
    return _check_sign(value, what, text, allow_negative=False)


def parse_usd(text: str | float | int, what: str = "amount") -> float:
    """Read an amount of money such as ``$1.5M``, ``200k``, ``$250,000`` or ``1e6`` (USD)."""
    if isinstance(text, str):
        cleaned = text.strip()
        cleaned = cleaned.removeprefix("$").removesuffix("USD").removesuffix("usd").strip()
        return parse_count(cleaned, what)
    return parse_count(text, what)


# ---------------------------------------------------------------- formatting


def _sig(value: float, digits: int = 3) -> str:
    """``value`` with ``digits`` significant figures, no exponent for ordinary sizes."""
    if value == 0 or not math.isfinite(value):
        return f"{value:g}"
    magnitude = math.floor(math.log10(abs(value)))
    decimals = max(0, digits - 1 - magnitude)
    return f"{value:,.{decimals}f}"


def format_count(value: float, digits: int = 3) -> str:
    """``6.74e9`` → ``6.74B``; ``1.4e12`` → ``1.4T``; small numbers as they are.

    The suffix is chosen after rounding to ``digits`` significant digits, so 999.9e6 reads
    ``1B``, not ``1e+03M``; from 1e18 on, scientific notation."""
    rounded = float(f"{value:.{digits}g}")
    if abs(rounded) >= 1e18:
        return f"{rounded:.{digits}g}"
    for factor, suffix in ((1e15, "P"), (1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "k")):
        if abs(rounded) >= factor:
            text = f"{rounded / factor:.{digits}g}"
            return f"{text}{suffix}"
    return f"{value:.{digits}g}"


def count_of(number: int, noun: str, plural: str = "") -> str:
    """``1 scenario``, ``3 scenarios``: the noun agrees with the count (never "scenario(s)")."""
    return f"{number:,} {noun if number == 1 else plural or noun + 's'}"


def format_flop(value: float, digits: int = 3) -> str:
    """``3.15e23`` → ``3.15e23 FLOP``."""
    if value == 0:
        return "0 FLOP"
    mantissa, exponent = f"{value:.{digits - 1}e}".split("e")
    return f"{mantissa}e{int(exponent)} FLOP"


def format_flops_rate(value: float, digits: int = 3) -> str:
    """A rate in FLOP/s as TFLOP/s below 10 PFLOP/s, the unit one GPU's datasheet compares
    in (``4e14`` → ``400 TFLOP/s``, ``2.25e15`` → ``2,250 TFLOP/s``), then PFLOP/s and
    EFLOP/s for clusters (``4.06e16`` → ``40.6 PFLOP/s``, ``1.2e18`` → ``1.20 EFLOP/s``);
    never an exponent."""
    if abs(value) >= 1e18:
        return f"{_sig(value / 1e18, digits)} EFLOP/s"
    if abs(value) >= 1e16:
        return f"{_sig(value / 1e15, digits)} PFLOP/s"
    return f"{_sig(value / 1e12, digits)} TFLOP/s"


def format_bytes(value: float, digits: int = 3) -> str:
    """Both units, explicit: ``80e9`` → ``80.0 GB (74.5 GiB)``; small sizes in MB / MiB.
    Sizes that round to zero bytes print as ``0 B`` (never ``-0 B``)."""
    if abs(value) < 0.5:
        return "0 B"
    if abs(value) >= 1e12:
        return f"{_sig(value / 1e12, digits)} TB ({_sig(value / 2**40, digits)} TiB)"
    if abs(value) >= 1e8:
        return f"{_sig(value / GB, digits)} GB ({_sig(value / GiB, digits)} GiB)"
    if abs(value) >= 1e5:
        return f"{_sig(value / 1e6, digits)} MB ({_sig(value / 2**20, digits)} MiB)"
    return f"{value:,.0f} B"


def format_gb(value: float, digits: int = 3) -> str:
    """Decimal gigabytes only, for compact labels: ``80e9`` → ``80.0 GB``."""
    return f"{_sig(value / GB, digits)} GB"


def format_duration(seconds: float) -> str:
    """Natural unit: ``1.8e6`` → ``20.8 days``; ``5400`` → ``90.0 min``; ``42`` → ``42 s``."""
    if not math.isfinite(seconds):
        return "never" if seconds > 0 else f"{seconds}"
    if abs(seconds) >= 2 * 365 * SECONDS_PER_DAY:
        return f"{seconds / (365.25 * SECONDS_PER_DAY):.3g} years"
    if abs(seconds) >= 2 * SECONDS_PER_DAY:
        return f"{seconds / SECONDS_PER_DAY:.1f} days"
    if abs(seconds) >= 2 * SECONDS_PER_HOUR:
        return f"{seconds / SECONDS_PER_HOUR:.1f} h"
    if abs(seconds) >= 120:
        return f"{seconds / 60:.1f} min"
    if abs(seconds) >= 1:
        return f"{seconds:.3g} s"
    if seconds == 0:
        return "0 s"
    return f"{seconds * 1e3:.3g} ms"


def format_usd(value: float) -> str:
    """``2.9e6`` → ``$2.90M``; ``868604`` → ``$869k``; ``12345`` → ``$12,345``; ``2.5`` →
    ``$2.50``: three significant figures from $100k up, so a cost never reads "$868,604"
    next to "$1.04M"."""
    if not math.isfinite(value):
        return f"${value}"
    sign = "-" if value < 0 else ""
    value = abs(value)
    if value >= 1e9:
        return f"{sign}${value / 1e9:.2f}B"
    if value >= 999_500:
        return f"{sign}${value / 1e6:.2f}M"
    if value >= 1e5:
        return f"{sign}${value / 1e3:.0f}k"
    if value >= 100:
        return f"{sign}${value:,.0f}"
    return f"{sign}${value:,.2f}"


# ---------------------------------------------------------------- untrusted text

_BIDI_CONTROLS = frozenset(
    "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
)
"""Unicode bidirectional formatting characters (UAX #9, section 2): they reorder what a
terminal or label shows (the "Trojan Source" attack, CVE-2021-42574)."""


def clean_text(text: str, *, keep_newlines: bool = False) -> str:
    """``text`` without control, bidi-override or other invisible format characters.

    C0/C1 controls (NUL, ESC sequences, carriage returns...) become a space, so a name
    from a received file cannot clear or rewrite a terminal; bidi formatting characters
    and the other Unicode "format" (Cf) characters except zero-width joiners are removed.
    ``keep_newlines`` keeps line feeds and tabs (notes); otherwise they become spaces too.
    """
    import unicodedata

    out: list[str] = []
    for ch in text:
        if keep_newlines and ch in "\n\t":
            out.append(ch)
            continue
        category = unicodedata.category(ch)
        if category == "Cc" or ch in "\u2028\u2029":
            out.append(" ")
        elif ch in _BIDI_CONTROLS or (category == "Cf" and ch not in "\u200c\u200d"):
            continue
        elif category == "Cs":  # a lone surrogate cannot even be written as UTF-8
            out.append("\ufffd")
        else:
            out.append(ch)
    return "".join(out)
