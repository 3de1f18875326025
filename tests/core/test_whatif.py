"""The seed's open problems as what-ifs: each against a hand computation written out here."""

from __future__ import annotations

import math

import pytest

from llm_planner.core.composition.estimate import estimate
from llm_planner.core.composition.scenario import Scenario, default_scenario
from llm_planner.core.composition.whatif.compression import (
    compressed_step,
    matching_bandwidth,
    plan_compression,
)
from llm_planner.core.composition.whatif.mixed import (
    balanced_shares,
    cluster_presets,
    plan_mixed_cluster,
    preset_cluster,
)
from llm_planner.core.composition.whatif.multimodal import (
    encoder_flops_per_step,
    own_gpus_step,
    pipeline_stage_step,
    plan_multimodal,
)
from llm_planner.core.composition.whatif.report import estimate_whatif, whatif_json
from llm_planner.core.composition.whatif.rl import plan_rl, rollout_seconds, training_seconds
from llm_planner.core.files.store import dumps_scenario, parse_scenario
from llm_planner.core.inputs.whatif import (
    CompressionInputs,
    MixedClusterInputs,
    MultimodalInputs,
    NodeGroup,
    RLInputs,
    WhatIfInputs,
)
from llm_planner.core.sections.parallelism import parallelism_report


def _scenario(**parallelism: object) -> Scenario:
    data = default_scenario().model_dump()
    data["parallelism"].update(parallelism)
    return Scenario.model_validate(data)


# ------------------------------------------------------------------ mixed clusters


def _group(name: str, gpu: str, nodes: int, network: float) -> NodeGroup:
    return NodeGroup(
        name=name, gpu=gpu, nodes=nodes, gpus_per_node=8, inter_node_bandwidth_bytes_per_s=network
    )


def test_even_split_runs_at_the_slowest_groups_pace() -> None:
    """Even shares: the step is the slowest group's, priced as the whole cluster of that
    group's GPUs on the slowest network (here the A100s on 200 GB/s per node)."""
    scenario = _scenario(global_batch=2048)
    cluster = MixedClusterInputs(
        groups=[_group("H100", "h100-sxm", 32, 400e9), _group("A100", "a100-sxm4-80gb", 32, 200e9)]
    )
    plan = plan_mixed_cluster(scenario, cluster)
    assert plan.gpus == 512
    assert plan.slowest_network_bytes_per_s == 200e9
    assert plan.pace_setter == "A100"
    # the A100 group alone, 512 GPUs of it on the slowest network: the same step
    from llm_planner.core.primitives.gpus import get_gpu

    a100_cluster = parallelism_report(
        scenario.model.architecture,
        get_gpu("a100-sxm4-80gb"),
        512,
        scenario.parallelism.model_copy(
            update={"dp": 512, "inter_node_bandwidth_bytes_per_s": 200e9}
        ),
        scenario.training,
    )
    assert plan.step_seconds_even == pytest.approx(a100_cluster.step_seconds, rel=1e-12)
    assert plan.step_seconds_even == max(g.step_seconds_even for g in plan.groups)
    # a balanced split gives the faster H100 replicas more sequences and is faster
    shares = {g.name: g.sequences_balanced for g in plan.groups}
    assert shares["H100"] > shares["A100"]
    assert sum(g.dp * g.sequences_balanced for g in plan.groups) == 2048
    assert plan.step_seconds_balanced < plan.step_seconds_even


def test_identical_groups_gain_nothing_from_balancing() -> None:
    scenario = _scenario(global_batch=1024)
    same = MixedClusterInputs(
        groups=[_group("a", "h100-sxm", 32, 400e9), _group("b", "h100-sxm", 32, 400e9)]
    )
    plan = plan_mixed_cluster(scenario, same)
    assert plan.step_seconds_balanced == pytest.approx(plan.step_seconds_even, rel=1e-9)


