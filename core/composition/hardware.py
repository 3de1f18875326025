"""The cheapest hardware for a run: every GPU kind × GPU counts, each with its best layout.

For the scenario's model, training setup, tokens and deadline, :func:`rank_hardware` tries
every GPU of the catalog (plus the scenario's own GPU when it is custom, plus any the
caller adds) at a bounded set of GPU counts, takes the fastest layout that fits from the
layout search (:func:`~llm_planner.core.composition.search.search`, the modeled step time
of :mod:`~llm_planner.core.sections.parallelism`), and prices it with the price list
(``resources/prices.json``, :func:`load_price_list`) or the scenario's own overrides.

Time = tokens ÷ the layout's tokens/s (failure-free, as ``compute_seconds``), divided by
the goodput at that GPU count (Daly 2006, :func:`~llm_planner.core.sections.failures.
estimate_failures`, the scenario's failure inputs), as the report's wall time;
GPU-hours = N × wall time ÷ 3600; cost = GPU-hours × price per GPU-hour
(Transformer Math 101's t = C/τ, cost = GPU-hours × price).

**The GPU counts are bounded** so the ranking stays fast (each search is a few ms): per
GPU kind, the powers of two from the fewest GPUs one instance fits on
(:func:`~llm_planner.core.composition.search.min_gpus_per_instance`) up to ``max_gpus``
(default :data:`DEFAULT_MAX_GPUS`), at most ``max_counts`` of them (default
:data:`DEFAULT_MAX_COUNTS`), plus the scenario's own GPU count for its own GPU. Beyond the
global batch the batch grows to one sequence per GPU (as ``smallest_deployment`` does).
"""

from __future__ import annotations

import datetime as dt
import math
import time
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from llm_planner.core.composition.scenario import Scenario
from llm_planner.core.composition.search import (
    SearchResult,
    SearchRow,
    min_gpus_per_instance,
    search_counts,
)
from llm_planner.core.primitives.figures import Figure
from llm_planner.core.primitives.gpus import GPU, gpu_catalog
from llm_planner.core.primitives.limits import MIN_PRICE_USD_PER_GPU_HOUR, bounds
from llm_planner.core.primitives.resources import read_json
from llm_planner.core.sections.failures import estimate_failures

Tier = Literal["on_demand", "reserved"]
Objective = Literal["cost", "time", "gpu_hours"]
OBJECTIVES: tuple[Objective, ...] = ("cost", "time", "gpu_hours")
TIERS: tuple[Tier, ...] = ("on_demand", "reserved")

STALE_AFTER_DAYS = 365
"""A price list (or one price) older than this, by today's date, is flagged out of date."""

DEFAULT_MAX_GPUS = 16_384
"""Largest GPU count the ranking tries by default (16k GPUs: the Llama 3 405B cluster)."""

DEFAULT_MAX_COUNTS = 12
"""Most GPU counts tried per GPU kind by default (powers of two from one instance)."""

SECONDS_PER_HOUR = 3600.0


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


class Price(BaseModel):
    """The price a ranking row uses and where it came from."""

    model_config = ConfigDict(frozen=True)

    usd_per_gpu_hour: float
    source: str
    stale: bool = False


def price_for(
    gpu: GPU, scenario: Scenario, prices: PriceList, tier: Tier, today: dt.date
) -> Price | None:
    """The price of one GPU-hour of ``gpu``: in order, the scenario's ``price_overrides``,
    the scenario's own price (``compute.price_usd_per_gpu_hour``) for its own GPU when that
    GPU is custom (a custom GPU has no list price), then the cheapest list offer of ``tier``.
    None when none applies."""
    if gpu.id in scenario.price_overrides:
        return Price(
            usd_per_gpu_hour=scenario.price_overrides[gpu.id], source="scenario price override"
        )
    offer = prices.best_offer(gpu.id, tier)
    if offer is None and gpu.custom and gpu.id == scenario.gpu.id:
        return Price(
            usd_per_gpu_hour=scenario.compute.price_usd_per_gpu_hour, source="scenario price"
        )
    if offer is None:
        return None
    return Price(
        usd_per_gpu_hour=offer.usd_per_gpu_hour,
        source=f"{offer.provider}, {offer.tier.replace('_', '-')}, {offer.date.isoformat()}",
        stale=offer.is_stale(today),
    )


# --------------------------------------------------------------------- the ranking

Status = Literal["ok", "misses deadline", "no price", "does not fit"]


class HardwareOption(BaseModel):
    """One GPU kind at one GPU count with its best layout, time and cost."""

    model_config = ConfigDict(frozen=True)

    rank: int
    gpu_id: str
    gpu_name: str
    num_gpus: int
    status: Status
    fits: bool
    meets_deadline: bool | None = Field(description="None when the scenario has no deadline")
    layout: SearchRow | None
    layout_label: str
    tokens_per_s: float | None
    compute_seconds: float | None = Field(description="tokens ÷ tokens/s, no failures")
    time_seconds: float | None = Field(description="wall time: compute time ÷ goodput")
    gpu_hours: float | None
    price_usd_per_gpu_hour: float | None
    price_source: str
    price_stale: bool
    cost_usd: float | None
    pareto: bool = Field(
        default=False, description="no other priced option is both cheaper and faster"
    )


