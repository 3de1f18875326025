"""The GPU catalog: every required id, dense (not with-sparsity) peaks, memory as sold,
per-direction links, custom GPUs and lookup errors.

Expected values are the vendors' published figures, written here with their source; they
are not read back from resources/gpus.json.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from llm_planner.core.primitives.gpus import (
    GPU,
    GPUNotFoundError,
    PeakFlops,
    custom_gpu,
    custom_id,
    get_gpu,
    gpu_catalog,
    load_gpu_file,
)

REQUIRED_IDS = [
    "v100-sxm2-32gb",
    "a100-sxm4-40gb",
    "a100-sxm4-80gb",
    "h100-sxm",
    "h100-pcie",
    "h200",
    "b200",
    "mi250x",
    "mi300x",
    "l40s",
    "l4",
    "a10g",
    "rtx-3090",
    "rtx-4090",
    "rtx-5090",
    # issue 28 (names people bring) and issue 27 (Blackwell systems)
    "h800",
    "h20",
    "gh200",
    "gh200-144gb",
    "t4",
    "rtx-6000-ada",
    "rtx-pro-6000",
    "mi325x",
    "mi355x",
    "b300",
    "gb200",
    "gb300",
]


def test_every_required_id_is_in_the_catalog() -> None:
    catalog = gpu_catalog()
    missing = [gpu_id for gpu_id in REQUIRED_IDS if gpu_id not in catalog]
    assert missing == []
    for gpu_id in REQUIRED_IDS:
        gpu = catalog[gpu_id]
        assert gpu.id == gpu_id
        assert gpu.source.strip(), f"{gpu_id} names no datasheet"
        assert not gpu.custom


def test_h100_sxm_is_dense_not_with_sparsity() -> None:
    peak = get_gpu("h100-sxm").peak_flops
    # NVIDIA H100 Tensor Core GPU Architecture whitepaper, Table 1 (H100 SXM5):
    # BF16/FP16 tensor 989.4 TFLOPS dense, 1,978.9 with sparsity (the datasheet headline
    # "1,979 teraFLOPS*" is the sparse one); FP8 1,978.9 dense; TF32 494.7 dense;
    # FP32 (non-tensor) 66.9; INT8 1,978.9 TOPS dense.
    assert peak.bf16 == pytest.approx(989.4e12)
    assert peak.bf16 != pytest.approx(1979e12, rel=0.01)
    assert peak.fp16 == pytest.approx(989.4e12)
    assert peak.fp8 == pytest.approx(1978.9e12)
    assert peak.tf32 == pytest.approx(494.7e12)
    assert peak.fp32 == pytest.approx(66.9e12)
    assert peak.int8 == pytest.approx(1978.9e12)


# (id, dtype, dense FLOP/s, where the figure comes from)
PUBLISHED_DENSE_PEAKS = [
    # NVIDIA A100 datasheet: BF16/FP16 312 TFLOPS (624* with sparsity), TF32 156 (312*),
    # INT8 624 TOPS (1,248*).
    ("a100-sxm4-40gb", "bf16", 312e12, "A100 datasheet, 624 with sparsity"),
    ("a100-sxm4-80gb", "tf32", 156e12, "A100 datasheet, 312 with sparsity"),
    ("a100-sxm4-80gb", "int8", 624e12, "A100 datasheet, 1,248 with sparsity"),
    # V100 datasheet: 125 TFLOPS tensor (FP16; Volta has no sparsity), 15.7 FP32.
    ("v100-sxm2-32gb", "fp16", 125e12, "V100 datasheet"),
    ("v100-sxm2-32gb", "fp32", 15.7e12, "V100 datasheet"),
    # H100 PCIe datasheet: BF16 1,513* and FP8 3,026* with sparsity.
    ("h100-pcie", "bf16", 756e12, "H100 datasheet PCIe column, 1,513 with sparsity"),
    ("h100-pcie", "fp8", 1513e12, "H100 datasheet PCIe column, 3,026 with sparsity"),
    # H200 datasheet: same GH100 compute as H100 SXM, FP8 3,958* with sparsity.
    ("h200", "fp8", 1978.9e12, "H200 datasheet 3,958 with sparsity; H100 whitepaper dense"),
    # HGX B200 datasheet, per GPU: FP16/BF16 4.5 PFLOPS*, FP8 9 PFLOPS* with sparsity.
    ("b200", "bf16", 2.25e15, "HGX B200 datasheet, 4.5 PFLOPS with sparsity"),
    ("b200", "fp8", 4.5e15, "HGX B200 datasheet, 9 PFLOPS with sparsity"),
    # AMD MI250X specifications: FP16/BF16 matrix 383 TFLOPS (no sparsity), FP32 vector 47.9.
    ("mi250x", "bf16", 383e12, "AMD MI250X specifications"),
    ("mi250x", "fp32", 47.9e12, "AMD MI250X specifications, vector"),
    # AMD MI300X data sheet: BF16 1,307.4 dense (2,614.9 with sparsity), FP8 2,614.9 dense.
    ("mi300x", "bf16", 1307.4e12, "AMD MI300X data sheet, 2,614.9 with sparsity"),
    ("mi300x", "fp8", 2614.9e12, "AMD MI300X data sheet, 5,229.8 with sparsity"),
    # NVIDIA L40S datasheet: BF16 362.05 | 733*, FP8 733 | 1,466*, TF32 183 | 366*.
    ("l40s", "bf16", 362.05e12, "L40S datasheet, 733 with sparsity"),
    ("l40s", "fp8", 733e12, "L40S datasheet, 1,466 with sparsity"),
    # NVIDIA L4 datasheet: FP16/BF16 242*, FP8 485* with sparsity; FP32 30.3.
    ("l4", "bf16", 121e12, "L4 datasheet, 242 with sparsity"),
    ("l4", "fp8", 242.5e12, "L4 datasheet, 485 with sparsity"),
    # GeForce, FP32 accumulate (half the FP16-accumulate rate):
    # GA102 whitepaper, RTX 3090: FP16 tensor 71 TFLOPS with FP32 accumulate (142 with FP16).
    ("rtx-3090", "bf16", 71e12, "GA102 whitepaper, FP32 accumulate"),
    # Ada whitepaper, RTX 4090: 165.2 with FP32 accumulate (330.3 with FP16 accumulate).
    ("rtx-4090", "bf16", 165.2e12, "Ada Lovelace whitepaper, FP32 accumulate"),
    ("rtx-4090", "fp8", 330.3e12, "Ada Lovelace whitepaper, FP8 with FP32 accumulate"),
    # H800 datasheet: the H100 SXM's tensor rates (FP8 3,958*, BF16 1,979* with sparsity).
    ("h800", "bf16", 989.4e12, "H800 datasheet 1,979 with sparsity; H100 whitepaper dense"),
    # H20 product brief: FP16/BF16 148 TFLOPS, FP8 296, TF32 74, FP32 44 (dense).
    ("h20", "bf16", 148e12, "H20 product brief"),
    ("h20", "fp8", 296e12, "H20 product brief"),
    ("h20", "tf32", 74e12, "H20 product brief"),
    # GH200 datasheet: FP8 3,958* and BF16 1,979* TFLOPS with sparsity (the H100 GPU).
    ("gh200", "fp8", 1978.9e12, "GH200 datasheet, 3,958 with sparsity"),
    # T4 datasheet: FP32 8.1 TFLOPS, mixed precision (FP16/FP32) 65 TFLOPS, INT8 130 TOPS.
    ("t4", "fp16", 65e12, "T4 datasheet, mixed precision FP16/FP32"),
    ("t4", "int8", 130e12, "T4 datasheet"),
    ("t4", "fp32", 8.1e12, "T4 datasheet"),
    # RTX 6000 Ada datasheet: tensor 1,457 TFLOPS = FP8 with sparsity; FP32 91.1.
    ("rtx-6000-ada", "fp8", 1457e12 / 2, "RTX 6000 Ada datasheet, 1,457 with sparsity"),
    ("rtx-6000-ada", "bf16", 1457e12 / 4, "half the FP8 rate, FP32 accumulate"),
    ("rtx-6000-ada", "fp32", 91.1e12, "RTX 6000 Ada datasheet"),
    # RTX PRO 6000 Blackwell: 4,000 AI TOPS (FP4 with sparsity), FP32 125 TFLOPS.
    ("rtx-pro-6000", "fp4", 4000e12 / 2, "RTX PRO 6000 datasheet, 4,000 AI TOPS sparse FP4"),
    ("rtx-pro-6000", "fp32", 125e12, "RTX PRO 6000 datasheet"),
    # AMD MI325X data sheet: FP8 2,614.9 / FP16 1,307.4 dense, TF32 653.7, FP32 163.4.
    ("mi325x", "fp8", 2614.9e12, "AMD MI325X data sheet, 5,229.8 with sparsity"),
    ("mi325x", "bf16", 1307.4e12, "AMD MI325X data sheet, 2,614.9 with sparsity"),
    # AMD MI355X: 256 CUs (8 XCDs x 32), 8,192 FP8 FLOP/clock/CU (ISSCC 2026), 2.4 GHz peak:
    # 256 * 8192 * 2.4e9 = 5.033e15 ("FP8 5.0 PF" in AMD's data sheet); MXFP4 twice that
    # ("10 PF"), FP16/BF16 half ("2.5 PF"); FP32 256 CUs * 256 FLOP/clock * 2.4e9.
    ("mi355x", "fp8", 256 * 8192 * 2.4e9, "ISSCC 2026 MI355X; AMD data sheet 5.0 PF"),
    ("mi355x", "fp4", 2 * 256 * 8192 * 2.4e9, "AMD data sheet MXFP4 10 PF"),
    ("mi355x", "bf16", 256 * 8192 * 2.4e9 / 2, "AMD data sheet FP16 2.5 PF"),
    ("mi355x", "fp32", 256 * 256 * 2.4e9, "AMD data sheet 157.3 TFLOPS FP32 vector"),
    # HGX B300 datasheet, 8 GPUs: FP8 72 PF*, FP16/BF16 36 PF*, TF32 18 PF* (* sparsity),
    # FP4 108 PF dense, FP32 600 TF.
    ("b300", "fp8", 72e15 / 8 / 2, "HGX B300 datasheet, 72 PF per 8 GPUs with sparsity"),
    ("b300", "bf16", 36e15 / 8 / 2, "HGX B300 datasheet, 36 PF per 8 GPUs with sparsity"),
    ("b300", "tf32", 18e15 / 8 / 2, "HGX B300 datasheet, 18 PF per 8 GPUs with sparsity"),
    ("b300", "fp4", 108e15 / 8, "HGX B300 datasheet, 108 PF dense per 8 GPUs"),
    ("b300", "fp32", 600e12 / 8, "HGX B300 datasheet, 600 TF per 8 GPUs"),
    # GB200 NVL72 table, one GPU: FP4 20, FP8 10, INT8 10, FP16/BF16 5, TF32 2.5 PF with
    # sparsity; FP32 80 TF. Rack: FP4 1,440 PF* / 72 = 20 PF* per GPU.
    ("gb200", "fp4", 20e15 / 2, "GB200 NVL72 table, 20 PF with sparsity"),
    ("gb200", "fp8", 10e15 / 2, "GB200 NVL72 table, 10 PF with sparsity"),
    ("gb200", "bf16", 5e15 / 2, "GB200 NVL72 table, 5 PF with sparsity"),
    ("gb200", "tf32", 2.5e15 / 2, "GB200 NVL72 table, 2.5 PF with sparsity"),
    ("gb200", "fp32", 80e12, "GB200 NVL72 table"),
    # GB300 NVL72 rack: FP4 1,080 PF dense, FP8/FP6 720 PF*, FP16/BF16 360 PF*, TF32 180
    # PF* (* sparsity), 72 GPUs.
    ("gb300", "fp4", 1080e15 / 72, "GB300 NVL72 rack, 1,080 PF dense FP4"),
    ("gb300", "fp8", 720e15 / 72 / 2, "GB300 NVL72 rack, 720 PF with sparsity"),
    ("gb300", "bf16", 360e15 / 72 / 2, "GB300 NVL72 rack, 360 PF with sparsity"),
    ("gb300", "tf32", 180e15 / 72 / 2, "GB300 NVL72 rack, 180 PF with sparsity"),
    # HGX B200 datasheet, per GPU: FP4 18 PF with sparsity.
    ("b200", "fp4", 18e15 / 2, "HGX B200 datasheet, 18 PF with sparsity"),
]


@pytest.mark.parametrize(("gpu_id", "dtype", "expected", "source"), PUBLISHED_DENSE_PEAKS)
def test_dense_peaks_match_published_figures(
    gpu_id: str, dtype: str, expected: float, source: str
) -> None:
    assert get_gpu(gpu_id).peak_flops.for_dtype(dtype) == pytest.approx(expected), source


def test_units_without_hardware_are_none() -> None:
    # Volta has FP16 tensor cores only (V100 whitepaper); Ampere and CDNA 2 have no FP8
    # (A100 datasheet; AMD MI250X specifications); CDNA 2 has no TF32.
    v100 = get_gpu("v100-sxm2-32gb").peak_flops
    assert v100.for_dtype("bf16") is None
    assert v100.for_dtype("tf32") is None
    assert v100.for_dtype("fp8") is None
    assert get_gpu("a100-sxm4-80gb").peak_flops.fp8 is None
    assert get_gpu("mi250x").peak_flops.fp8 is None
    assert get_gpu("mi250x").peak_flops.tf32 is None


def test_for_dtype_has_no_fallback_and_ignores_unknown_dtypes() -> None:
    peak = PeakFlops(fp16=100e12)
    assert peak.for_dtype("fp16") == 100e12
    assert peak.for_dtype("bf16") is None  # no silent fp16 stand-in
    assert peak.for_dtype("int4") is None
    assert peak.for_dtype("model_config") is None


def test_memory_is_as_sold_in_decimal_gb() -> None:
    h100 = get_gpu("h100-sxm")
    # "80GB" HBM3 (H100 datasheet) = 80e9 bytes = 80e9 / 2^30 = 74.5 GiB.
    assert h100.memory_bytes == 80e9
    assert h100.memory_gib == pytest.approx(74.51, abs=0.01)
    # H200 datasheet 141GB; MI300X data sheet 192 GB; MI250X 128 GB per package (2 GCDs).
    assert get_gpu("h200").memory_bytes == 141e9
    assert get_gpu("mi300x").memory_bytes == 192e9
    assert get_gpu("mi250x").memory_bytes == 128e9
    for gpu in gpu_catalog().values():
        gb = gpu.memory_bytes / 1e9
        assert gb == round(gb), f"{gpu.id}: memory is not a whole number of GB as sold"


def test_new_parts_memory_and_bandwidth_as_published() -> None:
    # (id, memory as sold in GB, memory bandwidth in TB/s, source)
    published = [
        ("h800", 80, 3.35, "H800 datasheet: H100 SXM's HBM3"),
        ("h20", 96, 4.0, "H20 product brief: 96 GB HBM3, 4.0 TB/s"),
        ("gh200", 96, 4.0, "GH200 datasheet: 96 GB HBM3, 4 TB/s"),
        ("gh200-144gb", 144, 4.9, "GH200 HBM3e announcement: 144 GB, 4.9 TB/s"),
        ("t4", 16, 0.32, "T4 datasheet: 16 GB GDDR6, 320 GB/s"),
        ("rtx-6000-ada", 48, 0.96, "RTX 6000 Ada datasheet: 48 GB GDDR6, 960 GB/s"),
        ("rtx-pro-6000", 96, 1.792, "RTX PRO 6000 datasheet: 96 GB GDDR7, 1,792 GB/s"),
        ("mi325x", 256, 6.0, "AMD MI325X data sheet: 256 GB HBM3E, 6 TB/s"),
        ("mi355x", 288, 8.0, "AMD MI355X data sheet: 288 GB HBM3E, 8 TB/s"),
        ("b300", 270, 7.7, "Blackwell Ultra per-GPU table, HGX B300: 270 GB, 7.7 TB/s"),
        ("gb200", 186, 8.0, "GB200 NVL72 table: 186 GB HBM3E, 8 TB/s"),
        ("gb300", 279, 8.0, "Blackwell Ultra per-GPU table, GB300: 279 GB, 8 TB/s"),
    ]
    for gpu_id, gb, tb_per_s, source in published:
        gpu = get_gpu(gpu_id)
        assert gpu.memory_bytes == gb * 1e9, source
        assert gpu.memory_bandwidth_bytes_per_s == pytest.approx(tb_per_s * 1e12), source


def test_new_parts_links_are_per_direction() -> None:
    # H800: NVLink cut to 400 GB/s both directions (H800 datasheet) -> 200e9 each way.
    assert get_gpu("h800").link_bandwidth_bytes_per_s == 400e9 / 2
    # H20 and GH200 keep NVLink 4's 900 GB/s; Blackwell parts NVLink 5's 1.8 TB/s.
    assert get_gpu("h20").link_bandwidth_bytes_per_s == 900e9 / 2
    for gpu_id in ("b300", "gb200", "gb300"):
        assert get_gpu(gpu_id).link_bandwidth_bytes_per_s == 1.8e12 / 2, gpu_id
    # T4: PCIe Gen3 x16, "32 GB/s" both ways; RTX PRO 6000: PCIe Gen5 x16, 128 GB/s.
    assert get_gpu("t4").link_bandwidth_bytes_per_s == 32e9 / 2
    assert get_gpu("rtx-pro-6000").link_bandwidth_bytes_per_s == 128e9 / 2


def test_fp4_only_where_the_hardware_has_it() -> None:
    # Hopper, Ada and CDNA 3 have no FP4 tensor unit (H100 whitepaper, Ada whitepaper, CDNA 3
    # whitepaper); Turing has no BF16 or FP8 (T4 datasheet lists FP16, INT8, INT4 only).
    for gpu_id in ("h100-sxm", "h200", "h800", "h20", "rtx-6000-ada", "mi300x", "mi325x"):
        assert get_gpu(gpu_id).peak_flops.for_dtype("fp4") is None, gpu_id
    t4 = get_gpu("t4").peak_flops
    assert t4.bf16 is None
    assert t4.fp8 is None
    # CDNA 4 dropped the TF32 matrix unit (entry notes; AMD emulates it).
    assert get_gpu("mi355x").peak_flops.tf32 is None


def test_memory_bandwidths_match_datasheets() -> None:
    # H100 SXM 3.35 TB/s, H200 4.8 TB/s (datasheets); A100 80GB 2,039 GB/s; MI300X 5.3 TB/s;
    # RTX 4090 1,008 GB/s (Ada whitepaper).
    assert get_gpu("h100-sxm").memory_bandwidth_bytes_per_s == pytest.approx(3.35e12)
    assert get_gpu("h200").memory_bandwidth_bytes_per_s == pytest.approx(4.8e12)
    assert get_gpu("a100-sxm4-80gb").memory_bandwidth_bytes_per_s == pytest.approx(2.039e12)
    assert get_gpu("mi300x").memory_bandwidth_bytes_per_s == pytest.approx(5.3e12)
    assert get_gpu("rtx-4090").memory_bandwidth_bytes_per_s == pytest.approx(1.008e12)


def test_links_are_per_direction() -> None:
    # NVLink 4: 900 GB/s per GPU counting both directions (H100 datasheet) -> 450e9 each way.
    assert get_gpu("h100-sxm").link_bandwidth_bytes_per_s == 450e9
    # NVLink 3 600 GB/s (A100 datasheet) -> 300e9; NVLink 5 1.8 TB/s (HGX B200) -> 900e9.
    assert get_gpu("a100-sxm4-80gb").link_bandwidth_bytes_per_s == 300e9
    assert get_gpu("b200").link_bandwidth_bytes_per_s == 900e9
    # L40S datasheet: "PCIe Gen4 x16: 64GB/s bidirectional" -> 32e9 each way.
    assert get_gpu("l40s").link_bandwidth_bytes_per_s == 32e9


def test_catalog_values_are_internally_consistent() -> None:
    for gpu in gpu_catalog().values():
        peak = gpu.peak_flops
        assert peak.bf16 is not None or peak.fp16 is not None, gpu.id
        if peak.bf16 is not None and peak.fp16 is not None:
            assert peak.bf16 == peak.fp16, f"{gpu.id}: bf16 and fp16 tensor rates differ"
        tensor16 = peak.bf16 or peak.fp16
        assert tensor16 is not None
        if peak.fp32 is not None:
            assert tensor16 > peak.fp32, f"{gpu.id}: tensor rate not above vector FP32"
        if peak.tf32 is not None:
            assert tensor16 >= peak.tf32, gpu.id
        if peak.fp8 is not None:
            assert peak.fp8 >= tensor16, gpu.id
        assert gpu.link_bandwidth_bytes_per_s < gpu.memory_bandwidth_bytes_per_s, gpu.id


def test_unconfirmed_entries_say_so() -> None:
    # No NVIDIA datasheet exists for the AWS-only A10G: its entry must flag that.
    assert "unconfirmed" in get_gpu("a10g").notes


def test_lookup_is_case_insensitive() -> None:
    assert get_gpu("H100-SXM") is get_gpu("h100-sxm")


def test_unknown_id_error_lists_every_known_id() -> None:
    with pytest.raises(KeyError) as caught:
        get_gpu("h1000")
    message = str(caught.value)
    assert message.startswith("unknown GPU 'h1000'")
    for gpu_id in REQUIRED_IDS:
        assert gpu_id in message
    assert isinstance(caught.value, GPUNotFoundError)


def test_catalog_gpus_survive_a_json_round_trip() -> None:
    for gpu in gpu_catalog().values():
        assert GPU.model_validate(json.loads(json.dumps(gpu.model_dump(mode="json")))) == gpu


def test_custom_gpu() -> None:
    gpu = custom_gpu("My Card 48GB", 48e9, 960e9, 180e12, fp32_flops=90e12)
    assert gpu.custom is True
    assert gpu.id == "custom-my-card-48gb"
    assert gpu.memory_bytes == 48e9
    assert gpu.peak_flops.for_dtype("bf16") == 180e12
    assert gpu.peak_flops.for_dtype("fp16") == 180e12  # documented default: same as bf16
    assert gpu.peak_flops.for_dtype("fp8") is None
    assert gpu.link_bandwidth_bytes_per_s == 32e9  # PCIe Gen4 x16, one direction
    with pytest.raises(ValidationError):
        custom_gpu("broken", -1, 1e12, 1e14)


def test_custom_gpu_from_a_json_file(tmp_path: Path) -> None:
    entry = {
        "name": "Lab Card",
        "memory_bytes": 64e9,
        "memory_bandwidth_bytes_per_s": 2e12,
        "peak_flops": {"bf16": 400e12, "fp16": 400e12},
        "link_bandwidth_bytes_per_s": 100e9,
    }
    plain = tmp_path / "lab.json"
    plain.write_text(json.dumps(entry), encoding="utf-8")
    gpu = get_gpu(str(plain))
    assert gpu.custom is True
    assert gpu.id == "custom-lab-card"
    assert gpu.peak_flops.bf16 == 400e12
    # a saved scenario carries its GPU under "gpu"
    scenario = tmp_path / "scenario.json"
    scenario.write_text(json.dumps({"name": "x", "gpu": {**entry, "id": "lab"}}), "utf-8")
    assert load_gpu_file(scenario).id == "lab"


def test_bad_gpu_files_name_the_problem(tmp_path: Path) -> None:
    with pytest.raises(KeyError, match="does not exist"):
        get_gpu(str(tmp_path / "missing.json"))
    garbage = tmp_path / "garbage.json"
    garbage.write_text("{not json", encoding="utf-8")
    with pytest.raises(KeyError, match="not valid JSON"):
        get_gpu(str(garbage))
    incomplete = tmp_path / "incomplete.json"
    incomplete.write_text(json.dumps({"name": "x", "memory_bytes": 1e9}), encoding="utf-8")
    with pytest.raises(KeyError, match="memory_bandwidth_bytes_per_s"):
        get_gpu(str(incomplete))


@given(st.text(max_size=40))
def test_custom_ids_are_valid_ids(name: str) -> None:
    gpu_id = custom_id(name)
    assert re.fullmatch(r"custom(-[a-z0-9][a-z0-9._-]*)?", gpu_id)
    assert gpu_id not in gpu_catalog()


@given(
    memory=st.floats(min_value=1e6, max_value=1e13),
    bandwidth=st.floats(min_value=1e6, max_value=1e14),
    bf16=st.floats(min_value=0, max_value=1e17),
)
def test_custom_gpu_accepts_any_positive_figures(
    memory: float, bandwidth: float, bf16: float
) -> None:
    gpu = custom_gpu("any", memory, bandwidth, bf16)
    assert gpu.memory_bytes == memory
    assert gpu.peak_flops.for_dtype("bf16") == bf16
