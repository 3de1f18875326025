"""Serving model against published engine benchmarks (issue 30).

Data: ``serving-calibration.json`` beside this file (a copy of the shared data set: every
row, the fields read here, measured values exactly as published). Each row is priced by
``core.sections.serving`` through the same path ``estimate`` takes
(``inference.serving_deployment`` → ``serving.operate``) and compared with its published
figure. Tables and what is compared:

- TensorRT-LLM maximum throughput: output tokens/s of the deployment, all requests at once;
- LMDeploy (TurboMind) static batches on A100: mean first-token latency (TTFT) and the
  median per-token latency (TPOT, the p50 column);
- llama.cpp llama-bench: ``tg N`` (generation tokens/s at batch 1) and ``pp N`` (prompt
  tokens/s), per GPU family (the source's three tables: gaming, professional and
  datacenter NVIDIA, Apple silicon).

Rows not compared, and why: the four ``quality: oom`` rows (nothing was measured); LMDeploy's
request-throughput table (ShareGPT prompts of unstated lengths).

GPUs the catalog lacks are defined here from their datasheets (``EXTRA_GPUS``); they are
for this check only.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from llm_planner.core.primitives.architecture import Architecture, count_parameters
from llm_planner.core.primitives.gpus import GPU, PeakFlops, get_gpu
from llm_planner.core.primitives.presets import get_preset
from llm_planner.core.sections.inference import InferenceInputs, serving_deployment
from llm_planner.core.sections.serving import (
    Deployment,
    gpu_class,
    gpu_generation,
    max_concurrency,
    operate,
    prefill_time,
)

HERE = Path(__file__).resolve().parent
DATA = HERE / "serving-calibration.json"

TARGET_MEDIAN = 0.15
"""Issue 30's bound on every table's median |error|."""


def _gpu(
    id_: str, name: str, memory_gb: float, bandwidth_gb_s: float, fp16_tflops: float, **kw: Any
) -> GPU:
    int8 = kw.pop("int8_tops", None)
    return GPU(
        id=id_,
        name=name,
        vendor=kw.pop("vendor", "NVIDIA"),
        memory_bytes=memory_gb * 1e9,
        memory_bandwidth_bytes_per_s=bandwidth_gb_s * 1e9,
        peak_flops=PeakFlops(
            fp16=fp16_tflops * 1e12,
            bf16=kw.pop("bf16_tflops", fp16_tflops) * 1e12,
            fp8=(kw["fp8_tflops"] * 1e12) if "fp8_tflops" in kw else None,
            int8=None if int8 is None else int8 * 1e12,
            fp32=kw.pop("fp32_tflops", None),
        ),
        link_name=kw.pop("link_name", "PCIe Gen4 x16"),
        link_bandwidth_bytes_per_s=kw.pop("link_gb_s", 32.0) * 1e9,
        source=kw.pop("source"),
        tdp_watts=kw.pop("tdp"),
        notes="serving validation only (tests/validation/serving_validation.py)",
    )


_AMPERE_GEFORCE = (
    "NVIDIA Ampere GA102 whitepaper (GeForce RTX 30 series), Appendix A: FP16 tensor TFLOPS "
    "with FP32 accumulate (dense), INT8 tensor TOPS; memory and bandwidth from the product "
    "pages (from memory of those documents, not re-read this session)"
)
_ADA_GEFORCE = (
    "NVIDIA Ada Lovelace architecture whitepaper v2.1, Appendix A: FP16 tensor TFLOPS with "
    "FP32 accumulate (dense), INT8 tensor TOPS (dense); product pages for memory and "
    "bandwidth (from memory of those documents, not re-read this session)"
)
_PRO = (
    "NVIDIA RTX professional / data-center datasheets: tensor TFLOPS quoted with sparsity "
    "halved for dense (workstation cards accumulate in FP32 at full rate); from memory of "
    "the datasheets, not re-read this session"
)
_APPLE = (
    "Apple product pages (unified memory bandwidth) and the GPU's FP32 rate (ALUs × 2 × "
    "clock; Apple's FP16 rate is the same on M1-M3): from memory, not re-read this session"
)

EXTRA_GPUS: dict[str, GPU] = {
    "GH200": _gpu(
        "gh200-96gb",
        "NVIDIA GH200 (96 GB HBM3)",
        96,
        4000,
        989.4,
        fp8_tflops=1978.9,
        int8_tops=1978.9,
        link_name="NVLink-C2C",
        link_gb_s=450,
        tdp=900,
        source="NVIDIA GH200 Grace Hopper Superchip datasheet: H100 with 96 GB HBM3 at "
        "4 TB/s, H100 SXM tensor rates (from memory, not re-read this session)",
    ),
    "A100-PCIe-80GB": _gpu(
        "a100-pcie-80gb",
        "NVIDIA A100 PCIe 80GB",
        80,
        1935,
        312,
        int8_tops=624,
        tdp=300,
        source="NVIDIA A100 datasheet (PCIe 80GB: 1,935 GB/s; 312 TFLOPS FP16/BF16 dense)",
    ),
    "A40": _gpu("a40", "NVIDIA A40", 48, 696, 149.7, int8_tops=299.3, tdp=300, source=_PRO),
    "RTX-A6000": _gpu(
        "rtx-a6000", "NVIDIA RTX A6000", 48, 768, 154.8, int8_tops=309.7, tdp=300, source=_PRO
    ),
    "RTX-4000-Ada": _gpu(
        "rtx-4000-ada", "NVIDIA RTX 4000 Ada", 20, 360, 81.9, int8_tops=163.8, tdp=130, source=_PRO
    ),
    "RTX-5000-Ada": _gpu(
        "rtx-5000-ada", "NVIDIA RTX 5000 Ada", 32, 576, 261.1, int8_tops=522.2, tdp=250, source=_PRO
    ),
    "RTX-6000-Ada": _gpu(
        "rtx-6000-ada", "NVIDIA RTX 6000 Ada", 48, 960, 364.2, int8_tops=728.5, tdp=300, source=_PRO
    ),
    "RTX-3070": _gpu(
        "rtx-3070",
        "NVIDIA GeForce RTX 3070",
        8,
        448,
        40.6,
        int8_tops=162.6,
        tdp=220,
        source=_AMPERE_GEFORCE,
    ),
    "RTX-3080": _gpu(
        "rtx-3080",
        "NVIDIA GeForce RTX 3080 10GB",
        10,
        760,
        59.5,
        int8_tops=238,
        tdp=320,
        source=_AMPERE_GEFORCE,
    ),
    "RTX-3080-Ti": _gpu(
        "rtx-3080-ti",
        "NVIDIA GeForce RTX 3080 Ti",
        12,
        912,
        68.2,
        int8_tops=272.8,
        tdp=350,
        source=_AMPERE_GEFORCE,
    ),
    "RTX-4070-Ti": _gpu(
        "rtx-4070-ti",
        "NVIDIA GeForce RTX 4070 Ti",
        12,
        504,
        80.2,
        int8_tops=320.7,
        tdp=285,
        source=_ADA_GEFORCE,
    ),
    "RTX-4080": _gpu(
        "rtx-4080",
        "NVIDIA GeForce RTX 4080",
        16,
        716.8,
        97.5,
        int8_tops=389.9,
        tdp=320,
        source=_ADA_GEFORCE,
    ),
    "Apple-M1": _gpu(
        "apple-m1-7c",
        "Apple M1 (7-core GPU)",
        8,
        68.25,
        2.29,
        vendor="Apple",
        tdp=20,
        source=_APPLE,
    ),
    "Apple-M1-Max": _gpu(
        "apple-m1-max-32c",
        "Apple M1 Max (32-core GPU)",
        64,
        400,
        10.4,
        vendor="Apple",
        tdp=60,
        source=_APPLE,
    ),
    "Apple-M2-Ultra": _gpu(
        "apple-m2-ultra-76c",
        "Apple M2 Ultra (76-core GPU)",
        192,
        800,
        27.2,
        vendor="Apple",
        tdp=90,
        source=_APPLE,
    ),
    "Apple-M3-Max": _gpu(
        "apple-m3-max-40c",
        "Apple M3 Max (40-core GPU)",
        64,
        400,
        14.2,
        vendor="Apple",
        tdp=60,
        source=_APPLE,
    ),
}

CATALOG_IDS = {
    "H100-SXM": "h100-sxm",
    "H100-PCIe": "h100-pcie",
    "H200": "h200",
    "L40S": "l40s",
    "A100-80GB (SXM)": "a100-sxm4-80gb",
    "RTX-3090": "rtx-3090",
    "RTX-4090": "rtx-4090",
}

INTERNLM_20B = Architecture(
    name="InternLM-20B",
    layers=60,
    hidden_size=5120,
    heads=40,
    kv_heads=40,
    head_dim=128,
    ffn_size=13824,
    ffn_kind="swiglu",
    vocab_size=103168,
    max_context=16384,
)
"""internlm/internlm-20b config.json (60 layers, hidden 5120, 40 heads, MHA, intermediate
13824, vocabulary 103168); from memory of the config, not re-read this session."""

PRESETS = {
    "Llama-3-8B": "llama-3.1-8b",  # same shapes as 3.1 (3.1 extends the context only)
    "Llama-3.1-8B": "llama-3.1-8b",
    "Llama-3-70B": "llama-3.1-70b",
    "Llama-3.1-70B": "llama-3.1-70b",
    "Llama-3.1-405B": "llama-3.1-405b",
    "Mistral-7B": "mistral-7b",
    "Llama-2-7B": "llama-2-7b",
    "Llama-2-13B": "llama-2-13b",
    "Llama-2-70B": "llama-2-70b",
}

WEIGHTS = {"FP8": "fp8", "FP16": "fp16", "F16 (GGUF)": "fp16", "Q4_K_M (GGUF)": "q4_k_m"}
KV = {"FP8": "fp8", "FP16": "fp16", "F16": "fp16"}


def gpu_of(row: dict[str, Any]) -> GPU:
    name = row["gpu_canonical"]
    if name in CATALOG_IDS:
        return get_gpu(CATALOG_IDS[name])
    return EXTRA_GPUS[name]


def arch_of(row: dict[str, Any]) -> Architecture:
    name = row["model_canonical"]
    if name == "InternLM-20B":
        return INTERNLM_20B
    return get_preset(PRESETS[name]).architecture


@dataclass(frozen=True)
class Check:
    """One published figure against the model's."""

    table: str
    row_id: str
    label: str
    measured: float
    predicted: float
    tags: frozenset[str] = frozenset()
    """The row's GPU class and generation (``core.sections.serving.gpu_class`` /
    ``gpu_generation``) and ``quantized`` for block-quantized weights: what selects the
    rows a fitted constant acts on."""

    @property
    def error(self) -> float:
        return self.predicted / self.measured - 1.0


