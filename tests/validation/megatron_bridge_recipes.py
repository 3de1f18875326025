"""The Megatron-Bridge performance recipe behind each published row (issue 27).

The table (docs/performance-summary-archive.md) publishes a row's layout, batch, sequence and
precision, not its memory settings; the recipes that produced it sit in the same repository
at the same commit, ``NVIDIA-NeMo/Megatron-Bridge@067f987d`` (:data:`SOURCE`), one function per
model, task, GPU count, system and precision, named
``{model}_{task}_{N}gpu_{system}_{precision}_config`` in
``src/megatron/bridge/perf_recipes/{llama,deepseek,qwen}/{system}/*.py``. Each function starts
from a base recipe (``src/megatron/bridge/recipes/…``: ``llama3_70b_pretrain_config``,
``deepseek_v3_pretrain_config``, ``qwen3_30b_a3b_pretrain_config``, ``llama3_70b_peft_config``,
…; none of them recomputes, the 8B/70B Llama ones keep Megatron's distributed optimizer, no
FSDP), then sets the row's layout and its memory settings, and calls the shared helpers
(``perf_recipes/_common.py:_benchmark_common``; ``llama/common.py:_llama_benchmark_common``;
``deepseek/common.py:_deepseek_v3_common`` sets ``recompute_granularity = "selective"``,
``_enable_deepseek_precision_aware_optimizer`` / the base recipe the bf16 Adam moments,
``_enable_deepseek_full_iteration_mxfp8`` the HybridEP flex dispatcher, full-iteration CUDA
graphs and the MoE paged stash). :data:`RECIPES` holds what each function sets, read from those
files (the function, its base and its helpers, in call order).

Releases: the 26.02-26.06 rows were run with these recipes; the 25.09 and 25.11 rows predate
them (the recipes were then scripts under ``scripts/performance``), and where the recipe's
layout is not the row's (:func:`layout_differs`: e.g. Llama 3 70B on 64 H100 at gbs 128 in
25.09/25.11, 256 now; DeepSeek-V3 on B200 at pp 16 ep 8 then, pp 8 vp 2 ep 32 now) the
recipe at 067f987d may also set other memory options than the run did. The recipe at 067f987d
is the stated source for every row all the same; the row's own published columns (tp, pp, vp,
cp, ep, micro and global batch, sequence, and the FSDP column where the table has one) win
over the recipe's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

SOURCE = "NVIDIA-NeMo/Megatron-Bridge@067f987df03b8355b03192d88d70f1709fedf51a"
"""The repository and commit of the table and of the recipes read here."""

PERF_RECIPES = "src/megatron/bridge/perf_recipes/"


@dataclass(frozen=True)
class Recipe:
    """What one performance-recipe function sets that bears on memory and step time.

    ``file``: under ``src/megatron/bridge/perf_recipes/``. ``layout``: the recipe's (tp, pp,
    vp, ep, micro batch, global batch), vp and ep 1 where unset. ``recompute``: Megatron's
    ``recompute_granularity`` (``"none"`` for None); ``method``/``layers``: its
    ``recompute_method``/``recompute_num_layers``; ``modules``: ``recompute_modules`` (None:
    unset, Megatron's default ``["core_attn"]`` under selective; ``()``: set empty, so
    selective recomputes nothing). ``megatron_fsdp``: ``ddp.use_megatron_fsdp`` with
    ``data_parallel_sharding_strategy = "optim_grads_params"`` (parameters, gradients and
    optimizer state sharded: ZeRO-3) and ``fsdp_double_buffer``. ``cpu_offload_layers``:
    ``model.cpu_offloading_num_layers`` with ``cpu_offloading = True``,
    ``cpu_offloading_weights = False`` (activations only). ``bf16_moments``: the
    precision-aware optimizer with ``exp_avg_dtype = exp_avg_sq_dtype = bfloat16`` and
    ``main_grads_dtype = bfloat16``. ``dispatcher``: ``moe_token_dispatcher_type`` (MoE
    models). ``paged_stash``: ``moe_paged_stash`` (MoE expert activations stashed in a paged
    buffer, part of it in host memory). ``cuda_graphs``: ``cuda_graph_impl``. ``lora_*``:
    ``peft.dim`` (the base ``llama3_70b_peft_config`` sets 16, alpha 32) and
    ``peft.target_modules = ["linear_qkv"]`` (the fused q, k, v projection).

    Every FP8 recipe (``_perf_precision("fp8_cs" | "fp8_mx")``: Megatron-Bridge's
    ``bf16_with_fp8_current_scaling_mixed`` / ``bf16_with_mxfp8_mixed``) sets
    ``fp8_param_gather = True`` (so ``fp8_param``: the model's weights are held in FP8, no
    16-bit copy), NVFP4 (``bf16_with_nvfp4_mixed``) ``fp4_param_gather = True``; and
    ``_benchmark_common`` sets ``grad_reduce_in_fp32 = False`` for all (16-bit main
    gradients). Neither depends on the row, so they are not repeated per recipe.
    """

    file: str
    layout: tuple[int, int, int, int, int, int]
    recompute: str = "none"
    method: str | None = None
    layers: int | None = None
    modules: tuple[str, ...] | None = None
    megatron_fsdp: bool = False
    cpu_offload_layers: int = 0
    bf16_moments: bool = False
    dispatcher: str | None = None
    paged_stash: bool = False
    cuda_graphs: str = "none"
    lora_rank: int | None = None
    lora_targets: tuple[str, ...] | None = None

    def where(self, function: str) -> str:
        """File and function, citable."""
        return f"{SOURCE}:{PERF_RECIPES}{self.file}:{function}_config"


_QKV = ("q", "k", "v")

RECIPES: dict[str, Recipe] = {
    # Llama 3 8B pretrain (base llama3_8b_pretrain_config: no recompute, distributed optimizer)
    "llama3_8b_pretrain_8gpu_h100_fp8cs": Recipe(
        "llama/h100/llama3.py", (1, 1, 1, 1, 1, 128), "full", method="block", layers=5
    ),
    "llama3_8b_pretrain_8gpu_b200_fp8cs": Recipe(
        "llama/b200/llama3.py", (1, 1, 1, 1, 2, 128), cuda_graphs="local"
    ),
    "llama3_8b_pretrain_8gpu_b200_fp8mx": Recipe(
        "llama/b200/llama3.py", (1, 1, 1, 1, 2, 128), cuda_graphs="local"
    ),
    "llama3_8b_pretrain_8gpu_gb200_fp8cs": Recipe(
        "llama/gb200/llama3.py", (1, 1, 1, 1, 2, 128), cuda_graphs="local"
    ),
    "llama3_8b_pretrain_8gpu_gb200_fp8mx": Recipe(
        "llama/gb200/llama3.py", (1, 1, 1, 1, 2, 128), cuda_graphs="local"
    ),
    "llama3_8b_pretrain_8gpu_gb300_fp8cs": Recipe(
        "llama/gb300/llama3.py", (1, 1, 1, 1, 4, 128), cuda_graphs="local"
    ),
    "llama3_8b_pretrain_8gpu_gb300_fp8mx": Recipe(
        "llama/gb300/llama3.py", (1, 1, 1, 1, 4, 128), cuda_graphs="local"
    ),
    # Llama 3 70B pretrain (base llama3_70b_pretrain_config)
    "llama3_70b_pretrain_64gpu_h100_fp8cs": Recipe("llama/h100/llama3.py", (4, 8, 5, 1, 1, 256)),
    "llama3_70b_pretrain_64gpu_gb200_fp8cs": Recipe(
        "llama/gb200/llama3.py", (1, 1, 1, 1, 2, 256), megatron_fsdp=True, cpu_offload_layers=40
    ),
    "llama3_70b_pretrain_64gpu_gb300_fp8cs": Recipe(
        "llama/gb300/llama3.py", (1, 1, 1, 1, 2, 256), megatron_fsdp=True, cpu_offload_layers=20
    ),
    "llama3_70b_pretrain_64gpu_gb200_fp8mx": Recipe("llama/gb200/llama3.py", (2, 4, 5, 1, 1, 256)),
    "llama3_70b_pretrain_64gpu_gb300_fp8mx": Recipe("llama/gb300/llama3.py", (1, 4, 5, 1, 1, 256)),
    "llama3_70b_pretrain_64gpu_gb200_nvfp4": Recipe(
        "llama/gb200/llama3.py", (2, 4, 5, 1, 1, 256), cuda_graphs="transformer_engine"
    ),
    "llama3_70b_pretrain_64gpu_gb300_nvfp4": Recipe("llama/gb300/llama3.py", (1, 4, 5, 1, 1, 256)),
    # Llama 3 70B SFT (base llama3_70b_sft_config)
    "llama3_70b_sft_32gpu_h100_fp8cs": Recipe(
        "llama/h100/llama3.py", (4, 4, 5, 1, 1, 32), cuda_graphs="transformer_engine"
    ),
    "llama3_70b_sft_32gpu_gb200_fp8cs": Recipe(
        "llama/gb200/llama3.py", (1, 8, 10, 1, 1, 32), cuda_graphs="transformer_engine"
    ),
    "llama3_70b_sft_32gpu_gb200_fp8mx": Recipe(
        "llama/gb200/llama3.py", (1, 8, 10, 1, 1, 32), cuda_graphs="transformer_engine"
    ),
    "llama3_70b_sft_32gpu_gb300_fp8cs": Recipe(
        "llama/gb300/llama3.py", (1, 2, 20, 1, 1, 32), cuda_graphs="transformer_engine"
    ),
    "llama3_70b_sft_32gpu_gb300_fp8mx": Recipe(
        "llama/gb300/llama3.py", (1, 2, 20, 1, 1, 32), cuda_graphs="transformer_engine"
    ),
    # Llama 3 70B LoRA (base llama3_70b_peft_config(peft_scheme="lora"): dim 16, alpha 32)
    "llama3_70b_peft_8gpu_h100_fp8cs": Recipe(
        "llama/h100/llama3.py", (2, 4, 20, 1, 1, 32), lora_rank=16, lora_targets=_QKV
    ),
    "llama3_70b_peft_8gpu_gb200_fp8cs": Recipe(
        "llama/gb200/llama3.py",
        (1, 2, 20, 1, 1, 32),
        cuda_graphs="transformer_engine",
        lora_rank=16,
        lora_targets=_QKV,
    ),
    "llama3_70b_peft_8gpu_gb200_fp8mx": Recipe(
        "llama/gb200/llama3.py",
        (1, 4, 20, 1, 1, 32),
        cuda_graphs="transformer_engine",
        lora_rank=16,
        lora_targets=_QKV,
    ),
    "llama3_70b_peft_8gpu_gb300_fp8cs": Recipe(
        "llama/gb300/llama3.py",
        (1, 2, 20, 1, 1, 32),
        cuda_graphs="transformer_engine",
        lora_rank=16,
        lora_targets=_QKV,
    ),
    "llama3_70b_peft_8gpu_gb300_fp8mx": Recipe(
        "llama/gb300/llama3.py",
        (1, 2, 20, 1, 1, 32),
        cuda_graphs="transformer_engine",
        lora_rank=16,
        lora_targets=_QKV,
    ),
    # DeepSeek-V3 pretrain (base deepseek_v3_pretrain_config, then _deepseek_v3_common:
    # selective granularity, forced load balance; precision-aware optimizer, bf16 moments)
    "deepseek_v3_pretrain_1024gpu_h100_fp8cs": Recipe(
        "deepseek/h100/deepseek_v3.py",
        (2, 8, 4, 64, 1, 16384),
        "selective",
        modules=("mla_up_proj", "mlp"),
        bf16_moments=True,
        dispatcher="alltoall",
    ),
    "deepseek_v3_pretrain_256gpu_b200_fp8cs": Recipe(
        "deepseek/b200/deepseek_v3.py",
        (1, 16, 1, 8, 1, 4096),
        "selective",
        modules=("mla_up_proj",),
        bf16_moments=True,
        dispatcher="alltoall",
    ),
    "deepseek_v3_pretrain_256gpu_b200_fp8mx": Recipe(
        "deepseek/b200/deepseek_v3.py",
        (1, 8, 2, 32, 1, 4096),
        "selective",
        modules=("mla_up_proj", "mlp"),
        bf16_moments=True,
        dispatcher="alltoall",
        cuda_graphs="transformer_engine",
    ),
    "deepseek_v3_pretrain_256gpu_b300_fp8mx": Recipe(
        "deepseek/b300/deepseek_v3.py",
        (1, 8, 2, 8, 1, 4096),
        "selective",
        modules=("mla_up_proj",),
        bf16_moments=True,
        dispatcher="flex",
        paged_stash=True,
        cuda_graphs="full_iteration",
    ),
    "deepseek_v3_pretrain_256gpu_gb200_bf16": Recipe(
        "deepseek/gb200/deepseek_v3.py",
        (1, 4, 4, 64, 1, 4096),
        "selective",
        modules=("mla_up_proj",),
        bf16_moments=True,
        dispatcher="alltoall",
        cuda_graphs="transformer_engine",
    ),
    "deepseek_v3_pretrain_256gpu_gb200_fp8cs": Recipe(
        "deepseek/gb200/deepseek_v3.py",
        (1, 4, 4, 64, 1, 4096),
        "selective",
        modules=("mlp",),
        bf16_moments=True,
        dispatcher="alltoall",
        cuda_graphs="transformer_engine",
    ),
    "deepseek_v3_pretrain_256gpu_gb200_fp8mx": Recipe(
        "deepseek/gb200/deepseek_v3.py",
        (1, 4, 4, 64, 1, 4096),
        "selective",
        modules=("mla_up_proj",),
        bf16_moments=True,
        dispatcher="flex",
        paged_stash=True,
        cuda_graphs="full_iteration",
    ),
    "deepseek_v3_pretrain_256gpu_gb300_bf16": Recipe(
        "deepseek/gb300/deepseek_v3.py",
        (1, 4, 4, 64, 1, 4096),
        "selective",
        modules=("moe_act",),
        bf16_moments=True,
        dispatcher="alltoall",
        cuda_graphs="transformer_engine",
    ),
    "deepseek_v3_pretrain_256gpu_gb300_fp8mx": Recipe(
        "deepseek/gb300/deepseek_v3.py",
        (1, 2, 8, 32, 1, 4096),
        "selective",
        modules=(),
        bf16_moments=True,
        dispatcher="flex",
        paged_stash=True,
        cuda_graphs="full_iteration",
    ),
    # Qwen3-30B-A3B pretrain (base qwen3_30b_a3b_pretrain_config: no recompute)
    "qwen3_30b_a3b_pretrain_16gpu_h100_fp8cs": Recipe(
        "qwen/h100/qwen3_moe.py",
        (1, 1, 1, 16, 1, 1024),
        dispatcher="flex",
        cuda_graphs="transformer_engine",
    ),
    "qwen3_30b_a3b_pretrain_8gpu_b200_fp8cs": Recipe(
        "qwen/b200/qwen3_moe.py",
        (1, 1, 1, 8, 4, 512),
        dispatcher="flex",
        cuda_graphs="transformer_engine",
    ),
    "qwen3_30b_a3b_pretrain_8gpu_b200_fp8mx": Recipe(
        "qwen/b200/qwen3_moe.py",
        (1, 1, 1, 8, 4, 512),
        dispatcher="flex",
        cuda_graphs="transformer_engine",
    ),
    "qwen3_30b_a3b_pretrain_8gpu_b300_fp8mx": Recipe(
        "qwen/b300/qwen3_moe.py",
        (1, 1, 1, 8, 8, 512),
        dispatcher="flex",
        paged_stash=True,
        cuda_graphs="full_iteration",
    ),
    "qwen3_30b_a3b_pretrain_8gpu_gb200_fp8cs": Recipe(
        "qwen/gb200/qwen3_moe.py",
        (1, 1, 1, 8, 4, 512),
        dispatcher="flex",
        cuda_graphs="transformer_engine",
    ),
    "qwen3_30b_a3b_pretrain_8gpu_gb200_fp8mx": Recipe(
        "qwen/gb200/qwen3_moe.py",
        (1, 1, 1, 8, 4, 512),
        dispatcher="flex",
        paged_stash=True,
        cuda_graphs="full_iteration",
    ),
    "qwen3_30b_a3b_pretrain_8gpu_gb300_fp8mx": Recipe(
        "qwen/gb300/qwen3_moe.py",
        (1, 1, 1, 8, 8, 512),
        dispatcher="flex",
        paged_stash=True,
        cuda_graphs="full_iteration",
    ),
}
"""Recipe function (without ``_config``) → what it sets. Read from the files at
:data:`SOURCE`; each entry's file is under ``src/megatron/bridge/perf_recipes/``."""

