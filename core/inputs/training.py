"""The training tab's inputs: stack, precision recipe, optimizer, sequence and micro-batch,
recomputation, activation profile, LoRA/QLoRA and the overhead allowances; and the constants
they name (QLoRA's NF4 storage, PyTorch DDP's bucket, the LoRA targets).

In the inputs layer, below the estimators (:mod:`llm_planner.core.sections.training`, its
memory arithmetic :mod:`~llm_planner.core.sections.training_memory` and the parameter
structure :mod:`~llm_planner.core.sections.training_params`), which all take these inputs."""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal, Self

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)

from llm_planner.core.primitives.gpus import CUDA_CONTEXT_BYTES
from llm_planner.core.primitives.kept import kept_hash
from llm_planner.core.primitives.limits import bounds
from llm_planner.core.quantities.activation_recompute import (
    DEFAULT_RECOMPUTE_MODULES,
    MEGATRON_RECOMPUTE_MODULES,
    CheckpointPlacement,
    RecomputeMethod,
)
from llm_planner.core.quantities.activations import ALL_LINEAR, get_profile
from llm_planner.core.quantities.cuda_graphs import CudaGraphs
from llm_planner.core.quantities.offload import OFFLOAD_HOST_MEMORY_BYTES_PER_NODE
from llm_planner.core.quantities.optimizers import (
    PrecisionRecipe,
    canonical_precision,
    get_optimizer,
    get_precision,
    launched_precision,
)
from llm_planner.core.quantities.stacks import STACKS, Stack, get_stack

Recompute = Literal["none", "selective", "full", "threshold"]
Offload = Literal["none", "cpu", "nvme"]
"""Where DeepSpeed ZeRO keeps a state it offloads (``offload_optimizer.device`` /
``offload_param.device``, deepspeed/runtime/zero/offload_config.py ``OffloadDeviceEnum``)."""
MoeDispatcher = Literal["alltoall", "allgather"]

NF4_DOUBLE_QUANT_BITS = 4 + 8 / 64 + 32 / (64 * 256)
"""QLoRA's frozen base: 4-bit NF4 with blocks of 64 weights, each block's fp32 constant
double-quantised to 8 bits with one fp32 constant per 256 blocks: 4 + 8/64 + 32/(64·256)
≈ 4.127 bits per parameter (Dettmers et al. 2023, arXiv:2305.14314, section 3, "Double
Quantization": 0.127 bits of constants instead of 0.5)."""

QLORA_DEFAULT_RANK = 64
"""QLoRA's rank when ``--qlora`` is given without ``--lora-rank`` (Dettmers et al. 2023
use r = 64 on all linear layers)."""

DDP_BUCKET_BYTES = 25 * 2**20
"""PyTorch DDP's gradient bucket, ``bucket_cap_mb=25`` (MiB)."""

LORA_TARGETS = ALL_LINEAR
"""q, k, v, o (attention) and gate, up, down (MLP; a GeLU MLP has no gate)."""

_LOOKUPS: dict[str, Callable[[str], object]] = {
    "precision": get_precision,
    "optimizer": get_optimizer,
    "implementation": get_profile,
}
"""Catalog lookup of each id-valued input (each raises a ValueError naming the known ids)."""


