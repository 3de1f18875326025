"""NVIDIA's Megatron-Bridge performance recipes against the app's step-time model (issue 27).

Data: ``/work/shared/data/megatron-bridge-4-models.json`` (or ``MEGATRON_BRIDGE_PATH``): 86
published rows of NVIDIA-NeMo/Megatron-Bridge@067f987d docs/performance-summary-archive.md
(NeMo containers 25.09-26.06; each row's ``source`` gives the file and line): Llama 3 8B and
70B, DeepSeek-V3 and Qwen3-30B-A3B on H100, B200, B300, GB200 and GB300, in BF16, FP8
(tensor-wise current scaling), MXFP8 and NVFP4, with their layouts (tp, pp, vp, cp, ep; dp
inferred as GPUs/(tp·pp·cp)), micro and global batch, sequence length and measured tokens/s
per GPU. Releases re-measure the same setups: rows with one layout are repeats.

Every row is stated as the scenario a user would type (:func:`scenario_of`) and priced by
``estimate()``, the arithmetic ``llm-planner report`` prints:

- model: the app's preset of the same architecture (Llama 3 8B/70B → the Llama 3.1 presets,
  whose layers, widths and vocabulary are Llama 3's; DeepSeek-V3 and Qwen3-30B-A3B their own);
- GPU: the catalog's entry for the row's system (``GPU_OF``); GPUs per node as the row
  states (4 per GB200/GB300 compute tray, 8 per HGX board);
- layout: the row's tp, pp, cp, ep, interleaved 1F1B with ``vp`` chunks where vp > 1, dp from the
  GPU count; sequence parallelism wherever tp > 1 (Megatron-Bridge's recipes turn it on with
  tensor parallelism); ZeRO-3 where the row ran Megatron-FSDP (the table's FSDP column, or
  the recipe's ``ddp.use_megatron_fsdp``), else ZeRO-1 (Megatron's distributed optimizer,
  every recipe's ``use_distributed_optimizer``);
- training: ``stack = "megatron"``, the row's sequence length and micro-batch; recomputation
  and LoRA as the recipe that ran the row sets them (``megatron_bridge_recipes.py``: one
  function per model, task, GPU count, system and precision in
  NVIDIA-NeMo/Megatron-Bridge@067f987d ``src/megatron/bridge/perf_recipes/``, read with its
  base recipe and helpers): Llama 3 8B on H100 full recomputation of 5 layers per stage
  (block), DeepSeek-V3 selective with its ``recompute_modules``, the others none; LoRA rows
  rank 16 on the fused q, k, v projection (``llama3_70b_peft_config``: dim 16;
  ``peft.target_modules = ["linear_qkv"]``); every recipe's 16-bit main gradients
  (``_benchmark_common``: ``grad_reduce_in_fp32 = False`` → ``grad_reduce_16bit``) and, in
  the FP8/FP4 recipes, the weights kept in FP8/FP4 (``fp8_param_gather`` /
  ``fp4_param_gather`` → ``low_precision_params``); the DeepSeek-V3 recipes' precision-aware
  optimizer with bf16 moments (``optimizer = "adamw_bf16_moments"``); the Llama 3 70B
  Megatron-FSDP recipes' CPU activation offloading (``model.cpu_offloading_num_layers`` →
  ``activation_offload_layers``); the DeepSeek-V3 and Qwen3 MXFP8 recipes' MoE paged stash
  (``moe_paged_stash`` with ``moe_paged_stash_buffer_size_factor_cuda = 1.2`` →
  ``moe_paged_stash = 1.2``, the 26.06 rows: :data:`PAGED_STASH_RELEASES`); for the MoE
  rows the CUDA graphs and the all-to-all overlap their own release ran
  (``megatron_bridge_recipes.RELEASES``: the Megatron-Bridge tag each NeMo container
  shipped, read in its ``scripts/performance`` presets:
  ``RELEASE_CUDA_GRAPHS`` → ``training.cuda_graphs``, ``RELEASE_A2A_OVERLAP`` →
  ``parallelism.ep_overlap`` at the share of micro-batches the combined 1F1B schedule
  pairs, :func:`a2a_overlap_share`), the Llama 3 rows eager. What the recipes set
  that the app cannot state is listed on docs/ACCURACY.md (:data:`NOT_EXPRESSED`); MoE rows
  with the default load imbalance 1 (the table's footnote: token distribution
  force-balanced), dropless, or with a capacity factor of 1 where the row is labelled
  "tokendrop" (:data:`TOKENDROP_CAPACITY_FACTOR`);
- precision: the row's recipe as the app's precision choice (``PRECISION_OF``: FP8-CS →
  ``fp8_current``, MXFP8 and the 25.09 "32x32 block" rows → ``mxfp8``, NVFP4 → ``nvfp4``,
  BF16 → ``mixed_bf16``) at ``compute_dtype = "bf16"``: the recipe runs the layers' GEMMs at
  the GPU's FP8/FP4 peak and the rest at BF16's. (Until issue 27 step 3 every FP8 row was
  stated as ``compute_dtype = "fp8"``, every GEMM and attention at the FP8 peak, and NVFP4
  was refused.)

A row is refused when the scenario cannot be built or priced (the reason is kept). Error:
predicted ÷ measured tokens/s per GPU − 1 (positive = optimistic), as on the rest of
docs/ACCURACY.md.

Used by ``test_megatron_bridge.py`` and ``scripts/gen_accuracy.py`` (the page's section).
"""

