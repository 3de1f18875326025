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

Releases: the rows predate these recipes (they moved to ``perf_recipes/`` after 26.06; each
release ran ``scripts/performance`` presets: :data:`RELEASES`), and where the recipe's
layout is not the row's (:func:`layout_differs`: e.g. Llama 3 70B on 64 H100 at gbs 128 in
25.09/25.11, 256 now; DeepSeek-V3 on B200 at pp 16 ep 8 then, pp 8 vp 2 ep 32 now) the
recipe at 067f987d may also set other memory options than the run did. The recipe at 067f987d
is the stated source for every row all the same; the row's own published columns (tp, pp, vp,
cp, ep, micro and global batch, sequence, and the FSDP column where the table has one) win
over the recipe's. What made releases differ in speed (CUDA graphs, the all-to-all overlap,
FP8 attention) is read per release for the MoE rows (:data:`RELEASE_CUDA_GRAPHS`,
:data:`RELEASE_A2A_OVERLAP`, :data:`RELEASE_FP8_ATTENTION`).
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


RELEASES: dict[str, str] = {
    "25.09": "NVIDIA-NeMo/Megatron-Bridge@bf71eba07bae8d36f08b796c106d1197d46ad541",
    "25.11": "NVIDIA-NeMo/Megatron-Bridge@7af9601c9da746d21481194356295bfe23df3737",
    "26.02": "NVIDIA-NeMo/Megatron-Bridge@21b02e0cfb2f8ff907e0d8baee0c5205876c6812",
    "26.04": "NVIDIA-NeMo/Megatron-Bridge@0fbfe7d3e970fbd75c1281d71cee586ce1f3df5e",
    "26.06": "NVIDIA-NeMo/Megatron-Bridge@fcbb6031103d0ca845c1a54d4fee55ecfcca17b6",
}
"""NeMo container → the Megatron-Bridge it shipped, by tag: 25.09 v0.1.0rc3, 25.11 v0.2.0,
26.02 v0.3.0, 26.04 v0.4.0 (the repository's docs/releases/software-versions.md at
067f987d lists these four), 26.06 v0.5.0 (tagged 2026-06-16, the day of the 26.06
performance summary, #4318; the list stops at 26.04). The 25.09 Qwen3 row on 16 H100 runs
vp 24, v0.1.0rc3's perf matrix (v0.1.0rc4 has 12), which agrees. Before the recipes moved to
``src/megatron/bridge/perf_recipes/`` they were ``scripts/performance``: a YAML
``perf_matrix`` per model in 25.09 (``configs/{qwen3,deepseek}/*_llm_pretrain.yaml``,
``cuda_graphs: true`` → ``enable_cuda_graph``, Megatron's local whole-layer graphs), and
from 25.11 ``WorkloadBaseConfig`` presets (``configs/{qwen3,qwen,deepseek}/
*workload_base_configs.py``: ``cuda_graph_impl``, ``cuda_graph_scope``,
``moe_flex_dispatcher_backend``, ``moe_a2a_overlap``, and in 26.06
``fp8_dot_product_attention`` and ``cutedsl_fused_grouped_mlp``), applied by
``utils/overrides.py`` (unset: the base recipe's, no graphs).

Also read, not stated (the app has one all-to-all dispatcher, every one of these syncs the
host per MoE layer unless it runs inside a full-iteration graph): the dispatcher. Qwen3: the
all-to-all on B200 in 25.11 and 26.02 and on H100 in 25.11, HybridEP (``flex``) on GB200
and GB300 from 25.11, on B300 from 26.02, on B200 and H100 from 26.04, DeepEP on H100 in
26.02; DeepSeek-V3: DeepEP on H100 in 25.09 (run_script.py ``enable_deepep``; token drop
turns it off on B200/GB200), HybridEP on GB200/GB300 from 25.11 and everywhere from 26.02,
the all-to-all on B200 in 25.11. The MoE paged stash first appears in v0.5.0 (26.06), with
the full-iteration presets (Megatron-Bridge 8af195c0a, DeepSeek-V3 GB300; 55443cbfb,
Qwen3 GB200/GB300); v0.3.0 and v0.4.0's ``scripts/performance`` have none."""

