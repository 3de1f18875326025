"""Compare, hardware ranking, sensitivity and the price list, on hand-worked cases.

The hand case: P = 1e9 (``--params`` override), assumed MFU 50%, H100 SXM (bf16 dense
peak 989.4 TFLOP/s, NVIDIA H100 datasheet), no failures. Transformer Math 101:
t = 6·P·D ÷ (N · peak · MFU); GPU-hours = N·t/3600; cost = GPU-hours × price.
"""

from __future__ import annotations

import datetime as dt
import json
import math
from pathlib import Path

import pytest

from llm_planner.core.composition.compare import compare, duplicate_as_variant, input_diff
from llm_planner.core.composition.hardware import (
    PriceList,
    PriceListError,
    gpu_counts,
    load_price_list,
    pareto_front,
    rank_hardware,
)
from llm_planner.core.composition.scenario import ModelChoice, Scenario, default_scenario
from llm_planner.core.composition.sensitivity import sensitivity
from llm_planner.core.primitives.gpus import custom_gpu, get_gpu
from llm_planner.core.primitives.shapes import propose_architecture

H100_BF16 = 989.4e12  # NVIDIA H100 SXM5 datasheet: 1,979 TFLOPS bf16 with sparsity / 2


def hand_scenario(tokens: float = 1e12, gpus: int = 8, price: float = 2.0) -> Scenario:
    """P = 1e9 exactly (``--params 1B``: shapes proposed for it), assumed MFU 0.5, no
    failures, the user's price."""
    base = default_scenario()
    return base.model_copy(
        update={
            "name": f"hand {tokens:g} {gpus}",
            "num_gpus": gpus,
            "gpu": get_gpu("h100-sxm"),
            "model": ModelChoice(
                preset=None,
                architecture=propose_architecture(1e9).architecture,
                params_override=1e9,
            ),
            "compute": base.compute.model_copy(
                update={
                    "tokens": tokens,
                    "throughput_mode": "mfu",
                    "mfu": 0.5,
                    "price_usd_per_gpu_hour": price,
                    "price_follows_gpu": False,
                    "failures": base.compute.failures.model_copy(
                        update={"gpu_failures_per_hour": 0.0}
                    ),
                }
            ),
        }
    )


# ------------------------------------------------------------------ compare


def test_two_scenarios_difference_by_hand() -> None:
    a = hand_scenario(tokens=1e12, gpus=8, price=2.0)
    b = hand_scenario(tokens=2e12, gpus=16, price=3.0)
    c = compare([a, b])
    # A: t = 6·1e9·1e12 / (8 · 989.4e12 · 0.5) = 6e21 / 3.9576e15 = 1,516,070.3 s
    t_a = 6e21 / (8 * H100_BF16 * 0.5)
    assert t_a == pytest.approx(1_516_070.3, rel=1e-7)
    # B: twice the tokens on twice the GPUs: the same time
    t_b = 12e21 / (16 * H100_BF16 * 0.5)
    assert t_b == pytest.approx(t_a)
    cost_a = 8 * t_a / 3600 * 2.0  # 6,737.9 $
    cost_b = 16 * t_b / 3600 * 3.0  # 20,213.6 $ = 3 × cost_a
    time_row = c.row("wall_seconds")
    assert time_row.values[0] == pytest.approx(t_a, rel=1e-9)
    assert time_row.values[1] == pytest.approx(t_b, rel=1e-9)
    assert time_row.differs == [False, False]
    cost = c.row("cost_usd")
    assert cost.values == pytest.approx([cost_a, cost_b], rel=1e-9)
    assert cost.differences[1] == pytest.approx(cost_b - cost_a, rel=1e-9)
    assert cost.ratios[1] == pytest.approx(2.0, rel=1e-9)  # 3 × → +200%
    assert cost.differs == [False, True]
    hours = c.row("gpu_hours")
    assert hours.ratios[1] == pytest.approx(1.0, rel=1e-9)  # 2× GPUs, same time
    assert c.row("tokens").differences[1] == pytest.approx(1e12)
    assert c.row("flops_total").values == pytest.approx([6e21, 12e21])
    assert c.row("num_gpus").differences[1] == 8
    assert c.row("mfu").values == pytest.approx([0.5, 0.5])
    # tokens/s: 8 · 989.4e12 · 0.5 / 6e9 = 659,600 tokens/s
    assert c.row("tokens_per_s").values[0] == pytest.approx(659_600.0, rel=1e-9)
    # the input diff: exactly the three fields changed (the name is not an input)
    assert [d.path for d in c.inputs] == [
        "num_gpus",
        "compute.tokens",
        "compute.price_usd_per_gpu_hour",
    ]
    assert c.inputs[0].values == [8, 16]
    # one memory axis: the largest peak or capacity of all
    assert c.memory_axis_bytes == max(max(m.peak_bytes, m.capacity_bytes) for m in c.memory)
    assert c.memory_axis_bytes >= 80e9


