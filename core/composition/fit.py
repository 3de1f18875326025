"""What would make it fit: the few smallest changes that bring a run under the GPU's memory.

When the training peak per GPU (or the inference replica's memory per GPU) exceeds the
GPU's capacity, each candidate change below is applied to the scenario and its peak is
computed **by the same estimator** that produced the failing figure (the caller passes it
in, so there is one producer of every peak). The work is bounded (at most
:data:`MAX_CANDIDATES` estimates); per kind of change the smallest step that fits is kept,
each is priced by the changed plan's own estimate (what it costs in time and money), and
the fastest few are proposed.

The training candidates are the standard memory ladder of large-model training:

- micro-batch 1 (activations scale with b: Korthikanti et al. 2022, "Reducing Activation
  Recomputation in Large Transformer Models", section 4.1);
- full activation recomputation (same paper, section 4: only the layer inputs are kept);
- ZeRO-3 / FSDP FULL_SHARD (Rajbhandari et al. 2020, "ZeRO", section 5: weights,
  gradients and optimizer states divided by the data-parallel degree);
- tensor parallel ×2, ×4 … up to a node (Shoeybi et al. 2019, Megatron-LM, section 3) and
  pipeline parallel ×2 … ×16 (Narayanan et al. 2021, section 2.2), at the same GPU count;
- for a fine-tuning scenario (:func:`is_fine_tuning`): LoRA adapters (Hu et al. 2021) and
  QLoRA's 4-bit frozen base (Dettmers et al. 2023), alone and with full recomputation;
- the next larger GPUs of the catalog; twice the GPUs;
- when no single change is enough, the ladder's steps combined (micro-batch 1 + full
  recompute + ZeRO-3 + tp to a node).

- when no change of layout or recomputation fits on the same GPUs, ZeRO-3 with DeepSpeed's
  CPU offload (Ren et al. 2021, ZeRO-Offload; Rajbhandari
  et al. 2021, ZeRO-Infinity): the optimizer state alone, then the parameters too, each
  also with full recomputation; priced by the same estimate, which adds the host-link
  copies and the CPU Adam step to the step time and refuses a plan whose offloaded state
  overflows the node's host RAM.

For inference: a quantized weight format (fp8, int8, 4-bit), an fp8 KV cache, twice the
GPUs per replica (tensor parallel), or the largest batch that fits.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from llm_planner.core.inputs.scenario import Scenario, with_changes
from llm_planner.core.primitives.gpus import GPU, gpu_catalog

MAX_CANDIDATES = 32
"""Most peak estimates one suggestion list may cost (a training peak is ~10 ms, and the
window asks for suggestions off the keystroke's path)."""
MAX_SUGGESTIONS = 4
"""Most suggestions proposed."""


class FitSuggestion(BaseModel):
    """One change that makes the run fit, with the peak the estimator gives after it."""

    model_config = ConfigDict(frozen=True)

    label: str = Field(description="what to change, in words (e.g. 'ZeRO-3')")
    changes: dict[str, Any] = Field(description="scenario paths → new values ('a.b': v)")
    peak_bytes: float = Field(description="peak per GPU after the change (bytes)")
    capacity_bytes: float
    fits: bool
    wall_seconds: float | None = Field(
        default=None, description="the plan's wall-clock time after the change (s)"
    )
    cost_usd: float | None = Field(default=None, description="its cost after the change (USD)")
    mfu: float | None = Field(default=None, description="its MFU after the change")


class Priced(NamedTuple):
    """Time, cost and MFU of a changed plan, from the same estimate the report uses."""

    wall_seconds: float | None
    cost_usd: float | None
    mfu: float | None


def _evaluate(
    scenario: Scenario,
    candidates: Iterable[tuple[str, dict[str, Any]]],
    peak_of: Callable[[Scenario], float],
    capacity: float,
    budget: int,
    *,
    price_of: Callable[[Scenario], Priced] | None = None,
    most: int = MAX_SUGGESTIONS,
) -> tuple[list[FitSuggestion], int]:
    """The candidates that fit, one per kind (the first, smallest, of each), at most
    ``most`` of them and ``budget`` peak estimates; each priced by ``price_of``."""
    found: list[FitSuggestion] = []
    settled: set[tuple[str, ...]] = set()  # one proposal per kind: the smallest that fits
    for label, changes in candidates:
        if budget <= 0 or len(found) >= most:
            break
        kind = tuple(sorted(changes))
        if kind in settled:
            continue
        try:
            changed = with_changes(scenario, changes)
        except (ValidationError, ValueError, KeyError):
            continue
        budget -= 1
        try:
            peak = float(peak_of(changed))
            # a suggestion is checked against the capacity it brings (a larger GPU)
            fits_in = float(changed.gpu.memory_bytes) if "gpu" in changes else capacity
        except (ValueError, ZeroDivisionError):
            continue
        if peak <= fits_in:
            settled.add(kind)
            priced = price_of(changed) if price_of is not None else Priced(None, None, None)
            found.append(
                FitSuggestion(
                    label=label,
                    changes=changes,
                    peak_bytes=peak,
                    capacity_bytes=fits_in,
                    fits=True,
                    wall_seconds=priced.wall_seconds,
                    cost_usd=priced.cost_usd,
                    mfu=priced.mfu,
                )
            )
    return found, budget


LORA_RANK = 16
"""Rank of the LoRA adapters a suggestion proposes: Hu et al. 2021 (arXiv:2106.09685,
section 7.2, Table 6) find ranks 1–8 already match full fine-tuning on GPT-3; 16 is a
common, conservative default (Hugging Face PEFT examples). QLoRA keeps its own default
(r = 64, Dettmers et al. 2023) through ``training.qlora``."""


def is_fine_tuning(scenario: Scenario) -> bool:
    """Whether adapters are a sensible suggestion: the scenario already trains adapters, or
    its run is far shorter than pretraining (fewer tokens than the compute-optimal 20·P,
    Hoffmann et al. 2022 Table 3), or it trains on one node (a workstation or one server:
    what fine-tuning runs on; pretraining a model that does not fit one GPU there is not a
    plan anyone rents for)."""
    from llm_planner.core.primitives.architecture import count_parameters
    from llm_planner.core.sections.compute import chinchilla_tokens

    training = scenario.training
    if training.lora_rank is not None or training.qlora:
        return True
    params = scenario.model.params_override or count_parameters(scenario.model.architecture).total
    return (
        scenario.compute.tokens < chinchilla_tokens(float(params))
        or scenario.num_gpus <= scenario.parallelism.gpus_per_node
    )


def _degree_changes(scenario: Scenario, name: str, factor: int) -> dict[str, Any] | None:
    """tp or pp multiplied by ``factor`` at the same GPU count (dp divided), or None when
    the GPUs do not divide (dp·tp·pp = N) or an explicit dp does not."""
    par = scenario.parallelism
    changes: dict[str, Any] = {f"parallelism.{name}": getattr(par, name) * factor}
    if scenario.num_gpus % (par.tp * par.pp * factor):
        return None
    if par.dp is not None:
        if par.dp % factor:
            return None
        changes["parallelism.dp"] = par.dp // factor
    return changes


def larger_gpus(scenario: Scenario, most: int = 3) -> list[GPU]:
    """Catalog GPUs with more memory than the scenario's, one per memory size: the same
    vendor's first (a team on NVIDIA keeps its software stack), then smallest memory, and of
    the GPUs of one size the highest bf16 peak (three 96 GB parts, GH200, H20 and RTX PRO
    6000, are one step up from 80 GB, not three); the next larger GPU is the first."""
    memory, vendor = scenario.gpu.memory_bytes, scenario.gpu.vendor
    larger = [g for g in gpu_catalog().values() if g.memory_bytes > memory]
    larger.sort(
        key=lambda g: (
            g.vendor != vendor,
            g.memory_bytes,
            -(g.peak_flops.for_dtype("bf16") or 0.0),
        )
    )
    tiers: list[GPU] = []
    for gpu in larger:
        if not any(t.vendor == gpu.vendor and t.memory_bytes == gpu.memory_bytes for t in tiers):
            tiers.append(gpu)
    return tiers[:most]


def _degree_candidates(scenario: Scenario) -> list[tuple[str, dict[str, Any]]]:
    """tp ×2, ×4 … up to a node (Megatron §3), then pp ×2 … ×16, at the same GPU count."""
    par = scenario.parallelism
    out: list[tuple[str, dict[str, Any]]] = []
    factor = 2
    while par.tp * factor <= par.gpus_per_node:
        changes = _degree_changes(scenario, "tp", factor)
        if changes is not None:
            out.append((f"TP {par.tp} → {par.tp * factor}", changes))
        factor *= 2
    for factor in (2, 4, 8, 16):
        changes = _degree_changes(scenario, "pp", factor)
        if changes is not None:
            out.append((f"PP {par.pp} → {par.pp * factor}", changes))
    # Megatron's recipe for a model a node's tensor parallelism does not fit: tp to the
    # whole node, then pipeline stages across nodes (Narayanan et al. 2021, §3.3 takeaway
    # #1 and #2); with fp32 main gradients a 70B model needs it at 80 GB
    node = par.gpus_per_node // par.tp
    tp = _degree_changes(scenario, "tp", node) if node > 1 else None
    at_node = None
    if tp is not None:
        with contextlib.suppress(ValueError):  # tp must divide the heads (a ValidationError)
            at_node = with_changes(scenario, tp)
    if tp is not None and at_node is not None:
        for factor in (2, 4, 8):
            pp = _degree_changes(at_node, "pp", factor)
            if pp is not None:
                label = f"TP {par.tp} → {par.tp * node} + PP {par.pp} → {par.pp * factor}"
                out.append((label, {**tp, **pp}))
    return out


def _adapter_candidates(scenario: Scenario) -> list[tuple[str, dict[str, Any]]]:
    """LoRA and QLoRA, alone and with full recomputation (fine-tuning scenarios only)."""
    training = scenario.training
    out: list[tuple[str, dict[str, Any]]] = []
    full = {} if training.recompute == "full" else {"training.recompute": "full"}
    more = "" if training.recompute == "full" else " + full recompute"
    if training.lora_rank is None and not training.qlora:
        lora = {"training.lora_rank": LORA_RANK}
        out.append((f"LoRA r{LORA_RANK}", lora))
        if full:
            out.append((f"LoRA r{LORA_RANK}{more}", {**lora, **full}))
    if not training.qlora:
        qlora = {"training.qlora": True, "training.lora_rank": training.lora_rank}
        out.append(("QLoRA", qlora))
        if full:
            out.append((f"QLoRA{more}", {**qlora, **full}))
    return out


def training_candidates(scenario: Scenario) -> list[tuple[str, dict[str, Any]]]:
    """The single changes to try, those that change least first; only those that change
    something. Per kind (tp, pp, adapters, GPU) the smallest step comes first, so the
    evaluation settles on the smallest that fits."""
    training, par = scenario.training, scenario.parallelism
    out: list[tuple[str, dict[str, Any]]] = []
    if training.micro_batch > 1:
        out.append((f"micro-batch {training.micro_batch} → 1", {"training.micro_batch": 1}))
    if training.recompute != "full":
        out.append(("full recompute", {"training.recompute": "full"}))
    zero3 = {"parallelism.zero_stage": 3, "parallelism.fsdp_strategy": None}
    if par.zero_stage < 3 or par.fsdp_strategy not in (None, "FULL_SHARD"):
        out.append(("ZeRO-3", zero3))
    out += _degree_candidates(scenario)
    if not training.flash_attention:
        out.append(("FlashAttention on", {"training.flash_attention": True}))
    if is_fine_tuning(scenario):
        out += _adapter_candidates(scenario)
    for gpu in larger_gpus(scenario):
        short = gpu.name.removeprefix("NVIDIA ").removeprefix("AMD ").removeprefix("GeForce ")
        out.append((f"GPU {short}", {"gpu": gpu.model_dump()}))
    gpus = scenario.num_gpus * 2
    twice: dict[str, Any] = {"num_gpus": gpus}
    if par.dp is not None:
        twice["parallelism.dp"] = par.dp * 2
    if par.zero_stage == 0:
        twice["parallelism.zero_stage"] = 3
    out.append((f"{gpus:,} GPUs" + (" with ZeRO-3" if par.zero_stage == 0 else ""), twice))
    return out


def _ladder(scenario: Scenario) -> list[tuple[str, dict[str, Any]]]:
    """The memory ladder combined step by step (each prefix of two or more steps one
    candidate): micro-batch 1, full recompute, ZeRO-3, then tp to a whole node."""
    training, par = scenario.training, scenario.parallelism
    steps: list[tuple[str, dict[str, Any]]] = []
    if training.micro_batch > 1:
        steps.append((f"micro-batch {training.micro_batch} → 1", {"training.micro_batch": 1}))
    if training.recompute != "full":
        steps.append(("full recompute", {"training.recompute": "full"}))
    if par.zero_stage < 3 or par.fsdp_strategy not in (None, "FULL_SHARD"):
        steps.append(("ZeRO-3", {"parallelism.zero_stage": 3, "parallelism.fsdp_strategy": None}))
    node = par.gpus_per_node // par.tp
    if node > 1:
        tp = _degree_changes(scenario, "tp", node)
        if tp is not None:
            steps.append((f"TP {par.tp} → {par.tp * node}", tp))
    prefixes: list[tuple[str, dict[str, Any]]] = []
    combined: dict[str, Any] = {}
    for count, (_label, changes) in enumerate(steps, start=1):
        combined = {**combined, **changes}
        if count > 1:
            prefixes.append((" + ".join(label for label, _ in steps[:count]), dict(combined)))
    return prefixes


def _offload_candidates(scenario: Scenario) -> list[tuple[str, dict[str, Any]]]:
    """ZeRO-3 + CPU optimizer offload, then + parameter offload, alone and with full
    recomputation (what DeepSpeed's docs add step by step: docs/code-docs/source/zero3.rst
    at deepspeedai/DeepSpeed@edaa7221, "Example ZeRO-3 Configurations")."""
    training, par = scenario.training, scenario.parallelism
    zero3 = {"parallelism.zero_stage": 3, "parallelism.fsdp_strategy": None}
    if par.zero_stage == 3 and par.fsdp_strategy in (None, "FULL_SHARD"):
        zero3 = {}
    prefix = "ZeRO-3 + " if zero3 else ""
    full = {} if training.recompute == "full" else {"training.recompute": "full"}
    out: list[tuple[str, dict[str, Any]]] = []
    steps = (
        ("CPU optimizer offload", {"training.offload_optimizer": "cpu"}),
        (
            "CPU offload",
            {"training.offload_optimizer": "cpu", "training.offload_params": "cpu"},
        ),
    )
    for label, offload in steps:
        if all(getattr(training, k.split(".")[1]) == v for k, v in offload.items()):
            continue
        out.append((prefix + label, {**zero3, **offload}))
        if full:
            out.append((f"{prefix}{label} + full recompute", {**zero3, **offload, **full}))
    return out


_OTHER_RUN = frozenset({"gpu", "num_gpus", "training.lora_rank", "training.qlora"})
"""Changes that train on other GPUs or train something else (adapters)."""


def _same_run(suggestion: FitSuggestion) -> bool:
    """The suggestion keeps the GPUs and trains the same weights (a layout or recompute
    change): offload, which costs host RAM and step time, is offered only without one."""
    return not _OTHER_RUN.intersection(suggestion.changes)


def _by_time(suggestion: FitSuggestion) -> tuple[bool, float]:
    """Fastest first; a suggestion with no time (not priced) last."""
    wall = suggestion.wall_seconds
    return (wall is None, math.inf if wall is None else wall)


def training_fit_suggestions(
    scenario: Scenario,
    peak_bytes: float,
    capacity_bytes: float,
    peak_of: Callable[[Scenario], float],
    price_of: Callable[[Scenario], Priced] | None = None,
) -> list[FitSuggestion]:
    """Changes that bring the training peak per GPU under capacity ([] when it fits).

    ``peak_of(scenario)`` is the training estimator's peak per GPU (estimate's own wiring);
    ``price_of(scenario)`` the time, cost and MFU of a change that fits (the plan's own
    figures, so each suggestion says what it costs in time). Every single change and each
    prefix of the memory ladder combined is tried (at most :data:`MAX_CANDIDATES`
    estimates), the smallest of each kind that fits kept, and the :data:`MAX_SUGGESTIONS`
    fastest proposed.
    """
    if peak_bytes <= capacity_bytes:
        return []
    found, budget = _evaluate(
        scenario,
        [*training_candidates(scenario), *_ladder(scenario)],
        peak_of,
        capacity_bytes,
        MAX_CANDIDATES,
        price_of=price_of,
        most=MAX_CANDIDATES,
    )
    if not any(_same_run(s) for s in found):
        offloaded, _ = _evaluate(
            scenario,
            _offload_candidates(scenario),
            peak_of,
            capacity_bytes,
            budget,
            price_of=price_of,
            most=MAX_CANDIDATES,
        )
        found += offloaded
    # a change that contains a smaller one that already fits changes the plan for nothing
    minimal = [
        a
        for a in found
        if not any(
            b is not a and b.changes.items() <= a.changes.items() and b.changes != a.changes
            for b in found
        )
    ]
    return sorted(minimal, key=_by_time)[:MAX_SUGGESTIONS]


QUANTIZED_FORMATS = (("fp8", "fp8 weights"), ("int8", "int8 weights"), ("int4", "4-bit weights"))
"""Weight formats tried for inference, largest first (all in ``quantities.quantization``)."""


def inference_candidates(scenario: Scenario, max_batch: int) -> list[tuple[str, dict[str, Any]]]:
    inference = scenario.inference
    out: list[tuple[str, dict[str, Any]]] = []
    if 1 <= max_batch < inference.batch:
        out.append((f"batch {inference.batch} → {max_batch}", {"inference.batch": max_batch}))
    if inference.kv_dtype not in ("fp8", "int8", "int4"):
        out.append(("fp8 KV cache", {"inference.kv_dtype": "fp8"}))
    for fmt, label in QUANTIZED_FORMATS:
        if fmt != inference.weights_format:
            out.append((label, {"inference.weights_format": fmt}))
    for factor in (2, 4, 8):
        gpus = inference.num_gpus * factor
        out.append((f"{gpus} GPUs per replica", {"inference.num_gpus": gpus}))
    return out


def inference_fit_suggestions(
    scenario: Scenario,
    total_bytes: float,
    capacity_bytes: float,
    max_batch: int,
    peak_of: Callable[[Scenario], float],
) -> list[FitSuggestion]:
    """Changes that bring one inference GPU's memory under capacity ([] when it fits)."""
    if total_bytes <= capacity_bytes:
        return []
    found, _ = _evaluate(
        scenario,
        inference_candidates(scenario, max_batch),
        peak_of,
        capacity_bytes,
        MAX_CANDIDATES,
    )
    return found
