"""The price list: what one GPU-hour of each GPU kind costs, where it was read, and when.

``resources/prices.json`` lists offers (provider, tier, USD per GPU-hour, the page and day
it was read from). The hardware ranking prices every GPU kind with it, and a scenario's
price follows its GPU from it unless the user set one (``compute.price_follows_gpu``).
"""

from __future__ import annotations

import datetime as dt
from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

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
    usd_per_gpu_hour: float = Field(ge=0)
    date: dt.date = Field(description="day the price was read from (or published on) the source")
    source: str = Field(min_length=1, description="the page the price is listed on")
    via: str = Field(default="", description="the copy it was transcribed from, if not live")
    notes: str = ""

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


def load_price_list(path: Path | None = None) -> PriceList:
    """The shipped ``resources/prices.json``, or the user's edited copy at ``path``.

    Raises :class:`PriceListError` naming the file and the bad field.
    """
    import json

    name = str(path) if path is not None else "resources/prices.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8")) if path else read_json("prices.json")
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
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