def test_compare_needs_two_to_four() -> None:
    a = hand_scenario()
    with pytest.raises(ValueError, match="scenarios: compare takes 2 to 4, got 1"):
        compare([a])
    with pytest.raises(ValueError, match="got 5"):
        compare([a] * 5)


def test_variant_has_same_inputs_and_a_new_name() -> None:
    a = hand_scenario()
    v = duplicate_as_variant(a)
    assert v.name == f"{a.name} (variant)"
    assert input_diff([a, v]) == []


def test_scenario_without_price_overrides_loads() -> None:
    data = json.loads(default_scenario().model_dump_json())
    data.pop("price_overrides")
    assert Scenario.model_validate(data).price_overrides == {}


# ------------------------------------------------------------------ prices


def test_every_price_has_a_source_and_a_date() -> None:
    prices = load_price_list()
    assert prices.offers
    for offer in prices.offers:
        assert offer.source.startswith("https://"), offer
        assert offer.date <= dt.date(2026, 12, 1)
        assert offer.usd_per_gpu_hour > 0
        assert offer.notes


def test_stale_list_and_prices_flagged() -> None:
    prices = PriceList.model_validate(
        {
            "updated": "2025-01-10",
            "offers": [
                {
                    "gpu": "h100-sxm",
                    "provider": "X",
                    "usd_per_gpu_hour": 2,
                    "date": "2024-12-31",
                    "source": "https://example.invalid/a",
                },
                {
                    "gpu": "h200",
                    "provider": "Y",
                    "usd_per_gpu_hour": 3,
                    "date": "2026-06-01",
                    "source": "https://example.invalid/b",
                },
            ],
        }
    )
    today = dt.date(2026, 12, 1)
    assert prices.is_stale(today)  # 690 days
    assert not prices.is_stale(dt.date(2026, 1, 10))  # 365 days: not yet
    assert [o.gpu for o in prices.stale_offers(today)] == ["h100-sxm"]
    message = prices.staleness_message(today)
    assert "2025-01-10" in message
    assert "1 price older than a year (h100-sxm on_demand)" in message


def test_bad_price_file_names_the_field(tmp_path: Path) -> None:
    path = tmp_path / "prices.json"
    path.write_text(json.dumps({"updated": "2026-01-01", "offers": [{"gpu": "x"}]}))
    with pytest.raises(PriceListError, match=r"prices.json: offers\.0\.provider"):
        load_price_list(path)


# ------------------------------------------------------------------ hardware ranking


def test_gpu_counts_are_bounded() -> None:
    assert gpu_counts(4, 64, 12) == [4, 8, 16, 32, 64]
    assert gpu_counts(4, 1 << 20, 3) == [4, 8, 16]
    assert gpu_counts(4, 64, 12, also=24) == [4, 8, 16, 24, 32, 64]
    assert gpu_counts(4, 64, 12, also=2) == [4, 8, 16, 32, 64]


