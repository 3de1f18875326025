"""Mixture-of-experts pricing (issue 27 item 4): the busiest expert's load, the all-to-all on
the links its group spans, the token permutations and the MoE layer's kernel launches, each
checked against a hand computation from Megatron-Core's source (core/quantities/moe.py)."""

from __future__ import annotations

import math

import pytest
from layout_helpers import one_layout

from llm_planner.core.composition.estimate import estimate
from llm_planner.core.composition.scenario import default_scenario
from llm_planner.core.inputs.scenario import Scenario, with_changes
from llm_planner.core.primitives.gpus import get_gpu
from llm_planner.core.primitives.presets import get_preset
from llm_planner.core.quantities import comm, moe
from llm_planner.core.sections.parallelism import step_time_host
from llm_planner.core.sections.parallelism.workload import workload_of


def test_load_factor_dropless_follows_the_imbalance() -> None:
    # dropless: the busiest expert runs all its tokens
    assert moe.expert_load_factor(1.3, None) == 1.3
    # below 1 is no busiest expert: the mean
    assert moe.expert_load_factor(0.9, None) == 1.0


def test_load_factor_with_capacity_is_the_capacity() -> None:
    # dropped beyond c × the mean and padded up to it: c, whatever the imbalance
    assert moe.expert_load_factor(1.8, 1.25) == 1.25
    assert moe.expert_load_factor(1.0, 1.25) == 1.25


def test_permutation_bytes_by_hand() -> None:
    # Qwen3-30B-A3B: k = 8, h = 2048, 16-bit rows.
    # with the regrouping: forward permute 2k + sort 2k + sort back 2k + unpermute (k + 1)
    # = 7k + 1 = 57 rows of h; backward the same: 114; less the ledger's 5k = 40: 74 rows
    assert moe.permutation_bytes_per_token(8, 2048, True) == 74 * 2048 * 2
    # without: 3k + 1 = 25 per pass, 50 − 40 = 10 rows
    assert moe.permutation_bytes_per_token(8, 2048, False) == 10 * 2048 * 2


LINKS = comm.Links(gpus_per_node=8, intra_bytes_per_s=360e9, inter_bytes_per_s_per_node=320e9)
LAT = {"base": 8.4e-6, "intra_step": 3.4e-6, "inter_step": 14e-6}


def test_all_to_all_inside_a_node_rides_nvlink() -> None:
    t = float(moe.all_to_all_seconds(LINKS, 1, 8, 7.2e8, **LAT))
    # 7.2e8 B ÷ 360e9 B/s = 2 ms, + base + one NVLink step
    assert t == pytest.approx(2e-3 + 8.4e-6 + 3.4e-6, rel=1e-12)


def test_all_to_all_across_two_nodes_splits_its_bytes() -> None:
    # 16 ranks on 2 nodes of 8: 7 of 15 peers on NVLink, 8 over the network at the node's
    # 320e9 ÷ 8 = 40e9 B/s per GPU, both at once: the network's 8/15 of 1.5e9 B = 0.8e9 B
    # takes 20 ms (NVLink's 0.7e9 B 1.9 ms)
    t = float(moe.all_to_all_seconds(LINKS, 1, 16, 1.5e9, **LAT))
    assert t == pytest.approx(0.8e9 / 40e9 + 8.4e-6 + 3.4e-6 + 14e-6, rel=1e-12)
    # the whole message at the NIC share, as before this change, would be 37.5 ms
    assert t < 1.5e9 / 40e9


def test_all_to_all_inside_an_nvlink_rack() -> None:
    rack = comm.Links(gpus_per_node=72, intra_bytes_per_s=720e9, inter_bytes_per_s_per_node=2.88e12)
    t = float(moe.all_to_all_seconds(rack, 1, 16, 7.2e8, **LAT))
    assert t == pytest.approx(7.2e8 / 720e9 + 8.4e-6 + 3.4e-6, rel=1e-12)
    assert float(moe.all_to_all_seconds(rack, 1, 1, 7.2e8, **LAT)) == 0.0


def test_moe_launches_by_hand() -> None:
    # Qwen3-30B-A3B, 48 MoE layers of 48, 128 experts, ep 8: 16 local experts.
    # 29 forward + 30 backward + 16 × 6 expert GEMMs − 10 of the dense MLP = 145
    work = workload_of(get_preset("qwen3-30b-a3b").architecture, 4096, 512)
    assert float(step_time_host._moe_launches(work, one_layout(ep=8))[0]) == 145.0
    # ep 128: one local expert, 29 + 30 + 6 − 10 = 55
    assert float(step_time_host._moe_launches(work, one_layout(ep=128))[0]) == 55.0
    dense = workload_of(get_preset("llama-3.1-8b").architecture, 4096, 512)
    assert float(step_time_host._moe_launches(dense, one_layout())[0]) == 0.0


