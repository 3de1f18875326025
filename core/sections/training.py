"""Training memory per GPU: persistent state, activations, temporaries, peak and fit.

A model can load and still run out of memory during an iteration: persistent state
(weights, gradients, optimizer) stays resident; activations grow during the forward pass;
temporaries peak on top. :func:`estimate_training` reports both "after load" and "peak"
for one GPU of a (tp, pp, dp, ep, ZeRO) layout:

* persistent = weights + gradients + optimizer state (:mod:`.optimizers`), divided by
  tp·pp (the first pipeline stage also holds the embedding, the last the output head and
  final norm) and by dp per ZeRO stage (Rajbhandari et al. 2019, Figure 1 and section 5:
  stage 1 shards optimizer state, 2 also gradients, 3 also weights); with expert
  parallelism the routed experts are also ÷ ep and ZeRO-sharded over dp/ep instead
  (:func:`estimate_training`);
* activations = the per-layer ledger (:mod:`.activations`) × layers on the stage ×
  micro-batches in flight (1F1B: the first stage holds pp of them, Narayanan et al. 2021,
  arXiv:2104.04473 section 2.2.1; Korthikanti et al. 2022 section 4.2.3) + tensors
  outside the layers;
* temporaries = gradient buckets + ZeRO-3 gathered weights + QLoRA dequantised weight +
  the larger of the logits working set and one layer's recompute working set;
* overhead = CUDA context allowance + allocator-fragmentation allowance (stated
  assumptions, user-settable).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal, NamedTuple

from pydantic import BaseModel, ConfigDict, Field

from llm_planner.core.inputs.training import (
    DDP_BUCKET_BYTES,
    LORA_TARGETS,
    NF4_DOUBLE_QUANT_BITS,
    QLORA_DEFAULT_RANK,
    Recompute,
    TrainingInputs,
    stack_fields,
)
from llm_planner.core.primitives.architecture import (
    Architecture,
    LayerMatrix,
    count_parameters,
)
from llm_planner.core.primitives.architecture_groups import layer_groups
from llm_planner.core.primitives.figures import Figure, Unit
from llm_planner.core.primitives.gpus import GPU
from llm_planner.core.primitives.kept import kept
from llm_planner.core.quantities.activation_recompute import (
    recomputed_fraction,
    selective_module_flops,
)
from llm_planner.core.quantities.activations import LedgerEntry, get_profile
from llm_planner.core.quantities.flops import attention_forward_flops_per_token
from llm_planner.core.quantities.stacks import get_stack
from llm_planner.core.sections.training_memory import (
    RECOMPUTE_POLICIES,
    memory_terms,
)
from llm_planner.core.sections.training_memory_one import training_memory_one
from llm_planner.core.sections.training_offload import OffloadReport, offload_report
from llm_planner.core.sections.training_params import (
    LayerTemporaries,
    StageParams,
    StateBytes,
    largest_local_layer,
    layer_activations_for,
    layer_kinds,
    layer_temporaries,
    one_layer_params,
    outside_ledger_for,
    pipeline_stage_layers,
    stage_params,
    state_bytes,
)

__all__ = [
    "DDP_BUCKET_BYTES",
    "LORA_TARGETS",
    "NF4_DOUBLE_QUANT_BITS",
    "QLORA_DEFAULT_RANK",
    "LayerTemporaries",
    "Recompute",
    "StageParams",
    "StateBytes",
    "TrainingFlops",
    "TrainingInputs",
    "TrainingReport",
    "estimate_training",
    "hardware_flops_factor",
    "largest_local_layer",
    "layer_activations_for",
    "layer_kinds",
    "layer_temporaries",
    "one_layer_params",
    "outside_ledger_for",
    "pipeline_stage_layers",
    "stack_fields",
    "stage_params",
    "state_bytes",
    "training_flops",
]
"""Also re-exported: the inputs (:mod:`.training_inputs`) and the parameter structure
(:mod:`.training_params`), which the other sections import from here."""


class TrainingReport(BaseModel):
    """Training memory for one GPU (bytes), for the most loaded pipeline stage."""

    model_config = ConfigDict(frozen=True)

    weights_bytes: float
    gradients_bytes: float
    optimizer_bytes: float
    activations_bytes: float
    temporary_bytes: float
    overhead_bytes: float
    persistent_bytes: float
    peak_bytes: float
    fits: bool
    max_micro_batch: int = Field(description="largest micro-batch whose peak fits; 0 if none")
    capacity_bytes: float
    after_load_bytes: float = Field(description="persistent state + CUDA context")
    hardware_flops_factor: float = Field(
        description="hardware FLOPs / model FLOPs from recomputation (full ≈ 8/6; "
        ":func:`hardware_flops_factor`)"
    )
    ledger: list[LedgerEntry] = Field(description="one layer's saved tensors, bytes per GPU")
    outside_ledger: list[LedgerEntry] = Field(description="saved tensors outside the layers")
    # context
    stack: str = Field(default="megatron", description="training stack id (quantities.stacks)")
    stack_name: str = Field(default="", description="the stack's name")
    peak_memory_figure: str = Field(
        default="",
        description="what the peak estimates: reserved memory (allocated + fragmentation "
        "allowance + CUDA context); the stack's logs report allocated, reserved or both",
    )
    precision: str
    optimizer: str
    implementation: str
    recompute: str
    stage: Literal["only", "first", "last"]
    layers_on_stage: int
    microbatches_in_flight: float = Field(
        description="micro-batches whose activations the reported stage holds, in stage-loads "
        "(fractional under the interleaved schedule: chunks of L/(p·v) layers)"
    )
    trainable_params: float = Field(description="trained parameters, whole model")
    frozen_params: float = Field(description="frozen parameters, whole model (LoRA base)")
    activations_per_layer_bytes: float = Field(description="kept per layer per micro-batch")
    outside_activations_bytes: float
    logits_bytes: float = Field(description="logits working set (last stage)")
    recompute_working_bytes: float
    gradient_bucket_bytes: float
    zero3_gather_bytes: float
    dequant_bytes: float
    cuda_context_bytes: float
    fragmentation_bytes: float
    offload: OffloadReport | None = Field(
        default=None,
        description="ZeRO CPU/NVMe offload: host and NVMe bytes (None: nothing offloaded)",
    )

    @property
    def host_fits(self) -> bool:
        """The offloaded state fits the node's host RAM (True without offload)."""
        return self.offload is None or self.offload.host_fits

    def figures(self) -> list[Figure]:
        zero = "ZeRO (Rajbhandari et al. 2019, Figure 1)"
        kor = "Korthikanti et al. 2022 (arXiv:2205.05198) section 4"
        rows: list[tuple[str, str, float | int | bool, Unit, str, str]] = [
            (
                "weights_bytes",
                "Weights",
                self.weights_bytes,
                "bytes",
                "P_stage·bytes/(tp[·dp])",
                zero,
            ),
            (
                "gradients_bytes",
                "Gradients",
                self.gradients_bytes,
                "bytes",
                "trainable·bytes/(tp[·dp])",
                zero,
            ),
            (
                "optimizer_bytes",
                "Optimizer state",
                self.optimizer_bytes,
                "bytes",
                "trainable·(master + moments)/(tp[·dp])",
                zero,
            ),
            (
                "persistent_bytes",
                "Persistent state",
                self.persistent_bytes,
                "bytes",
                "weights + gradients + optimizer",
                zero,
            ),
            (
                "after_load_bytes",
                "After load",
                self.after_load_bytes,
                "bytes",
                "persistent + CUDA context",
                "",
            ),
            (
                "activations_bytes",
                "Activations",
                self.activations_bytes,
                "bytes",
                "ledger per layer × layers on stage × micro-batches in flight + outside layers",
                kor,
            ),
            (
                "temporary_bytes",
                "Temporaries",
                self.temporary_bytes,
                "bytes",
                "buckets + ZeRO-3 gather + dequant + max(logits, recompute working set)",
                "",
            ),
            (
                "logits_bytes",
                "  logits working set",
                self.logits_bytes,
                "bytes",
                "(act + 4)·s·b·V/t",
                kor,
            ),
            (
                "recompute_working_bytes",
                "  recompute working set",
                self.recompute_working_bytes,
                "bytes",
                "one layer's regenerated tensors",
                kor,
            ),
            (
                "gradient_bucket_bytes",
                "  gradient bucket",
                self.gradient_bucket_bytes,
                "bytes",
                "DDP 25 MiB bucket, or one layer's gradients with ZeRO-2/3",
                "PyTorch DDP bucket_cap_mb",
            ),
            (
                "zero3_gather_bytes",
                "  ZeRO-3 gathered weights",
                self.zero3_gather_bytes,
                "bytes",
                "2 layers' full weights (current + prefetch)",
                zero,
            ),
            (
                "dequant_bytes",
                "  QLoRA dequantised matrix",
                self.dequant_bytes,
                "bytes",
                "largest base matrix in 16 bits",
                "Dettmers et al. 2023",
            ),
            (
                "overhead_bytes",
                "Overhead allowance",
                self.overhead_bytes,
                "bytes",
                "CUDA context + fragmentation fraction × allocated",
                "assumption",
            ),
            (
                "cuda_context_bytes",
                "  CUDA context allowance",
                self.cuda_context_bytes,
                "bytes",
                "stated allowance (--cuda-context)",
                "assumption",
            ),
            (
                "fragmentation_bytes",
                "  fragmentation allowance",
                self.fragmentation_bytes,
                "bytes",
                "fraction × allocated (--fragmentation)",
                "assumption",
            ),
            (
                "peak_bytes",
                "Peak per GPU",
                self.peak_bytes,
                "bytes",
                "persistent + activations + temporaries + overhead",
                "",
            ),
            (
                "capacity_bytes",
                "GPU memory",
                self.capacity_bytes,
                "bytes",
                "as sold",
                "GPU catalog",
            ),
            ("fits", "Fits", self.fits, "bool", "peak ≤ GPU memory", ""),
            (
                "max_micro_batch",
                "Largest micro-batch that fits",
                self.max_micro_batch,
                "count",
                "largest b with peak(b) ≤ memory",
                "",
            ),
            (
                "hardware_flops_factor",
                "Hardware/model FLOPs (recompute)",
                self.hardware_flops_factor,
                "ratio",
                "1 + recomputed/model FLOPs; model = k·weights + 3·attention, k = 3 (2 LoRA)",
                kor + " section 5",
            ),
            (
                "trainable_params",
                "Trainable parameters",
                self.trainable_params,
                "params",
                "all, or LoRA r·(d_in + d_out) per adapted matrix",
                "Hu et al. 2021",
            ),
        ]
        rows += _offload_rows(self)
        optional = {"gradient_bucket_bytes", "zero3_gather_bytes", "dequant_bytes"}
        return [
            Figure(key=k, label=label, value=v, unit=unit, formula=f, source=src)
            for k, label, v, unit, f, src in rows
            if not (k in optional and v == 0)
        ]


