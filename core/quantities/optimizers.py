"""Precision recipes and optimizers: bytes per parameter of the persistent training state.

A training step keeps, per trained parameter: the weights the forward pass reads, their
gradients, and the optimizer's state (its moments and, under mixed precision, an fp32
master copy of the weights). ZeRO (Rajbhandari et al. 2019, arXiv:1910.02054, section 3.1)
writes this as (2 + 2 + K)·Ψ bytes with K = 12 for mixed-precision Adam: 16 bytes per
parameter. Frozen parameters (LoRA's base) keep only their weights.

Every byte count comes from :mod:`llm_planner.core.primitives.dtypes`.
"""

from __future__ import annotations

from typing import TypeVar

from pydantic import BaseModel, ConfigDict, Field

from llm_planner.core.primitives.dtypes import bytes_per_element
from llm_planner.core.quantities.stacks import get_stack

_T = TypeVar("_T")


class PrecisionRecipe(BaseModel):
    """Which dtype each piece of the training state is stored in."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    name: str
    weights_dtype: str = Field(description="the copy the forward and backward passes read")
    gradients_dtype: str
    master_dtype: str | None = Field(
        description="fp32 master copy the optimizer updates (None: it updates the weights)"
    )
    state_dtype: str = Field(description="dtype of the optimizer's moments")
    activations_dtype: str
    source: str
    gemm_dtype: str | None = Field(
        default=None,
        description="dtype of the transformer layers' linear GEMMs (forward, data- and "
        "weight-gradient) under a low-precision recipe; None: the compute dtype",
    )
    low_precision_copy_bytes: float = Field(
        default=0.0,
        description="bytes per layer-matrix parameter of the quantized weight copies "
        "(row-wise and column-wise) and their scales, held next to the 16-bit weights",
    )
    saved_input_bytes_per_element: float = Field(
        default=0.0,
        description="bytes per element of the one quantized copy a linear layer saves of its "
        "input for the weight-gradient GEMM (with its scales), where the stack saves it so "
        "(Transformer Engine); 0: not a low-precision recipe",
    )
    quantize_bytes_per_element: float = Field(
        default=0.0,
        description="HBM bytes moved per GEMM operand element quantized (16-bit read, "
        "row-wise and column-wise low-precision copies and scales written)",
    )
    quantized_params: bool = Field(
        default=False,
        description="the layers' matrices held only in their low-precision copies, no "
        "16-bit weight beside them, and all-gathered in it (Megatron's --fp8-param-gather / "
        "--fp4-param-gather; :func:`configured_precision`)",
    )

    @property
    def weights_bytes(self) -> float:
        return bytes_per_element(self.weights_dtype)

    @property
    def gradients_bytes(self) -> float:
        return bytes_per_element(self.gradients_dtype)

    @property
    def master_bytes(self) -> float:
        return 0.0 if self.master_dtype is None else bytes_per_element(self.master_dtype)

    @property
    def state_bytes(self) -> float:
        return bytes_per_element(self.state_dtype)


TE = "NVIDIA/TransformerEngine@d0067d0d transformer_engine/common/recipe/__init__.py"
"""Transformer Engine's recipes, read at this commit."""

_TE_COMMON = (
    "Megatron-Core runs them through Transformer Engine's autocast around each transformer "
    "layer's linear layers: the forward, data-gradient and weight-gradient GEMMs run in the "
    "low-precision dtype; the attention core stays 16-bit (every recipe's fp8_dpa = False), "
    "as do the embedding, the output layer and the router (plain PyTorch modules); the "
    "16-bit weights, fp32 main gradients and fp32 master copy stay (2 + 4 + 12 bytes per "
    "parameter, as mixed_bf16_fp32_grads). The quantized weight copies are kept for the "
    "step's micro-batches; each GEMM operand is quantized from 16 bits once per pass, "
    "row-wise and column-wise (the transpose the backward GEMMs read) in one kernel"
)


