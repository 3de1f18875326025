"""Cheapest hardware a team would rent (issue 25 item 7): with no deadline the ranking
judges options against a stated default horizon, and GPUs without a datacenter
interconnect are flagged at cluster scale, not ranked first."""

from __future__ import annotations

from scenario_helpers import preset_scenario

from llm_planner.core.composition.fit import with_changes
from llm_planner.core.composition.hardware import (
    DEFAULT_HORIZON_SECONDS,
    datacenter_interconnect,
    rank_hardware,
)
from llm_planner.core.primitives.gpus import get_gpu

DAY = 86_400.0


def test_70b_on_15t_tokens_is_not_a_consumer_cluster() -> None:
    # the run: Llama-3.1-70B, 15T tokens, no deadline; before, 256 RTX 4090 for
    # 10.5 years ranked first and 16,384 of them in 78 days was "ok"
    scenario = preset_scenario("llama-3.1-70b", "h100-sxm", 1024, **{"parallelism.tp": 8})
    gpus = [get_gpu("rtx-4090"), get_gpu("h100-sxm")]
    ranking = rank_hardware(scenario, gpus=gpus)
    assert ranking.deadline_seconds is None
    assert ranking.horizon_seconds == 90 * DAY
    assert "90 days" in ranking.horizon_rule
    best = ranking.cheapest()
    assert best is not None
    assert best.gpu_id == "h100-sxm"
    assert best.time_seconds is not None
    assert best.time_seconds <= 90 * DAY
    first_ok = min(o.rank for o in ranking.options if o.status == "ok")
    for option in ranking.options:
        if option.gpu_id == "rtx-4090" and option.fits:
            # one node holds 8 GPUs (parallelism.gpus_per_node): every count tried is more
            assert option.num_gpus > 8
            assert option.status == "no datacenter interconnect"
            assert any("datacenter interconnect" in flag for flag in option.flags)
            assert option.rank > first_ok
        if option.time_seconds is not None and option.time_seconds > DEFAULT_HORIZON_SECONDS:
            assert option.status != "ok"


def test_a_deadline_replaces_the_horizon() -> None:
    scenario = with_changes(
        preset_scenario("llama-3.1-8b", "h100-sxm", 64),
        {"compute.deadline_seconds": 400 * DAY, "compute.tokens": 1e12},
    )
    ranking = rank_hardware(scenario, gpus=[get_gpu("h100-sxm")], max_counts=3)
    assert ranking.horizon_seconds == 400 * DAY
    assert ranking.horizon_rule == "the deadline"
    assert all(o.status != "beyond horizon" for o in ranking.options)


def test_consumer_cards_within_one_node_are_not_flagged() -> None:
    assert not datacenter_interconnect(get_gpu("rtx-4090"))  # GeForce: no GPUDirect RDMA
    assert datacenter_interconnect(get_gpu("l40s"))  # a PCIe datacenter card is
    fine_tune = preset_scenario(
        "llama-2-7b",
        "rtx-4090",
        1,
        **{"compute.tokens": 1e9, "training.lora_rank": 16, "training.recompute": "full"},
    )
    ranking = rank_hardware(fine_tune, gpus=[get_gpu("rtx-4090")], max_gpus=8)
    assert ranking.options
    for option in ranking.options:
        assert option.num_gpus <= 8
        assert option.status != "no datacenter interconnect"