def _offload_rows(
    report: TrainingReport,
) -> list[tuple[str, str, float | int | bool, Unit, str, str]]:
    """The host and NVMe figures, when something is offloaded."""
    off = report.offload
    if off is None:
        return []
    src = "DeepSpeed@edaa7221 stage_1_and_2.py, stage3.py; Ren et al. 2021 (ZeRO-Offload)"
    return [
        (
            "host_bytes",
            "Offloaded to host RAM, per GPU",
            off.host_bytes,
            "bytes",
            "optimizer (O + 4 + 2)·n on cpu; 16-bit params on cpu; swap buffers on nvme",
            src,
        ),
        (
            "host_bytes_per_node",
            "Offloaded to host RAM, per node",
            off.host_bytes_per_node,
            "bytes",
            "per GPU × GPUs per node",
            src,
        ),
        (
            "host_capacity_bytes_per_node",
            "Host RAM per node",
            off.host_capacity_bytes_per_node,
            "bytes",
            "stated (--host-memory; DGX H100: 2 TB)",
            "assumption",
        ),
        ("host_fits", "Host RAM fits", off.host_fits, "bool", "per node ≤ host RAM", ""),
        (
            "nvme_bytes",
            "Offloaded to NVMe, per GPU",
            off.nvme_bytes,
            "bytes",
            "optimizer state + fp32 gradients (nvme); 16-bit params (nvme)",
            src,
        ),
    ]