_MODEL = {
    "llama3_8b": "llama3_8b",
    "llama3_70b": "llama3_70b",
    "deepseekv3": "deepseek_v3",
    "qwen3_30b_a3b": "qwen3_30b_a3b",
}
_SYSTEM = {
    "H100-SXM": "h100",
    "H100-SXM-80GB": "h100",
    "B200": "b200",
    "B300": "b300",
    "GB200 (NVL72 rack)": "gb200",
    "GB300 (NVL72 rack)": "gb300",
}
_PRECISION = {"bf16": "bf16", "fp8_cs": "fp8cs", "mxfp8": "fp8mx", "nvfp4": "nvfp4"}
_TASK = {"pretrain": "pretrain", "sft": "sft", "lora": "peft"}


def function_of(row: dict[str, Any], recipe: str) -> str:
    """The recipe function's name (without ``_config``) for a row whose table recipe is
    ``recipe`` (bf16, fp8_cs, mxfp8, nvfp4): the repository's naming,
    ``{model}_{task}_{GPUs}gpu_{system}_{precision}``."""
    model = _MODEL[row["model"]["name"].split(maxsplit=1)[0].lower()]
    return (
        f"{model}_{_TASK[row['task']]}_{int(row['gpu']['count'])}gpu_"
        f"{_SYSTEM[row['gpu']['type']]}_{_PRECISION[recipe]}"
    )


