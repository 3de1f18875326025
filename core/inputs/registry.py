"""Each scalar scenario input described once: its path, label, unit (parser and formatter),
help, command-line flag and whether it may be empty.

The command line's scenario options are generated from :data:`INPUTS`
(:mod:`llm_planner.cli_scenario`) and the window's form rows parse and format through the
same entries (:meth:`llm_planner.gui.tabs.base.Tab.input`), so ``16k`` GPUs, ``400 GB/sec``
or ``400`` TFLOP/s mean the same on both faces. Which abbreviations a unit reads:

- GPU counts, parallel degrees, sequence lengths and contexts: ``k`` = 1024 (``8k`` = 8,192,
  ``16k`` GPUs = 16,384; :func:`.units.parse_length`);
- tokens, parameters, FLOPs, rates and batch sizes: decimal (``1.4T``, ``2k`` = 2,000);
- bytes: ``80 GB`` (10^9) or ``80 GiB`` (2^30); bandwidth: bytes per second (``400 GB/s``,
  ``/sec`` or ``ps``), or bits with a lower-case ``b`` (``400 Gb/s``, ``400 Gbps`` = 50 GB/s);
- fractions: ``0.4`` or ``40%``; TFLOP/s: a bare number is TFLOP/s (``400``), or a stated
  unit (``4e14 FLOP/s``, ``0.4 PFLOP/s``).

Ranges are not the parsers' business: every value goes through the scenario's validation
(:mod:`.primitives.limits`), on both faces. This module imports only ``units`` and
:mod:`.registry_units` (the types, parsers and formatters): building the command-line parser
must not import the estimators.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from llm_planner.core.inputs.registry_host import HOST_INPUTS
from llm_planner.core.inputs.registry_units import (
    BANDWIDTH,
    BYTES,
    CHUNKS,
    COMPUTE,
    COUNT,
    DURATION,
    FRACTION,
    INFERENCE,
    LENGTH,
    MODEL,
    NAMES,
    PARALLEL,
    POINTS,
    PRICE,
    SCHEDULE,
    TFLOPS,
    TRAINING,
    USD,
    WHOLE,
    Input,
    Kind,
    Unit,
    format_bandwidth,
    format_bytes_input,
    format_count,
    format_fraction,
    format_int,
    format_points,
    format_price,
    format_tflops,
    parse_bandwidth,
    parse_bytes,
    parse_chunks,
    parse_count,
    parse_duration,
    parse_fraction,
    parse_length,
    parse_points,
    parse_price,
    parse_tflops,
    parse_usd,
    parse_whole,
)
from llm_planner.core.primitives import units

__all__ = [
    "BANDWIDTH",
    "BYTES",
    "BY_PATH",
    "CHUNKS",
    "COMPUTE",
    "COUNT",
    "DURATION",
    "FRACTION",
    "INFERENCE",
    "INPUTS",
    "LENGTH",
    "MODEL",
    "NAMES",
    "PARALLEL",
    "POINTS",
    "PRICE",
    "SCHEDULE",
    "TFLOPS",
    "TRAINING",
    "USD",
    "WHOLE",
    "Input",
    "Kind",
    "Unit",
    "format_bandwidth",
    "format_bytes_input",
    "format_count",
    "format_fraction",
    "format_int",
    "format_points",
    "format_price",
    "format_tflops",
    "input_at",
    "parse_bandwidth",
    "parse_bytes",
    "parse_chunks",
    "parse_count",
    "parse_duration",
    "parse_fraction",
    "parse_length",
    "parse_points",
    "parse_price",
    "parse_tflops",
    "parse_usd",
    "parse_whole",
]


# ------------------------------------------------------------------ the inputs


def _names(module: str, attribute: str) -> Callable[[], Iterable[str]]:
    """A catalog's ids, imported when ``--help`` prints them (the catalogs import numpy)."""

    def names() -> Iterable[str]:
        import importlib

        catalog: Mapping[str, Any] = getattr(importlib.import_module(module), attribute)
        return list(catalog)

    return names


