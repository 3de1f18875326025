"""The serving plan's users and latency targets, read the same on the command line
(``serve-plan --users --tpot --ttft``) and in the window's Cheapest serving tab."""

from __future__ import annotations

import pytest

from llm_planner.core.composition.serving_plan import parse_latency, parse_users


@pytest.mark.parametrize(
    ("text", "users"),
    [("100", 100), ("2k", 2_000), ("1.5M", 1_500_000), ("1e9", 1_000_000_000)],
)
def test_users_read_decimal_suffixes(text: str, users: int) -> None:
    """Users are people, not lengths: k = 1,000 (2k = 2,000), M = 10^6."""
    assert parse_users(text) == users


@pytest.mark.parametrize("text", ["0", "-3", "1.5", "2e9", "many", ""])
def test_users_refused_out_of_range_or_unreadable(text: str) -> None:
    with pytest.raises(ValueError, match="users"):
        parse_users(text)


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("50ms", 0.050), ("50 ms", 0.050), ("0.05", 0.050), ("2s", 2.0), ("1 min", 60.0)],
)
def test_latency_reads_milliseconds_and_seconds(text: str, seconds: float) -> None:
    """50 ms = 50 × 10^-3 s; a bare number is seconds."""
    assert parse_latency(text, "TPOT") == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["0", "0 ms", "-5ms", "2h", "fast"])
def test_latency_refused_when_not_above_zero_or_over_an_hour(text: str) -> None:
    with pytest.raises(ValueError, match="TPOT"):
        parse_latency(text, "TPOT")