def recipe_for(row: dict[str, Any], recipe: str) -> tuple[str, Recipe]:
    """The row's recipe function and what it sets (KeyError when the repository has none)."""
    name = function_of(row, recipe)
    return name, RECIPES[name]


def layout_differs(row: dict[str, Any], rec: Recipe) -> bool:
    """True when the recipe at :data:`SOURCE` runs another layout or batch than the row
    (an older release's setup): the row's columns are used, the recipe's memory settings
    may not be the ones that ran."""
    lay = row["layout"]
    published = (
        int(lay["tp"]),
        int(lay["pp"]),
        int(lay["vp"] or 1),
        int(lay["ep"] or 1),
        int(row["micro_batch"]),
        int(row["global_batch"]),
    )
    return published != rec.layout


GRAPH_MODULES: dict[str, str] = {
    "llama3_70b_pretrain_64gpu_gb200_nvfp4": "layer",
    "llama3_70b_sft_32gpu_h100_fp8cs": "mlp",
    "llama3_70b_sft_32gpu_gb200_fp8cs": "mlp",
    "llama3_70b_sft_32gpu_gb200_fp8mx": "mlp",
    "llama3_70b_sft_32gpu_gb300_fp8cs": "mlp",
    "llama3_70b_sft_32gpu_gb300_fp8mx": "mlp",
    "llama3_70b_peft_8gpu_gb200_fp8cs": "mlp",
    "llama3_70b_peft_8gpu_gb200_fp8mx": "mlp",
    "llama3_70b_peft_8gpu_gb300_fp8cs": "mlp",
    "llama3_70b_peft_8gpu_gb300_fp8mx": "mlp",
}
"""The ``cuda_graph_scope`` of the ``transformer_engine`` recipes that set another than
``["attn", "moe_router", "moe_preprocess"]`` (every DeepSeek-V3 and Qwen3 one here, set in
the function or by ``deepseek/common.py:_enable_deepseek_transformer_engine_graph``), as the
app's ``training.cuda_graphs``: the Llama 3 70B SFT and LoRA recipes' ``["mlp"]``, and
``llama3_70b_pretrain_64gpu_gb200_nvfp4``'s ``clear_cuda_graph_modules`` (an empty list:
whole layers)."""