def _low_precision_recipes() -> tuple[PrecisionRecipe, ...]:
    """Transformer Engine's training recipes as precision choices (issue 27 step 3).

    Per recipe: the GEMM dtype; the quantized weight copies per layer-matrix parameter
    (row-wise + column-wise copy + their scales); the HBM bytes per quantized element (2
    read + both copies and scales written; current scaling reads the tensor once more for
    its amax first); the bytes per element of the one copy a linear layer saves of its input
    (``saved``: the data and the scales of one direction only). Scale sizes from each
    recipe's block: one fp32 per tensor (tensor-wise), one E8M0 byte per 32 values (MXFP8),
    one fp32 per 128 × 128 weight block and per 1 × 128 activation block (block-wise FP8),
    one E4M3 byte per 16 values (NVFP4; its fp32 per-tensor scale is negligible).

    Saved inputs, read in Transformer Engine at the same commit:
    transformer_engine/pytorch/module/linear.py (``_Linear.forward``: the quantized input is
    cut to its column-wise data, ``update_usage(rowwise_usage=False, columnwise_usage=True)``,
    the operand of the weight-gradient GEMM, or kept row-wise only when tensor-wise FP8
    must all-gather it again under sequence parallelism, and saved in place of the 16-bit
    input), layernorm_linear.py (the norm writes its output quantized, fused in the norm
    kernel, and only that copy is saved, ``ln_out.update_usage(rowwise_usage=False)``;
    the norm's 16-bit input and its statistics stay), grouped_linear.py (the experts' inputs
    likewise, ``grouped_x.rowwise_data = None``). One direction each: ``saved`` = the data
    type's bytes + its scales' (half of ``copy`` for the tensor-wise and MX recipes)."""

    def recipe(
        rid: str, name: str, gemm: str, *, copy: float, saved: float, quant: float, src: str
    ) -> PrecisionRecipe:
        return PrecisionRecipe(
            id=rid,
            name=name,
            weights_dtype="bf16",
            gradients_dtype="fp32",
            master_dtype="fp32",
            state_dtype="fp32",
            activations_dtype="bf16",
            gemm_dtype=gemm,
            low_precision_copy_bytes=copy,
            saved_input_bytes_per_element=saved,
            quantize_bytes_per_element=quant,
            source=f"{TE}: {src}. {_TE_COMMON}",
        )

    return (
        recipe(
            "fp8_delayed",
            "FP8 tensor-wise, delayed scaling (Transformer Engine)",
            "fp8",
            copy=2.0,
            saved=1.0,
            quant=4.0,
            src="DelayedScaling (line 173): one scale per tensor from the amax history of past "
            "iterations; E4M3 forward, E5M2 gradients (Format.HYBRID)",
        ),
        recipe(
            "fp8_current",
            "FP8 tensor-wise, current scaling (Transformer Engine)",
            "fp8",
            copy=2.0,
            saved=1.0,
            quant=6.0,
            src="Float8CurrentScaling (line 286): one scale per tensor from the tensor's own amax, "
            "computed before it is cast (a read more per quantization)",
        ),
        recipe(
            "mxfp8",
            "MXFP8: FP8 with an E8M0 scale per 32 values (Transformer Engine)",
            "fp8",
            copy=2.0 + 2.0 / 32.0,
            saved=1.0 + 1.0 / 32.0,
            quant=2.0 + 2.0 * (1.0 + 1.0 / 32.0),
            src="MXFP8BlockScaling (line 337): each group of 32 consecutive values scaled by its "
            "own E8M0 factor; the tensor and its transpose both computed from the 16-bit input",
        ),
        recipe(
            "fp8_blockwise",
            "FP8 block-wise: 128x128 weight, 1x128 activation blocks (DeepSeek-V3 style)",
            "fp8",
            copy=2.0 + 2.0 * 4.0 / (128.0 * 128.0),
            saved=1.0 + 4.0 / 128.0,
            quant=2.0 + 2.0 * (1.0 + 4.0 / 128.0),
            src="Float8BlockScaling (line 392): fp32 scales per block, split accumulation in "
            "every GEMM",
        ),
        recipe(
            "nvfp4",
            "NVFP4: FP4 E2M1 with an E4M3 scale per 16 values (Transformer Engine)",
            "fp4",
            copy=2.0 * (0.5 + 1.0 / 16.0),
            saved=0.5 + 1.0 / 16.0,
            quant=2.0 + 2.0 * (0.5 + 1.0 / 16.0),
            src="NVFP4BlockScaling (line 489): 16-value blocks with E4M3 scales and a per-tensor "
            "fp32 scale, 16x16 blocks for weights, random Hadamard transforms on the "
            "column-wise copies the weight-gradient GEMM reads",
        ),
    )