def test_pareto_front_by_hand() -> None:
    # (time, cost): (1, 10) and (2, 5) trade off; (2, 11) is worse than (1, 10) on both
    assert pareto_front([(1, 10), (2, 5), (2, 11), (3, 5)]) == [True, True, False, False]


def test_ranking_cheapest_known() -> None:
    """Two GPUs identical but for the price ($1 vs $2 per GPU-hour): every count of the
    cheaper one costs exactly half, so rank 1 is the cheaper GPU and the cheapest option of
    the dearer one costs twice the first."""
    spec = {"memory_bytes": 80e9, "memory_bandwidth_bytes_per_s": 3.35e12, "bf16_flops": 989.4e12}
    cheap = custom_gpu("Cheap card", **spec)
    dear = custom_gpu("Dear card", **spec)
    scenario = hand_scenario().model_copy(update={"price_overrides": {cheap.id: 1.0, dear.id: 2.0}})
    ranking = rank_hardware(scenario, gpus=[cheap, dear], max_gpus=64, today=dt.date(2026, 12, 1))
    first = ranking.options[0]
    assert first.gpu_id == cheap.id
    assert first.status == "ok"
    dear_best = next(o for o in ranking.options if o.gpu_id == dear.id)
    assert dear_best.num_gpus == first.num_gpus
    assert dear_best.cost_usd == pytest.approx(2 * first.cost_usd, rel=1e-12)
    # cost = N × (tokens ÷ tokens/s) ÷ 3600 × price (no failures: goodput 1)
    assert first.tokens_per_s is not None
    hand = first.num_gpus * (1e12 / first.tokens_per_s) / 3600 * 1.0
    assert first.cost_usd == pytest.approx(hand, rel=1e-12)
    # no deadline: options within the default 90-day horizon first, by cost; then the rest
    # 1e9 params × 6 × 1e12 tokens at 50% of 989.4 TFLOP/s on one GPU: 1.21e7 s = 140 days
    statuses = [o.status for o in ranking.options]
    assert statuses == sorted(statuses, key=lambda s: s != "ok")
    for status in ("ok", "beyond horizon"):
        costs = [o.cost_usd for o in ranking.options if o.status == status]
        assert costs == sorted(costs)
    assert ranking.horizon_seconds == 90 * 86_400
    for option in ranking.options:
        assert (option.status == "beyond horizon") == (option.time_seconds > 90 * 86_400)


def test_ranking_marks_deadline_and_unfit() -> None:
    tiny = custom_gpu(
        "Tiny card", memory_bytes=1e9, memory_bandwidth_bytes_per_s=1e11, bf16_flops=1e14
    )
    h100 = get_gpu("h100-sxm")
    base = hand_scenario().model_copy(update={"price_overrides": {h100.id: 2.0, tiny.id: 0.1}})
    free = rank_hardware(base, gpus=[h100], max_gpus=64)
    times = {o.num_gpus: o.time_seconds for o in free.options}
    deadline = times[16] * 1.0001  # 16 GPUs and more meet it; 8 do not
    scenario = base.model_copy(
        update={"compute": base.compute.model_copy(update={"deadline_seconds": deadline})}
    )
    ranking = rank_hardware(scenario, gpus=[h100, tiny], max_gpus=64)
    by = {(o.gpu_id, o.num_gpus): o for o in ranking.options}
    assert by[("h100-sxm", 8)].status == "misses deadline"
    assert by[("h100-sxm", 16)].status == "ok"
    assert by[("h100-sxm", 16)].meets_deadline is True
    tiny_rows = [o for o in ranking.options if o.gpu_id == tiny.id]
    assert tiny_rows
    assert all(o.status == "does not fit" for o in tiny_rows)
    statuses = [o.status for o in ranking.options]
    order = {"ok": 0, "misses deadline": 1, "no price": 2, "does not fit": 3}
    assert statuses == sorted(statuses, key=order.__getitem__)
    assert ranking.cheapest() is not None
    assert ranking.cheapest().meets_deadline