from __future__ import annotations

import importlib.util
import json
import os
import statistics
import sys
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

from llm_planner.core.composition.estimate import estimate
from llm_planner.core.composition.scenario import default_scenario
from llm_planner.core.inputs.scenario import Scenario
from llm_planner.core.primitives.gpus import get_gpu
from llm_planner.core.primitives.presets import get_preset


def _sibling(name: str, file: str) -> ModuleType:
    """``tests/validation/<file>`` imported once under ``name`` (the folder is not a package;
    as scripts/gen_accuracy.py loads this module)."""
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, Path(__file__).with_name(file))
        assert spec is not None
        assert spec.loader is not None
        sys.modules[name] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(sys.modules[name])
    return sys.modules[name]


recipes = _sibling("llm_planner_megatron_bridge_recipes", "megatron_bridge_recipes.py")

SHARED_PATH = Path("/work/shared/data/megatron-bridge-4-models.json")
DEFAULT_PATH = Path(__file__).with_name("megatron-bridge-4-models.json")
"""A copy of the shared file kept next to this module so CI has it."""

PRESET_OF = {
    "llama3_8b": "llama-3.1-8b",
    "llama3_70b": "llama-3.1-70b",
    "deepseekv3": "deepseek-v3",
    "qwen3_30b_a3b": "qwen3-30b-a3b",
}
"""Table model name (its leading word, lower case: releases spell it differently) → preset."""

GPU_OF = {
    "H100-SXM": "h100-sxm",
    "H100-SXM-80GB": "h100-sxm",
    "B200": "b200",
    "B300": "b300",
    "GB200 (NVL72 rack)": "gb200",
    "GB300 (NVL72 rack)": "gb300",
}

PRECISION_OF = {
    "bf16": "mixed_bf16",
    "fp8_cs": "fp8_current",
    "mxfp8": "mxfp8",
    "nvfp4": "nvfp4",
}
"""The table's recipe → the app's precision choice (core/quantities/optimizers.py):
Transformer Engine's recipes by name; BF16 as mixed bf16, which Megatron launches with fp32
main gradients."""

TOKENDROP_CAPACITY_FACTOR = 1.0
"""The capacity factor of the rows labelled "tokendrop" (assumed: the table does not print it;
1.0 with padding to capacity is Megatron-Bridge's token-dropping setting as the label is
used). The other MoE rows are dropless, Megatron-Core's default. Every MoE row runs with the
load forced balanced (the page's footnote), the app's default load imbalance of 1."""

LORA_RANK = 32
"""The LoRA rank for a LoRA row whose recipe sets none (every LoRA recipe here sets 16)."""

