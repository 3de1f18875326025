"""One figure, one value, everywhere (issue 25 item 6): the price follows the GPU unless
the user set it; the hardware ranking prices the scenario's own GPU at the scenario's
price and with its calibration; one HFU definition on every tab."""

from __future__ import annotations

from scenario_helpers import preset_scenario

from llm_planner.core.composition.calibration import Measurement
from llm_planner.core.composition.estimate import estimate
from llm_planner.core.composition.fit import with_changes
from llm_planner.core.composition.hardware import rank_hardware
from llm_planner.core.composition.scenario import default_scenario
from llm_planner.core.files import logs
from llm_planner.core.primitives.gpus import get_gpu
from llm_planner.core.primitives.prices import load_price_list


def _cheapest_on_demand(gpu_id: str) -> float:
    """The shipped price list's cheapest on-demand offer, read from the list itself."""
    offers = [
        o.usd_per_gpu_hour
        for o in load_price_list().offers
        if o.gpu == gpu_id and o.tier == "on_demand"
    ]
    return min(offers)


def test_the_price_follows_the_gpu_until_the_user_sets_one() -> None:
    scenario = default_scenario()
    assert scenario.compute.price_follows_gpu
    assert scenario.compute.price_usd_per_gpu_hour == _cheapest_on_demand("h100-sxm")
    ada = with_changes(scenario, {"gpu": get_gpu("rtx-4090").model_dump()})
    # the figure: an RTX 4090 is $0.29 per GPU-hour in the price list
    assert ada.compute.price_usd_per_gpu_hour == 0.29
    mine = with_changes(
        scenario, {"compute.price_usd_per_gpu_hour": 2.5, "compute.price_follows_gpu": False}
    )
    kept = with_changes(mine, {"gpu": get_gpu("rtx-4090").model_dump()})
    assert kept.compute.price_usd_per_gpu_hour == 2.5
    # the scenario's own override for a GPU is its price for that GPU
    override = with_changes(scenario, {"price_overrides": {"rtx-4090": 0.5}})
    moved = with_changes(override, {"gpu": get_gpu("rtx-4090").model_dump()})
    assert moved.compute.price_usd_per_gpu_hour == 0.5


def test_cost_is_gpu_hours_times_the_followed_price() -> None:
    compute = estimate(default_scenario()).compute
    assert compute.gpu_hours is not None
    assert compute.cost_usd == compute.gpu_hours * _cheapest_on_demand("h100-sxm")


def test_one_hfu_on_every_tab() -> None:
    report = estimate(default_scenario())
    compute_hfu = next(f for f in report.compute.figures() if f.key == "hfu")
    parallel_hfu = next(f for f in report.parallelism.figures() if f.key == "hfu")
    assert compute_hfu.label == parallel_hfu.label == "HFU (executed FLOPs)"
    assert report.compute.hfu == report.parallelism.hfu
    # MFU's count is the same on both: HFU ÷ MFU is the same executed-per-model ratio
    assert report.compute.mfu == report.parallelism.mfu
    assert report.compute.hardware_flops == report.compute.flops_total * (
        report.parallelism.hfu / report.parallelism.mfu
    )


def test_the_ranking_prices_the_scenarios_gpu_at_the_scenarios_price() -> None:
    scenario = with_changes(
        preset_scenario("llama-3.1-8b", "h100-sxm", 64),
        {"compute.price_usd_per_gpu_hour": 2.0, "compute.price_follows_gpu": False},
    )
    ranking = rank_hardware(scenario, gpus=[scenario.gpu], max_counts=2)
    own = [o for o in ranking.options if o.num_gpus == 64]
    assert own
    assert own[0].price_usd_per_gpu_hour == 2.0
    assert own[0].price_source == "scenario price"
    assert own[0].gpu_hours is not None
    assert own[0].cost_usd == own[0].gpu_hours * 2.0


def test_the_ranking_uses_the_calibration_of_each_gpu() -> None:
    scenario = preset_scenario("llama-3.1-8b", "h100-sxm", 64)
    modeled = estimate(scenario).parallelism.tokens_per_s / 64
    slow = Measurement(
        label="slow H100 run",
        gpus=64,
        tokens_per_s_per_gpu=modeled / 2,
        stack=scenario.training.stack,
        **logs.layout_of(scenario),
    )
    measured = scenario.model_copy(update={"measurements": [slow]})
    gpus = [get_gpu("h100-sxm"), get_gpu("b200")]
    before = {(o.gpu_id, o.num_gpus): o for o in rank_hardware(scenario, gpus=gpus).options}
    after = {(o.gpu_id, o.num_gpus): o for o in rank_hardware(measured, gpus=gpus).options}
    h100 = [k for k in before if k[0] == "h100-sxm" and before[k].tokens_per_s]
    assert h100
    for key in h100:  # the H100 run at half the modeled rate slows every H100 option
        assert after[key].tokens_per_s < before[key].tokens_per_s
    b200 = [k for k in before if k[0] == "b200" and before[k].tokens_per_s]
    assert b200
    for key in b200:  # an H100 run says nothing about a B200: set aside, unchanged
        assert after[key].tokens_per_s == before[key].tokens_per_s


def test_the_ranking_lists_the_scenarios_own_plan_with_the_windows_figures() -> None:
    # issue 25: the ranking's 161.4 days beside the window's 196.5 days for the same 1024
    # H100 read as two values of one figure; the ranking's row is the best layout it
    # searched (labelled), and the scenario's own plan is listed too, with the report's figures
    # tp 4, pp 4: a layout that fits (Megatron keeps fp32 main gradients, item 4)
    scenario = preset_scenario(
        "llama-3.1-70b", "h100-sxm", 1024, **{"parallelism.tp": 4, "parallelism.pp": 4}
    )
    report = estimate(scenario)
    assert report.training.fits
    compute = report.compute
    ranking = rank_hardware(scenario, gpus=[scenario.gpu], max_counts=1)
    (own,) = [o for o in ranking.options if o.is_scenario]
    assert own.num_gpus == 1024
    assert own.time_seconds == compute.wall_seconds
    assert own.cost_usd == compute.cost_usd
    assert own.gpu_hours == compute.gpu_hours
    assert own.layout_label.startswith("this scenario: ")
    searched = [o for o in ranking.options if o.num_gpus == 1024 and not o.is_scenario]
    assert searched
    assert searched[0].time_seconds is not None
    assert compute.wall_seconds is not None
    # the search tries the scenario's own layout among others: its best is no slower
    assert searched[0].time_seconds <= compute.wall_seconds * (1 + 1e-9)
