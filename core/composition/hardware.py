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
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from llm_planner.core.composition.calibration import calibrate_scenario
from llm_planner.core.composition.scenario import Scenario
from llm_planner.core.composition.search import SearchRow, min_gpus_per_instance, search
from llm_planner.core.primitives.figures import Figure
from llm_planner.core.primitives.gpus import GPU, gpu_catalog
from llm_planner.core.primitives.prices import (
    STALE_AFTER_DAYS,
    TIERS,
    PriceList,
    PriceListError,
    PriceOffer,
    Tier,
    load_price_list,
)
from llm_planner.core.sections.failures import estimate_failures

__all__ = [
    "OBJECTIVES",
    "STALE_AFTER_DAYS",
    "TIERS",
    "HardwareOption",
    "HardwareRanking",
    "Price",
    "PriceList",
    "PriceListError",
    "PriceOffer",
    "Tier",
    "load_price_list",
    "price_for",
    "rank_hardware",
]
"""The ranking, and the price list it reads (defined in :mod:`.primitives.prices`)."""

Objective = Literal["cost", "time", "gpu_hours"]
OBJECTIVES: tuple[Objective, ...] = ("cost", "time", "gpu_hours")

DEFAULT_MAX_GPUS = 16_384
"""Largest GPU count the ranking tries by default (16k GPUs: the Llama 3 405B cluster)."""

DEFAULT_MAX_COUNTS = 12
"""Most GPU counts tried per GPU kind by default (powers of two from one instance)."""

