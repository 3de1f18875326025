"""Parsing and formatting of human quantities (core.units)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from llm_planner.core.primitives import units


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("7B", 7e9),
        ("6.7e9", 6.7e9),
        ("1.4T", 1.4e12),
        ("2k", 2000.0),
        ("70_000_000_000", 70e9),
        ("1,024", 1024.0),
        (" 13 B ", 13e9),
        ("300M", 300e6),
        (42, 42.0),
    ],
)
def test_parse_count(text: str | int, expected: float) -> None:
    assert units.parse_count(text) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("80 GB", 80e9),
        ("80 GiB", 80 * 2**30),  # 85,899,345,920 bytes
        ("141GB", 141e9),
        ("512 MiB", 512 * 2**20),
        ("1.5 TB", 1.5e12),
        ("4096", 4096.0),
    ],
)
def test_parse_bytes(text: str, expected: float) -> None:
    assert units.parse_bytes(text) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("$2.50/h", 2.5),
        ("2.5", 2.5),
        ("2.5 $/h", 2.5),
        ("$60/day", 2.5),
        ("$2.5 per GPU-hour", 2.5),
    ],
)
def test_parse_price(text: str, expected: float) -> None:
    assert units.parse_price_per_hour(text) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("30 days", 30 * 86400),
        ("12h", 43200),
        ("90 min", 5400),
        ("50ms", 0.050),  # a serving latency target: 50 thousandths of a second
        ("2.5 msec", 0.0025),
    ],
)
def test_parse_duration(text: str, expected: float) -> None:
    assert units.parse_duration(text) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("call", "text", "fragment"),
    [
        (units.parse_count, "seven", "cannot read 'seven'"),
        (units.parse_count, "7X", "unknown suffix 'X'"),
        (units.parse_count, "-3B", "negative"),
        (units.parse_count, "nan", "cannot read"),
        (units.parse_bytes, "80 GX", "unknown unit 'GX'"),
        (units.parse_bytes, "", "cannot read"),
        (units.parse_price_per_hour, "two dollars", "cannot read"),
        (units.parse_int_count, "2.5", "not a whole number"),
    ],
)
def test_garbage_raises_a_clear_error(call, text: str, fragment: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(units.UnitError, match="tokens") as info:
        call(text, "tokens")
    assert fragment in str(info.value)


def test_format_flop_seed_example() -> None:
    # 6 × 175e9 × 300e9 = 3.15e23 (EleutherAI, "Transformer Math 101")
    assert units.format_flop(6 * 175e9 * 300e9) == "3.15e23 FLOP"


def test_format_bytes_shows_gb_and_gib() -> None:
    # 80e9 B = 80 GB = 80e9 / 2^30 = 74.505... GiB
    assert units.format_bytes(80e9) == "80.0 GB (74.5 GiB)"
    # exactly 2 GiB = 2,147,483,648 B = 2.147... GB
    assert units.format_bytes(2 * 2**30) == "2.15 GB (2.00 GiB)"


def test_format_duration_and_money() -> None:
    assert units.format_duration(20.8 * 86400) == "20.8 days"
    assert units.format_duration(5400) == "90.0 min"
    assert units.format_usd(2.9e6) == "$2.90M"
    assert units.format_usd(12345) == "$12,345"
    assert units.format_usd(868_604) == "$869k"  # three significant figures, like $1.04M
    assert units.format_usd(999_600) == "$1.00M"  # not "$1000k"
    assert units.format_usd(2.5) == "$2.50"


@given(st.floats(min_value=0, max_value=1e30, allow_nan=False))
def test_count_round_trip(value: float) -> None:
    assert math.isclose(units.parse_count(repr(value)), value, rel_tol=1e-12)


@pytest.mark.parametrize(
    ("text", "expected"), [("$1.5M", 1.5e6), ("200k", 2e5), ("$250,000", 2.5e5), ("1e6 USD", 1e6)]
)
def test_parse_usd(text: str, expected: float) -> None:
    assert units.parse_usd(text) == pytest.approx(expected)


def test_flops_rates_read_without_an_exponent() -> None:
    """One GPU's rates stay in TFLOP/s with a thousands separator (B200's BF16 dense
    2.25e15 → 2,250), cluster-scale ones (≥ 10 PFLOP/s) in PFLOP/s and EFLOP/s; the old
    format printed B200 as "2.25e+03 TFLOP/s"."""
    assert units.format_flops_rate(4e14) == "400 TFLOP/s"
    assert units.format_flops_rate(2.25e15) == "2,250 TFLOP/s"
    assert units.format_flops_rate(9e15) == "9,000 TFLOP/s"
    assert units.format_flops_rate(4.06e16) == "40.6 PFLOP/s"
    assert units.format_flops_rate(3e17) == "300 PFLOP/s"
    assert units.format_flops_rate(1.2e18) == "1.20 EFLOP/s"
    for value in (9.89e14, 2.5e15, 1.5e16, 9.99e16, 5e18):
        assert "e+" not in units.format_flops_rate(value)
