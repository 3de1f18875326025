"""The NVLink domain (issue 27 step 4): on a GB200/GB300 NVL72 rack 72 GPUs share one NVLink
fabric although a compute tray holds 4 ("72 GPUs in one NVLink domain; 4 GPUs per compute
tray": NVIDIA's GB200 NVL72 specification table, the catalog's notes), so tensor-, expert-
and context-parallel groups of up to 72 GPUs stay on NVLink; only groups that span racks use
the network."""

from __future__ import annotations

import pytest

from llm_planner.core.composition.estimate import estimate
from llm_planner.core.composition.scenario import default_scenario
from llm_planner.core.inputs.parallelism import ParallelInputs
from llm_planner.core.inputs.scenario import Scenario
from llm_planner.core.primitives.gpus import get_gpu
from llm_planner.core.primitives.presets import get_preset
from llm_planner.core.sections.parallelism.workload import (
    cluster_of,
    network_bytes_per_s_per_node,
    nvlink_domain_of,
)


def test_catalog_racks_are_72_gpu_domains() -> None:
    assert get_gpu("gb200").nvlink_domain_gpus == 72
    assert get_gpu("gb300").nvlink_domain_gpus == 72
    assert get_gpu("b200").nvlink_domain_gpus is None  # HGX: the 8-GPU board is the domain


def test_domain_defaults_and_override() -> None:
    tray = ParallelInputs(gpus_per_node=4)
    assert nvlink_domain_of(get_gpu("gb200"), tray) == 72
    assert nvlink_domain_of(get_gpu("b200"), tray) == 4
    assert nvlink_domain_of(get_gpu("gb200"), tray.model_copy(update={"nvlink_domain": 4})) == 4
    # never less than a node
    assert nvlink_domain_of(get_gpu("b200"), ParallelInputs(nvlink_domain=2)) == 8


def test_a_group_inside_the_rack_gets_nvlink_one_across_racks_its_nic_share() -> None:
    """GB200, 4 GPUs per tray, default efficiencies: a 64-GPU all-to-all (stride 1) inside the
    rack runs at NVLink's 900 GB/s × the intra-node efficiency; a 128-GPU one spans racks and
    gets one NIC share per GPU: its 400 Gb/s NIC × the inter-node efficiency (the domain
    drives its 18 trays' NICs together, 72 GPUs sharing them)."""
    inputs = ParallelInputs(gpus_per_node=4)
    links = cluster_of(get_gpu("gb200"), inputs).links
    assert float(links.group_bandwidth(1.0, 64.0, False)) == pytest.approx(
        900e9 * inputs.intra_node_efficiency
    )
    # one 400 Gb/s ConnectX-7 per GPU = 50e9 B/s
    per_gpu_nic = 50e9 * inputs.inter_node_efficiency
    assert float(links.group_bandwidth(1.0, 128.0, False)) == pytest.approx(per_gpu_nic)


def _qwen_on(gpu: str, **parallel: object) -> Scenario:
    """Qwen3-30B-A3B on 8 GPUs, ep 8, 4 per node, s 4096, micro-batch 4, global 512."""
    sc = default_scenario()
    return sc.model_copy(
        update={
            "model": sc.model.model_copy(
                update={
                    "preset_id": "qwen3-30b-a3b",
                    "architecture": get_preset("qwen3-30b-a3b").architecture,
                }
            ),
            "gpu": get_gpu(gpu),
            "num_gpus": 8,
            "training": sc.training.model_copy(
                update={"seq_len": 4096, "micro_batch": 4, "stack": "megatron"}
            ),
            "parallelism": sc.parallelism.model_validate(
                {
                    **sc.parallelism.model_dump(),
                    "gpus_per_node": 4,
                    "expert_parallel": 8,
                    "global_batch": 512,
                    **parallel,
                }
            ),
        }
    )


def test_expert_parallel_group_across_trays_stays_on_nvlink_in_the_rack() -> None:
    """ep 8 over two 4-GPU trays: on NVL72 the all-to-all rides NVLink (the report says
    intra-node and the all-to-all is faster than when the rack is split into trays)."""
    rack = estimate(_qwen_on("gb200"), suggest=False).parallelism
    trays = estimate(_qwen_on("gb200", nvlink_domain=4), suggest=False).parallelism
    assert rack.links["expert_parallel"] == "intra-node"
    assert trays.links["expert_parallel"] == "inter-node"
    rack_a2a = rack.time_breakdown_seconds["expert_all_to_all"]
    assert rack_a2a < trays.time_breakdown_seconds["expert_all_to_all"]
    assert rack.tokens_per_s > trays.tokens_per_s


@pytest.mark.parametrize(
    ("gpu", "gpus_per_node", "nic_bits_per_s"),
    [
        # GB200 NVL72: one 400 Gb/s ConnectX-7 per GPU, 4 per compute tray
        ("gb200", 4, 400e9),
        # GB300 NVL72: one 800 Gb/s ConnectX-8 per GPU, 4 per compute tray
        ("gb300", 4, 800e9),
        # HGX H100: one 400 Gb/s NDR NIC per GPU, 8 per node
        ("h100-sxm", 8, 400e9),
    ],
)
def test_the_network_per_gpu_is_one_nic_whatever_the_gpus_per_node(
    gpu: str, gpus_per_node: int, nic_bits_per_s: float
) -> None:
    """The per-node network's default is the GPU's NIC × GPUs per node (a tray of 4 is not
    an 8-GPU node's 400 GB/s shared by 4: that gave GB200 twice its NIC), so a group that
    spans NVLink domains gets one NIC per GPU, × the inter-node efficiency."""
    inputs = ParallelInputs(gpus_per_node=gpus_per_node)
    assert network_bytes_per_s_per_node(get_gpu(gpu), inputs) == gpus_per_node * nic_bits_per_s / 8
    links = cluster_of(get_gpu(gpu), inputs).links
    spanning = 2 * nvlink_domain_of(get_gpu(gpu), inputs)
    assert float(links.group_bandwidth(1.0, float(spanning), False)) == pytest.approx(
        nic_bits_per_s / 8 * inputs.inter_node_efficiency
    )


def test_a_typed_network_per_node_is_kept() -> None:
    inputs = ParallelInputs(gpus_per_node=4, inter_node_bandwidth_bytes_per_s=400e9)
    assert network_bytes_per_s_per_node(get_gpu("gb200"), inputs) == 400e9
