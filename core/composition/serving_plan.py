"""The cheapest GPU and replica size that serves N concurrent users at a latency target
(issue 30, next to the training-side hardware ranking of :mod:`.hardware`).

For each candidate GPU (the catalog and the scenario's own) and replica size (1, 2, 4, 8
GPUs), the serving model (:mod:`llm_planner.core.sections.serving`) on the scenario's
engine and workload gives the most concurrent requests one replica serves with time per
output token ≤ the target (and time to first token ≤ its target, when given): TPOT grows
with the concurrency, so a bisection over 1 … the largest concurrency KV memory allows
finds it. Replicas = ⌈users ÷ that⌉; cost per hour = replicas × GPUs × the GPU's price
(:func:`.hardware.price_for`: the scenario's overrides, then the price list). Rows are
ranked by cost per hour; those that cannot meet the target, fit, or be priced follow,
each saying why.
"""

from __future__ import annotations

import datetime as dt
import math
from typing import Literal

from pydantic import BaseModel, ConfigDict

from llm_planner.core.composition.hardware import (
    PriceList,
    Tier,
    candidate_gpus,
    load_price_list,
    price_for,
)
from llm_planner.core.composition.scenario import Scenario
from llm_planner.core.primitives import units
from llm_planner.core.primitives.architecture import count_parameters
from llm_planner.core.primitives.gpus import GPU
from llm_planner.core.sections.inference import serving_deployment
from llm_planner.core.sections.serving import Deployment, max_concurrency, operate

REPLICA_SIZES = (1, 2, 4, 8)
"""GPUs per replica tried (tensor parallel inside one node)."""

MAX_USERS = 1_000_000_000
"""The most concurrent users a plan is asked about (a bound on the input: a billion users
is beyond any deployment the catalog prices)."""

MAX_LATENCY_SECONDS = 3600.0
"""The longest latency target taken (an hour per token is no serving target)."""


def parse_users(text: str) -> int:
    """Concurrent users as typed on both faces: a whole number, decimal ``k`` (``2k`` =
    2,000), 1 to :data:`MAX_USERS`; ValueError saying why."""
    value = units.parse_int_count(text, "users")
    if not 1 <= value <= MAX_USERS:
        raise ValueError(f"users: {text.strip()!r} must be 1 to {MAX_USERS:,}")
    return value


def parse_latency(text: str, what: str = "latency") -> float:
    """A latency target as typed on both faces: ``50ms``, ``2s`` or a bare number of
    seconds, above 0 and at most an hour; ValueError saying why."""
    value = units.parse_duration(text, what)
    if not 0 < value <= MAX_LATENCY_SECONDS:
        raise ValueError(f"{what}: {text.strip()!r} must be above 0 and at most 1 h")
    return value


ServingStatus = Literal["ok", "misses latency", "does not fit", "no price"]


class ServingOption(BaseModel):
    """One GPU kind and replica size serving the users."""

    model_config = ConfigDict(frozen=True)

    gpu_id: str
    gpu_name: str
    gpus_per_replica: int
    status: ServingStatus
    concurrency_per_replica: int = 0
    """Most requests one replica serves within the latency targets."""
    replicas: int = 0
    total_gpus: int = 0
    tpot_seconds: float | None = None
    ttft_seconds: float | None = None
    usd_per_hour: float | None = None
    usd_per_million_output_tokens: float | None = None
    price_source: str = ""


class ServingPlan(BaseModel):
    """Every option, cheapest first, and the cheapest that meets the targets."""

    model_config = ConfigDict(frozen=True)

    users: int
    tpot_target_seconds: float
    ttft_target_seconds: float | None
    engine: str
    prompt_tokens: int
    output_tokens: int
    options: list[ServingOption]
    best: ServingOption | None