def _matmul_params_per_token(arch: Architecture, mats: tuple[LayerMatrix, ...]) -> int:
    """Weight-matrix elements one token multiplies in a layer of matrices ``mats``
    (:meth:`.Architecture.layer_matrices`; an MoE layer: the router, the shared experts and
    the k routed experts the token is sent to)."""
    k = arch.moe.experts_per_token if arch.moe is not None else 0
    return sum(m.d_in * m.d_out * (k if m.routed else m.copies) for m in mats)


class TrainingFlops(NamedTuple):
    """Forward FLOPs per trained token, and what recomputation replays (:func:`training_flops`)."""

    weights_forward: float
    """2 × weight-matrix elements a token multiplies: every layer and the output head."""
    attention_forward: float
    """Attention scores and weighted sum (:mod:`llm_planner.core.quantities.flops`)."""
    recomputed: float
    """Forward FLOPs run again during the backward pass under the recomputation policy."""
    weight_passes: int
    """Passes over the weight matrices: 3 (forward, input and weight gradients), 2 under
    LoRA (frozen weights get no weight gradient; Hu et al. 2021)."""

    @property
    def model(self) -> float:
        """Model FLOPs per token: passes × weights + 3 × attention (PaLM's 6N + 12·L·H·Q·T
        when every weight is trained)."""
        return self.weight_passes * self.weights_forward + 3.0 * self.attention_forward