def test_balanced_shares_by_hand() -> None:
    # group a: 1 s per micro-batch, b: 3 s; 2 replicas each; 8 micro-batches. At T = 3 s a
    # replica of a does 3 and of b does 1: 2·3 + 2·1 = 8, so T = 3 s is the earliest finish
    assert balanced_shares({"a": 1.0, "b": 3.0}, {"a": 2, "b": 2}, 8) == {"a": 3, "b": 1}
    # 4 micro-batches: T = 1 s gives 2·1 + 2·0 = 2 < 4; T = 2 s gives 2·2 = 4 (b does none)
    assert balanced_shares({"a": 1.0, "b": 3.0}, {"a": 2, "b": 2}, 4) == {"a": 2, "b": 0}


def test_the_smallest_gpu_bounds_memory() -> None:
    scenario = default_scenario()
    small = NodeGroup(
        name="V100 16GB",
        gpu="v100-sxm2-32gb",
        memory_bytes=16e9,
        nodes=8,
        gpus_per_node=8,
        inter_node_bandwidth_bytes_per_s=100e9,
    )
    plan = plan_mixed_cluster(
        scenario, MixedClusterInputs(groups=[_group("H100", "h100-sxm", 8, 400e9), small])
    )
    by_name = {g.name: g for g in plan.groups}
    assert by_name["V100 16GB"].memory_bytes == 16e9
    assert not by_name["V100 16GB"].fits  # an 8B model's state does not fit 16 GB at tp 1
    assert not plan.fits


def test_cluster_presets_carry_sources() -> None:
    presets = cluster_presets()
    assert {"summit", "frontier", "h100-400g"} <= set(presets)
    for preset in presets.values():
        assert preset["source"]
    summit = preset_cluster("summit").groups[0]
    assert (summit.nodes, summit.gpus_per_node, summit.memory_bytes) == (4608, 6, 16e9)
    frontier = preset_cluster("frontier").groups[0]
    assert (frontier.nodes, frontier.gpus_per_node) == (9408, 4)
    with pytest.raises(KeyError, match="known"):
        preset_cluster("nope")


# ------------------------------------------------------------------ RL in the loop


def test_rollout_and_training_seconds_by_hand() -> None:
    from llm_planner.core.composition.whatif.rl import RolloutEngine

    engine = RolloutEngine(
        gpus=1,
        max_batch=10,
        weights_bytes_per_gpu=1.0,
        kv_cache_bytes_per_gpu=1.0,
        wave_seconds=5.0,
    )
    # 100 sequences on 4 engines: 25 each, waves of 10 → 3 waves × 5 s
    assert rollout_seconds(100, 4, engine) == 15.0
    # 1e6 tokens on 10 GPUs at 1,000 tokens/s each: 100 s
    assert training_seconds(1e6, 10, 1000.0) == 100.0


def test_rl_split_finds_the_hand_worked_optimum() -> None:
    """Continuous model: t_roll = A/n_r, t_train = B/(N − n_r); synchronous optimum at
    n_r = N·√A/(√A + √B). The plan's curve must bottom out at the whole engine nearest it."""
    scenario = default_scenario()
    report = estimate(scenario)
    rl = RLInputs(num_gpus=64, prompts_per_step=512, samples_per_prompt=8, engine_gpus=1)
    plan = plan_rl(scenario, report, rl)
    assert plan is not None
    # read A and B off two points of the curve (t_roll·n_r and t_train·n_t are constants
    # when every engine runs the same number of waves; compare where they are)
    first = plan.curve[0]
    b = first.training_seconds * (64 - first.rollout_gpus)
    for point in plan.curve:
        assert point.training_seconds * (64 - point.rollout_gpus) == pytest.approx(b)
        assert point.step_seconds == pytest.approx(point.rollout_seconds + point.training_seconds)
    best = min(plan.curve, key=lambda p: p.step_seconds)
    assert plan.rollout_gpus == best.rollout_gpus
    assert plan.rollout_gpus + plan.training_gpus == 64
    # idle shares: each pool waits while the other works
    assert plan.rollout_idle_fraction == pytest.approx(plan.training_seconds / plan.step_seconds)
    assert plan.training_idle_fraction == pytest.approx(plan.rollout_seconds / plan.step_seconds)