def _qwen_on_b200(micro_batch: int, **training: object) -> Scenario:
    sc = default_scenario()
    changes: dict[str, object] = {
        "model.preset": "qwen3-30b-a3b",
        "model.architecture": get_preset("qwen3-30b-a3b").architecture.model_dump(),
        "gpu": get_gpu("b200").model_dump(),
        "num_gpus": 8,
        "training.stack": "megatron",
        "training.recompute": "none",
        "training.micro_batch": micro_batch,
        "parallelism.tp": 1,
        "parallelism.pp": 1,
        "parallelism.dp": None,
        "parallelism.expert_parallel": 8,
        "parallelism.global_batch": 512,
        "parallelism.gpus_per_node": 8,
    }
    changes.update({f"training.{k}": v for k, v in training.items()})
    return with_changes(sc, changes)


def _tokens_per_s(sc: Scenario) -> float:
    return estimate(sc, suggest=False).parallelism.tokens_per_s


def test_imbalance_slows_the_step_and_capacity_caps_it() -> None:
    balanced = _tokens_per_s(_qwen_on_b200(4))
    skewed = _tokens_per_s(_qwen_on_b200(4, moe_load_imbalance=1.5))
    assert skewed < 0.9 * balanced
    # the overflow above c = 1 is dropped and every expert padded to c = 1: the balanced price
    capped = _tokens_per_s(_qwen_on_b200(4, moe_load_imbalance=1.5, moe_capacity_factor=1.0))
    assert capped == pytest.approx(balanced, rel=1e-12)
    # padding to c = 1.25 costs more than the balanced load, less than a 1.5 imbalance
    padded = _tokens_per_s(_qwen_on_b200(4, moe_load_imbalance=1.5, moe_capacity_factor=1.25))
    assert skewed < padded < balanced


def test_small_micro_batch_is_bound_by_the_moe_launches() -> None:
    # micro-batch 1: 48 layers × (60 dense + 145 MoE launches) × 42.5 µs = 0.418 s per
    # micro-batch, above the GPU's work; the step is the host's
    par = estimate(_qwen_on_b200(1), suggest=False).parallelism
    launches = 48 * (60 + 145) + step_time_host.HEAD_KERNELS + step_time_host.EMBEDDING_KERNELS
    per_microbatch = launches * comm.HOST_SECONDS_PER_KERNEL_LAUNCH
    m = 512 / (8 * 1)
    assert par.time_breakdown_seconds["overhead"] > 0
    assert par.step_seconds == pytest.approx(m * per_microbatch, rel=0.02)


def test_dense_models_ignore_the_moe_inputs() -> None:
    sc = default_scenario()
    base = _tokens_per_s(sc)
    changed = with_changes(
        sc, {"training.moe_load_imbalance": 2.0, "training.moe_capacity_factor": 1.5}
    )
    assert _tokens_per_s(changed) == base
    assert math.isfinite(base)


def test_allgather_dispatch_bytes_by_hand() -> None:
    # 8 ranks, 4096 tokens each, h = 2048: each ring collective sends 7 × 4096 × 2048
    # elements; all-gather 2 B + reduce-scatter in fp32 4 B, forward and backward: 12 B
    sent = float(moe.allgather_dispatch_bytes_per_layer(8, 4096, 2048))
    assert sent == 7 * 4096 * 2048 * 12
    # the all-to-all sends k = 8 copies of 7/8 of the tokens, 4 times, in 16 bits
    a2a = float(comm.moe_all_to_all_bytes_per_layer(8, 1, 4096, 2048, 8))
    assert a2a == 4 * 8 * 4096 * 2048 * 2 * 7 / 8
    assert float(moe.allgather_dispatch_bytes_per_layer(1, 4096, 2048)) == 0.0


def test_allgather_dispatcher_is_priced_apart() -> None:
    a2a = estimate(_qwen_on_b200(4), suggest=False).parallelism
    gathered = estimate(_qwen_on_b200(4, moe_dispatcher="allgather"), suggest=False).parallelism
    # per step: 48 layers × the bytes above at s·b = 16,384 tokens per rank, 16 micro-batches
    per_layer = float(moe.allgather_dispatch_bytes_per_layer(8, 16384, 2048))
    assert gathered.comm_bytes_breakdown["expert_all_to_all"] == pytest.approx(
        16 * 48 * per_layer, rel=1e-9
    )
    assert gathered.step_seconds > a2a.step_seconds
