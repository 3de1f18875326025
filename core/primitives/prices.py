"""The price list: what one GPU-hour of each GPU kind costs, where it was read, and when.

``resources/prices.json`` lists offers (provider, tier, USD per GPU-hour, the page and day
it was read from). The hardware ranking prices every GPU kind with it, and a scenario's
price follows its GPU from it unless the user set one (``compute.price_follows_gpu``).
"""

from __future__ import annotations

import datetime as dt
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from llm_planner.core.primitives.limits import MIN_PRICE_USD_PER_GPU_HOUR, bounds
from llm_planner.core.primitives.resources import read_json

Tier = Literal["on_demand", "reserved"]
TIERS: tuple[Tier, ...] = ("on_demand", "reserved")

STALE_AFTER_DAYS = 365
"""A price list (or one price) older than this, by today's date, is flagged out of date."""


class PriceListError(ValueError):
    """A price list that cannot be used; the message names the file and the field."""


# --------------------------------------------------------------------- the price list


class PriceOffer(BaseModel):
    """One listed price: a provider's price per GPU-hour for one GPU kind and tier."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    gpu: str = Field(description="catalog GPU id (or a custom GPU's id)")
    provider: str
    product: str = ""
    tier: Tier = "on_demand"
    usd_per_gpu_hour: float = Field(**bounds("compute.price_usd_per_gpu_hour"))
    date: dt.date = Field(description="day the price was read from (or published on) the source")
    source: str = Field(min_length=1, description="the page the price is listed on")
    via: str = Field(default="", description="the copy it was transcribed from, if not live")
    notes: str = ""

    @field_validator("usd_per_gpu_hour")
    @classmethod
    def _free_or_a_real_price(cls, value: float) -> float:
        """0 or at least the smallest real price, as the scenario's own price
        (:class:`~llm_planner.core.sections.compute.ComputeInputs`): 1e-300 $/h would price
        a run at zero and rank it first."""
        if 0 < value < MIN_PRICE_USD_PER_GPU_HOUR:
            raise ValueError(
                f"must be 0 (free) or at least {MIN_PRICE_USD_PER_GPU_HOUR} USD per GPU-hour"
            )
        return value

    def is_stale(self, today: dt.date) -> bool:
        """Older than :data:`STALE_AFTER_DAYS` days on ``today``."""
        return (today - self.date).days > STALE_AFTER_DAYS


class PriceList(BaseModel):
    """Every listed price, the day the list was compiled, and GPUs with no price found."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    description: str = ""
    updated: dt.date
    conventions: dict[str, str] = Field(default_factory=dict)
    offers: list[PriceOffer] = Field(default_factory=list)
    unpriced: dict[str, str] = Field(default_factory=dict, description="GPU id → why no price")

    def is_stale(self, today: dt.date) -> bool:
        """The list itself is out of date: compiled more than a year before ``today``."""
        return (today - self.updated).days > STALE_AFTER_DAYS

    def stale_offers(self, today: dt.date) -> list[PriceOffer]:
        return [offer for offer in self.offers if offer.is_stale(today)]

    def best_offer(self, gpu_id: str, tier: Tier) -> PriceOffer | None:
        """The cheapest offer of ``tier`` for ``gpu_id``; None if none is listed."""
        offers = [o for o in self.offers if o.gpu == gpu_id and o.tier == tier]
        return min(offers, key=lambda o: o.usd_per_gpu_hour) if offers else None

    def staleness_message(self, today: dt.date) -> str:
        """One line saying what is out of date ('' when nothing is)."""
        parts = []
        if self.is_stale(today):
            parts.append(f"price list last updated {self.updated.isoformat()}, over a year ago")
        old = self.stale_offers(today)
        if old:
            parts.append(
                f"{len(old)} price{'s' if len(old) > 1 else ''} older than a year ("
                + ", ".join(sorted({f"{o.gpu} {o.tier}" for o in old}))
                + ")"
            )
        return "; ".join(parts)


MAX_PRICE_LIST_BYTES = 1_000_000
"""Largest price list read (the shipped one is about 20 kB)."""


def load_price_list(path: Path | None = None) -> PriceList:
    """The shipped ``resources/prices.json``, or the user's edited copy at ``path``.

    The user's file is read as untrusted: a regular file of at most
    :data:`MAX_PRICE_LIST_BYTES`, brackets and digit runs bounded before parsing, strict JSON
    (no NaN or Infinity). Raises :class:`PriceListError` naming the file and the bad field.
    """
    import json

    from llm_planner.core.primitives.reading import (
        FileReadError,
        check_structure,
        read_text_bounded,
    )

    def refuse(constant: str) -> Any:
        raise ValueError(f"{constant} is not a price (JSON has no NaN or Infinity)")

    name = str(path) if path is not None else "resources/prices.json"
    try:
        if path is None:
            data = read_json("prices.json")
        else:
            text = read_text_bounded(path, MAX_PRICE_LIST_BYTES, "a price list")
            check_structure(text, name)
            data = json.loads(text, parse_constant=refuse)
    except FileReadError as error:
        raise PriceListError(str(error)) from None
    except json.JSONDecodeError as error:
        raise PriceListError(
            f"{name}: not JSON ({error.msg} at line {error.lineno} column {error.colno})"
        ) from None
    except (OSError, ValueError, RecursionError) as error:
        raise PriceListError(f"{name}: cannot read: {error}") from None
    try:
        return PriceList.model_validate(data)
    except ValidationError as error:
        first = error.errors()[0]
        field = ".".join(str(p) for p in first["loc"])
        raise PriceListError(f"{name}: {field}: {first['msg']}") from None


@lru_cache(maxsize=1)
def shipped_price_list() -> PriceList:
    """The shipped ``resources/prices.json`` (read once)."""
    return load_price_list()


def list_price(gpu_id: str, tier: Tier = "on_demand") -> float | None:
    """USD per GPU-hour of ``gpu_id`` in the shipped list: its cheapest offer of ``tier``
    (the ranking's rule), or None when the list has none (a custom or unpriced GPU)."""
    offer = shipped_price_list().best_offer(gpu_id, tier)
    return None if offer is None else offer.usd_per_gpu_hour