@kept()
def training_flops(
    arch: Architecture, inputs: TrainingInputs, layers_on_stage: int | None = None
) -> TrainingFlops:
    """Model and recomputed FLOPs per token of one training step under ``inputs``.

    Model FLOPs follow Chowdhery et al. 2022 (PaLM, arXiv:2204.02311) Appendix B: 6·N per
    token for the weights (forward 2N, backward 4N) plus 12·L·H·Q·T for attention (here
    with sliding windows capping T and MLA's own widths). What is recomputed is what the
    activation ledger drops (Korthikanti et al. 2022, arXiv:2205.05198, section 5):

    - none: nothing;
    - full: every layer's forward (weights and attention), 2N_layers + 4·L·H·Q·T; the
      output head and loss sit outside the checkpointed layers and are not replayed, so
      a GPT layer stack gets exactly 8/6 of 6·P·D and a whole model slightly less;
    - selective: the attention core (Q·Kᵀ, softmax, A·V), 4·L·H·Q·T, when the ledger
      drops it; with a fused (flash) kernel no s² tensor is saved, so nothing is dropped;
      torchtitan's op-level selective (profile ``selective = "op_sac"``): each layer's
      forward less the matmuls and attention it keeps (:func:`.activations.op_sac_tensors`);
    - threshold: the producers of every dropped tensor, from the ledger;
    - partial full (``recompute_method`` block / every with N = ``recompute_layers``): the
      share of a stage's ``layers_on_stage`` layers replayed
      (:func:`.activation_recompute.recomputed_fraction`; None: all layers, pp = 1);
    - Megatron's selective modules beyond the attention core (mlp, moe, shared_experts):
      their GEMMs (:func:`.activation_recompute.selective_module_flops`);
    - a stack whose selective is whole-layer (Hugging Face) is priced as full
      (:attr:`.TrainingInputs.priced_recompute`).

    LoRA adapters' own FLOPs (r·(d_in + d_out) per token per matrix) are neglected.
    """
    s = inputs.seq_len
    head = 2.0 * arch.hidden_size * arch.vocab_size
    layers = sum(  # each group of identical layers (a hybrid's kinds) with its own matrices
        2.0 * n * _matmul_params_per_token(arch, mats)
        for moe, _ in layer_kinds(arch)
        for mats, n in layer_groups(arch, moe)
    )
    attention = attention_forward_flops_per_token(arch, s)
    recomputed = 0.0
    policy = inputs.priced_recompute
    if policy == "full":
        stage = arch.layers if layers_on_stage is None else layers_on_stage
        share = recomputed_fraction(inputs.recompute_method, inputs.recompute_layers, stage)
        recomputed = float(share) * (layers + attention)
    elif policy in ("selective", "threshold"):
        kinds = [
            (
                n,
                m,
                layer_activations_for(arch, inputs, 1, tp=1, sequence_parallel=False, moe_layer=m),
            )
            for m, n in layer_kinds(arch)
        ]
        op_sac = get_profile(inputs.implementation).selective == "op_sac" and arch.recurrent is None
        if policy == "selective" and not op_sac:
            core = any(e.attention_core and not e.kept for _, _, la in kinds for e in la.ledger)
            modules = frozenset(inputs.recompute_modules)
            replayed = sum(
                n * selective_module_flops(arch, s, modules, moe_layer=m) for n, m, _ in kinds
            )
            recomputed = (attention if core else 0.0) + float(replayed) / s
        else:
            recomputed = sum(n * la.recompute_flops for n, _, la in kinds) / s
    passes = 2 if inputs.effective_lora_rank is not None else 3
    return TrainingFlops(layers + head, attention, recomputed, passes)