def test_unpriced_gpu_is_marked() -> None:
    scenario = hand_scenario()
    ranking = rank_hardware(scenario, gpus=[get_gpu("mi300x")], max_gpus=16)
    assert ranking.options
    assert all(o.status == "no price" for o in ranking.options)
    assert all(o.cost_usd is None and o.time_seconds for o in ranking.options)


# ------------------------------------------------------------------ sensitivity


def test_sensitivity_by_hand() -> None:
    """Assumed MFU, no failures: t ∝ D / (N·MFU), cost ∝ D·price / MFU."""
    s = sensitivity(hand_scenario())
    t0 = 6e21 / (8 * H100_BF16 * 0.5)
    c0 = 8 * t0 / 3600 * 2.0
    assert s.base_time_seconds == pytest.approx(t0, rel=1e-9)
    bars = {b.key: b for b in s.bars}
    mfu = bars["compute.mfu"]
    assert (mfu.low_value, mfu.high_value) == pytest.approx((0.4, 0.6))
    assert mfu.time_low_seconds == pytest.approx(t0 / 0.8, rel=1e-9)
    assert mfu.time_high_seconds == pytest.approx(t0 / 1.2, rel=1e-9)
    tokens = bars["compute.tokens"]
    assert tokens.time_low_seconds == pytest.approx(0.8 * t0, rel=1e-9)
    assert tokens.cost_high_usd == pytest.approx(1.2 * c0, rel=1e-9)
    price = bars["compute.price_usd_per_gpu_hour"]
    assert price.time_low_seconds == pytest.approx(t0, rel=1e-9)
    assert price.cost_low_usd == pytest.approx(0.8 * c0, rel=1e-9)
    gpus = bars["num_gpus"]
    assert (gpus.low_value, gpus.high_value) == (4, 16)
    assert gpus.time_high_seconds == pytest.approx(t0 / 2, rel=1e-9)
    assert gpus.cost_high_usd == pytest.approx(c0, rel=1e-9)  # perfect scaling: same cost
    # widest cost swing first: MFU (1/0.8 − 1/1.2 = 0.417·c0) before tokens/price (0.4·c0)
    assert s.bars[0].key == "compute.mfu"
    assert math.isclose(s.bars[0].cost_swing_usd, c0 * (1 / 0.8 - 1 / 1.2), rel_tol=1e-9)


def test_sensitivity_modeled_moves_kernel_efficiency() -> None:
    s = sensitivity(default_scenario())
    bars = {b.key: b for b in s.bars}
    k = bars["parallelism.kernel_efficiency"]
    assert k.time_high_seconds is not None
    assert k.time_low_seconds is not None
    assert k.time_high_seconds < s.base_time_seconds < k.time_low_seconds


def test_own_gpu_and_count_agree_with_the_report() -> None:
    """The option at the scenario's own GPU and count is the search's best layout there; the
    report of the scenario set to that layout gives the same time and GPU-hours (one
    producer). (Since issue 14's step-time model the best at 512 H100s is ZeRO-3 with
    micro-batch 2, whose larger GEMMs run faster, not the default's ZeRO-1, b 1.)"""
    from llm_planner.core.composition.estimate import estimate

    base = default_scenario()
    ranking = rank_hardware(base, gpus=[base.gpu], max_gpus=512)
    own = next(o for o in ranking.options if o.num_gpus == base.num_gpus)
    assert own.layout is not None
    assert own.layout_label.startswith("dp512 tp1 pp1 ")
    scenario = base.model_copy(
        update={
            "parallelism": base.parallelism.model_copy(
                update={"zero_stage": own.layout.zero_stage}
            ),
            "training": base.training.model_copy(
                update={
                    "micro_batch": own.layout.micro_batch,
                    "recompute": own.layout.recompute,
                }
            ),
        }
    )
    report = estimate(scenario).compute
    assert own.time_seconds == pytest.approx(report.wall_seconds, rel=1e-9)
    assert own.gpu_hours == pytest.approx(report.gpu_hours, rel=1e-9)