class HardwareRanking(BaseModel):
    """The ranked options and what was tried."""

    model_config = ConfigDict(frozen=True)

    objective: Objective
    tier: Tier
    tokens: float
    deadline_seconds: float | None
    max_gpus: int
    max_counts: int
    gpu_counts_rule: str
    price_list_updated: dt.date
    price_list_warning: str
    seconds: float
    options: list[HardwareOption]

    def cheapest(self) -> HardwareOption | None:
        """The first option that fits, is priced and meets the deadline (if any)."""
        return next((o for o in self.options if o.status == "ok"), None)

    def figures(self) -> list[Figure]:
        best = self.cheapest()
        return [
            Figure(key="options", label="Options tried", value=len(self.options), unit="count"),
            Figure(
                key="best",
                label=f"Best by {self.objective.replace('_', '-')}",
                value=f"{best.num_gpus} × {best.gpu_name}" if best else "none",
                unit="text",
            ),
            Figure(
                key="best_cost_usd",
                label="Its cost",
                value=best.cost_usd if best else None,
                unit="usd",
                formula="N × wall time ÷ 3600 × price",
                source="EleutherAI, Transformer Math 101",
            ),
            Figure(
                key="best_time_seconds",
                label="Its time",
                value=best.time_seconds if best else None,
                unit="seconds",
                formula="tokens ÷ searched tokens/s ÷ goodput",
            ),
            Figure(key="seconds", label="Ranking time", value=self.seconds, unit="seconds"),
        ]


def candidate_gpus(scenario: Scenario, extra: list[GPU] | None = None) -> list[GPU]:
    """The catalog, then the scenario's GPU if it is not in the catalog, then ``extra``."""
    gpus = dict(gpu_catalog())
    if scenario.gpu.id not in gpus or scenario.gpu.custom:
        gpus[scenario.gpu.id] = scenario.gpu
    for gpu in extra or []:
        gpus[gpu.id] = gpu
    return list(gpus.values())


def gpu_counts(first: int, max_gpus: int, max_counts: int, also: int | None = None) -> list[int]:
    """``first``, 2·first, 4·first … up to ``max_gpus``, at most ``max_counts`` of them,
    with ``also`` added (the scenario's own count) when it is at least ``first``."""
    counts: list[int] = []
    n = first
    while n <= max_gpus and len(counts) < max_counts:
        counts.append(n)
        n *= 2
    if also is not None and also >= first and also not in counts:
        counts.append(also)
    return sorted(counts)


def _layout_label(row: SearchRow) -> str:
    parts = [f"dp{row.dp}", f"tp{row.tp}", f"pp{row.pp}"]
    if row.ep > 1:
        parts.append(f"ep{row.ep}")
    parts.append(f"ZeRO-{row.zero_stage}")
    parts.append(f"b{row.micro_batch}")
    parts.append(f"rc:{row.recompute}")
    return " ".join(parts)


def _searched(scenario: Scenario, gpu: GPU, counts: list[int]) -> list[SearchResult]:
    """The best layout at each count (:func:`.search.search_counts`: the global batch
    raised to the count where it is smaller; the counts priced together)."""
    return search_counts(
        scenario.model.architecture,
        gpu,
        counts,
        scenario.parallelism,
        scenario.training,
        params_override=scenario.model.params_override,
        top=1,
        compute_dtype=scenario.compute.compute_dtype,
        include_attention_flops=scenario.compute.include_attention_flops,
    )


def _evaluate(
    scenario: Scenario, gpu: GPU, n: int, price: Price | None, result: SearchResult
) -> dict[str, Any]:
    """One option's figures (before ranking), from its count's search ``result``."""
    row = result.rows[0] if result.rows else None
    tokens = scenario.compute.tokens
    deadline = scenario.compute.deadline_seconds
    rate = row.tokens_per_s if row else None
    compute_s = tokens / rate if rate else None
    wall = (
        estimate_failures(compute_s, n, scenario.compute.failures).wall_seconds
        if compute_s is not None
        else None
    )
    hours = n * wall / SECONDS_PER_HOUR if wall is not None else None
    cost = hours * price.usd_per_gpu_hour if hours is not None and price is not None else None
    meets = None if deadline is None else (wall is not None and wall <= deadline)
    status: Status
    if row is None or wall is None:
        status = "does not fit"
    elif price is None:
        status = "no price"
    elif meets is False:
        status = "misses deadline"
    else:
        status = "ok"
    return {
        "gpu_id": gpu.id,
        "gpu_name": gpu.name,
        "num_gpus": n,
        "status": status,
        "fits": row is not None,
        "meets_deadline": meets,
        "layout": row,
        "layout_label": _layout_label(row) if row else "no layout fits",
        "tokens_per_s": rate,
        "compute_seconds": compute_s,
        "time_seconds": wall,
        "gpu_hours": hours,
        "price_usd_per_gpu_hour": price.usd_per_gpu_hour if price else None,
        "price_source": price.source
        if price
        else "no price: add one to prices.json or the scenario",
        "price_stale": price.stale if price else False,
        "cost_usd": cost,
    }