PAGED_STASH_CUDA_FACTOR = 1.2
"""The GPU stash buffer of the recipes with ``moe_paged_stash = True``
(``deepseek/common.py:_enable_deepseek_full_iteration_mxfp8``,
``qwen/common.py:_enable_hybridep_full_iteration_mxfp8``:
``moe_paged_stash_buffer_size_factor_cuda = 1.2``, ``..._cpu = 1.0``) →
``training.moe_paged_stash``."""

PAGED_STASH_RELEASES = frozenset({"26.06"})
"""The releases whose rows ran the paged stash where the recipe sets it: it first appears in
v0.5.0, 26.06 (megatron_bridge_recipes.RELEASES: v0.3.0 and v0.4.0's presets have none)."""

NOT_EXPRESSED = (
    "the MoE paged stash's transients (the capacity-sized tensors, × "
    "`moe_expert_rank_capacity_factor` 1.5, of the layer being stashed or reloaded) and its "
    "host buffer (`moe_paged_stash_buffer_size_factor_cpu = 1.0`, pinned host memory, used "
    "only when the GPU pages overflow); its GPU buffer is stated (`training.moe_paged_stash`)",
    'the HybridEP/DeepEP flex dispatcher (`moe_token_dispatcher_type = "flex"`, stated as '
    "the all-to-all dispatcher) and its per-rank capacity factor 1.5",
    "FP8 attention (`fp8_dot_product_attention`: the 26.06 MXFP8 presets of Qwen3 on "
    "B300/GB200/GB300 and DeepSeek-V3 on GB300, megatron_bridge_recipes."
    "RELEASE_FP8_ATTENTION; the app runs attention at BF16's rate) and the 26.06 presets' "
    "CuTe-DSL fused grouped MLP (`cutedsl_fused_grouped_mlp`)",
    "the Llama 3 rows' CUDA graphs (their releases' presets not read: priced eager, as "
    "before; the MoE rows run their release's, megatron_bridge_recipes.RELEASE_CUDA_GRAPHS). "
    "With their release's `moe_router` graphs the dropless micro-batch-1 Qwen3 rows on 8 "
    "B200 (25.11, 26.02), right eager (+4%, +0%), go to +18% and +13%: the per-kernel launch "
    "floor credits the router's 24 captured launches a layer, the measured runs show no such "
    "gain. The dispatcher's host sync per MoE layer (priced, "
    "core/sections/parallelism/step_time_host.py) does not explain it: those rows are "
    "host-bound on both sides of the sync",
)
"""What the recipes set that the scenario cannot state (the page lists them)."""


def data_path() -> Path:
    env = os.environ.get("MEGATRON_BRIDGE_PATH")
    if env:
        return Path(env)
    return DEFAULT_PATH if DEFAULT_PATH.exists() else SHARED_PATH


@cache
def load() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(data_path().read_text(encoding="utf-8"))
    return data


def recipe_of(precision: str) -> str:
    """The table's precision label → one of bf16, fp8_cs (tensor-wise current scaling),
    mxfp8 (MX / 32×32 block scales), nvfp4. The 25.09 table's plain "FP8" rows are the rows
    25.11 labels FP8-CS (the data file's own note)."""
    p = precision.upper()
    if p.startswith("BF16"):
        return "bf16"
    if p.startswith("NVFP4"):
        return "nvfp4"
    if "MX" in p:
        return "mxfp8"
    if p.startswith("FP8"):
        return "fp8_cs"
    raise ValueError(f"unknown precision label {precision!r}")


def model_key(name: str) -> str:
    return name.split(maxsplit=1)[0].lower()


def subgroups(row: dict[str, Any]) -> tuple[str, ...]:
    """The issue's subgroups a row belongs to: one by model and precision, one by GPU."""
    key = model_key(row["model"]["name"])
    if key == "qwen3_30b_a3b":
        kind = "fine-grained MoE"
    elif key == "deepseekv3":
        kind = "large MoE"
    elif recipe_of(row["precision"]) == "bf16":
        kind = "dense BF16"
    else:
        kind = "dense FP8/FP4"
    era = "Hopper" if row["gpu"]["type"].startswith("H100") else "Blackwell"
    return (kind, era)