TOKENDROP_RELEASE = "NVIDIA-NeMo/Megatron-Bridge@v0.1.0rc4"
"""The Megatron-Bridge the 25.09 release ran (tag v0.1.0rc4, 2025-10-23): its
``scripts/performance/run_script.py`` turns token dropping on (``apply_moe_token_drop``:
capacity factor 1, padded to capacity) for the MoE runs, and
``scripts/performance/configs/{qwen3,deepseek}/*_llm_pretrain.yaml`` set ``cuda_graphs`` per
system, which ``utils/helpers.py:set_cuda_graph_overrides`` passes on as
``enable_cuda_graph`` (Megatron-Core: ``cuda_graph_impl = "local"``, the default whole-layer
scope)."""

TOKENDROP_CUDA_GRAPHS: dict[tuple[str, str], str] = {
    ("qwen3_30b_a3b", "gb200"): "layer",
    ("qwen3_30b_a3b", "b200"): "layer",
    ("qwen3_30b_a3b", "h100"): "none",
    ("deepseek_v3", "gb200"): "none",
    ("deepseek_v3", "b200"): "none",
    ("deepseek_v3", "h100"): "none",
}
"""(model, system) → the token-drop rows' CUDA graphs in :data:`TOKENDROP_RELEASE`'s perf
matrix (``cuda_graphs: true`` → whole layers; ``false`` → none)."""