def concurrency_within(
    d: Deployment,
    prompt: int,
    output: int,
    tpot_target: float,
    ttft_target: float | None,
) -> tuple[int, int]:
    """(most requests one replica serves within the targets, 0 if none; the largest KV
    memory and the engine allow). TPOT and TTFT grow with the concurrency (more rows per
    step, more prompts folded in), so the largest concurrency within them is found by
    bisection."""
    largest, _ = max_concurrency(d, prompt, output)
    if largest < 1:
        return 0, 0

    def meets(c: int) -> bool:
        op = operate(d, c, prompt, output, largest)
        return op.tpot <= tpot_target and (ttft_target is None or op.ttft <= ttft_target)

    if not meets(1):
        return 0, largest
    low, high = 1, largest
    while low < high:
        middle = (low + high + 1) // 2
        if meets(middle):
            low = middle
        else:
            high = middle - 1
    return low, largest


def _option(
    scenario: Scenario,
    gpu: GPU,
    n: int,
    users: int,
    *,
    targets: tuple[float, float | None],
    price: tuple[float, str] | None,
) -> ServingOption:
    arch = scenario.model.architecture
    counts = count_parameters(arch)
    total = scenario.model.params_override or counts.total
    active = scenario.model.params_override or counts.active
    inputs = scenario.inference.model_copy(update={"num_gpus": n, "batch_max": False})
    d = serving_deployment(arch, total, active, gpu, inputs)
    prompt, output = inputs.prompt_tokens, inputs.output_tokens
    concurrency, largest = concurrency_within(d, prompt, output, *targets)
    if largest < 1:
        return ServingOption(
            gpu_id=gpu.id, gpu_name=gpu.name, gpus_per_replica=n, status="does not fit"
        )
    op = operate(d, max(1, concurrency), prompt, output, largest)
    if concurrency < 1:
        return ServingOption(
            gpu_id=gpu.id,
            gpu_name=gpu.name,
            gpus_per_replica=n,
            status="misses latency",
            tpot_seconds=op.tpot,
            ttft_seconds=op.ttft,
        )
    replicas = math.ceil(users / concurrency)
    usd_per_hour = None if price is None else replicas * n * price[0]
    tokens_per_s = min(users, replicas * concurrency) / op.tpot  # a token per user per TPOT
    return ServingOption(
        gpu_id=gpu.id,
        gpu_name=gpu.name,
        gpus_per_replica=n,
        status="no price" if price is None else "ok",
        concurrency_per_replica=concurrency,
        replicas=replicas,
        total_gpus=replicas * n,
        tpot_seconds=op.tpot,
        ttft_seconds=op.ttft,
        usd_per_hour=usd_per_hour,
        usd_per_million_output_tokens=(
            None if usd_per_hour is None else usd_per_hour / 3600.0 / tokens_per_s * 1e6
        ),
        price_source="" if price is None else price[1],
    )


def plan_serving(
    scenario: Scenario,
    users: int,
    tpot_target_seconds: float,
    *,
    ttft_target_seconds: float | None = None,
    tier: Tier = "on_demand",
    prices: PriceList | None = None,
    gpus: list[GPU] | None = None,
    today: dt.date | None = None,
) -> ServingPlan:
    """The cheapest GPU kind and replica size serving ``users`` concurrent users of the
    scenario's workload (``inference.prompt_tokens``, ``output_tokens``, ``engine``) with
    time per output token ≤ ``tpot_target_seconds`` (and TTFT ≤ its target, if given)."""
    prices = prices if prices is not None else load_price_list()
    today = today or dt.date.today()
    targets = (tpot_target_seconds, ttft_target_seconds)
    options = []
    for gpu in gpus if gpus is not None else candidate_gpus(scenario):
        found = price_for(gpu, scenario, prices, tier, today)
        price = None if found is None else (found.usd_per_gpu_hour, found.source)
        for n in REPLICA_SIZES:
            options.append(_option(scenario, gpu, n, users, targets=targets, price=price))
    order = {"ok": 0, "no price": 1, "misses latency": 2, "does not fit": 3}
    options.sort(
        key=lambda o: (order[o.status], o.usd_per_hour or math.inf, o.total_gpus, o.gpu_id)
    )
    best = options[0] if options and options[0].status == "ok" else None
    return ServingPlan(
        users=users,
        tpot_target_seconds=tpot_target_seconds,
        ttft_target_seconds=ttft_target_seconds,
        engine=scenario.inference.engine,
        prompt_tokens=scenario.inference.prompt_tokens,
        output_tokens=scenario.inference.output_tokens,
        options=options,
        best=best,
    )