SUBGROUPS = ("dense BF16", "dense FP8/FP4", "fine-grained MoE", "large MoE", "Hopper", "Blackwell")


def recompute_of(rec: recipes.Recipe) -> dict[str, Any]:
    """The recipe's recomputation as the app's ``training`` fields: Megatron's
    ``recompute_granularity`` → ``recompute`` (None → ``none``), ``recompute_method`` /
    ``recompute_num_layers`` → ``recompute_method`` / ``recompute_layers``,
    ``recompute_modules`` → ``recompute_modules`` (unset: Megatron's default
    ``["core_attn"]``). Selective with the modules set empty (the DeepSeek-V3 GB300 MXFP8
    recipe) recomputes nothing: ``none``."""
    if rec.recompute == "full":
        return {
            "recompute": "full",
            "recompute_method": rec.method or "uniform",
            "recompute_layers": rec.layers,
        }
    if rec.recompute == "selective" and rec.modules != ():
        return {"recompute": "selective", "recompute_modules": rec.modules or ("core_attn",)}
    return {"recompute": "none"}


def zero_stage_of(row: dict[str, Any], rec: recipes.Recipe) -> int:
    """3 where the row ran Megatron-FSDP, as the table's FSDP column says (25.11 to 26.04) or
    the recipe sets (``ddp.use_megatron_fsdp`` with ``optim_grads_params``: parameters,
    gradients and optimizer state all sharded over the data-parallel group, ZeRO-3); else
    1 (Megatron's distributed optimizer, every recipe's ``use_distributed_optimizer``)."""
    fsdp = row["layout"].get("fsdp_column")
    return 3 if rec.megatron_fsdp or (fsdp is not None and int(fsdp) > 0) else 1


def a2a_overlap_share(row: dict[str, Any]) -> float:
    """The share of the expert-parallel all-to-all hidden when the release set
    ``overlap_moe_expert_parallel_comm`` (NVIDIA/Megatron-LM@d98e8a64
    megatron/core/model_parallel_config.py: "Overlap EP A2A communications with independent
    computations of different micro-batches in 1f1b phase"; pipeline_parallel/schedules.py
    ``combined_1f1b_schedule_for_no_pipelining``, combined_1f1b.py: a micro-batch's forward
    runs merged with the previous one's backward, each one's all-to-alls under the other's
    compute). The micro-batches in a merged forward-backward pair: m − 1 of m without a
    pipeline (the first forward and the last backward run alone), m − (pp − 1) of m with one
    (1F1B's steady phase; warm-up and cool-down run alone), m = global batch ÷ (micro-batch
    × dp). Assumed: each all-to-all fits under the other micro-batch's compute (it does in
    every such row: the all-to-all is under a third of the compute)."""
    lay = row["layout"]
    tp, pp, cp = int(lay["tp"]), int(lay["pp"]), int(lay["cp"] or 1)
    dp = int(row["gpu"]["count"]) // (tp * pp * cp)
    m = int(row["global_batch"]) // (int(row["micro_batch"]) * dp)
    paired = m - 1 if pp == 1 else m - (pp - 1)
    return max(paired, 0) / m


def mtp_layers_of(row: dict[str, Any]) -> int:
    """The multi-token prediction depths the row trained (``training.mtp_layers``): the 25.11
    table names its DeepSeek-V3 rows "w/ MTP" / "w/o MTP"; every other DeepSeek-V3 row ran
    its release's base recipe, which sets ``mtp_num_layers = 1`` (Megatron-Bridge
    ``src/megatron/bridge/recipes/deepseek/deepseek_v3.py`` at each tag of
    :data:`megatron_bridge_recipes.RELEASES`: v0.1.0rc3 and v0.2.0 ``mtp_num_layers:
    Optional[int] = 1``, v0.3.0 the same, v0.4.0 and v0.5.0 ``cfg.model.mtp_num_layers = 1``;
    no ``scripts/performance`` preset of those tags sets it). NVIDIA's published model
    TFLOP/s agree: per token 260 GFLOP on every such row, 250 on the "w/o MTP" ones.
    Other models: 0."""
    name = row["model"]["name"]
    if model_key(name) != "deepseekv3":
        return 0
    return 0 if "w/o mtp" in name.lower() else 1