def test_overlapped_pools_take_the_longer_phase() -> None:
    scenario = default_scenario()
    report = estimate(scenario)
    plan = plan_rl(scenario, report, RLInputs(num_gpus=64, overlap=True))
    assert plan is not None
    for point in plan.curve:
        assert point.step_seconds == max(point.rollout_seconds, point.training_seconds)


def test_colocated_pays_resharding_twice() -> None:
    scenario = default_scenario()
    report = estimate(scenario)
    plan = plan_rl(
        scenario, report, RLInputs(num_gpus=64, placement="colocated", reshard_seconds=3.0)
    )
    assert plan is not None
    assert plan.step_seconds == pytest.approx(plan.rollout_seconds + plan.training_seconds + 6.0)
    assert plan.rollout_gpus == plan.training_gpus == 64


# ------------------------------------------------------------------ multimodal placement


def test_three_placements_by_hand() -> None:
    # encoder work 2 s and text work 6 s when each is spread over all N = 8 GPUs
    t_e, t_t, n = 2.0, 6.0, 8
    # own GPUs: 2 for the encoder (2·8/2 = 8 s) and 6 for text (6·8/6 = 8 s): balanced
    assert own_gpus_step(t_e, t_t, n, 2) == pytest.approx(8.0)
    assert own_gpus_step(t_e, t_t, n, 4) == pytest.approx(12.0)  # text on 4: 6·8/4
    # sharded: both on every GPU one after the other: 2 + 6 = 8 s, nobody idles
    # pipeline stage (pp = 1 text stage, m = 4 micro-batches): encoder stage on 2 GPUs
    # 2·8/2/4 = 2 s per micro-batch, text stage on 6 GPUs 6·8/6/(4 + 1 − 1) = 2 s; step
    # (m + p)·2 = 10 s; work 2·2·4 + 2·6·4 = 64 GPU-s of 8·10 = 80: idle 20%
    step, idle = pipeline_stage_step(t_e, t_t, n, encoder_gpus=2, pp=1, m=4)
    assert step == pytest.approx(10.0)
    assert idle == pytest.approx(0.2)


def test_encoder_flops_trained_and_frozen() -> None:
    mm = MultimodalInputs(encoder_params=1e9, tokens_per_image=100, images_per_sequence=2)
    # 10 sequences × 2 images × 100 tokens × 6·1e9
    assert encoder_flops_per_step(mm, 10) == 10 * 2 * 100 * 6e9
    frozen = mm.model_copy(update={"encoder_trained": False})
    assert encoder_flops_per_step(frozen, 10) == 10 * 2 * 100 * 2e9


def test_multimodal_plan_orders_placements() -> None:
    scenario = default_scenario()
    plan = plan_multimodal(scenario, estimate(scenario), MultimodalInputs(encoder_params=6e9))
    assert plan is not None
    names = {p.name for p in plan.placements}
    assert names == {"own GPUs", "sharded with the text model", "a pipeline stage"}
    steps = [p.step_seconds for p in plan.placements]
    assert steps == sorted(steps)
    assert plan.best == plan.placements[0].name
    for p in plan.placements:
        assert 0.0 <= p.idle_fraction <= 1.0


# ------------------------------------------------------------------ compressed communication


def test_ratio_one_and_free_kernels_change_nothing() -> None:
    assert compressed_step(10.0, 4.0, 1e9, 1.0, None) == (10.0, 4.0, 0.0)
    scenario = _scenario(tp=8, sequence_parallel=True)
    report = estimate(scenario)
    for kind in ("data_parallel", "tensor_parallel", "pipeline_p2p", "expert_all_to_all"):
        plan = plan_compression(report, CompressionInputs(kind=kind, ratio=1.0), 400e9)
        assert plan.step_seconds_after == report.parallelism.step_seconds


