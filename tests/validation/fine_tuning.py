"""Fine-tuning against full fine-tuning where a publisher measured both (issue 31 item 2).

Two published sources:

- Hu et al. 2021 (LoRA, arXiv:2106.09685 section 4.2): "a 25% speedup during training on
  GPT-3 175B compared to full fine-tuning as we do not need to calculate the gradient for
  the vast majority of the parameters" (layout and hardware not stated: priced here on 64
  A100 at tp 8 × pp 8, sequence 2048, LoRA r = 4 on q and v as in the paper's GPT-3 runs);
- NVIDIA's Megatron-Bridge performance summary (NVIDIA-NeMo/Megatron-Bridge@067f987d
  docs/performance-summary-archive.md lines 179 and 191, 26.06 container, Llama 3 70B on
  DGX-H100, FP8, sequence 4096, micro-batch 1, global batch 32): SFT on 32 GPUs at tp 4 ×
  pp 4 × vp 5, 1,638 tokens/s per GPU; LoRA on 8 GPUs at tp 2 × pp 4 × vp 20, 2,643.
  Copied from /work/shared/data/megatron-bridge-4-models.json (its ``id`` fields below).
  Not published in the table and assumed: ZeRO-1 (Megatron's distributed optimizer), no
  recomputation, LoRA rank 32 on every linear layer (Megatron-Bridge's LoRA defaults).

Each run goes through ``estimate()`` as a scenario a user would type, so the figures are
the app's own.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from llm_planner.core.composition.estimate import estimate
from llm_planner.core.composition.scenario import default_scenario
from llm_planner.core.primitives.gpus import get_gpu
from llm_planner.core.primitives.presets import get_preset


@dataclass(frozen=True)
class FineTuningRun:
    id: str
    label: str
    preset: str
    gpu: str
    gpus: int
    tp: int
    pp: int
    v: int
    seq_len: int
    global_batch: int
    compute_dtype: str
    lora_rank: int | None
    lora_targets: tuple[str, ...] | None
    measured_tokens_per_s_per_gpu: float | None
    source: str


MEGATRON_BRIDGE = (
    FineTuningRun(
        "mbridge-26.06-sft-LLAMA3_70B-DGX-H100-32g-FP8-tp4pp4cp1vp5epNonembs1gbs32-primary-L179",
        "Llama 3 70B SFT, 32 H100, FP8",
        "llama-3.1-70b",
        "h100-sxm",
        32,
        4,
        4,
        5,
        4096,
        32,
        "fp8",
        None,
        None,
        1638.0,
        "NVIDIA-NeMo/Megatron-Bridge@067f987d docs/performance-summary-archive.md line 179",
    ),
    FineTuningRun(
        "mbridge-26.06-lora-LLAMA3_70B-DGX-H100-8g-FP8-tp2pp4cp1vp20epNonembs1gbs32-primary-L191",
        "Llama 3 70B LoRA, 8 H100, FP8",
        "llama-3.1-70b",
        "h100-sxm",
        8,
        2,
        4,
        20,
        4096,
        32,
        "fp8",
        32,
        None,
        2643.0,
        "NVIDIA-NeMo/Megatron-Bridge@067f987d docs/performance-summary-archive.md line 191",
    ),
)

LORA_PAPER = (
    FineTuningRun(
        "gpt3-175b-full",
        "GPT-3 175B full fine-tuning, 64 A100",
        "gpt-3-175b",
        "a100-sxm4-80gb",
        64,
        8,
        8,
        1,
        2048,
        64,
        "bf16",
        None,
        None,
        None,
        "arXiv:2106.09685 section 4.2",
    ),
    FineTuningRun(
        "gpt3-175b-lora",
        "GPT-3 175B LoRA r 4 on q, v, 64 A100",
        "gpt-3-175b",
        "a100-sxm4-80gb",
        64,
        8,
        8,
        1,
        2048,
        64,
        "bf16",
        4,
        ("q", "v"),
        None,
        "arXiv:2106.09685 section 4.2",
    ),
)
LORA_PAPER_SPEEDUP = 1.25
"""Hu et al. 2021 section 4.2: LoRA trains GPT-3 175B 25% faster than full fine-tuning."""


def priced(run: FineTuningRun, *, qlora: bool = False) -> dict[str, Any]:
    """tokens/s per GPU, MFU and HFU of the run as the app prices it."""
    sc = default_scenario()
    training: dict[str, Any] = {
        "seq_len": run.seq_len,
        "micro_batch": 1,
        "recompute": "none",
        "stack": "megatron",
        "lora_rank": run.lora_rank,
        "qlora": qlora,
    }
    if run.lora_targets is not None:
        training["lora_targets"] = run.lora_targets
    schedule = {"schedule": "interleaved", "interleave_chunks": run.v} if run.v > 1 else {}
    scenario = sc.model_copy(
        update={
            "model": sc.model.model_copy(
                update={
                    "preset_id": run.preset,
                    "architecture": get_preset(run.preset).architecture,
                }
            ),
            "gpu": get_gpu(run.gpu),
            "num_gpus": run.gpus,
            "compute": sc.compute.model_copy(update={"compute_dtype": run.compute_dtype}),
            "training": sc.training.model_validate({**sc.training.model_dump(), **training}),
            "parallelism": sc.parallelism.model_copy(
                update={
                    "tp": run.tp,
                    "pp": run.pp,
                    "zero_stage": 1,
                    "global_batch": run.global_batch,
                    **schedule,
                }
            ),
        }
    )
    par = estimate(scenario, suggest=False).parallelism
    return {
        "tokens_per_s_per_gpu": par.tokens_per_s / par.gpus,
        "mfu": par.mfu,
        "hfu": par.hfu,
    }