def scenario_of(row: dict[str, Any]) -> Scenario:
    """The row as its recipe states it (the module docstring lists each choice)."""
    recipe = recipe_of(row["precision"])
    _, rec = recipes.recipe_for(row, recipe)
    preset = PRESET_OF[model_key(row["model"]["name"])]
    lay = row["layout"]
    tp, pp, cp = int(lay["tp"]), int(lay["pp"]), int(lay["cp"] or 1)
    ep = int(lay["ep"] or 1)
    vp = int(lay["vp"] or 1)
    sc = default_scenario()
    training: dict[str, Any] = {
        "seq_len": int(row["seq_len"]),
        "micro_batch": int(row["micro_batch"]),
        "stack": "megatron",
        "precision": PRECISION_OF[recipe],
        # every perf recipe: _benchmark_common's grad_reduce_in_fp32 = False; the FP8/FP4
        # mixed-precision configs' fp8_param_gather / fp4_param_gather = True
        "grad_reduce_16bit": True,
        "low_precision_params": recipe != "bf16",
        **recompute_of(rec),
    }
    if rec.cpu_offload_layers:  # model.cpu_offloading_num_layers (activations only)
        training["activation_offload_layers"] = rec.cpu_offload_layers
    if rec.paged_stash and recipes.release_of(row) in PAGED_STASH_RELEASES:
        # moe_paged_stash with moe_paged_stash_buffer_size_factor_cuda
        training["moe_paged_stash"] = PAGED_STASH_CUDA_FACTOR
    if rec.bf16_moments:  # the precision-aware optimizer (DeepSeek-V3 recipes)
        training["optimizer"] = "adamw_bf16_moments"
    if row["task"] == "lora":
        training["lora_rank"] = rec.lora_rank or LORA_RANK
        if rec.lora_targets is not None:
            training["lora_targets"] = rec.lora_targets
    mtp = mtp_layers_of(row)
    if mtp:
        training["mtp_layers"] = mtp
    if "tokendrop" in row["model"]["name"].lower():
        training["moe_capacity_factor"] = TOKENDROP_CAPACITY_FACTOR
    graphs = recipes.release_cuda_graphs(row)
    if graphs is not None:
        training["cuda_graphs"] = graphs
    schedule = {"schedule": "interleaved", "interleave_chunks": vp} if vp > 1 else {}
    if recipes.release_a2a_overlap(row):
        schedule["ep_overlap"] = a2a_overlap_share(row)
    return sc.model_copy(
        update={
            "model": sc.model.model_copy(
                update={"preset_id": preset, "architecture": get_preset(preset).architecture}
            ),
            "gpu": get_gpu(GPU_OF[row["gpu"]["type"]]),
            "num_gpus": int(row["gpu"]["count"]),
            "compute": sc.compute.model_copy(update={"compute_dtype": "bf16"}),
            "training": sc.training.model_validate({**sc.training.model_dump(), **training}),
            "parallelism": sc.parallelism.model_validate(
                {
                    **sc.parallelism.model_dump(),
                    "gpus_per_node": int(row["gpu"]["per_node"]),
                    "tp": tp,
                    "pp": pp,
                    "cp": cp,
                    "dp": None,
                    "expert_parallel": ep,
                    "sequence_parallel": tp > 1,
                    "zero_stage": zero_stage_of(row, rec),
                    "global_batch": int(row["global_batch"]),
                    **schedule,
                }
            ),
        }
    )