PRECISIONS: dict[str, PrecisionRecipe] = {
    r.id: r
    for r in (
        PrecisionRecipe(
            id="fp32",
            name="fp32 (weights 4 + gradients 4 + Adam 8)",
            weights_dtype="fp32",
            gradients_dtype="fp32",
            master_dtype=None,
            state_dtype="fp32",
            activations_dtype="fp32",
            source="Rajbhandari et al. 2019 section 3.1 (fp32 baseline: 16 bytes with Adam)",
        ),
        PrecisionRecipe(
            id="mixed_bf16",
            name="mixed bf16 + fp32 master (2 + 2 + 12)",
            weights_dtype="bf16",
            gradients_dtype="bf16",
            master_dtype="fp32",
            state_dtype="fp32",
            activations_dtype="bf16",
            source="Micikevicius et al. 2017 (arXiv:1710.03740); Rajbhandari et al. 2019 "
            "section 3.1: 2Ψ + 2Ψ + KΨ, K = 12 for Adam",
        ),
        PrecisionRecipe(
            id="mixed_fp16",
            name="mixed fp16 + fp32 master (2 + 2 + 12)",
            weights_dtype="fp16",
            gradients_dtype="fp16",
            master_dtype="fp32",
            state_dtype="fp32",
            activations_dtype="fp16",
            source="Micikevicius et al. 2017; Rajbhandari et al. 2019 section 3.1",
        ),
        PrecisionRecipe(
            id="mixed_bf16_fp32_grads",
            name="Megatron bf16 + fp32 main grads (2 + 4 + 12 = 18)",
            weights_dtype="bf16",
            gradients_dtype="fp32",
            master_dtype="fp32",
            state_dtype="fp32",
            activations_dtype="bf16",
            source="Megatron-LM distributed optimizer docs: bf16 params with fp32 gradient "
            "accumulation (main_grad), 18 bytes per parameter without sharding",
        ),
        PrecisionRecipe(
            id="pure_bf16",
            name="pure bf16: no fp32 master, bf16 optimizer states (2 + 2 + 4)",
            weights_dtype="bf16",
            gradients_dtype="bf16",
            master_dtype=None,
            state_dtype="bf16",
            activations_dtype="bf16",
            source="pure bf16 training (no master copy; e.g. Kalamkar et al. 2019 discuss "
            "the rounding risk); Adam moments in bf16. Lightning's precision='bf16-true' "
            "casts the module to bf16, so torch.optim keeps its moments in bf16 too. Called "
            "pure_bf16, not bf16: every stack's plain 'bf16' means mixed bf16 (see "
            "PRECISION_ALIASES); schema v2 files' 'bf16' migrate to this id",
        ),
        *_low_precision_recipes(),
    )
}

BNB_BLOCK = 2048
"""bitsandbytes blockwise 8-bit optimizers: one fp32 absmax per 2048 values per state
(``bitsandbytes/optim/optimizer.py``, ``blocks = n // 2048`` + remainder; Dettmers et al.
2021, arXiv:2110.02861, section 2.1). Tensors under 4096 elements stay 32-bit there
(``min_8bit_size``); ignored here (norms and biases, well under 0.1% of a model)."""


class Optimizer(BaseModel):
    """An optimizer's state: how many full-size moments, in which dtype, and whether the
    second moment is factored (Adafactor)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    name: str
    full_states: int = Field(ge=0, description="moments as large as the parameters")
    quantized_state_bytes: float | None = Field(
        default=None, description="bytes per state value when the optimizer quantizes (8-bit)"
    )
    factored_second_moment: bool = Field(
        default=False,
        description="second moment kept as row and column sums per matrix (rows + cols "
        "values), full only for vectors",
    )
    source: str

    def state_bytes_per_value(self, recipe: PrecisionRecipe) -> float:
        """Bytes of one state value: the recipe's state dtype, or the quantized size."""
        if self.quantized_state_bytes is not None:
            return self.quantized_state_bytes
        return recipe.state_bytes


_EIGHT_BIT = bytes_per_element("int8") + bytes_per_element("fp32") / BNB_BLOCK