class TrainingInputs(BaseModel):
    """Inputs of the training-memory tab."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    __slots__ = ("_kept_hash",)

    def __hash__(self) -> int:
        return kept_hash(self)  # the fields' hash, computed once (frozen)

    stack: Stack = Field(
        default="megatron", description="training framework the run is launched with"
    )
    precision: str = Field(default="mixed_bf16", description="precision recipe")
    optimizer: str = Field(default="adamw")
    seq_len: int = Field(
        default=4096, description="training sequence length s", **bounds("training.seq_len")
    )
    micro_batch: int = Field(
        default=1, description="sequences per micro-batch b", **bounds("training.micro_batch")
    )
    recompute: Recompute = "selective"
    recompute_threshold_bytes: float | None = Field(
        default=None, **bounds("training.recompute_threshold_bytes")
    )
    recompute_method: RecomputeMethod = Field(
        default="uniform",
        description="how full recomputation covers a stage's layers: uniform (Megatron: "
        "chunks of N layers, each chunk's input kept), block (Megatron: the first N layers "
        "of each stage checkpointed, the rest keep everything), every (torchtitan's "
        "selective_ac_option N: every N-th block checkpointed)",
    )
    recompute_layers: int | None = Field(
        default=None,
        **bounds("training.recompute_layers"),
        description="N of the recompute method (Megatron --recompute-num-layers, "
        "torchtitan selective_ac_option); None: every layer checkpointed alone",
    )
    recompute_modules: tuple[str, ...] = Field(
        default=DEFAULT_RECOMPUTE_MODULES,
        description="what selective recomputation drops, as Megatron's --recompute-modules "
        "(core_attn, mlp, moe, shared_experts, moe_act, layernorm, mla_up_proj); other stacks' "
        "selective is their own (torchtitan op-level, Hugging Face whole layer)",
    )
    recompute_checkpoint: CheckpointPlacement = Field(
        default="gpu",
        description="where full recomputation's layer checkpoints live: on the GPU, "
        "partitioned over the tensor-parallel group (DeepSpeed partition_activations, "
        "Megatron --distribute-saved-activations) or in host memory (DeepSpeed "
        "cpu_checkpointing)",
    )
    flash_attention: bool = True
    implementation: str = Field(default="megatron", description="activation-ledger profile")
    lora_rank: int | None = Field(default=None, **bounds("training.lora_rank"))
    qlora: bool = False
    lora_targets: tuple[str, ...] = Field(
        default=LORA_TARGETS, description="matrices LoRA adapts: q, k, v, o, gate, up, down"
    )
    moe_capacity_factor: float | None = Field(
        default=None,
        **bounds("training.moe_capacity_factor"),
        description="MoE expert capacity factor: tokens beyond c × the mean per expert are "
        "dropped and every expert padded to it (Megatron-Core's moe_expert_capacity_factor "
        "with moe_pad_expert_input_to_capacity); none: dropless, Megatron-Core's default",
    )
    moe_dispatcher: MoeDispatcher = Field(
        default="alltoall",
        description="how MoE tokens reach their experts: alltoall (Megatron-Core's "
        "MoEAlltoAllTokenDispatcher, what expert-parallel recipes set) or allgather (every "
        "token gathered over the tp·ep group and the outputs reduce-scattered, "
        "MoEAllGatherTokenDispatcher, Megatron-Core's default type)",
    )
    cuda_graphs: CudaGraphs = Field(
        default="none",
        description="what the step captures in CUDA graphs (Megatron-Core's cuda_graph_impl "
        "and cuda_graph_modules): none, per-layer attn, mlp, moe_router (the MoE router and "
        "dispatcher preprocessing), attn_moe_router (attention with them), layer (whole "
        "layers), or full_iteration; captured kernels leave the host's per-kernel launch floor",
    )
    moe_paged_stash: float | None = Field(
        default=None,
        **bounds("training.moe_paged_stash"),
        description="MoE paged stash (Megatron-Core --moe-paged-stash): the routed experts' "
        "saved tensors copied into a preallocated paged GPU buffer of this many times their "
        "balanced size (--moe-paged-stash-buffer-size-factor-cuda; Megatron-Bridge's recipes "
        "1.2), the rest spilled to pinned host memory; none: no paged stash",
    )
    moe_load_imbalance: float = Field(
        default=1.0,
        **bounds("training.moe_load_imbalance"),
        description="MoE expert load imbalance: tokens of the busiest expert ÷ the mean; it "
        "sets the step (the slowest rank). 1: balanced, what an auxiliary balancing loss or "
        "forced balancing aims at (stated default, not fitted)",
    )
    activation_offload_layers: int = Field(
        default=0,
        **bounds("training.activation_offload_layers"),
        description="layers per pipeline stage whose activations go to host memory in the "
        "forward and come back for the backward (Megatron --cpu-offloading-num-layers, "
        "activations only; Transformer Engine's CPU offload)",
    )
    mtp_layers: int = Field(
        default=0,
        **bounds("training.mtp_layers"),
        description="multi-token prediction depths trained with the model (DeepSeek-V3, "
        "arXiv:2412.19437 section 2.2; Megatron-Core --mtp-num-layers): each one more "
        "transformer layer, a 2h→h projection and another pass of the shared output head "
        "and loss, on the last pipeline stage; 0: none",
    )
    low_precision_params: bool = Field(
        default=False,
        description="a low-precision recipe's layer matrices held only in FP8/FP4, no 16-bit "
        "copy, and all-gathered so (Megatron --fp8-param-gather / --fp4-param-gather)",
    )
    grad_reduce_16bit: bool = Field(
        default=False,
        description="main gradients kept and reduced in 16 bits instead of fp32 (Megatron "
        "--grad-reduce-in-bf16; Megatron-Bridge grad_reduce_in_fp32 = False)",
    )
    dropout: bool = Field(
        default=False,
        description="dropout on attention probabilities and residuals (GPT-3 style); modern "
        "pretraining recipes (Llama) use none",
    )
    cuda_context_bytes: float = Field(
        default=CUDA_CONTEXT_BYTES,
        **bounds("training.cuda_context_bytes"),
        description="allowance for the CUDA context, cuBLAS/NCCL workspaces (typically "
        "0.5-1 GB with lazy module loading; an assumption, not derived)",
    )
    offload_optimizer: Offload = Field(
        default="none",
        description="ZeRO-Offload: fp32 master weights, optimizer moments and the fp32 "
        "gradient partition on the host (cpu) or NVMe, stepped by DeepSpeed's CPU Adam "
        "(ZeRO stage 1-3)",
    )
    offload_params: Offload = Field(
        default="none",
        description="ZeRO-Infinity: the 16-bit parameter partitions on the host (cpu) or "
        "NVMe, fetched layer by layer (ZeRO-3 only)",
    )
    host_memory_bytes_per_node: float = Field(
        default=OFFLOAD_HOST_MEMORY_BYTES_PER_NODE,
        **bounds("training.host_memory_bytes_per_node"),
        description="host (CPU) RAM per node that offloaded state may use",
    )
    pcie_bandwidth_bytes_per_s: float | None = Field(
        default=None,
        **bounds("training.pcie_bandwidth_bytes_per_s"),
        description="achieved host-GPU bandwidth per GPU, one direction; None: the GPU's "
        "PCIe generation",
    )
    fragmentation_fraction: float = Field(
        default=0.05,
        **bounds("training.fragmentation_fraction"),
        description="allocator fragmentation allowance as a fraction of allocated bytes "
        "(an assumption: PyTorch's caching allocator commonly loses a few percent)",
    )

    @model_validator(mode="after")
    def _stack_defaults(self) -> Self:
        """The stack's activation profile when none is given (editable under the stack).
        Set after validation so JSON input keeps its strict-mode types."""
        if "implementation" not in self.model_fields_set and self.stack in STACKS:
            object.__setattr__(self, "implementation", STACKS[self.stack].implementation)
        return self

    @field_validator("precision", mode="before")
    @classmethod
    def _precision_name(cls, value: object) -> object:
        """A name the stacks use (``bf16-mixed``, ``16-mixed``, ``bfloat16``...) stored as
        the recipe it means (:data:`~llm_planner.core.quantities.optimizers.PRECISION_ALIASES`)."""
        return canonical_precision(value) if isinstance(value, str) else value

    @field_validator("precision", "optimizer", "implementation")
    @classmethod
    def _known_id(cls, value: str, info: ValidationInfo) -> str:
        """The catalog's lookup raises the ValueError that lists the known ids."""
        _LOOKUPS[str(info.field_name)](value)
        return value

    @field_validator("lora_targets")
    @classmethod
    def _known_targets(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        unknown = [t for t in value if t not in LORA_TARGETS]
        if unknown or not value:
            raise ValueError(f"LoRA targets must be among {', '.join(LORA_TARGETS)}")
        return value

    @field_validator("recompute_modules")
    @classmethod
    def _known_modules(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        unknown = [m for m in value if m not in MEGATRON_RECOMPUTE_MODULES]
        if unknown:
            raise ValueError(
                f"recompute modules must be among {', '.join(MEGATRON_RECOMPUTE_MODULES)}"
            )
        return tuple(dict.fromkeys(value))

    @property
    def priced_recompute(self) -> Recompute:
        """The policy the ledger prices: a stack whose only selective option is whole-layer
        checkpointing (``StackProfile.selective_whole_layer``: Hugging Face) prices its
        'selective' as 'full', as its export writes it (``gradient_checkpointing``)."""
        stack = STACKS.get(self.stack)
        if self.recompute == "selective" and stack is not None and stack.selective_whole_layer:
            return "full"
        return self.recompute

    @model_validator(mode="after")
    def _threshold_given(self) -> Self:
        if self.recompute == "threshold" and self.recompute_threshold_bytes is None:
            raise ValueError("recompute 'threshold' needs recompute_threshold_bytes")
        return self

    def with_stack(self, stack: str) -> dict[str, str]:
        """The ``training`` fields that move these inputs onto ``stack``: the stack id, and
        its default activation profile where the profile in use is the current stack's own
        default (a profile the user chose stays: it is editable under the stack). A
        ValueError (from :func:`.stacks.get_stack`) lists the known ids."""
        return stack_fields(
            stack, current_stack=self.stack, current_implementation=self.implementation
        )

    @property
    def launched_recipe(self) -> PrecisionRecipe:
        """The precision recipe as the stack runs it, with the two precision switches
        (:func:`.optimizers.launched_precision`)."""
        return launched_precision(
            self.precision,
            self.stack,
            low_precision_params=self.low_precision_params,
            grad_reduce_16bit=self.grad_reduce_16bit,
        )

    @property
    def effective_lora_rank(self) -> int | None:
        """The LoRA rank in use: given, or QLoRA's default, or None for full fine-tuning."""
        if self.lora_rank is not None:
            return self.lora_rank
        return QLORA_DEFAULT_RANK if self.qlora else None


def stack_fields(
    stack: str, *, current_stack: str, current_implementation: str | None
) -> dict[str, str]:
    """The ``training`` fields that move a scenario from ``current_stack`` onto ``stack``:
    the stack id, and the new stack's default activation profile where the profile in use
    is the current stack's default or unset (a profile chosen by hand stays: the profile is
    editable under the stack). A ValueError (:func:`.stacks.get_stack`) lists the known ids."""
    fields = {"stack": get_stack(stack).id}
    current = STACKS.get(current_stack)
    if current_implementation is None or (
        current is not None and current_implementation == current.implementation
    ):
        fields["implementation"] = get_stack(stack).implementation
    return fields