def test_compression_by_hand() -> None:
    # 4 s of a 10 s step exposed, 1e9 bytes, ratio 4, kernels at 1e10 B/s: 1 s + 2·0.1 s
    step, exposed, kernel = compressed_step(10.0, 4.0, 1e9, 4.0, 1e10)
    assert kernel == pytest.approx(0.2)
    assert exposed == pytest.approx(1.2)
    assert step == pytest.approx(7.2)
    # the network on which the compressed run matches today's (400 GB/s): 4·(B/B*)/4 + 0.2
    # = 4 → B* = 400e9 · 4 / (4 · 3.8)
    assert matching_bandwidth(400e9, 4.0, 4.0, 0.2) == pytest.approx(400e9 * 4 / (4 * 3.8))
    assert matching_bandwidth(400e9, 4.0, 2.0, 0.0) == pytest.approx(200e9)
    assert matching_bandwidth(400e9, 0.1, 4.0, 0.2) is None


def test_compression_of_exposed_tensor_parallel_traffic_across_nodes() -> None:
    scenario = _scenario(tp=16, gpus_per_node=8)  # tp across nodes: exposed on the network
    report = estimate(scenario)
    plan = plan_compression(report, CompressionInputs(kind="tensor_parallel", ratio=4.0), 400e9)
    assert plan.exposed_seconds_before > 0
    assert plan.exposed_seconds_after == pytest.approx(plan.exposed_seconds_before / 4)
    assert plan.step_seconds_after < plan.step_seconds_before
    assert plan.speedup > 1


# ------------------------------------------------------------------ the scenario and the report


def test_whatif_travels_in_the_scenario_file() -> None:
    base = default_scenario()
    whatif = WhatIfInputs(
        mixed_cluster=preset_cluster("h100-a100-mixed"),
        rl=RLInputs(num_gpus=32),
        multimodal=MultimodalInputs(),
        compression=CompressionInputs(kind="tensor_parallel", ratio=2.0),
    )
    scenario = base.model_copy(update={"whatif": whatif})
    again = parse_scenario(dumps_scenario(scenario).encode())
    assert again.whatif == whatif
    assert whatif.any
    assert not base.whatif.any
    out = whatif_json(estimate_whatif(again, estimate(again)))
    assert set(out) == {"mixed_cluster", "rl", "multimodal", "compression"}
    assert all(math.isfinite(v) for v in _numbers(out))


def _numbers(node: object) -> list[float]:
    if isinstance(node, dict):
        return [x for v in node.values() for x in _numbers(v)]
    if isinstance(node, list):
        return [x for v in node for x in _numbers(v)]
    return [float(node)] if isinstance(node, int | float) and not isinstance(node, bool) else []


# ------------------------------------------------------------------ the command line


def test_whatif_command_json_and_saved_scenario(
    capsys: pytest.CaptureFixture[str], tmp_path: object
) -> None:
    import json
    from pathlib import Path

    from llm_planner.cli import main

    path = Path(str(tmp_path)) / "w.llmplan.json"
    status = main(
        [
            "whatif",
            "--cluster",
            "summit",
            "--compress",
            "data_parallel",
            "--ratio",
            "2",
            "--json",
            "--save",
            str(path),
        ]
    )
    assert status == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out) == {"mixed_cluster", "compression"}
    assert out["mixed_cluster"]["groups"][0]["gpu"] == "v100-sxm2-32gb"
    assert out["compression"]["ratio"] == 2.0
    # the saved scenario plans them: `report FILE --json` carries the whatif key
    assert main(["report", str(path), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert set(report["whatif"]) == {"mixed_cluster", "compression"}


def test_whatif_command_refuses_nothing_and_bad_values(capsys: pytest.CaptureFixture[str]) -> None:
    from llm_planner.cli import main

    assert main(["whatif"]) == 2
    assert "nothing to plan" in capsys.readouterr().err
    assert main(["whatif", "--cluster", "nowhere"]) == 2
    assert "--cluster" in capsys.readouterr().err
    assert main(["whatif", "--compress", "data_parallel", "--ratio", "0.5"]) == 2
    err = capsys.readouterr().err
    assert "ratio" in err
    assert err.count("\n") == 1