OPTIMIZERS: dict[str, Optimizer] = {
    o.id: o
    for o in (
        Optimizer(
            id="adamw",
            name="AdamW (m and v)",
            full_states=2,
            source="Loshchilov & Hutter 2017 (arXiv:1711.05101); Kingma & Ba 2014",
        ),
        Optimizer(
            id="adam",
            name="Adam (m and v)",
            full_states=2,
            source="Kingma & Ba 2014 (arXiv:1412.6980)",
        ),
        Optimizer(
            id="adamw_bf16_moments",
            name="AdamW, bf16 moments (Megatron's precision-aware optimizer)",
            full_states=2,
            quantized_state_bytes=bytes_per_element("bf16"),
            source="NVIDIA/Megatron-LM@d98e8a64 megatron/training/arguments.py: "
            "--use-precision-aware-optimizer with --exp-avg-dtype bf16 --exp-avg-sq-dtype bf16 "
            "(Transformer Engine's FusedAdam keeps m and v in bf16, computes in fp32; the fp32 "
            "main parameters stay, --main-params-dtype fp32); what Megatron-Bridge's "
            "DeepSeek-V3 recipes set (NVIDIA-NeMo/Megatron-Bridge@067f987d "
            "perf_recipes/deepseek/common.py _enable_deepseek_precision_aware_optimizer)",
        ),
        Optimizer(
            id="adam8bit",
            name="8-bit Adam, blockwise (bitsandbytes)",
            full_states=2,
            quantized_state_bytes=_EIGHT_BIT,
            source="Dettmers et al. 2021 (arXiv:2110.02861): 1 byte per state value + one "
            "fp32 absmax per 2048-value block",
        ),
        Optimizer(
            id="sgd",
            name="SGD (no state)",
            full_states=0,
            source="plain SGD keeps no state",
        ),
        Optimizer(
            id="sgd_momentum",
            name="SGD with momentum (one buffer)",
            full_states=1,
            source="torch.optim.SGD momentum_buffer",
        ),
        Optimizer(
            id="adafactor",
            name="Adafactor (factored second moment, no momentum)",
            full_states=0,
            factored_second_moment=True,
            source="Shazeer & Stern 2018 (arXiv:1804.04235) section 3: row and column "
            "accumulators, O(n + m) per n×m matrix; β1 = 0 by default",
        ),
        Optimizer(
            id="adafactor_momentum",
            name="Adafactor with momentum (β1 > 0)",
            full_states=1,
            factored_second_moment=True,
            source="Shazeer & Stern 2018 section 5 (first moment kept in full)",
        ),
        Optimizer(
            id="lion",
            name="Lion (one momentum)",
            full_states=1,
            source="Chen et al. 2023 (arXiv:2302.06675): tracks only momentum",
        ),
    )
}
OPTIMIZERS["adamw8bit"] = OPTIMIZERS["adam8bit"].model_copy(update={"id": "adamw8bit"})


def _lookup(table: dict[str, _T], key: str, kind: str) -> _T:
    """``table[key]``; a ValueError names the ``kind`` and lists the known keys."""
    try:
        return table[key]
    except KeyError:
        raise ValueError(f"unknown {kind} {key!r}; known: {', '.join(table)}") from None


# Sources of the names below:
# - Lightning, lightning/fabric/plugins/precision/precision.py:
#   _PRECISION_INPUT_STR_ALIAS_CONVERSION = {"64": "64-true", "32": "32-true",
#   "16": "16-mixed", "bf16": "bf16-mixed"}; "*-mixed" autocasts the math and keeps the
#   parameters and the optimizer in fp32, "bf16-true" casts the module itself to bf16.
# - Hugging Face transformers TrainingArguments: --bf16 / --fp16 "use bf16 / fp16 (mixed)
#   precision" (torch autocast over fp32 parameters); accelerate mixed_precision "bf16" /
#   "fp16" likewise.
# - torchtitan: mixed_precision_param = "bfloat16" over fp32 sharded parameters (FSDP2).
# - MosaicML Composer: Precision.AMP_BF16 / AMP_FP16 ("amp_bf16", "amp_fp16").
PRECISION_ALIASES: dict[str, tuple[str, str]] = {
    "bf16": ("mixed_bf16", "Lightning's 'bf16' (= 'bf16-mixed'), Hugging Face --bf16, accelerate"),
    "bf16-mixed": ("mixed_bf16", "Lightning 'bf16-mixed'"),
    "bfloat16": ("mixed_bf16", "torch.bfloat16 autocast over fp32 parameters, as torchtitan"),
    "amp-bf16": ("mixed_bf16", "Composer 'amp_bf16'"),
    "fp16": ("mixed_fp16", "Hugging Face --fp16, accelerate 'fp16'"),
    "16": ("mixed_fp16", "Lightning's '16' (= '16-mixed')"),
    "16-mixed": ("mixed_fp16", "Lightning '16-mixed'"),
    "float16": ("mixed_fp16", "torch.float16 autocast with a gradient scaler"),
    "half": ("mixed_fp16", "half-precision (fp16) autocast with a gradient scaler"),
    "amp-fp16": ("mixed_fp16", "Composer 'amp_fp16'"),
    "amp": ("mixed_fp16", "torch.cuda.amp / apex AMP (fp16)"),
    "bf16-true": ("pure_bf16", "Lightning 'bf16-true': the module in bf16, no fp32 copy"),
    "32": ("fp32", "Lightning's '32' (= '32-true')"),
    "32-true": ("fp32", "Lightning '32-true'"),
    "float32": ("fp32", "torch.float32, no mixed precision"),
    "full": ("fp32", "full (fp32) precision"),
}
"""Precision names the stacks and people use → (recipe id, whose meaning it is).

Keys are normalised (:func:`precision_key`: lower case, ``_`` and spaces as ``-``, leading
dashes dropped, so ``--bf16``, ``BF16_MIXED`` and ``bf16-mixed`` are one key). The most
common name, ``bf16``, means what Lightning, Hugging Face and accelerate mean by it: mixed
bf16 with fp32 master weights; pure bf16 is asked for by name (``pure_bf16``,
``bf16-true``). Names with no recipe here (``16-true``, ``64-true``, FP8 recipes) are
refused with the list of known ones rather than read as something close."""


