"""What the step time reads from the model and the training inputs beyond the layouts
(:class:`StepInputs`), and the optimizer step's extra HBM bytes per parameter."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache

from llm_planner.core.inputs.training import TrainingInputs
from llm_planner.core.primitives.architecture import Architecture, count_parameters
from llm_planner.core.primitives.kept import forgotten
from llm_planner.core.quantities.optimizers import PrecisionRecipe, get_precision
from llm_planner.core.sections.parallelism.step_time_offload import OffloadStep
from llm_planner.core.sections.training_memory import memory_terms
from llm_planner.core.sections.training_params import StageParams, stage_params, state_bytes


@dataclass(frozen=True)
class StepInputs:
    """What the step time reads from the model and the training inputs beyond the
    :class:`.workload.Workload` (issue 31): whether attention is fused, its head shape, and
    what a fine-tuning method runs. Computed here from the architecture and the training
    inputs (:func:`step_inputs_of`) while the workload module is being restructured; the
    defaults price full training with FlashAttention, the step time before issue 31."""

    flash_attention: bool = True
    heads: float = 0.0
    """Attention heads: an unfused attention's batched GEMMs per sequence and layer
    (``baddbmm``/``bmm`` over b·heads ÷ tp)."""
    head_dim: float = 0.0
    """The query-key width per head (the scores GEMM's K)."""
    frozen: bool = False
    """The base weights are frozen (LoRA, QLoRA): no weight-gradient GEMM for them."""
    adapter_params: float = 0.0
    """LoRA adapter parameters of the whole model (:func:`.training.stage_params`)."""
    lora_rank: float = 0.0
    adapted_matrices_per_layer: float = 0.0
    """Base matrices of one layer that carry an adapter (the LoRA targets present)."""
    layers: float = 0.0
    dequantised_params: float = 0.0
    """QLoRA: the layers' matrix parameters stored in NF4 and dequantised per use."""
    optimizer_extra_bytes_per_param: float = 0.0
    """HBM bytes per stepped parameter that a mixed-precision optimizer moves beyond Adam's
    own update (:func:`mixed_precision_optimizer_extra_bytes`)."""
    kv_width: float = 0.0
    """Elements of keys and values per token per layer, all heads (before tp): what context
    parallelism passes round its ring (:func:`_context_parallel`)."""
    gemm_dtype: str | None = None
    """A low-precision recipe's dtype for the layers' linear GEMMs (None: the compute
    dtype's peak for every GEMM; :class:`.optimizers.PrecisionRecipe`)."""
    quantize_bytes_per_element: float = 0.0
    """HBM bytes per GEMM operand element the recipe quantizes, per pass."""
    offload_layers: float = 0.0
    """Layers per stage whose activations go to host memory (``TrainingInputs.
    activation_offload_layers``)."""
    offload_bytes_per_token: float = 0.0
    """Activation bytes one layer keeps per token at tp 1 (the model's mean layer under the
    training inputs' recomputation): what an offloaded layer copies to the host and back."""
    host_link_bytes_per_s: float | None = None
    """Host-GPU copy rate per GPU, one direction (``training.pcie_bandwidth_bytes_per_s``;
    None: the GPU's, :func:`.offload.host_link_bytes_per_s`)."""
    offload: OffloadStep = field(default_factory=OffloadStep)
    """ZeRO-Offload / ZeRO-Infinity settings (:func:`.step_time_offload.offload_seconds`)."""
    cuda_graphs: str = "none"
    """What the step captures in CUDA graphs (``training.cuda_graphs``,
    :data:`.cuda_graphs.CUDA_GRAPHS`): the captured kernels leave the launch floor
    (:func:`.step_time_host._launch_seconds`)."""


@forgotten
@cache
def step_inputs_of(arch: Architecture, training_inputs: TrainingInputs) -> StepInputs:
    """:class:`StepInputs` of a model trained with ``training_inputs``."""
    ti = training_inputs
    rank = ti.effective_lora_rank
    whole = stage_params(
        arch, ti, layers_on_stage=arch.layers, first=True, last=True, pp=1, scale=1.0
    )
    targets = [t for t in ti.lora_targets if t != "gate" or arch.gated]
    recipe = ti.launched_recipe
    return StepInputs(
        flash_attention=ti.flash_attention,
        heads=float(arch.heads),
        head_dim=float(arch.q_size // max(arch.heads, 1)),
        frozen=rank is not None,
        adapter_params=float(whole.lora_params) if rank is not None else 0.0,
        lora_rank=float(rank or 0),
        adapted_matrices_per_layer=float(len(targets)) if rank is not None else 0.0,
        layers=float(arch.layers),
        dequantised_params=float(whole.layer_matrix_params) if ti.qlora else 0.0,
        optimizer_extra_bytes_per_param=mixed_precision_optimizer_extra_bytes(recipe),
        kv_width=float(_kv_width(arch)),
        gemm_dtype=recipe.gemm_dtype,
        quantize_bytes_per_element=recipe.quantize_bytes_per_element,
        offload_layers=float(ti.activation_offload_layers),
        offload_bytes_per_token=_offload_bytes_per_token(arch, ti),
        host_link_bytes_per_s=ti.pcie_bandwidth_bytes_per_s,
        offload=_offload_step(ti, whole),
        cuda_graphs=ti.cuda_graphs,
    )


def _offload_step(ti: TrainingInputs, whole: StageParams) -> OffloadStep:
    """The offload settings the step time reads (:class:`.step_time_offload.OffloadStep`)."""
    if ti.offload_optimizer == "none" and ti.offload_params == "none":
        return OffloadStep()
    everything = whole.layer_params + whole.outside_params
    lora = ti.effective_lora_rank is not None
    trained = whole.lora_params if lora else everything
    recipe = ti.launched_recipe
    return OffloadStep(
        optimizer=ti.offload_optimizer,
        params=ti.offload_params,
        host_link_bytes_per_s=ti.pcie_bandwidth_bytes_per_s,
        optimizer_bytes_per_param=state_bytes(whole, ti).optimizer / trained if trained else 0.0,
        gradient_bytes_per_param=recipe.gradients_bytes,
        weight_bytes_per_param=recipe.weights_bytes,
        trained_fraction=trained / everything if everything else 1.0,
    )


def _offload_bytes_per_token(arch: Architecture, ti: TrainingInputs) -> float:
    """Mean activation bytes a layer keeps per token at micro-batch 1, tp 1, without
    sequence parallelism, under the inputs' recomputation (:func:`.training_memory.
    memory_terms`' ``kept_per_layer`` ÷ s); 0 without activation offload."""
    if ti.activation_offload_layers <= 0:
        return 0.0
    terms = memory_terms(arch, ti, float(count_parameters(arch).total))
    kept = terms.activations(1, 1, False, ti.priced_recompute).kept_per_layer
    return float(kept) / ti.seq_len


def _kv_width(arch: Architecture) -> int:
    """Keys and values per token per layer, all heads: 2 · kv_heads · head_dim; with MLA
    the up-projected keys (nope + rope) and values of every head, which Megatron-Core's
    context-parallel attention receives (the latent is expanded before the core
    attention)."""
    if arch.mla is not None:
        m = arch.mla
        return arch.heads * (m.qk_nope_head_dim + m.qk_rope_head_dim + m.v_head_dim)
    return 2 * arch.kv_size


def mixed_precision_optimizer_extra_bytes(precision: PrecisionRecipe | str) -> float:
    """HBM bytes per parameter a mixed-precision optimizer step moves besides Adam's update
    of the fp32 master weights and moments (which :func:`.workload.
    optimizer_step_bytes_per_param` prices: read the gradient, read and write 12 bytes of
    state, write the 16-bit weight).

    Megatron-LM's ``Float16OptimizerWithFloat16Params.step`` (NVIDIA/Megatron-LM@fd443f26
    megatron/core/optimizer/optimizer.py; DeepSpeed's FP16_Optimizer does the same passes):
    copy the 16-bit gradients into fp32 main gradients (read G, write 4) that Adam then reads
    in fp32 (+4 − G), unscale them and check for inf/NaN with fp16 loss scaling
    (``_amp_foreach_non_finite_check_and_unscale_``: read 4, write 4), the gradient norm
    for clipping (``clip_grad_norm_fp32``: read 4), and copy the fp32 master weights back
    into the 16-bit model weights (read 4, besides the write Adam's count has): 8 + 8 + 4 + 4
    = 24 bytes for ``mixed_fp16``, 16 for ``mixed_bf16``, 8 with fp32 main gradients
    (Megatron-Core's ``mixed_bf16_fp32_grads``: no copy), 4 (the norm) without a master
    copy."""
    recipe = get_precision(precision) if isinstance(precision, str) else precision
    grad = recipe.gradients_bytes
    norm = 4.0
    if recipe.master_bytes <= 0:
        return norm
    copy = (grad + 4.0 + (4.0 - grad)) if grad < 4.0 else 0.0
    unscale = 8.0 if recipe.weights_dtype == "fp16" else 0.0
    return copy + unscale + norm + 4.0