RELEASE_MOE_FUSION: dict[str, tuple[bool, bool]] = {
    "25.09": (True, True),
    "25.11": (True, True),
    "26.02": (True, True),
    "26.04": (True, True),
    "26.06": (True, True),
}
"""Release → (``moe_router_fusion``, ``moe_permute_fusion``) its Qwen3 and DeepSeek-V3
presets ran, read at :data:`RELEASES`: the router fusion from the performance scripts (25.09
``configs/{qwen3,deepseek}/*_llm_pretrain.yaml`` ``moe_router_fusion: true``; from 25.11
``set_qwen3_common_configs`` and ``set_deepseek_v3_common_configs``, applied after the base
recipe, which from v0.4.0 sets it False), the permute fusion from the models (the Qwen3 MoE
provider's default True, ``Qwen3MoEBridge`` from v0.4.0; DeepSeek's provider with TE ≥ 2.1
and ``deepseek_v3.py``'s recipe). Transformer Engine's fused router and permutation: the
path step_time_host's MoE kernel counts are for (tests/core/test_moe_router_kernels.py).
Both presets also set ``moe_router_force_load_balancing`` (random logits, 2 kernels more per
MoE layer forward), not stated."""

RELEASE_CUDA_GRAPHS: dict[tuple[str, str, str], str] = {
    # 25.09 (v0.1.0rc3 perf_matrix; the MoE runs token-drop, run_script.py
    # apply_moe_token_drop): cuda_graphs true → whole layers
    ("25.09", "qwen3_30b_a3b", "b200"): "layer",
    ("25.09", "qwen3_30b_a3b", "gb200"): "layer",
    ("25.09", "qwen3_30b_a3b", "h100"): "none",
    ("25.09", "deepseek_v3", "b200"): "layer",  # fp8_cs and fp8_mx true (bf16 false)
    ("25.09", "deepseek_v3", "gb200"): "none",
    ("25.09", "deepseek_v3", "h100"): "none",
    # 25.11 (v0.2.0 configs/qwen3/workload_base_configs.py, configs/deepseek/...)
    ("25.11", "qwen3_30b_a3b", "b200"): "moe_router",
    ("25.11", "qwen3_30b_a3b", "gb200"): "moe_router",  # FP8_MX: [moe_router, moe_preprocess]
    ("25.11", "qwen3_30b_a3b", "gb300"): "moe_router",
    ("25.11", "qwen3_30b_a3b", "h100"): "none",  # FP8_CS: no graphs, moe_a2a_overlap
    ("25.11", "deepseek_v3", "gb300"): "attn_moe_router",
    ("25.11", "deepseek_v3", "gb200"): "moe_router",
    ("25.11", "deepseek_v3", "b200"): "none",
    # 26.02 (v0.3.0 configs/qwen/qwen3_workload_base_configs.py, configs/deepseek/
    # deepseek_workload_base_configs.py; DeepSeek's V2 presets, the default variant)
    ("26.02", "qwen3_30b_a3b", "b200"): "moe_router",
    ("26.02", "qwen3_30b_a3b", "b300"): "moe_router",
    ("26.02", "qwen3_30b_a3b", "gb200"): "moe_router",
    ("26.02", "qwen3_30b_a3b", "gb300"): "moe_router",
    ("26.02", "qwen3_30b_a3b", "h100"): "none",
    ("26.02", "deepseek_v3", "gb300"): "none",  # cuda_graph_scope [] without an impl
    ("26.02", "deepseek_v3", "gb200"): "attn_moe_router",
    ("26.02", "deepseek_v3", "b300"): "none",
    ("26.02", "deepseek_v3", "b200"): "none",
    # 26.04 (v0.4.0, same files)
    ("26.04", "qwen3_30b_a3b", "b200"): "attn_moe_router",  # mbs 4, hybridep
    ("26.04", "qwen3_30b_a3b", "b300"): "moe_router",
    ("26.04", "qwen3_30b_a3b", "gb200"): "moe_router",
    ("26.04", "qwen3_30b_a3b", "gb300"): "moe_router",
    ("26.04", "qwen3_30b_a3b", "h100"): "none",
    ("26.04", "deepseek_v3", "gb300"): "none",
    ("26.04", "deepseek_v3", "gb200"): "attn_moe_router",
    ("26.04", "deepseek_v3", "b300"): "none",
    ("26.04", "deepseek_v3", "b200"): "none",
    # 26.06 (v0.5.0, same files): the MXFP8 presets full-iteration with HybridEP
    ("26.06", "qwen3_30b_a3b", "b300"): "full_iteration",
    ("26.06", "qwen3_30b_a3b", "gb200"): "full_iteration",
    ("26.06", "qwen3_30b_a3b", "gb300"): "full_iteration",
    ("26.06", "qwen3_30b_a3b", "h100"): "none",
    ("26.06", "deepseek_v3", "gb300"): "full_iteration",
    ("26.06", "deepseek_v3", "gb200"): "full_iteration",
    ("26.06", "deepseek_v3", "b300"): "attn_moe_router",  # B300_V2: TE, mbs 2, pp 8
}
"""(release, model, system) → the CUDA graphs the MoE rows' release ran, as the app's
``training.cuda_graphs`` (TE ``cuda_graph_scope`` ["moe_router", "moe_preprocess"] →
``moe_router``, with "attn" → ``attn_moe_router``; ``full_iteration`` as named), read at
:data:`RELEASES` for the precision each row ran (FP8/MXFP8; BF16 where a row is BF16: the
same preset in every case here). The Llama 3 rows' releases are not read: they stay eager,
as before."""