@dataclass(frozen=True)
class BridgeRow:
    """One published row with the app's price, or the reason it cannot be stated."""

    id: str
    model: str
    gpu: str
    recipe: str
    layout: str
    groups: tuple[str, ...]
    measured: float
    predicted: float | None
    refused: str | None
    peak_bytes: float | None = None
    """The app's peak memory per GPU for the row as its recipe states it."""
    memory_bytes: float | None = None
    """The GPU's memory (the catalog's, bytes)."""
    function: str = ""
    """The Megatron-Bridge recipe function that ran the row (megatron_bridge_recipes.py)."""
    layout_differs: bool = False
    """The recipe at 067f987d runs another layout or batch than the row (an older release)."""
    zero_stage: int = 1
    """The ZeRO stage the row is stated with (3: Megatron-FSDP)."""

    @property
    def fits(self) -> bool | None:
        """Whether the app's memory model fits the row on its GPU (NVIDIA ran every row, so
        False is a miss of the memory model)."""
        if self.peak_bytes is None or self.memory_bytes is None:
            return None
        return self.peak_bytes <= self.memory_bytes

    @property
    def error(self) -> float | None:
        """Predicted ÷ measured tokens/s per GPU − 1: positive when optimistic."""
        if self.predicted is None:
            return None
        return self.predicted / self.measured - 1.0


def _layout(row: dict[str, Any]) -> str:
    lay = row["layout"]
    parts = [f"{k}{lay[k]}" for k in ("tp", "pp", "vp", "cp", "ep", "dp") if lay.get(k)]
    return " ".join(parts) + f" mb{row['micro_batch']} gb{row['global_batch']}"


def price(row: dict[str, Any]) -> BridgeRow:
    predicted: float | None = None
    refused: str | None = None
    peak: float | None = None
    memory: float | None = None
    function, rec = recipes.recipe_for(row, recipe_of(row["precision"]))
    try:
        sc = scenario_of(row)
        par = estimate(sc, suggest=False).parallelism
        predicted = par.tokens_per_s / par.gpus
        peak, memory = par.peak_bytes, sc.gpu.memory_bytes
    except (ValueError, KeyError) as exc:
        refused = str(exc).splitlines()[0]
    return BridgeRow(
        id=row["id"],
        model=model_key(row["model"]["name"]),
        gpu=GPU_OF.get(row["gpu"]["type"], row["gpu"]["type"]),
        recipe=recipe_of(row["precision"]),
        layout=_layout(row),
        groups=subgroups(row),
        measured=float(row["measured"]["tokens_per_s_per_gpu"]),
        predicted=predicted,
        refused=refused,
        peak_bytes=peak,
        memory_bytes=memory,
        function=function,
        layout_differs=recipes.layout_differs(row, rec),
        zero_stage=zero_stage_of(row, rec),
    )


@cache
def bridge_rows() -> tuple[BridgeRow, ...]:
    return tuple(price(r) for r in load()["rows"])


@dataclass(frozen=True)
class Stats:
    rows: int
    priced: int
    median_abs_error: float | None
    p90_abs_error: float | None
    median_signed_error: float | None


def _p90(values: list[float]) -> float:
    """The 90th percentile, linear between order statistics (numpy's default)."""
    xs = sorted(values)
    k = 0.9 * (len(xs) - 1)
    lo = int(k)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


def stats(rows: list[BridgeRow] | tuple[BridgeRow, ...]) -> Stats:
    errs = [r.error for r in rows if r.error is not None]
    if not errs:
        return Stats(len(rows), 0, None, None, None)
    absolute = [abs(e) for e in errs]
    return Stats(
        len(rows), len(errs), statistics.median(absolute), _p90(absolute), statistics.median(errs)
    )


def fitting(rows: list[BridgeRow] | tuple[BridgeRow, ...]) -> int:
    """Rows whose peak per GPU the app's memory model fits in the GPU's memory."""
    return sum(r.fits is True for r in rows)


def refusals(rows: tuple[BridgeRow, ...]) -> dict[str, int]:
    """Refusal reason → rows refused for it."""
    out: dict[str, int] = {}
    for r in rows:
        if r.refused is not None:
            out[r.refused] = out.get(r.refused, 0) + 1
    return out