def cuda_graphs_of(row: dict[str, Any], function: str, rec: Recipe) -> str:
    """The row's CUDA graphs as the app's ``training.cuda_graphs``. A token-drop row
    (labelled "tokendrop"; 25.09) cannot have run the recipe at :data:`SOURCE` (dropless,
    flex dispatcher): :data:`TOKENDROP_CUDA_GRAPHS`. Otherwise the recipe's: ``local`` with
    scope ``["full_iteration"]`` (every Llama 3 8B recipe here) and ``full_iteration``
    (``_enable_deepseek_full_iteration_mxfp8`` / ``_enable_hybridep_full_iteration_mxfp8``)
    → ``full_iteration``; ``transformer_engine`` → :data:`GRAPH_MODULES`, else
    ``attn_moe_router``; ``none`` → ``none``."""
    if "tokendrop" in row["model"]["name"].lower():
        model = _MODEL[row["model"]["name"].split(maxsplit=1)[0].lower()]
        return TOKENDROP_CUDA_GRAPHS[(model, _SYSTEM[row["gpu"]["type"]])]
    if rec.cuda_graphs in ("local", "full_iteration"):
        return "full_iteration"
    if rec.cuda_graphs == "transformer_engine":
        return GRAPH_MODULES.get(function, "attn_moe_router")
    return "none"