def hardware_flops_factor(
    arch: Architecture,
    inputs: TrainingInputs,
    model_flops_per_token: float | None = None,
    layers_on_stage: int | None = None,
) -> float:
    """Hardware FLOPs ÷ model FLOPs: 1 + recomputed ÷ model, per token.

    Model FLOPs count what the model needs, hardware FLOPs add what the implementation
    recomputes (Chowdhery et al. 2022, Appendix B: MFU vs HFU; Korthikanti et al. 2022,
    section 6). ``model_flops_per_token`` is the count the caller's MFU divides by (6·P,
    or 6·N + 12·L·H·Q·T), so HFU − MFU is exactly the recomputed FLOPs' share of peak;
    default: this training step's own (:attr:`TrainingFlops.model`). The recomputed
    FLOPs come from :func:`training_flops`: none → 1; full → 4/3 for a layer stack.
    """
    if layers_on_stage == arch.layers:  # what None means: one key for the kept value
        layers_on_stage = None
    flops = training_flops(arch, inputs, layers_on_stage)
    model = flops.model if model_flops_per_token is None else model_flops_per_token
    return 1.0 + flops.recomputed / model if model > 0 else 1.0


def estimate_training(
    arch: Architecture,
    inputs: TrainingInputs,
    gpu: GPU,
    *,
    params_override: float | None = None,
    tp: int = 1,
    pp: int = 1,
    dp: int = 1,
    zero_stage: int = 0,
    sequence_parallel: bool = False,
    microbatches_in_flight: float | None = None,
    ep: int = 1,
    last_stage_microbatches_in_flight: float | None = None,
    cp: int = 1,
    last_stage_loss_in_flight: float | None = None,
    gpus_per_node: int = 8,
) -> TrainingReport:
    """Training memory per GPU for ``arch`` under ``inputs`` on ``gpu`` with a layout: the
    one memory function (:func:`.training_memory.training_memory_arrays`) at this layout.

    Reports the most loaded pipeline stage: the first (embedding; ``microbatches_in_flight``
    defaults to pp there, as 1F1B holds pp micro-batches on the first stage — Narayanan et
    al. 2021) or the last (output head, final norm, logits;
    ``last_stage_microbatches_in_flight``, default 1: in 1F1B the last stage runs each
    micro-batch's backward right after its forward). The schedule decides both counts
    (``parallelism.training_layout_kwargs``). ``params_override`` scales every parameter
    count so the total equals it. ``dp`` is the ZeRO shard group.

    Expert parallelism ``ep`` (MoE; ep divides dp): each GPU holds E/ep of every MoE
    layer's routed experts (÷ tp as well: expert tensor parallelism = tp), so their
    weights, gradients and optimizer state are ÷ ep; everything else (attention, norms,
    router, shared experts, embedding, head) is not. ZeRO shards the non-expert state over
    ``dp`` and the expert state over the expert-data-parallel group of dp/ep ranks holding
    the same experts (DeepSpeed-MoE, Rajbhandari et al. 2022, arXiv:2201.05596, section 5,
    "E + Z"; DeepSpeed-TED, Singh et al. 2023, arXiv:2303.06318, section 3: expert data
    parallel = dp/ep; Megatron-Core's expert-data-parallel group and distributed
    optimizer). ZeRO-3's gather and the ZeRO-2 bucket hold one layer as this GPU stores
    it (its own E/ep experts). Activations are unchanged by ep: the all-to-all dispatches
    each token to the GPUs holding its experts, so on average each GPU still processes
    top_k × its own tokens in its experts (balanced routing; Fedus et al. 2021, Switch
    Transformer, section 2.2), and the per-GPU MoE ledger (:mod:`.activations`) stays as
    it is. A dense model ignores ep. Context parallelism ``cp``: activations ÷ cp
    (:func:`.training_memory.training_memory_arrays`).

    The largest micro-batch that fits: the peak is linear in b (every saved tensor is
    s·b·(something)), so it is solved from the peaks at b = 1 and 2 and checked at the
    neighbouring b; the threshold policy (not linear) is bisected.

    ZeRO-Offload / ZeRO-Infinity (``inputs.offload_optimizer``, ``offload_params``:
    :mod:`.training_offload`) take their state off the GPU; the host holds it, ×
    ``gpus_per_node`` GPUs sharing a node's RAM (``inputs.host_memory_bytes_per_node``):
    a plan fits when both the GPU's peak and the node's host bytes fit.
    """
    if ep < 1:
        raise ValueError(f"expert parallelism ep must be ≥ 1, got {ep}")
    if arch.moe is None:
        ep = 1
    total = count_parameters(arch).total
    params = params_override if params_override is not None else float(total)
    terms = memory_terms(arch, inputs, float(params))
    first_flight = microbatches_in_flight or pp
    last_flight = (last_stage_microbatches_in_flight or 1) if pp > 1 else first_flight
    code = RECOMPUTE_POLICIES.index(inputs.recompute)

    def memory(b: int, detail: bool = True) -> dict[str, float]:
        # the array function at this one layout, in Python floats (the same values)
        return training_memory_one(
            terms,
            tp=tp,
            pp=pp,
            shard=dp,
            ep=ep,
            cp=cp,
            zero=zero_stage,
            micro_batch=b,
            sp=sequence_parallel,
            recompute=code,
            first_in_flight=first_flight,
            last_in_flight=last_flight,
            loss_in_flight=last_stage_loss_in_flight,
            detail=detail,
        )

    # the scenario's micro-batch, and b = 1, 2 for the largest that fits
    out = memory(inputs.micro_batch)
    capacity = gpu.memory_bytes
    offload = offload_report(
        inputs,
        host_bytes=out["host_bytes"],
        nvme_bytes=out["nvme_bytes"],
        gpus_per_node=gpus_per_node,
        zero_stage=zero_stage,
    )
    host_fits = offload is None or offload.host_fits

    peaks = {inputs.micro_batch: out["peak_bytes"]}  # each b priced once (b = 2 is asked twice)

    def peak(b: int) -> float:
        if b not in peaks:
            peaks[b] = memory(b, False)["peak_bytes"]
        return peaks[b]

    max_b = _largest_micro_batch(
        peak,
        capacity,
        (peak(1), peak(2)),
        linear=inputs.recompute != "threshold",
    )
    stage_name: Literal["only", "first", "last"] = (
        "only" if pp <= 1 else ("last" if out["last_stage"] else "first")
    )
    la = layer_activations_for(
        arch,
        inputs,
        inputs.micro_batch,
        tp=tp,
        sequence_parallel=sequence_parallel,
        moe_layer=arch.moe is not None,
    )
    outside = outside_ledger_for(
        arch,
        inputs,
        inputs.micro_batch,
        tp=tp,
        sequence_parallel=sequence_parallel,
        first=stage_name in ("only", "first"),
        last=stage_name in ("only", "last"),
    )
    scale = params / total
    whole = stage_params(  # one stage: every layer, MTP depths' included (pipeline_stage_layers)
        arch,
        inputs,
        layers_on_stage=arch.layers + inputs.mtp_layers,
        first=True,
        last=True,
        pp=1,
        scale=scale,
    )
    lora = inputs.effective_lora_rank is not None
    base_total = whole.layer_params + whole.outside_params
    persistent = out["weights_bytes"] + out["gradients_bytes"] + out["optimizer_bytes"]
    stack = get_stack(inputs.stack)
    return TrainingReport(
        weights_bytes=out["weights_bytes"],
        gradients_bytes=out["gradients_bytes"],
        optimizer_bytes=out["optimizer_bytes"],
        activations_bytes=out["activations_bytes"],
        temporary_bytes=out["temporary_bytes"],
        overhead_bytes=out["cuda_context_bytes"] + out["fragmentation_bytes"],
        persistent_bytes=persistent,
        peak_bytes=out["peak_bytes"],
        fits=out["peak_bytes"] <= capacity and host_fits,
        max_micro_batch=max_b,
        capacity_bytes=capacity,
        after_load_bytes=persistent + out["cuda_context_bytes"],
        hardware_flops_factor=hardware_flops_factor(
            arch, inputs, layers_on_stage=round(out["layers_on_stage"])
        ),
        ledger=la.ledger,
        outside_ledger=outside,
        stack=inputs.stack,
        stack_name=stack.name,
        peak_memory_figure="reserved (allocated + fragmentation allowance + CUDA context); "
        f"{stack.name} logs {stack.memory_figure}",
        precision=inputs.precision,
        optimizer=inputs.optimizer,
        implementation=inputs.implementation,
        recompute=inputs.recompute,
        stage=stage_name,
        layers_on_stage=round(out["layers_on_stage"]),
        microbatches_in_flight=float(out["microbatches_in_flight"]),
        trainable_params=whole.lora_params if lora else base_total,
        frozen_params=base_total if lora else 0.0,
        activations_per_layer_bytes=out["activations_per_layer_bytes"],
        outside_activations_bytes=out["outside_activations_bytes"],
        logits_bytes=out["logits_bytes"],
        recompute_working_bytes=out["recompute_working_bytes"],
        gradient_bucket_bytes=out["gradient_bucket_bytes"],
        zero3_gather_bytes=out["zero3_gathered_bytes"],
        dequant_bytes=out["dequant_bytes"],
        cuda_context_bytes=out["cuda_context_bytes"],
        fragmentation_bytes=out["fragmentation_bytes"],
        offload=offload,
    )