SECONDS_PER_HOUR = 3600.0


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
    the scenario's own price for its own GPU (the price the window shows for it: the user's,
    or the list's when it follows the GPU; a custom GPU has no list price), then the
    cheapest list offer of ``tier``. None when none applies."""
    if gpu.id in scenario.price_overrides:
        return Price(
            usd_per_gpu_hour=scenario.price_overrides[gpu.id], source="scenario price override"
        )
    offer = prices.best_offer(gpu.id, tier)
    own = gpu.id == scenario.gpu.id
    if own and (gpu.custom or not scenario.compute.price_follows_gpu or offer is None):
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

Status = Literal[
    "ok",
    "misses deadline",
    "beyond horizon",
    "no datacenter interconnect",
    "no price",
    "does not fit",
]

DEFAULT_HORIZON_SECONDS = 90 * 86_400.0
"""With no deadline, options are ranked against this horizon: 90 days, a quarter (the term
of a short reserved-capacity contract), longer than Llama 3 405B's 54-day pre-training
window (Dubey et al. 2024, arXiv:2407.21783, section 3.3.4). An option slower than it is
"beyond horizon" and ranked after every option within it; a deadline replaces it."""

CONSUMER_GPU_MARKERS = ("GeForce",)
"""Names of GPUs sold without a datacenter interconnect: GeForce cards have no GPUDirect
RDMA (NVIDIA, "GPUDirect RDMA" documentation: available on Tesla/datacenter and Quadro
GPUs) and their driver licence excludes datacenter deployment (NVIDIA GeForce software
licence, "No Datacenter Deployment"), so no provider rents them as a multi-node cluster."""


def datacenter_interconnect(gpu: GPU) -> bool:
    """Whether ``gpu`` can be networked across nodes as a training cluster (GPUDirect RDMA,
    datacenter deployment): not a consumer card (:data:`CONSUMER_GPU_MARKERS`)."""
    return not any(marker in gpu.name for marker in CONSUMER_GPU_MARKERS)


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
    is_scenario: bool = Field(
        default=False,
        description="the scenario's own plan (its layout): the window's time and cost",
    )
    flags: list[str] = Field(
        default_factory=list,
        description="why the option is ranked after those that are ok (beyond the horizon, "
        "no datacenter interconnect at cluster scale)",
    )


class HardwareRanking(BaseModel):
    """The ranked options and what was tried."""

    model_config = ConfigDict(frozen=True)

    objective: Objective
    tier: Tier
    tokens: float
    deadline_seconds: float | None
    horizon_seconds: float = Field(
        description="time the options are judged against: the deadline, or the default horizon"
    )
    horizon_rule: str = Field(description="the horizon in words, shown with the ranking")
    max_gpus: int
    max_counts: int
    gpu_counts_rule: str
    price_list_updated: dt.date
    price_list_warning: str
    seconds: float
    options: list[HardwareOption]

    def cheapest(self) -> HardwareOption | None:
        """The first option that fits, is priced, meets the deadline (or the default
        horizon) and can be rented as a cluster."""
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


def _status(
    scenario: Scenario, gpu: GPU, n: int, wall: float | None, *, fits: bool, priced: bool
) -> tuple[Status, bool | None, list[str]]:
    """(status, meets the deadline, flags) of ``n`` × ``gpu`` taking ``wall`` seconds: does
    not fit, no price, no datacenter interconnect (a consumer GPU on more than one node),
    misses the deadline, beyond the default horizon (no deadline), else ok."""
    deadline = scenario.compute.deadline_seconds
    meets = None if deadline is None else (wall is not None and wall <= deadline)
    flags: list[str] = []
    if deadline is None and wall is not None and wall > DEFAULT_HORIZON_SECONDS:
        flags.append(f"longer than the {DEFAULT_HORIZON_SECONDS / 86_400:.0f}-day horizon")
    per_node = scenario.parallelism.gpus_per_node
    consumer_cluster = n > per_node and not datacenter_interconnect(gpu)
    if consumer_cluster:
        flags.append(
            f"{gpu.name} has no datacenter interconnect (no GPUDirect RDMA, not licensed "
            f"for datacenters): {n:,} GPUs are {-(-n // per_node):,} nodes"
        )
    status: Status
    if not fits or wall is None:
        status = "does not fit"
    elif not priced:
        status = "no price"
    elif consumer_cluster:
        status = "no datacenter interconnect"
    elif meets is False:
        status = "misses deadline"
    elif flags:
        status = "beyond horizon"
    else:
        status = "ok"
    return status, meets, flags


def _evaluate_scenario(scenario: Scenario, price: Price | None) -> dict[str, Any]:
    """The scenario's own plan (its layout, calibration and price) as one option: the
    figures the window shows for it, beside the best layout the search finds at that count."""
    from llm_planner.core.composition.estimate import estimate

    report = estimate(scenario, suggest=False)
    c, gpu, n = report.compute, scenario.gpu, scenario.num_gpus
    status, meets, flags = _status(
        scenario, gpu, n, c.wall_seconds, fits=report.training.fits, priced=price is not None
    )
    return {
        "flags": flags,
        "gpu_id": gpu.id,
        "gpu_name": gpu.name,
        "num_gpus": n,
        "status": status,
        "fits": report.training.fits,
        "meets_deadline": meets,
        "layout": None,
        "layout_label": f"this scenario: {report.parallelism.layout_label}",
        "is_scenario": True,
        "tokens_per_s": c.tokens_per_s,
        "compute_seconds": c.compute_seconds,
        "time_seconds": c.wall_seconds,
        "gpu_hours": c.gpu_hours,
        "price_usd_per_gpu_hour": price.usd_per_gpu_hour if price else None,
        "price_source": price.source if price else "no price",
        "price_stale": price.stale if price else False,
        # the same GPU-hours at the price every row of this GPU uses (the scenario's own
        # price unless an override names this GPU): the window's cost when none does
        "cost_usd": c.gpu_hours * price.usd_per_gpu_hour
        if c.gpu_hours is not None and price is not None
        else None,
    }


def _evaluate(scenario: Scenario, gpu: GPU, n: int, price: Price | None) -> dict[str, Any]:
    """One option's figures (before ranking); its status: does not fit, no price, misses
    the deadline, beyond the default horizon (no deadline), no datacenter interconnect
    (a consumer GPU on more than one node), else ok."""
    inputs = scenario.parallelism
    batch = inputs.global_batch if n <= inputs.global_batch else n
    result = search(
        scenario.model.architecture,
        gpu,
        n,
        inputs.model_copy(update={"global_batch": batch}),
        scenario.training,
        params_override=scenario.model.params_override,
        top=1,
        compute_dtype=scenario.compute.compute_dtype,
        include_attention_flops=scenario.compute.include_attention_flops,
    )
    row = result.rows[0] if result.rows else None
    tokens = scenario.compute.tokens
    rate = row.tokens_per_s if row else None
    compute_s = tokens / rate if rate else None
    wall = (
        estimate_failures(compute_s, n, scenario.compute.failures).wall_seconds
        if compute_s is not None
        else None
    )
    hours = n * wall / SECONDS_PER_HOUR if wall is not None else None
    cost = hours * price.usd_per_gpu_hour if hours is not None and price is not None else None
    status, meets, flags = _status(scenario, gpu, n, wall, fits=row is not None, priced=bool(price))
    return {
        "flags": flags,
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


_STATUS_ORDER = {
    "ok": 0,
    "misses deadline": 1,
    "beyond horizon": 1,
    "no datacenter interconnect": 2,
    "no price": 3,
    "does not fit": 4,
}
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

    Order: options that fit, are priced, meet the deadline (with none: finish within
    :data:`DEFAULT_HORIZON_SECONDS`) and can be rented as a cluster, by the objective; then
    those that miss the deadline or horizon (by the objective); then consumer GPUs at
    cluster scale (:func:`datacenter_interconnect`); then those with no price (by time),
    then those where no layout fits. ``gpus`` replaces the
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
        # the model calibrated by this GPU's measured runs of this model (runs of another GPU
        # are set aside: .calibration.belongs_to), as the window's estimate is
        on_gpu = calibrate_scenario(scenario.model_copy(update={"gpu": gpu}))[0]
        first = min_gpus_per_instance(
            scenario.model.architecture,
            gpu,
            on_gpu.parallelism,
            on_gpu.training,
            params_override=scenario.model.params_override,
            max_gpus=max_gpus,
        )
        if first is None:
            raw.append(_evaluate_none(gpu, price, scenario.compute.deadline_seconds))
            continue
        own = scenario.num_gpus if gpu.id == scenario.gpu.id else None
        for n in gpu_counts(first, max_gpus, max_counts, own if own and own <= max_gpus else None):
            raw.append(_evaluate(on_gpu, gpu, n, price))
        if own is not None:
            raw.append(_evaluate_scenario(scenario, price))
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
        horizon_seconds=scenario.compute.deadline_seconds or DEFAULT_HORIZON_SECONDS,
        horizon_rule=(
            "the deadline"
            if scenario.compute.deadline_seconds
            else f"no deadline: options are judged against a default horizon of "
            f"{DEFAULT_HORIZON_SECONDS / 86_400:.0f} days (set a deadline to change it)"
        ),
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