RELEASE_FP8_ATTENTION: frozenset[tuple[str, str, str]] = frozenset(
    {
        ("26.06", "qwen3_30b_a3b", "b300"),
        ("26.06", "qwen3_30b_a3b", "gb200"),
        ("26.06", "qwen3_30b_a3b", "gb300"),
        ("26.06", "deepseek_v3", "gb300"),
    }
)
"""(release, model, system) whose MXFP8 preset sets ``fp8_dot_product_attention`` (v0.5.0):
attention in FP8, which the app cannot state (it runs attention at BF16's rate)."""


def release_of(row: dict[str, Any]) -> str:
    """The row's NeMo container release ("25.09" … "26.06"): its ``framework_version``."""
    return str(row["framework_version"]).removeprefix("NeMo container ")[:5]


def release_cuda_graphs(row: dict[str, Any]) -> str | None:
    """The CUDA graphs the row's release ran (:data:`RELEASE_CUDA_GRAPHS`), or None where
    that release's setting was not read (the Llama 3 rows)."""
    model = _MODEL[row["model"]["name"].split(maxsplit=1)[0].lower()]
    return RELEASE_CUDA_GRAPHS.get((release_of(row), model, _SYSTEM[row["gpu"]["type"]]))


RELEASE_A2A_OVERLAP: frozenset[tuple[str, str, str]] = frozenset(
    {
        ("25.09", "deepseek_v3", "h100"),  # run_script.py A2A_1F1B (h100)
        ("25.11", "qwen3_30b_a3b", "h100"),  # QWEN3_30B_A3B_H100_FP8_CS: moe_a2a_overlap
        ("26.02", "qwen3_30b_a3b", "h100"),
        ("26.06", "qwen3_30b_a3b", "b300"),  # the 26.06 MXFP8 presets
        ("26.06", "qwen3_30b_a3b", "gb200"),
        ("26.06", "qwen3_30b_a3b", "gb300"),
        ("26.06", "deepseek_v3", "gb300"),
        ("26.06", "deepseek_v3", "gb200"),
    }
)
"""(release, model, system) whose preset sets ``moe_a2a_overlap`` (→
``comm_overlap.overlap_moe_expert_parallel_comm``, utils/overrides.py
``_set_moe_a2a_overlap_overrides``; in 25.09 run_script.py's ``A2A_1F1B``), read at
:data:`RELEASES`. Every other MoE preset there sets it False or leaves Megatron's default
(False)."""


def release_a2a_overlap(row: dict[str, Any]) -> bool:
    """Whether the row's release overlapped the expert-parallel all-to-all
    (:data:`RELEASE_A2A_OVERLAP`)."""
    model = _MODEL[row["model"]["name"].split(maxsplit=1)[0].lower()]
    return (release_of(row), model, _SYSTEM[row["gpu"]["type"]]) in RELEASE_A2A_OVERLAP
