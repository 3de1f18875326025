"""GPU names people type (issue 28): product names, memory suffixes, ``nvidia-smi``'s names.

Each expected id is written here from what the name means where people copy it from (the
product's name, ``nvidia-smi``'s output), not read back from the alias table.
"""

from __future__ import annotations

import json

import pytest

from llm_planner.cli import main
from llm_planner.core.primitives.gpus import (
    GPUNotFoundError,
    find_gpu,
    get_gpu,
    gpu_aliases,
    gpu_catalog,
    normalize_gpu_name,
)

# (typed, catalog id): the names issue 28 lists, and nvidia-smi's names for the same parts.
TYPED_GPU_NAMES = [
    ("H100", "h100-sxm"),  # a bare H100 is the SXM board of HGX/DGX systems
    ("h100-80gb", "h100-sxm"),
    ("H100 80GB", "h100-sxm"),
    ("NVIDIA H100 80GB HBM3", "h100-sxm"),  # nvidia-smi on an H100 SXM5
    ("H100 PCIe", "h100-pcie"),
    ("A100-40GB", "a100-sxm4-40gb"),
    ("NVIDIA A100-SXM4-40GB", "a100-sxm4-40gb"),  # nvidia-smi
    ("NVIDIA A100-SXM4-80GB", "a100-sxm4-80gb"),  # nvidia-smi
    ("A100", "a100-sxm4-80gb"),
    ("4090", "rtx-4090"),
    ("RTX 4090", "rtx-4090"),
    ("rtx4090", "rtx-4090"),
    ("NVIDIA GeForce RTX 4090", "rtx-4090"),  # nvidia-smi
    ("Tesla V100-SXM2-32GB", "v100-sxm2-32gb"),  # nvidia-smi
    ("Tesla T4", "t4"),  # nvidia-smi
    ("NVIDIA L40S", "l40s"),
    ("NVIDIA A10G", "a10g"),  # nvidia-smi on AWS G5
    ("H800", "h800"),
    ("H20", "h20"),
    ("GH200", "gh200"),
    ("NVIDIA GH200 480GB", "gh200"),  # nvidia-smi: 96 GB HBM3 + 480 GB LPDDR5X module
    ("MI325X", "mi325x"),
    ("AMD Instinct MI355X", "mi355x"),
    ("RTX 6000 Ada", "rtx-6000-ada"),
    ("NVIDIA RTX 6000 Ada Generation", "rtx-6000-ada"),  # nvidia-smi
    ("RTX PRO 6000 Blackwell", "rtx-pro-6000"),
    ("B300", "b300"),
    ("GB200 NVL72", "gb200"),
    ("GB300", "gb300"),
]


@pytest.mark.parametrize(("typed", "gpu_id"), TYPED_GPU_NAMES)
def test_names_people_type_find_the_part(typed: str, gpu_id: str) -> None:
    choice = find_gpu(typed)
    assert choice.gpu.id == gpu_id
    assert get_gpu(typed) is choice.gpu


@pytest.mark.parametrize(("typed", "gpu_id"), TYPED_GPU_NAMES)
def test_a_name_that_is_not_the_id_is_echoed(typed: str, gpu_id: str) -> None:
    choice = find_gpu(typed)
    if typed.lower() == gpu_id:
        assert choice.read_as is None
    else:
        assert choice.read_as is not None
        assert repr(typed) in choice.read_as
        assert gpu_id in choice.read_as
        assert choice.gpu.name in choice.read_as


def test_an_id_in_any_case_is_not_echoed() -> None:
    assert find_gpu("H100-SXM").read_as is None
    assert find_gpu(" gb200 ").read_as is None


def test_normalisation() -> None:
    assert normalize_gpu_name("NVIDIA GeForce RTX 4090") == "rtx-4090"
    assert normalize_gpu_name("H100 80 GB") == "h100-80gb"
    assert normalize_gpu_name("a100_sxm4/40gb") == "a100-sxm4-40gb"
    assert normalize_gpu_name("NVIDIA H100 Tensor Core GPU") == "h100"


def test_every_alias_names_a_catalog_gpu_and_none_shadows_an_id() -> None:
    catalog = gpu_catalog()
    for alias, gpu_id in gpu_aliases().items():
        assert gpu_id in catalog, alias
        assert alias not in catalog, f"alias {alias!r} shadows a catalog id"
        assert normalize_gpu_name(alias) == alias, f"alias {alias!r} is not a normalised key"


def test_an_unknown_name_gets_did_you_mean() -> None:
    with pytest.raises(GPUNotFoundError) as caught:
        get_gpu("h1000")
    message = str(caught.value)
    assert "did you mean" in message
    assert "h100-sxm" in message.split("known:", maxsplit=1)[0]
    # A PCIe A100 is not in the catalog: it is not read as the SXM board, only offered.
    with pytest.raises(GPUNotFoundError) as caught:
        get_gpu("a100-pcie")
    offered = str(caught.value).split("known:")[0]
    assert "a100-sxm4-80gb" in offered


def test_nothing_close_offers_nothing() -> None:
    with pytest.raises(GPUNotFoundError) as caught:
        get_gpu("zzzz")
    assert "did you mean" not in str(caught.value)


def test_cli_reads_gpu_names_as_ids_and_says_so(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", "--gpu", "RTX 4090", "--json"]) == 0
    by_name = capsys.readouterr()
    assert main(["report", "--gpu", "rtx-4090", "--json"]) == 0
    by_id = capsys.readouterr()
    assert json.loads(by_name.out) == json.loads(by_id.out)
    assert "'RTX 4090' read as rtx-4090" in by_name.err
    assert by_id.err == ""


def test_price_overrides_take_gpu_names(capsys: pytest.CaptureFixture[str]) -> None:
    """``--price-for H100=1.25`` was stored under "H100", which no GPU id matches, and
    silently did nothing; a scenario file's keys are read the same way."""
    from llm_planner.core.composition.scenario import default_scenario

    argv = ["hardware", "--max-gpus", "16", "--json", "--price-for", "H100=1.25"]
    assert main(argv) == 0
    options = json.loads(capsys.readouterr().out)["options"]
    h100 = [o for o in options if o["gpu_id"] == "h100-sxm"]
    assert h100
    assert all(o["price_usd_per_gpu_hour"] == 1.25 for o in h100)
    assert main(["hardware", "--price-for", "H1000=1.0"]) == 2
    assert "did you mean" in capsys.readouterr().err
    data = default_scenario().model_dump(mode="json")
    data["price_overrides"] = {"RTX 4090": 0.4, "custom-my-card": 1.0}
    scenario = type(default_scenario()).model_validate(data)
    assert scenario.price_overrides == {"rtx-4090": 0.4, "custom-my-card": 1.0}
