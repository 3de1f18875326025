"""Training stacks: the frameworks a run is launched with.

A scenario names the stack it will run on (``training.stack``); the stack sets what differs
between frameworks (buffers and their dtypes, the activation profile, bucket and prefetch
sizes, overlap, allocator behaviour) and which launch config the plan exports to.

Each profile was read from the framework's source at the commit named in its ``source``
(mirrors of the public repositories): Megatron-LM d98e8a64, DeepSpeed edaa7221, torchtitan
b5bcd76c, nanotron 2411b022; Hugging Face Trainer/accelerate wrap PyTorch DDP/FSDP, whose
defaults are PyTorch's own. What the stack does not decide (the precision recipe, the
activation-ledger profile) stays editable under it: the stack gives only their defaults.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

Stack = Literal["megatron", "deepspeed", "torchtitan", "hf", "nanotron"]
"""Megatron-LM / Megatron-Core, DeepSpeed, PyTorch FSDP2 (torchtitan), Hugging Face
Trainer / accelerate, nanotron."""

STACK_NAMES: dict[str, str] = {
    "megatron": "Megatron-LM / Megatron-Core",
    "deepspeed": "DeepSpeed",
    "torchtitan": "PyTorch FSDP2 (torchtitan)",
    "hf": "Hugging Face Trainer / accelerate",
    "nanotron": "nanotron",
}
"""The human name of each stack id."""

MIB = 2**20

HOST_SECONDS_PER_LAYER_FUSED = 0.5e-3
"""Host (CPU) time to launch one transformer layer's kernels for one micro-batch, forward
and backward, for a stack with fused kernels (Megatron-Core/TransformerEngine: roughly
30-50 launches per layer fwd+bwd at ~10 µs of eager PyTorch dispatch each). An assumption
of the order of PyTorch's per-op dispatch cost, not fitted; it only matters when a
micro-batch's GPU work per layer is under a millisecond."""

HOST_SECONDS_PER_LAYER_EAGER = 1.0e-3
"""The same for unfused eager modules (Hugging Face, torchtitan without compile, DeepSpeed
on HF modules): about twice the launches of the fused stacks. Assumption, not fitted."""

HOST_SECONDS_PER_LAYER_NANOTRON = 4.4e-3
"""nanotron's host time per layer per micro-batch (forward + backward) with tensor
parallelism. FITTED on the nanotron sweep's 1B rows with tp ≥ 2 and micro-batch 1 on one
node (tests/validation/nanotron_sweep.py): those runs take ~70 ms per micro-batch whatever
tp (2, 4, 8) while their GPU work shrinks as 1/tp, i.e. a host-bound floor of ~70 ms / 16
layers. Checked on the 3B rows held out of the fit (28 layers: 124 ms measured, 123 ms
predicted). nanotron runs eager modules with differentiable collectives and asynchronous
TP linears (src/nanotron/parallel/tensor_parallel/), many small launches per layer."""


PIPELINE_SPANNING_NODES_HOST_SECONDS_PER_LAYER_PER_TP_NANOTRON = 3.0e-3
"""nanotron's extra time per layer per micro-batch, per tensor-parallel rank, when its
pipeline spans nodes: a floor under the micro-batch like the host time (it does not add to
the GPU work: a run whose GPU work per layer exceeds it measures its GPU time). FITTED on the
nanotron sweep's 1B runs whose pipeline spans nodes (tests/validation/nanotron_sweep.py,
``fit('1B', ...)``): at micro-batches small enough that the GPU work is under the floor,
those runs take 10.5, 16, 26-30 and 55-60 ms per layer per micro-batch at tp 2, 4, 8 and
16, flat in micro-batch size, in dp and in the number of stages, against 4.4 ms (the host
time, whatever tp) when the whole job sits in one node or has no pipeline; i.e. 4.4 ms +
≈ 3 ms × tp. Held out: the 3B runs measure ≈ 4.4 ms + 2.6 ms × tp.

Why (read from huggingface/nanotron@2411b022, the part the fit does not explain is stated
as such): every pipeline send and receive is host-synchronous — src/nanotron/parallel/
pipeline_parallel/p2p.py ``P2P._send_meta``/``_recv_meta`` send two metadata tensors with
blocking ``dist.send``/``dist.recv`` before each activation or gradient and read them on the
host (copies from pageable CPU tensors, ``if ... > len(...)`` on a CUDA value), and state.py
runs every send/recv from the engine's Python loop (engine.py ``OneForwardOneBackward
PipelineEngine``: sends after each forward/backward, ``send_tensors`` waits on each); with
TP > 1 nanotron requires ``CUDA_DEVICE_MAX_CONNECTIONS=1`` (src/nanotron/parallel/
tensor_parallel/nn.py), one hardware queue shared by the compute kernels, the TP
collectives and the pipeline's NCCL kernels, so no stream runs ahead of another. That makes
the stages and, through the per-layer TP collectives, the tp ranks of a stage run in lock
step with a network round trip per transfer; that the cost then grows with tp and with the
layers of the stage is what the sweep measures, not something derived from the source."""