def load() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(DATA.read_text(encoding="utf-8"))
    return data


def _deployment(
    row: dict[str, Any], engine: str, batch: int, prompt: int, output: int
) -> Deployment:
    arch = arch_of(row)
    counts = count_parameters(arch)
    gpus = int(row.get("tp") or row.get("gpu_count") or 1)
    inputs = InferenceInputs(
        weights_format=WEIGHTS[row["weights_dtype"]],
        kv_dtype=KV[row["kv_cache_dtype"]],
        num_gpus=gpus,
        engine=engine,
        batch=batch,
        prompt_tokens=max(1, prompt),
        output_tokens=max(1, output),
        context=max(1, prompt + output),
    )
    return serving_deployment(arch, counts.total, counts.active, gpu_of(row), inputs)


def family(table: str) -> str:
    for key, label in (("Gaming", "gaming"), ("Professional", "professional"), ("Apple", "Apple")):
        if key in table:
            return label
    return "other"


def _tags(row: dict[str, Any]) -> frozenset[str]:
    gpu = gpu_of(row)
    tags = {gpu_class(gpu), gpu_generation(gpu)}
    if WEIGHTS[row["weights_dtype"]] not in ("fp8", "fp16"):
        tags.add("quantized")
    return frozenset(tags)


def checks() -> Iterator[Check]:
    """Every compared figure, in data order."""
    data = load()
    tables = data["tables"]
    for row in data["rows"]:
        if row.get("quality") != "ok":
            continue
        table = tables[row["table"]]
        engine, measured = table["engine"], row["measured"]
        label = f"{row['model_canonical']} {row['weights_dtype']} {row['gpu_canonical']}"
        if engine.startswith("TensorRT-LLM"):
            prompt, output = int(row["input_len"]), int(row["output_len"])
            d = _deployment(row, "tensorrt-llm", 1, prompt, output)
            largest, _ = max_concurrency(d, prompt, output)
            op = operate(d, max(1, largest), prompt, output, max(1, largest))
            yield Check(
                "TensorRT-LLM max throughput",
                row["id"],
                f"{label} TP{row['tp']} {prompt}/{output}",
                float(measured["output_tok_s_total"]),
                op.output_tokens_per_s,
                _tags(row),
            )
        elif engine.startswith("LMDeploy") and row.get("input_len") is not None:
            prompt, output, batch = (
                int(row["input_len"]),
                int(row["output_len"]),
                int(row["batch_size"]),
            )
            d = _deployment(row, "lmdeploy", batch, prompt, output)
            largest, _ = max_concurrency(d, prompt, output)
            op = operate(d, batch, prompt, output, max(1, largest))
            where = f"{label} TP{row['tp']} b{batch} {prompt}/{output}"
            yield Check(
                "LMDeploy TTFT",
                row["id"],
                where,
                float(measured["ttft_s_avg"]),
                op.ttft,
                _tags(row),
            )
            yield Check(
                "LMDeploy TPOT",
                row["id"],
                where,
                float(measured["per_token_latency_s_p50"]),
                op.tpot,
                _tags(row),
            )
        elif engine.startswith("llama.cpp"):
            test = row["llama_bench_test"]
            n = int(test[2:])
            fam = family(table["source_table"])
            where = f"{label} ×{row['gpu_count']} {test}"
            if test.startswith("tg"):
                d = _deployment(row, "llama.cpp", 1, 1, n)
                op = operate(d, 1, 1, n, 1)
                predicted = 1.0 / op.tpot
                yield Check(
                    f"llama.cpp tg ({fam})",
                    row["id"],
                    where,
                    float(measured["tg_tokens_per_s"]),
                    predicted,
                    _tags(row),
                )
            else:
                d = _deployment(row, "llama.cpp", 1, n, 1)
                predicted = n / prefill_time(d, 1, n).seconds
                yield Check(
                    f"llama.cpp pp ({fam})",
                    row["id"],
                    where,
                    float(measured["pp_tokens_per_s"]),
                    predicted,
                    _tags(row),
                )