def precision_key(name: str) -> str:
    """The lookup key of a typed precision name (see :data:`PRECISION_ALIASES`)."""
    return "-".join(name.strip().lower().lstrip("-").replace("_", "-").split())


def resolve_precision(name: str) -> tuple[PrecisionRecipe, str | None]:
    """The recipe ``name`` means, and, when ``name`` is not the recipe's own id, a sentence
    saying how it was read (for the command line to echo): a recipe id (``mixed_bf16``,
    also as ``mixed-bf16``) or a name from :data:`PRECISION_ALIASES` (``bf16-mixed``,
    ``16-mixed``, ``bfloat16``, ``fp16``, ``--bf16``, ``bf16-true``).

    A ValueError names the known ids and names, and the closest ones.
    """
    if name in PRECISIONS:
        return PRECISIONS[name], None
    key = precision_key(name)
    by_key = {precision_key(recipe_id): recipe_id for recipe_id in PRECISIONS}
    if key in by_key:
        return PRECISIONS[by_key[key]], None
    if key in PRECISION_ALIASES:
        recipe_id, whose = PRECISION_ALIASES[key]
        recipe = PRECISIONS[recipe_id]
        note = f"{name.strip()!r} read as {recipe.id}, {recipe.name} ({whose})"
        if recipe_id == "mixed_bf16":
            note += "; pure bf16 is pure_bf16 (Lightning 'bf16-true')"
        return recipe, note
    names = [*PRECISIONS, *PRECISION_ALIASES]
    import difflib  # only when an id is unknown: not on the report's path

    close = difflib.get_close_matches(key, [precision_key(n) for n in names], n=3, cutoff=0.6)
    hint = f"; did you mean {' or '.join(close)}?" if close else ""
    raise ValueError(
        f"unknown precision {name!r}{hint} known: {', '.join(PRECISIONS)}; also read: "
        f"{', '.join(PRECISION_ALIASES)}"
    )


def canonical_precision(name: str) -> str:
    """The recipe id ``name`` means (:func:`resolve_precision`); ValueError when none."""
    return resolve_precision(name)[0].id


def get_precision(recipe_id: str) -> PrecisionRecipe:
    """The recipe ``recipe_id``; a ValueError lists the known ones."""
    return _lookup(PRECISIONS, recipe_id, "precision")


def launched_precision(
    recipe_id: str,
    stack_id: str,
    *,
    low_precision_params: bool = False,
    grad_reduce_16bit: bool = False,
) -> PrecisionRecipe:
    """The precision recipe ``recipe_id`` as the training stack ``stack_id`` runs it when
    launched with the config the app exports (``StackProfile.precision_as_launched``):
    Megatron-LM's ``--bf16`` keeps fp32 main gradients, so mixed_bf16 runs as
    mixed_bf16_fp32_grads there (2 + 4 + 12 bytes per parameter); other stacks run the recipe
    as named; then the two switches of :func:`configured_precision`. Every training-state
    byte count reads the recipe through this (``TrainingInputs.launched_recipe``)."""
    launched = get_stack(stack_id).precision_as_launched.get(recipe_id, recipe_id)
    return configured_precision(
        get_precision(launched),
        low_precision_params=low_precision_params,
        grad_reduce_16bit=grad_reduce_16bit,
    )