TP_NETWORK_STEP_LATENCY_SECONDS_NANOTRON = 6.0e-4
"""nanotron's time per network step of a tensor-parallel collective whose group spans nodes
(NCCL's ring all-gather / reduce-scatter over tp ranks on k nodes has k − 1 steps that
cross the network). FITTED on the nanotron sweep's 1B runs that ran, jointly with the
cluster constants (tests/validation/nanotron_sweep.py, ``fit('1B', FIT_GRID)``; grid 4e-4,
5e-4, 6e-4, 7e-4), held out on the 3B runs. What it fits: without a pipeline, tp 16 (2
nodes) takes 8.0 ms per layer per micro-batch at micro-batch 1 and tp 32 (4 nodes) 18 ms,
against 4.4 ms (the host floor) for tp ≤ 8 in a node, and the excess is flat in the
micro-batch size (its slope, ~1 ms per sequence at tp 16, is the bandwidth term already
priced): 10 collectives per layer (below) × (k − 1) steps × 0.5-0.6 ms gives 5.4 ms at tp
16 and 14.5 ms at tp 32, one constant for both. The 3B rows (held out) measure 7.8-8.2 ms
at tp 16 and 15-17 ms at tp 32 at micro-batch 1.

Read from the source (huggingface/nanotron@0e0a27ea, the Ultra-Scale Playbook branch, same
at 2411b022): with sequence parallelism and ``tp_linear_async_communication`` False (the
default, src/nanotron/config/parallelism_config.py) every column-parallel linear all-gathers
its input forward and again backward (``tp_recompute_allgather`` True by default) and
reduce-scatters its input gradient; every row-parallel linear reduce-scatters forward and
all-gathers its output gradient backward (src/nanotron/parallel/tensor_parallel/
functional.py ``_ColumnLinearNoAsyncCommunicationReduceScatterMode``,
distributed_differentiable_primitives.py): 2 column + 2 row linears per layer = 10
collectives, each issued synchronously between the GEMMs that need it on the one hardware
queue of ``CUDA_DEVICE_MAX_CONNECTIONS=1``. NCCL's own model prices a network step at
14 µs + the net overhead (src/graph/tuning.cc, NVIDIA/nccl@5067397c: ``hwLatencies[NET]``,
``getNetOverhead``): 40× less than measured here, so the size of this constant is
measured, not derived; it does not apply inside a node and is 0 (the cluster's network
step) for every other stack."""


ZERO1_GATHER_HOST_SECONDS_PER_RANK_PER_LAYER_NANOTRON = 5.0e-5
"""Host time of nanotron's ZeRO-1 parameter all-gather after the optimizer step, per data-
parallel rank per layer on the GPU. FITTED on the nanotron sweep's 1B runs that ran
(``fit('1B', FIT_GRID)``; grid 0, 1e-5, 2e-5, 3e-5, 5e-5, 8e-5), held out on the 3B runs.
Mechanism, read from huggingface/nanotron@0e0a27ea: src/nanotron/optim/zero.py
``ZeroDistributedOptimizer._all_gather_params`` gathers every parameter's dp slices with
src/nanotron/distributed.py ``all_gather_coalesced``, which flattens each rank's slices
into one buffer, runs one ``dist.all_gather`` and then, in a Python loop over the dp ranks
and the parameter tensors, unflattens and ``copy_``s each slice back: dp × (parameter
tensors) small copies, each an eager dispatch. A Llama layer has 6 parameter tensors in
nanotron (fused qkv, o, fused gate-up, down, two RMSNorm weights: src/nanotron/models/
llama.py), so 5e-5 s is ≈ 8 µs per copy, the order of one eager PyTorch dispatch. Without
it the whole-buffer ZeRO-1 sync prices the 1B runs without a pipeline on 32 nodes 112% fast
at dp 256 and 48-64% fast at dp 128; with it −4% and −0.1 to +4%; the runs with dp 32 move
by 4-10 points."""