@cache
def all_checks() -> tuple[Check, ...]:
    return tuple(checks())


def by_table() -> dict[str, list[Check]]:
    out: dict[str, list[Check]] = {}
    for check in all_checks():
        out.setdefault(check.table, []).append(check)
    return out


def median_abs_error(rows: list[Check]) -> float:
    return statistics.median(abs(c.error) for c in rows)


@dataclass(frozen=True)
class Fitted:
    """A constant fitted on this data: where it lives, its value, the rows it was fitted
    on (a predicate over checks) and what those rows say."""

    name: str
    value: str
    fitted_on: str
    tables: tuple[str, ...]
    tag: str | None = None
    """Only rows with this tag (a GPU class or generation, or ``quantized``)."""

    def rows(self) -> list[Check]:
        return [
            c
            for c in all_checks()
            if any(c.table.startswith(t) for t in self.tables)
            and (self.tag is None or self.tag in c.tags)
        ]


def fitted_constants() -> list[Fitted]:
    """Every constant fitted on serving-calibration.json (a grid search of the sum of the
    tables' median |error|, with a penalty above 15%), with the rows it acts on."""
    from llm_planner.core.quantities import engines as e
    from llm_planner.core.sections import serving as s

    llama = e.get_engine("llama.cpp")
    out = [
        Fitted(
            "serving.DECODE_BANDWIDTH_FRACTION",
            f"{s.DECODE_BANDWIDTH_FRACTION:g}",
            "memory-bound decode: TensorRT-LLM, LMDeploy TPOT, llama.cpp tg",
            ("TensorRT-LLM", "LMDeploy TPOT", "llama.cpp tg"),
        ),
        Fitted(
            "serving.KV_BANDWIDTH_FRACTION",
            f"{s.KV_BANDWIDTH_FRACTION:g}",
            "large-batch decode: TensorRT-LLM, LMDeploy TPOT",
            ("TensorRT-LLM", "LMDeploy TPOT"),
        ),
        Fitted(
            "serving.PREFILL_COMPUTE_FRACTION",
            f"{s.PREFILL_COMPUTE_FRACTION:g}",
            "prompts and compute-bound decode: TensorRT-LLM, LMDeploy TTFT",
            ("TensorRT-LLM", "LMDeploy TTFT"),
        ),
        Fitted(
            "engines.STEP_OVERHEAD_TENSORRT_SECONDS",
            f"{e.STEP_OVERHEAD_TENSORRT_SECONDS * 1e3:g} ms",
            "TensorRT-LLM",
            ("TensorRT-LLM",),
        ),
        Fitted(
            "engines.STEP_OVERHEAD_TURBOMIND_SECONDS",
            f"{e.STEP_OVERHEAD_TURBOMIND_SECONDS * 1e3:g} ms",
            "LMDeploy TPOT",
            ("LMDeploy TPOT",),
        ),
        Fitted(
            "engines.STEP_OVERHEAD_LLAMA_CPP_SECONDS",
            f"{e.STEP_OVERHEAD_LLAMA_CPP_SECONDS * 1e3:g} ms",
            "llama.cpp tg",
            ("llama.cpp tg",),
        ),
        Fitted(
            "engines.LLAMA_CPP_QUANTIZED_BANDWIDTH_FACTOR",
            f"{e.LLAMA_CPP_QUANTIZED_BANDWIDTH_FACTOR:g}",
            "llama.cpp tg, Q4_K_M rows",
            ("llama.cpp tg",),
            "quantized",
        ),
        Fitted(
            "engines.LLAMA_CPP_QUANTIZED_PREFILL_FACTOR",
            f"{e.LLAMA_CPP_QUANTIZED_PREFILL_FACTOR:g}",
            "llama.cpp pp, Q4_K_M rows",
            ("llama.cpp pp",),
            "quantized",
        ),
    ]
    for cls, value in llama.decode_bandwidth_fraction.items():
        out.append(
            Fitted(
                f"engines.LLAMA_CPP_DECODE_BANDWIDTH_FRACTION[{cls}]",
                f"{value:g}",
                f"llama.cpp tg on {cls} GPUs",
                ("llama.cpp tg",),
                cls,
            )
        )
    for cls, value in llama.prefill_compute_fraction.items():
        out.append(
            Fitted(
                f"engines.LLAMA_CPP_PREFILL_FRACTION[{cls}]",
                f"{value:g}",
                f"llama.cpp pp on {cls} GPUs",
                ("llama.cpp pp",),
                cls,
            )
        )
    for gen, value in llama.prefill_flops_per_joule.items():
        out.append(
            Fitted(
                f"engines.LLAMA_CPP_PREFILL_FLOPS_PER_JOULE[{gen}]",
                f"{value / 1e12:g} TFLOP/J",
                f"llama.cpp pp on {gen} GPUs",
                ("llama.cpp pp",),
                gen,
            )
        )
    return out


if __name__ == "__main__":
    for table, rows in by_table().items():
        errs = sorted(c.error for c in rows)
        print(
            f"{table:36s} n={len(rows):4d} median|e|={median_abs_error(rows):6.1%} "
            f"median e={statistics.median(errs):+6.1%} p10={errs[len(errs) // 10]:+6.1%} "
            f"p90={errs[9 * len(errs) // 10]:+6.1%}"
        )