def configured_precision(
    recipe: PrecisionRecipe, *, low_precision_params: bool, grad_reduce_16bit: bool
) -> PrecisionRecipe:
    """``recipe`` with Megatron-LM's two switches on the stored dtypes (read at
    NVIDIA/Megatron-LM@d98e8a64 megatron/training/arguments.py):

    * ``low_precision_params``: ``--fp8-param-gather`` ("Keep the compute param in fp8 (do
      not use any other intermediate dtype) and perform the param all-gather in fp8"; NVFP4:
      ``--fp4-param-gather``; Megatron-Bridge's ``fp8_param`` / ``fp4_param``, which every
      FP8/FP4 mixed-precision config of NVIDIA-NeMo/Megatron-Bridge@067f987d
      src/megatron/bridge/training/mixed_precision.py turns on): the layers' matrices live
      only as their quantized copies (:attr:`PrecisionRecipe.low_precision_copy_bytes`),
      the 16-bit weight of each is gone (the fp32 master copy in the distributed optimizer
      stays); embeddings, norms and the output layer stay 16-bit. A recipe without
      quantized copies (16- or 32-bit) is unchanged.
    * ``grad_reduce_16bit``: ``--grad-reduce-in-bf16`` (validate_args then clears
      ``accumulate_allreduce_grads_in_fp32``: the main-gradient buffer and its
      reduce-scatter in the 16-bit dtype; Megatron-Bridge's ``grad_reduce_in_fp32 = False``,
      which its performance recipes set in ``perf_recipes/_common.py:_benchmark_common``):
      fp32 gradients of a recipe with 16-bit weights and an fp32 master become 16-bit."""
    update: dict[str, object] = {}
    if low_precision_params and recipe.low_precision_copy_bytes > 0:
        update["quantized_params"] = True
    if (
        grad_reduce_16bit
        and recipe.gradients_dtype == "fp32"
        and recipe.master_dtype is not None
        and recipe.weights_dtype in ("bf16", "fp16")
    ):
        update["gradients_dtype"] = recipe.weights_dtype
    return recipe.model_copy(update=update) if update else recipe


def get_optimizer(optimizer_id: str) -> Optimizer:
    """The optimizer ``optimizer_id``; a ValueError lists the known ones."""
    return _lookup(OPTIMIZERS, optimizer_id, "optimizer")


class StateBytesPerParam(BaseModel):
    """Persistent bytes per trained parameter (non-factored optimizers)."""

    model_config = ConfigDict(frozen=True)

    weights: float
    gradients: float
    optimizer: float = Field(description="master copy + moments")

    @property
    def total(self) -> float:
        return self.weights + self.gradients + self.optimizer


def state_bytes_per_param(
    recipe: PrecisionRecipe, optimizer: Optimizer, *, weights_dtype: str | None = None
) -> StateBytesPerParam:
    """Bytes per trained parameter: weights + gradients + (master + moments).

    Mixed precision with Adam: 2 + 2 + (4 + 4 + 4) = 16 (Rajbhandari et al. 2019, section
    3.1, K = 12). 8-bit Adam: moments 2·(1 + 4/2048) bytes. ``weights_dtype`` overrides the
    stored weights' dtype (e.g. int8) to compare savings. A factored second moment is not
    per parameter: see :func:`factored_state_values`.
    """
    weights = bytes_per_element(weights_dtype) if weights_dtype else recipe.weights_bytes
    moments = optimizer.full_states * optimizer.state_bytes_per_value(recipe)
    return StateBytesPerParam(
        weights=weights,
        gradients=recipe.gradients_bytes,
        optimizer=recipe.master_bytes + moments,
    )


def factored_state_values(matrices: list[tuple[int, int]], vector_params: int) -> int:
    """Values in Adafactor's factored second moment: rows + cols for each n×m matrix, the
    full size for vectors (Shazeer & Stern 2018, section 3 and Algorithm 4)."""
    return sum(n + m for n, m in matrices) + vector_params