_STATUS_ORDER = {"ok": 0, "misses deadline": 1, "no price": 2, "does not fit": 3}
_OBJECTIVE_KEY = {"cost": "cost_usd", "time": "time_seconds", "gpu_hours": "gpu_hours"}


def pareto_front(points: list[tuple[float, float]]) -> list[bool]:
    """For each (time, cost) point, whether no other point is at least as good on both and
    strictly better on one (the non-dominated set: the options worth considering)."""
    flags = []
    for i, (t, c) in enumerate(points):
        dominated = any(
            (t2 <= t and c2 <= c) and (t2 < t or c2 < c)
            for j, (t2, c2) in enumerate(points)
            if j != i
        )
        flags.append(not dominated)
    return flags


def rank_hardware(
    scenario: Scenario,
    *,
    objective: Objective = "cost",
    tier: Tier = "on_demand",
    prices: PriceList | None = None,
    gpus: list[GPU] | None = None,
    extra_gpus: list[GPU] | None = None,
    max_gpus: int = DEFAULT_MAX_GPUS,
    max_counts: int = DEFAULT_MAX_COUNTS,
    today: dt.date | None = None,
) -> HardwareRanking:
    """Every GPU kind × bounded GPU counts, best layout each, ranked by ``objective``.

    Order: options that fit, are priced and meet the deadline (all of them when there is
    none) by the objective, then those that miss the deadline (by the objective), then
    those with no price (by time), then those where no layout fits. ``gpus`` replaces the
    candidate list (:func:`candidate_gpus`: the catalog, the scenario's custom GPU and
    ``extra_gpus``). ``today`` dates the staleness check (default: the system date).
    """
    start = time.perf_counter()
    today = today or dt.date.today()
    prices = prices or load_price_list()
    kinds = gpus if gpus is not None else candidate_gpus(scenario, extra_gpus)
    raw: list[dict[str, Any]] = []
    for gpu in kinds:
        price = price_for(gpu, scenario, prices, tier, today)
        first = min_gpus_per_instance(
            scenario.model.architecture,
            gpu,
            scenario.parallelism,
            scenario.training,
            params_override=scenario.model.params_override,
            max_gpus=max_gpus,
        )
        if first is None:
            raw.append(_evaluate_none(gpu, price, scenario.compute.deadline_seconds))
            continue
        own = scenario.num_gpus if gpu.id == scenario.gpu.id else None
        counts = gpu_counts(first, max_gpus, max_counts, own if own and own <= max_gpus else None)
        for n, result in zip(counts, _searched(scenario, gpu, counts), strict=True):
            raw.append(_evaluate(scenario, gpu, n, price, result))
    priced = [r for r in raw if r["cost_usd"] is not None and r["time_seconds"] is not None]
    front = pareto_front([(r["time_seconds"], r["cost_usd"]) for r in priced])
    for r, flag in zip(priced, front, strict=True):
        r["pareto"] = flag
    key = _OBJECTIVE_KEY[objective]

    def order(r: dict[str, Any]) -> tuple[int, float, float]:
        value = r[key] if r["status"] != "no price" else r["time_seconds"]
        return (_STATUS_ORDER[r["status"]], math.inf if value is None else value, r["num_gpus"])

    raw.sort(key=order)
    options = [HardwareOption(rank=i + 1, **r) for i, r in enumerate(raw)]
    return HardwareRanking(
        objective=objective,
        tier=tier,
        tokens=scenario.compute.tokens,
        deadline_seconds=scenario.compute.deadline_seconds,
        max_gpus=max_gpus,
        max_counts=max_counts,
        gpu_counts_rule=(
            f"per GPU kind: powers of two from the fewest GPUs one instance fits on, up to "
            f"{max_gpus:,} GPUs, at most {max_counts} counts, plus the scenario's own count"
        ),
        price_list_updated=prices.updated,
        price_list_warning=prices.staleness_message(today),
        seconds=time.perf_counter() - start,
        options=options,
    )


def _evaluate_none(gpu: GPU, price: Price | None, deadline: float | None) -> dict[str, Any]:
    """A GPU kind on which no instance fits up to the largest count tried."""
    return {
        "gpu_id": gpu.id,
        "gpu_name": gpu.name,
        "num_gpus": 0,
        "status": "does not fit",
        "fits": False,
        "meets_deadline": None if deadline is None else False,
        "layout": None,
        "layout_label": "no layout fits up to the largest count tried",
        "tokens_per_s": None,
        "compute_seconds": None,
        "time_seconds": None,
        "gpu_hours": None,
        "price_usd_per_gpu_hour": price.usd_per_gpu_hour if price else None,
        "price_source": price.source if price else "no price",
        "price_stale": price.stale if price else False,
        "cost_usd": None,
    }