MEGATRON_BF16_AS_LAUNCHED: dict[str, str] = {
    "mixed_bf16": "mixed_bf16_fp32_grads",
    "pure_bf16": "mixed_bf16_fp32_grads",
}
"""What Megatron-LM runs when the export writes ``--bf16`` (NVIDIA/Megatron-LM@d98e8a64
megatron/training/arguments.py, validate_args: with bf16, ``--main-grads-dtype`` (default
fp32) turns on ``accumulate_allreduce_grads_in_fp32``, "accumulate and all-reduce gradients in
fp32 for bfloat16 data type"; training.py passes it as ``grad_reduce_in_fp32``;
megatron/core/distributed/param_and_grad_buffer.py ``group_params_for_buffers``: grad_dtype =
torch.float if grad_reduce_in_fp32 else param.dtype). The optimizer keeps fp32 main params
(``--main-params-dtype`` default fp32) and fp32 moments (``--exp-avg-dtype``,
``--exp-avg-sq-dtype`` default fp32), so a pure-bf16 plan runs the same way: 2 + 4 + 12 = 18
bytes per parameter before sharding."""


class StackProfile(BaseModel):
    """What a training framework does that the memory and step-time models depend on."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    name: str
    implementation: str = Field(description="default activation-ledger profile")
    extra_gradient_bytes_per_param: float = Field(
        default=0.0,
        ge=0,
        description="buffers per trained parameter on top of the precision recipe's gradient "
        "(e.g. nanotron's fp32 accumulation buffer), not sharded by ZeRO-1",
    )
    precision_as_launched: dict[str, str] = Field(
        default_factory=dict,
        description="precision recipe → the recipe the stack actually runs when launched with "
        "it as the exported config states it (Megatron-LM's --bf16 keeps fp32 main gradients "
        "and fp32 main parameters); a recipe not listed runs as it is",
    )
    gradient_reduce_bytes: float | None = Field(
        default=None,
        gt=0,
        description="bytes per element of the data-parallel gradient collective (None: the "
        "precision recipe's gradient dtype)",
    )
    dp_bucket_bytes: float | None = Field(
        default=None,
        gt=0,
        description="gradient bucket size in bytes (None: one layer's gradients, FSDP2's "
        "per-block reduce-scatter)",
    )
    dp_bucket_params_per_rank: float = Field(
        default=0.0,
        ge=0,
        description="bucket grows with dp: max(bucket, this × dp) parameters (Megatron-Core)",
    )
    ddp_bucket_temporary: bool = Field(
        default=True,
        description="a DDP-style bucket buffer is held while the gradients are reduced "
        "(Megatron reduces in place in its contiguous grad buffer: no)",
    )
    selective_whole_layer: bool = Field(
        default=False,
        description="the stack's only layer-level recompute is whole-layer checkpointing, so "
        "its 'selective' is priced as full (Hugging Face: gradient_checkpointing wraps each "
        "decoder layer: huggingface/transformers@00029cfa src/transformers/modeling_layers.py "
        "GradientCheckpointingLayer.__call__ runs the layer under the checkpoint function; "
        "no per-op or attention-core option)",
    )
    zero3_prefetch_layers: int = Field(
        default=1, ge=0, description="layers all-gathered ahead of the one computing (FSDP/ZeRO-3)"
    )
    host_seconds_per_layer: float = Field(
        default=HOST_SECONDS_PER_LAYER_EAGER,
        ge=0,
        description="CPU time launching one layer's kernels per micro-batch, fwd + bwd",
    )
    pipeline_spanning_nodes_host_seconds_per_layer_per_tp: float = Field(
        default=0.0,
        ge=0,
        description="extra floor per layer per micro-batch, × tp, when the pipeline spans "
        "nodes (nanotron's host-synchronous pipeline sends); 0: none",
    )
    zero1_syncs_whole_buffer: bool = Field(
        default=False,
        description="ZeRO-1 all-reduces the whole gradient buffer in one collective after the "
        "pipeline flush and all-gathers the updated parameters in one collective, neither "
        "overlapped with the backward (nanotron), instead of bucketed reduce-scatters issued "
        "during the last backward",
    )
    zero1_gather_host_seconds_per_rank_per_layer: float = Field(
        default=0.0,
        ge=0,
        description="with zero1_syncs_whole_buffer: host time of unpacking the gathered "
        "parameter shards, per data-parallel rank per layer on the GPU (nanotron copies each "
        "rank's slice of each parameter tensor back one by one); 0: none",
    )
    tp_backward_regathers_input: bool = Field(
        default=False,
        description="with sequence parallelism, each column-parallel linear all-gathers its "
        "input again in the backward instead of saving the gathered input (nanotron's "
        "tp_recompute_allgather): 2 more all-gathers per layer per micro-batch",
    )
    tp_network_step_latency_seconds: float | None = Field(
        default=None,
        gt=0,
        description="latency of each network step of a tensor-parallel collective whose group "
        "spans nodes (None: the cluster's network step latency, as for every collective)",
    )
    tied_embedding_sync_exposed: bool = Field(
        default=False,
        description="with a pipeline, the tied embedding's gradient is all-reduced between "
        "the first and the last stage after the pipeline flush, not overlapped (nanotron)",
    )
    flash_attention_generation: Literal["fa2", "fa3"] = Field(
        default="fa2",
        description="attention kernel class: FlashAttention-2 (flash-attn, SDPA) or a "
        "Hopper-specific kernel (TE/cuDNN fused attention, FA3)",
    )
    pipeline_balances_head: bool = Field(
        default=False,
        description="pipeline stages split by compute cost with the output head counted as a "
        "block (nanotron), instead of equal layer counts with the head added to the last stage",
    )
    loss_bytes_per_logit: float = Field(
        default=26.0,
        ge=0,
        description="HBM bytes the loss moves per logit, forward + backward (unfused "
        "PyTorch cross-entropy on fp32 logits: upcast, log-softmax, its backward, downcast)",
    )
    grad_accumulation_bytes_per_param: float = Field(
        default=6.0,
        ge=0,
        description="HBM bytes per parameter per micro-batch to accumulate its gradient "
        "(autograd adds into .grad: read 2 + read 2 + write 2 in bf16)",
    )
    saves_quantized_gemm_inputs: bool = Field(
        default=False,
        description="under a low-precision recipe the linear layers save their inputs for the "
        "backward in the recipe's dtype with its scales (Transformer Engine), instead of "
        "the 16-bit input (torchao float8, which re-casts in the backward)",
    )
    fp8_recipe: str | None = Field(
        default=None,
        description="the FP8 training recipe the stack runs (a precision id), which the "
        "layout search proposes beside a 16-bit plan on a GPU with FP8 tensor cores; None: "
        "the stack has none the app models",
    )
    fp8_recipe_name: str = Field(
        default="", description="the stack's own name for its FP8 recipe (shown with it)"
    )
    fp8_vendors: tuple[str, ...] = Field(
        default=("NVIDIA",), description="GPU vendors whose FP8 the stack's recipe runs on"
    )
    moe_dispatch_overlap: float = Field(
        default=0.0,
        ge=0,
        le=1,
        description="share of the MoE token dispatch and combine (all-to-all) the stack hides "
        "behind computation by default: 0 for Megatron-Core, whose overlap of the expert-"
        "parallel all-to-all with another micro-batch's compute (overlap_moe_expert_parallel_"
        "comm, the combined 1F1B schedule) and of the shared experts with the dispatch "
        "(moe_shared_expert_overlap) are both off by default (NVIDIA/Megatron-LM@d98e8a64 "
        "megatron/core/transformer/transformer_config.py); the scenario's ep_overlap sets a "
        "run that turns them on",
    )
    moe_dropless_host_sync: Literal["always", "expert_parallel", "never"] = Field(
        default="never",
        description="whether the stack's dropless MoE dispatcher makes the host wait for the "
        "device once per MoE layer in the forward (the token counts the all-to-all's split "
        "sizes and the grouped GEMM's row counts need on the host): 'always' (Megatron-Core's "
        "MoEAlltoAllTokenDispatcher, NVIDIA/Megatron-LM@d98e8a64 megatron/core/transformer/"
        "moe/token_dispatcher.py: preprocess sets cuda_sync_point 'before_ep_alltoall' with "
        "ep or tp > 1, else 'before_finish'; _maybe_dtoh_and_synchronize copies the counts "
        "to the host on a side stream and waits on its event; with drop-and-pad the sync "
        "point stays 'no_sync'), 'expert_parallel' (torchtitan's AllToAllTokenDispatcher, "
        "pytorch/torchtitan@b5bcd76c torchtitan/models/common/token_dispatcher.py "
        "_sync_token_count_exchange: a blocking copy of the output splits when ep > 1; the "
        "local dispatch keeps the counts on the device), 'never' (no sync, or the stack's MoE "
        "path not read for one: DeepSpeed, Hugging Face, nanotron)",
    )
    head_kept_gathered: bool = Field(
        default=False,
        description="under FSDP the output head is not resharded after the forward: its "
        "weights stay gathered through the loss's backward, and its own backward holds the "
        "unsharded gradient and that gradient's copy in the reduce dtype",
    )
    memory_figure: str = Field(
        default="torch.cuda.max_memory_reserved",
        description="what the stack's logs call peak memory (the app's peak includes the "
        "fragmentation allowance, i.e. it estimates reserved memory)",
    )
    logged_peak_stage: Literal["fullest", "first"] = Field(
        default="fullest",
        description="whose peak the stack's own log or benchmark row reports: the fullest "
        "GPU, or world rank 0 (the first pipeline stage, tp and dp rank 0)",
    )
    source: str


STACKS: dict[str, StackProfile] = {
    p.id: p
    for p in (
        StackProfile(
            id="megatron",
            name=STACK_NAMES["megatron"],
            implementation="megatron",
            dp_bucket_bytes=40_000_000 * 2.0,
            dp_bucket_params_per_rank=1_000_000,
            ddp_bucket_temporary=False,
            precision_as_launched=MEGATRON_BF16_AS_LAUNCHED,
            host_seconds_per_layer=HOST_SECONDS_PER_LAYER_FUSED,
            loss_bytes_per_logit=14.0,
            grad_accumulation_bytes_per_param=0.0,
            flash_attention_generation="fa3",
            saves_quantized_gemm_inputs=True,
            fp8_recipe="fp8_current",
            fp8_recipe_name="Transformer Engine FP8, tensor-wise current scaling",
            moe_dropless_host_sync="always",
            memory_figure="torch.cuda.max_memory_allocated (Megatron's memory report prints "
            "both allocated and reserved)",
            source="NVIDIA/Megatron-LM@d98e8a64: megatron/core/distributed/"
            "distributed_data_parallel.py (bucket_size = max(40,000,000, 1,000,000 · dp) "
            "parameters; gradients reduced in place in the contiguous param_and_grad_buffer), "
            "distributed_data_parallel_config.py (overlap_grad_reduce False by default), "
            "megatron/training/arguments.py (--bf16 with the default --main-grads-dtype fp32 "
            "sets accumulate_allreduce_grads_in_fp32, which megatron/training/training.py passes "
            "as DistributedDataParallelConfig.grad_reduce_in_fp32, so "
            "megatron/core/distributed/param_and_grad_buffer.py group_params_for_buffers "
            "allocates the main_grad buffer in torch.float: mixed_bf16 and bf16 run as "
            "mixed_bf16_fp32_grads); TE fused attention; FP8/FP4 recipes through Transformer "
            "Engine's linear layers, which save their inputs quantized "
            "(NVIDIA/TransformerEngine@d0067d0d transformer_engine/pytorch/module/linear.py, "
            "layernorm_linear.py, grouped_linear.py); FP8 proposed as tensor-wise current "
            "scaling (TE's Float8CurrentScaling, the Megatron-Bridge recipes' FP8-CS)",
        ),
        StackProfile(
            id="deepspeed",
            name=STACK_NAMES["deepspeed"],
            implementation="pytorch",
            dp_bucket_bytes=5e8 * 2.0,
            zero3_prefetch_layers=1,
            source="deepspeedai/DeepSpeed@edaa7221: deepspeed/runtime/zero/config.py "
            "(reduce_bucket_size 5e8 and allgather_bucket_size 5e8 elements, "
            "stage3_prefetch_bucket_size 5e7, stage3_max_live_parameters 1e9); "
            "deepspeed/runtime/engine.py get_data_types and _do_optimizer_sanity_check (bf16 "
            "without data_types.grad_accum_dtype accumulates gradients in bf16, ZeRO or "
            "DDP_BFLOAT16: mixed_bf16 runs as named, 2 + 2 + 12; the export adds "
            "grad_accum_dtype fp32 only for mixed_bf16_fp32_grads); activation "
            "profile of the Hugging Face modules it usually wraps; no FP8 training recipe "
            "of its own (deepspeed/runtime has none at this commit): none proposed",
        ),
        StackProfile(
            id="torchtitan",
            name=STACK_NAMES["torchtitan"],
            implementation="torchtitan",
            gradient_reduce_bytes=4.0,
            dp_bucket_bytes=None,
            zero3_prefetch_layers=1,
            fp8_recipe="fp8_current",
            fp8_recipe_name="torchao float8, row-wise dynamic scaling",
            moe_dropless_host_sync="expert_parallel",
            fp8_vendors=("NVIDIA", "AMD"),
            head_kept_gathered=True,
            source="pytorch/torchtitan@b5bcd76c: torchtitan/distributed/fsdp.py (fully_shard "
            "per transformer block: one all-gather and one reduce-scatter per block, implicit "
            "prefetch of the next block; apply_fsdp_to_decoder wraps [norm, lm_head] with "
            "reshard_after_forward only under the policy 'always', so by default the head "
            "stays gathered from the forward into its backward; the embedding and the blocks "
            "follow the 'default' policy, resharded when there is no pipeline), "
            "torchtitan/config/configs.py (mixed_precision_param "
            "bfloat16, mixed_precision_reduce float32; training.dtype float32: the sharded "
            "parameters, their gradients and AdamW's moments stay fp32, 4 + 4 + 8 = 16 bytes "
            "per parameter, the same total per GPU as mixed_bf16's 2 + 2 + 12 under FSDP's "
            "full sharding, split differently between weights, gradients and optimizer); "
            "FP8 through torchao's Float8Linear, which saves the 16-bit input and weight and "
            "casts them again in the backward (pytorch/ao@36027d82 torchao/float8/"
            "float8_linear.py, matmul_with_hp_or_float8_args: save_for_backward(input_hp, "
            "weight_hp_t)): activations stay 16-bit; torchtitan/components/quantization/"
            "float8.py (Float8LinearConverter, recipe 'rowwise': dynamic scales from the "
            "current tensor, one per row, on NVIDIA SM89+ or AMD gfx942+), priced as "
            "fp8_current (its per-row scales are a negligible share of the bytes)",
        ),
        StackProfile(
            id="hf",
            name=STACK_NAMES["hf"],
            implementation="pytorch",
            extra_gradient_bytes_per_param=0.0,
            dp_bucket_bytes=25.0 * MIB,
            selective_whole_layer=True,
            source="PyTorch DistributedDataParallel defaults (bucket_cap_mb = 25, "
            "gradient_as_bucket_view = False), which accelerate and the Trainer use; Hugging "
            "Face modeling_llama.py modules (the 'pytorch' activation profile, measured in "
            "tests/validation/test_torch_activations.py); FP8 only through accelerate's "
            "Transformer Engine or MS-AMP backends (huggingface/accelerate@16cb6eb8 "
            "src/accelerate/utils/dataclasses.py FP8BackendType), which swap the modules this "
            "profile counts: none proposed",
        ),
        StackProfile(
            id="nanotron",
            name=STACK_NAMES["nanotron"],
            implementation="nanotron",
            extra_gradient_bytes_per_param=4.0,
            gradient_reduce_bytes=4.0,
            dp_bucket_bytes=25.0 * MIB,
            host_seconds_per_layer=HOST_SECONDS_PER_LAYER_NANOTRON,
            pipeline_spanning_nodes_host_seconds_per_layer_per_tp=(
                PIPELINE_SPANNING_NODES_HOST_SECONDS_PER_LAYER_PER_TP_NANOTRON
            ),
            tied_embedding_sync_exposed=True,
            zero1_syncs_whole_buffer=True,
            zero1_gather_host_seconds_per_rank_per_layer=(
                ZERO1_GATHER_HOST_SECONDS_PER_RANK_PER_LAYER_NANOTRON
            ),
            tp_backward_regathers_input=True,
            tp_network_step_latency_seconds=TP_NETWORK_STEP_LATENCY_SECONDS_NANOTRON,
            grad_accumulation_bytes_per_param=2.0 + 4.0 + 4.0,
            pipeline_balances_head=True,
            memory_figure="torch.cuda.max_memory_allocated and max_memory_reserved (both "
            "logged, divided by 1024**3) of world rank 0 only (the first pipeline stage)",
            logged_peak_stage="first",
            source="huggingface/nanotron@2411b022: src/nanotron/optim/gradient_accumulator.py "
            "(FP32GradientAccumulator: fp32 grad buffers (4 bytes) for every parameter even under "
            "ZeRO-1, fp32 copy of the parameters the optimizer steps; _accumulate_grad frees the "
            "bf16 .grad after each backward, so one 2-byte copy (DDP's bucket or .grad) is "
            "counted with the recipe's gradient; the DDP hook all-reduces (or "
            "reduce-scatters) the fp32 buffers bucket by bucket), src/nanotron/trainer.py "
            "(DistributedDataParallel with bucket_cap_mb = config.model.ddp_bucket_cap_mb = 25, "
            "gradient_as_bucket_view left False: a bf16 bucket copy of the gradients), "
            "src/nanotron/models/llama.py (flash_attn_varlen_func, TritonRMSNorm, unfused "
            "GLUActivation; get_block_compute_costs: decoder layer 4·h² + 3·f·h, lm_head V·h), "
            "src/nanotron/models/base.py (stages cut at cumulative-cost thresholds), "
            "src/nanotron/parallel/pipeline_parallel/p2p.py and engine.py (host-synchronous "
            "pipeline sends, blocking metadata before each tensor; 1F1B), "
            "src/nanotron/parallel/tensor_parallel/nn.py (CUDA_DEVICE_MAX_CONNECTIONS=1 with TP), "
            "src/nanotron/trainer.py training_step (sync_tied_weights_gradients after the "
            "pipeline and the DP sync, 'TODO ... overlap'; src/nanotron/parallel/"
            "tied_parameters.py: an all-reduce of the fp32 gradient buffer over the ranks "
            "holding the tied embedding and head), "
            "src/nanotron/helpers.py log_throughput (the benchmark CSV row, with "
            "max_memory_allocated/reserved, is written by world rank 0 only: pp, dp, tp rank "
            "0 in src/nanotron/parallel/context.py's rank grid); "
            "huggingface/nanotron@0e0a27ea (the "
            "Ultra-Scale Playbook branch the sweep ran): trainer.py (no DDP when "
            "accumulate_grad_in_fp32 and ZeRO > 0: after the pipeline "
            "sync_gradients_across_dp(reduce_scatter=False) all-reduces the whole contiguous "
            "fp32 buffer), optim/zero.py and distributed.py (ZeRO-1 parameter all-gather: "
            "one all_gather, then per-rank per-tensor copies), tensor_parallel/functional.py "
            "(sequence-parallel linears: the column-parallel input all-gathered again in the "
            "backward, tp_recompute_allgather); no FP8 recipe proposed: src/nanotron/fp8 "
            "(an FP8Linear) is imported by no model or config at 2411b022",
        ),
    )
}
"""Every stack's profile, by id."""


def get_stack(stack_id: str) -> StackProfile:
    """The profile of ``stack_id``; a ValueError lists the known ids."""
    try:
        return STACKS[stack_id]
    except KeyError:
        raise ValueError(f"unknown stack {stack_id!r}; known: {', '.join(STACKS)}") from None