def _format_gb(value: float) -> str:
    return units.format_gb(value, 4)


def _format_3g(value: float) -> str:
    return f"{value:.3g}"


INPUTS: tuple[Input, ...] = (
    # model and hardware
    Input(
        "num_gpus",
        "GPUs",
        "GPUs used for training, e.g. 512 or 2k",
        LENGTH,
        flag="--num-gpus",
        group=MODEL,
    ),
    Input(
        "gpu.memory_bytes",
        "GPU memory",
        "memory per GPU as sold (e.g. 80 GB, or 80 GiB): a custom GPU",
        BYTES,
        flag="--gpu-memory",
        group=MODEL,
        also={"gpu.custom": True},
        fmt=_format_gb,
    ),
    Input(
        "model.params_override",
        "Parameters",
        "use exactly this many parameters in every P-based formula (e.g. 13B; none: the "
        "architecture's own count)",
        COUNT,
        optional=True,
        cli="--params {}",
    ),
    # compute budget
    Input(
        "compute.tokens",
        "Tokens",
        "training tokens D (e.g. 15T, 1.4T, 300B)",
        COUNT,
        flag="--tokens",
        group=COMPUTE,
    ),
    Input(
        "compute.mfu",
        "MFU",
        "assumed model FLOPs utilisation, 0-1 or a percentage (40%)",
        FRACTION,
        flag="--mfu",
        group=COMPUTE,
        exclusive="rate",
        also={"compute.throughput_mode": "mfu"},
    ),
    Input(
        "compute.achieved_flops_per_gpu",
        "TFLOP/s per GPU",
        "measured achieved TFLOP/s per GPU (400, or 4e14 FLOP/s)",
        TFLOPS,
        flag="--tflops",
        group=COMPUTE,
        exclusive="rate",
        optional=True,
        also={"compute.throughput_mode": "tflops"},
    ),
    Input(
        "compute.tokens_per_s_per_gpu",
        "Tokens/s per GPU",
        "measured training tokens/s per GPU",
        COUNT,
        flag="--tokens-per-sec-per-gpu",
        group=COMPUTE,
        exclusive="rate",
        optional=True,
        also={"compute.throughput_mode": "tokens_per_s"},
    ),
    Input(
        "compute.price_usd_per_gpu_hour",
        "$ per GPU-hour",
        "price per GPU-hour (e.g. 2.5 or $2.50/h); a price given is kept for any GPU "
        "(without one it follows the GPU from the price list)",
        PRICE,
        flag="--price",
        group=COMPUTE,
        also={"compute.price_follows_gpu": False},
    ),
    # inference memory
    Input(
        "inference.weights_format",
        "Weights",
        "weights dtype or quantized format (bf16, fp8, int4, q4_k_m...)",
        kind="choice",
        flag="--weights-dtype",
        group=INFERENCE,
        metavar="D",
    ),
    Input(
        "inference.kv_dtype",
        "KV cache dtype",
        "KV-cache dtype",
        kind="choice",
        flag="--kv-dtype",
        group=INFERENCE,
        metavar="D",
    ),
    Input(
        "inference.batch",
        "Batch",
        "concurrent sequences (requests); on the command line also max: as many as KV memory "
        "and the engine allow",
        WHOLE,
        cli="--batch {}",
        group=INFERENCE,
    ),
    Input(
        "inference.batch_max",
        "As many as fit",
        "the serving figures use as many concurrent requests as KV memory and the engine "
        "allow instead of Batch (the memory bars keep Batch × Context)",
        kind="switch",
        cli="--batch max",
        group=INFERENCE,
    ),
    Input(
        "inference.engine",
        "Engine",
        "serving engine (batching, scheduler limits and kernels)",
        kind="choice",
        cli="--engine {}",
        group=INFERENCE,
        metavar="ENGINE",
        names=_names("llm_planner.core.quantities.engines", "ENGINE_IDS"),
    ),
    Input(
        "inference.prompt_tokens",
        "Prompt tokens",
        "prompt tokens per request (e.g. 1024 or 2k)",
        LENGTH,
        cli="--prompt-tokens {}",
        group=INFERENCE,
    ),
    Input(
        "inference.output_tokens",
        "Output tokens",
        "output tokens per request (e.g. 256 or 1k)",
        LENGTH,
        cli="--output-tokens {}",
        group=INFERENCE,
    ),
    Input(
        "inference.context",
        "Context",
        "tokens per sequence, prompt + output (e.g. 8192 or 128k)",
        LENGTH,
        flag="--context",
        group=INFERENCE,
    ),
    Input(
        "inference.num_gpus",
        "GPUs per replica",
        "GPUs serving one replica (tensor parallel)",
        LENGTH,
        flag="--inference-gpus",
        group=INFERENCE,
    ),
    Input(
        "inference.cuda_context_bytes",
        "CUDA context",
        "CUDA context and library workspaces per serving GPU (default 1 GiB)",
        BYTES,
        flag="--inference-cuda-context",
        group=INFERENCE,
    ),
    Input(
        "inference.prefill_chunk_tokens",
        "Prefill chunk",
        "most tokens processed in one serving step (sets the activation working set)",
        LENGTH,
        flag="--prefill-chunk",
        group=INFERENCE,
    ),
    # schedule, budget and failures
    Input(
        "compute.deadline_seconds",
        "Deadline",
        "time the run must finish in (e.g. 30days, 720h): the smallest deployment "
        "meeting it and the largest compute-optimal model",
        DURATION,
        flag="--deadline",
        group=SCHEDULE,
        optional=True,
    ),
    Input(
        "compute.budget_usd",
        "Budget $",
        "a budget in dollars (e.g. 2M or $2M): the largest compute-optimal model it buys",
        USD,
        flag="--budget-usd",
        group=SCHEDULE,
        optional=True,
    ),
    Input(
        "compute.budget_flops",
        "Budget FLOP",
        "a compute budget in FLOP (e.g. 1e24) for Chinchilla sizing",
        COUNT,
        flag="--budget-flops",
        group=SCHEDULE,
        optional=True,
        metavar="FLOP",
        fmt=_format_3g,
    ),
    Input(
        "compute.compute_dtype",
        "Math dtype",
        "dtype whose peak sets the throughput (bf16, fp8, tf32, ...)",
        kind="choice",
        flag="--compute-dtype",
        group=SCHEDULE,
        metavar="D",
    ),
    Input(
        "compute.include_attention_flops",
        "Count attention FLOPs",
        "count attention-score FLOPs in compute.flops_total (PaLM model FLOPs) instead of 6·P·D",
        kind="switch",
        flag="--attention-flops",
        group=SCHEDULE,
    ),
    Input(
        "compute.failures.gpu_failures_per_hour",
        "Failures /GPU/h",
        "interruptions per GPU-hour (default: Llama 3's 16k-GPU run)",
        COUNT,
        flag="--failure-rate",
        group=SCHEDULE,
        optional=True,
        metavar="PER_GPU_HOUR",
        fmt=_format_3g,
    ),
    Input(
        "compute.failures.checkpoint_write_seconds",
        "Checkpoint write",
        "time the job pauses to write one checkpoint (e.g. 60 s)",
        DURATION,
        flag="--checkpoint-seconds",
        group=SCHEDULE,
    ),
    Input(
        "compute.failures.restart_seconds",
        "Restart",
        "time to detect a failure, reschedule and reload (e.g. 10 min)",
        DURATION,
        flag="--restart-seconds",
        group=SCHEDULE,
    ),
    # training memory
    Input(
        "training.precision",
        "Precision",
        "precision recipe",
        kind="choice",
        flag="--precision",
        group=TRAINING,
        metavar="P",
        names=_names("llm_planner.core.quantities.optimizers", "PRECISIONS"),
    ),
    Input(
        "training.optimizer",
        "Optimizer",
        "optimizer",
        kind="choice",
        flag="--optimizer",
        group=TRAINING,
        metavar="O",
        names=_names("llm_planner.core.quantities.optimizers", "OPTIMIZERS"),
    ),
    Input(
        "training.seq_len",
        "Sequence length",
        "training sequence length s (e.g. 4096 or 8k)",
        LENGTH,
        flag="--seq-len",
        group=TRAINING,
    ),
    Input(
        "training.micro_batch",
        "Micro-batch",
        "sequences per micro-batch b",
        WHOLE,
        flag="--micro-batch",
        group=TRAINING,
    ),
    Input(
        "training.recompute_threshold_bytes",
        "X (threshold)",
        "drop and recompute every saved tensor larger than this (e.g. 100 MB)",
        BYTES,
        optional=True,
        cli="--recompute threshold:{}",
    ),
    Input(
        "training.recompute_method",
        "Full recompute method",
        "how full recomputation covers a stage's layers: uniform (Megatron: chunks of N "
        "layers, each chunk's input kept), block (Megatron: the first N layers of each stage), "
        "every (torchtitan selective_ac_option N: every N-th block)",
        kind="choice",
        flag="--recompute-method",
        group=TRAINING,
        metavar="M",
        names=_names("llm_planner.core.quantities.activation_recompute", "RECOMPUTE_METHODS"),
    ),
    Input(
        "training.recompute_layers",
        "Recompute layers N",
        "N of the full recompute method (Megatron --recompute-num-layers, torchtitan "
        "selective_ac_option); empty: every layer checkpointed alone",
        WHOLE,
        flag="--recompute-layers",
        group=TRAINING,
        optional=True,
    ),
    Input(
        "training.recompute_modules",
        "Selective modules",
        "what selective recomputation drops, Megatron's --recompute-modules: core_attn, mlp, "
        "moe, shared_experts, moe_act, layernorm, mla_up_proj (default core_attn)",
        NAMES,
        flag="--recompute-modules",
        group=TRAINING,
    ),
    Input(
        "training.recompute_checkpoint",
        "Checkpoints on",
        "where full recomputation's layer inputs live: gpu, partitioned (over tp: DeepSpeed "
        "partition_activations, Megatron --distribute-saved-activations) or cpu (DeepSpeed "
        "cpu_checkpointing)",
        kind="choice",
        flag="--recompute-checkpoint",
        group=TRAINING,
        metavar="WHERE",
        names=_names("llm_planner.core.quantities.activation_recompute", "CHECKPOINT_PLACEMENTS"),
    ),
    Input(
        "training.flash_attention",
        "FlashAttention",
        "fused attention kernel (no s² tensors saved)",
        kind="switch",
        flag="--flash-attention",
        group=TRAINING,
    ),
    Input(
        "training.dropout",
        "Dropout",
        "dropout on attention probabilities and residuals",
        kind="switch",
        flag="--dropout",
        group=TRAINING,
    ),
    Input(
        "training.lora_rank",
        "LoRA rank",
        "LoRA fine-tuning rank (none: full fine-tuning or pretraining)",
        WHOLE,
        flag="--lora-rank",
        group=TRAINING,
        optional=True,
    ),
    Input(
        "training.moe_capacity_factor",
        "MoE capacity factor",
        "tokens an expert takes ÷ the mean, beyond which they are dropped and up to which "
        "it is padded (none: dropless, Megatron-Core's default)",
        FRACTION,
        flag="--moe-capacity-factor",
        group=TRAINING,
        optional=True,
    ),
    Input(
        "training.mtp_layers",
        "MTP depths",
        "multi-token prediction modules trained with the model (Megatron-Core "
        "--mtp-num-layers; DeepSeek-V3 trained with 1): each a layer, a projection and a "
        "head pass on the last pipeline stage",
        WHOLE,
        flag="--mtp-layers",
        group=TRAINING,
    ),
    Input(
        "training.moe_paged_stash",
        "MoE paged stash",
        "the routed experts' saved tensors held in a paged GPU buffer of this many times their "
        "balanced size, the rest spilled to host (Megatron-Core --moe-paged-stash; none: off)",
        FRACTION,
        flag="--moe-paged-stash",
        group=TRAINING,
        optional=True,
    ),
    Input(
        "training.moe_dispatcher",
        "MoE dispatcher",
        "how MoE tokens reach their experts: alltoall or allgather (Megatron-Core's dispatchers)",
        kind="choice",
        flag="--moe-dispatcher",
        group=TRAINING,
        metavar="NAME",
        names=_names("llm_planner.core.quantities.moe", "DISPATCHERS"),
    ),
    Input(
        "training.cuda_graphs",
        "CUDA graphs",
        "what the step captures in CUDA graphs: none, attn, mlp, moe_router, attn_moe_router, "
        "layer or full_iteration (Megatron-Core's cuda_graph_impl / cuda_graph_modules); captured "
        "kernels leave the host's launch floor",
        kind="choice",
        flag="--cuda-graphs",
        group=TRAINING,
        metavar="SCOPE",
        names=_names("llm_planner.core.quantities.cuda_graphs", "CUDA_GRAPHS"),
    ),
    Input(
        "training.moe_load_imbalance",
        "MoE load imbalance",
        "tokens of the busiest expert ÷ the mean (1: balanced); the slowest rank sets the step",
        FRACTION,
        flag="--moe-load-imbalance",
        group=TRAINING,
    ),
    Input(
        "training.qlora",
        "QLoRA (4-bit frozen base)",
        "4-bit NF4 frozen base (QLoRA)",
        kind="switch",
        flag="--qlora",
        group=TRAINING,
        negatable=False,
    ),
    Input(
        "training.implementation",
        "Implementation",
        "activation-ledger profile",
        kind="choice",
        flag="--implementation",
        group=TRAINING,
        metavar="NAME",
        names=_names("llm_planner.core.quantities.activations", "PROFILES"),
    ),
    *HOST_INPUTS,
    Input(
        "training.cuda_context_bytes",
        "CUDA context",
        "allowance for the CUDA context and workspaces per GPU (default 1 GB)",
        BYTES,
        flag="--cuda-context",
        group=TRAINING,
    ),
    Input(
        "training.fragmentation_fraction",
        "Fragmentation",
        "allocator fragmentation allowance, fraction of allocated bytes or a percentage "
        "(default 0.05)",
        FRACTION,
        flag="--fragmentation",
        group=TRAINING,
    ),
    # parallelism
    Input(
        "parallelism.tp",
        "Tensor parallel",
        "tensor-parallel degree",
        LENGTH,
        flag="--tp",
        group=PARALLEL,
    ),
    Input(
        "parallelism.pp",
        "Pipeline parallel",
        "pipeline-parallel degree",
        LENGTH,
        flag="--pp",
        group=PARALLEL,
    ),
    Input(
        "parallelism.cp",
        "Context parallel",
        "context-parallel degree: each sequence split over cp GPUs, K/V passed round a ring "
        "(Megatron-Core's context_parallel_size)",
        LENGTH,
        flag="--cp",
        group=PARALLEL,
    ),
    Input(
        "parallelism.dp",
        "Data parallel",
        "data-parallel degree (default: GPUs / (tp·pp·cp))",
        LENGTH,
        flag="--dp",
        group=PARALLEL,
        optional=True,
    ),
    Input(
        "parallelism.expert_parallel",
        "Expert parallel",
        "expert-parallel degree (MoE; divides data parallel)",
        LENGTH,
        flag="--ep",
        group=PARALLEL,
    ),
    Input(
        "parallelism.sequence_parallel",
        "Sequence parallel",
        "Megatron sequence parallelism (with tp > 1)",
        kind="switch",
        flag="--sequence-parallel",
        group=PARALLEL,
    ),
    Input(
        "parallelism.global_batch",
        "Global batch",
        "sequences per optimizer step",
        WHOLE,
        flag="--global-batch",
        group=PARALLEL,
    ),
    Input(
        "parallelism.gpus_per_node",
        "GPUs per node",
        "GPUs in one node (server or compute tray)",
        LENGTH,
        flag="--gpus-per-node",
        group=PARALLEL,
    ),
    Input(
        "parallelism.nvlink_domain",
        "NVLink domain",
        "GPUs one NVLink fabric joins, across nodes (GB200/GB300 NVL72: 72); groups inside "
        "it use NVLink, only groups that span domains the network (default: the GPU's, else "
        "a node)",
        LENGTH,
        flag="--nvlink-domain",
        group=PARALLEL,
        optional=True,
    ),
    Input(
        "parallelism.interleave_chunks",
        "Virtual stages v",
        "model chunks per GPU (interleaved schedule)",
        CHUNKS,
        cli="--schedule interleaved:{}",
    ),
    Input(
        "parallelism.inter_node_bandwidth_bytes_per_s",
        "Network per node",
        "network per node, one direction (default: the GPU's network per GPU × GPUs per "
        "node, 400 Gb/s per GPU unless its catalog entry says: 400GB/s on an 8-GPU node)",
        BANDWIDTH,
        flag="--inter-node-bandwidth",
        group=PARALLEL,
        optional=True,
    ),
    Input(
        "parallelism.intra_node_bandwidth_bytes_per_s",
        "Intra-node link",
        "GPU-to-GPU bandwidth per GPU, one direction (default: the GPU's catalog link)",
        BANDWIDTH,
        flag="--intra-node-bandwidth",
        group=PARALLEL,
        optional=True,
    ),
    Input(
        "parallelism.kernel_efficiency",
        "Kernel efficiency",
        "share of peak FLOP/s the kernels reach (default 0.70)",
        FRACTION,
        flag="--kernel-efficiency",
        group=PARALLEL,
    ),
    Input(
        "parallelism.intra_node_efficiency",
        "Intra achieved",
        "achieved share of the intra-node link",
        FRACTION,
        flag="--intra-node-efficiency",
        group=PARALLEL,
    ),
    Input(
        "parallelism.inter_node_efficiency",
        "Network achieved",
        "achieved share of the network",
        FRACTION,
        flag="--inter-node-efficiency",
        group=PARALLEL,
    ),
    Input(
        "parallelism.dp_overlap",
        "DP overlap",
        "share of the backward pass hiding data-parallel communication",
        FRACTION,
        flag="--dp-overlap",
        group=PARALLEL,
    ),
    Input(
        "parallelism.tp_overlap",
        "TP overlap",
        "share of tensor-parallel communication hidden",
        FRACTION,
        flag="--tp-overlap",
        group=PARALLEL,
    ),
    Input(
        "parallelism.measured_points",
        "Measured scaling",
        "measured points for the scaling curve, GPUS:TOKENS_PER_S (e.g. 64:1.1M; several "
        "comma-separated; repeatable)",
        POINTS,
        flag="--measured",
        group=PARALLEL,
        repeat=True,
    ),
)
"""Every described input, in ``--help`` order within each group."""

BY_PATH: dict[str, Input] = {spec.path: spec for spec in INPUTS}


def input_at(path: str) -> Input:
    """The description of the input at ``path`` (KeyError names it)."""
    try:
        return BY_PATH[path]
    except KeyError:
        raise KeyError(f"no described input {path!r}") from None
