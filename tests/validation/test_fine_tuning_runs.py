"""LoRA against full fine-tuning where NVIDIA measured both (issue 31 item 2;
``fine_tuning.py`` states the sources and the inputs they leave out)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

HERE = Path(__file__).resolve().parent


def _load(name: str, path: Path) -> ModuleType:
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


ft = _load("llm_planner_fine_tuning_runs", HERE / "fine_tuning.py")


def test_megatron_bridge_lora_and_sft_rows_within_their_reached_errors() -> None:
    """Llama 3 70B on H100, FP8: SFT measured 1,638 tokens/s per GPU, LoRA 2,643. Reached:
    SFT +9.4% (≤ 10%), LoRA −2.7% (≤ 5%; −11.9% before LoRA was priced as what it runs)."""
    sft, lora = (ft.priced(run) for run in ft.MEGATRON_BRIDGE)
    assert abs(sft["tokens_per_s_per_gpu"] / 1638.0 - 1.0) <= 0.10
    assert abs(lora["tokens_per_s_per_gpu"] / 2643.0 - 1.0) <= 0.05


def test_lora_is_priced_faster_than_full_fine_tuning_as_measured() -> None:
    """NVIDIA's rows: LoRA 2,643 ÷ SFT 1,638 = 1.61× per GPU; the LoRA paper: 1.25× on
    GPT-3 175B. Before issue 31 the app priced LoRA as full training (1.02× on GPT-3, the
    gradient traffic only); now it must say at least 1.25×, and HFU (executed FLOPs) lower
    for LoRA than the MFU count (6·P) it shares with full training."""
    full, lora = (ft.priced(run) for run in ft.LORA_PAPER)
    assert lora["tokens_per_s_per_gpu"] / full["tokens_per_s_per_gpu"] >= ft.LORA_PAPER_SPEEDUP
    assert lora["hfu"] < lora["mfu"]
    qlora = ft.priced(ft.LORA_PAPER[1], qlora=True)
    assert qlora["tokens_per_s_per_gpu"] < lora["tokens_per_s_per_gpu"]