MAX_MICRO_BATCH_SEARCHED = 2**21 - 1
"""The largest micro-batch :func:`estimate_training` looks for (doubling to 2^20, then
bisecting below 2^21)."""


def _largest_micro_batch(
    peak: Callable[[int], float],
    capacity: float,
    peaks_at_1_2: tuple[float, float],
    *,
    linear: bool,
) -> int:
    """The largest b ≤ :data:`MAX_MICRO_BATCH_SEARCHED` whose peak fits ``capacity`` (0 if
    none; ``peak``: the peak at b). Linear peak: b* = ⌊(capacity − c)/k⌋ from
    peak(b) = c + k·b at b = 1, 2 (``peaks_at_1_2``), then the peaks of the b next to it
    decide (rounding). Otherwise: doubling, then bisection."""

    def fits(bs: list[int]) -> list[bool]:
        return [peak(b) <= capacity for b in bs]

    p1, p2 = peaks_at_1_2
    if not p1 <= capacity:
        return 0
    if linear:
        slope = p2 - p1
        guess = MAX_MICRO_BATCH_SEARCHED
        if slope > 0:
            guess = int(min(guess, max(1.0, (capacity - (p1 - slope)) // slope)))
        near = [b for b in range(guess - 2, guess + 3) if 1 <= b <= MAX_MICRO_BATCH_SEARCHED]
        ok = fits(near)
        if ok[0] and not (near[-1] < MAX_MICRO_BATCH_SEARCHED and ok[-1]):
            return max(b for b, f in zip(near, ok, strict=True) if f)
    lo, hi = 1, 2
    while hi <= 2**20 and fits([hi])[0]:
        lo, hi = hi, hi * 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if fits([mid])[0] else (lo, mid)
    return lo
