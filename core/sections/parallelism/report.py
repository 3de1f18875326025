"""The parallelism section of the report: the scenario's layout priced, with per-GPU memory
from the training estimator."""

from __future__ import annotations

import math

from pydantic import BaseModel, ConfigDict

from llm_planner.core.inputs.parallelism import ParallelInputs
from llm_planner.core.inputs.training import TrainingInputs
from llm_planner.core.primitives import units
from llm_planner.core.primitives.architecture import Architecture
from llm_planner.core.primitives.architecture import count_parameters as _count_parameters
from llm_planner.core.primitives.figures import Figure, Unit
from llm_planner.core.primitives.gpus import GPU
from llm_planner.core.quantities import comm
from llm_planner.core.quantities.optimizers import get_precision
from llm_planner.core.sections.parallelism.layout import RECOMPUTE_CODES, resolve_layout
from llm_planner.core.sections.parallelism.memory import training_memory
from llm_planner.core.sections.parallelism.step_time import (
    TIME_PARTS,
    bottleneck_of,
    evaluate_layouts,
    step_inputs_of,
)
from llm_planner.core.sections.parallelism.workload import (
    Workload,
    cluster_of,
    nvlink_domain_of,
    workload_of,
)
from llm_planner.core.sections.training import TrainingReport
from llm_planner.core.sections.training_memory import memory_terms


class ParallelismReport(BaseModel):
    """The parallelism section: layout, bubble, communication, step time, MFU, memory."""

    model_config = ConfigDict(frozen=True)

    gpus: int
    nodes: int
    gpus_per_node: int
    dp: int
    tp: int
    pp: int
    ep: int
    cp: int
    """Context-parallel degree (GPUs = tp·cp·pp·dp)."""
    zero_stage: int
    fsdp_strategy: str | None
    sequence_parallel: bool
    schedule: str
    interleave_chunks: int
    micro_batch: int
    global_batch: int
    gradient_accumulation_steps: int
    bubble_fraction: float
    mfu_flops_per_token: float
    """Model FLOPs per token MFU counts, the compute section's count
    (:func:`llm_planner.core.quantities.flops.mfu_flops_per_token`)."""
    step_seconds: float
    tokens_per_s: float
    mfu: float
    hfu: float
    comm_bytes_per_step: float
    comm_bytes_breakdown: dict[str, float]
    time_breakdown_seconds: dict[str, float]
    time_breakdown: dict[str, float | dict[str, float]]
    """Seconds per step: compute (GEMMs and attention), memory_bound (element-wise kernels,
    loss, gradient accumulation, optimizer step), exposed_communication per kind, bubble,
    overhead (host-bound launch time); they add up to ``total`` = step_seconds."""
    links: dict[str, str]
    bottleneck: str
    peak_bytes: float | None
    fits: bool | None
    zero3_gathered_bytes: float
    gpus_per_instance: int | None
    """Fewest GPUs (a power of two) on which one model instance fits in some layout."""
    problems: list[str]

    @property
    def layout_label(self) -> str:
        """The layout in a few words, e.g. "dp 64 × tp 8 × pp 1, ZeRO-1, 1f1b"."""
        zero = self.fsdp_strategy or f"ZeRO-{self.zero_stage}"
        return f"dp {self.dp} × tp {self.tp} × pp {self.pp}, {zero}, {self.schedule}"

    def _layout_text(self) -> str:
        """ "dp 64 × tp 1 × pp 4 = 256 GPUs on 64 nodes" with " × cp N" when the sequence is
        split and "; experts over ep N" for an MoE layout."""
        parts = f"dp {self.dp} × tp {self.tp} × pp {self.pp}"
        if self.cp > 1:
            parts += f" × cp {self.cp}"
        text = (
            f"{parts} = {self.gpus:,} GPU{'s' if self.gpus != 1 else ''} on {self.nodes:,} "
            f"node{'s' if self.nodes != 1 else ''}"
        )
        if self.ep > 1:
            text += f"; experts over ep {self.ep}"
        return text

    def figures(self) -> list[Figure]:
        nar = "Narayanan et al. 2021, arXiv:2104.04473"

        # a plan that does not fit is not priced (issue 25): its time, throughput and
        # utilisation read "—" here as in the compute section, and a line says why
        unpriced = self.fits is False
        priced_keys = {"step_seconds", "tokens_per_s", "mfu", "hfu", "bottleneck"}

        def fig(key: str, label: str, unit: Unit, formula: str = "", source: str = "") -> Figure:
            return Figure(
                key=key,
                label=label,
                value=None if unpriced and key in priced_keys else getattr(self, key),
                unit=unit,
                formula=formula,
                source=source,
            )

        f = [
            Figure(
                key="layout",
                label="Layout",
                value=self._layout_text(),
                unit="text",
                formula="dp · tp · pp · cp = GPUs; ep splits each MoE layer's experts over ep "
                "GPUs of the data-parallel group (Megatron-Core's expert parallelism), so it "
                "adds no GPUs",
            ),
            fig(
                "zero_stage",
                "ZeRO stage",
                "count",
                source="Rajbhandari et al. 2019, arXiv:1910.02054",
            ),
            fig(
                "gradient_accumulation_steps",
                "Micro-batches per step",
                "count",
                "m = global batch ÷ (dp · micro-batch)",
            ),
            fig(
                "bubble_fraction",
                "Pipeline bubble",
                "percent",
                "(p − 1) ÷ (v · m + p − 1): the idle share of the pipeline's time",
                f"{nar} section 2.2",
            ),
            fig(
                "comm_bytes_per_step",
                "Communication per GPU per step",
                "bytes",
                "TP all-reduces + pipeline p2p + MoE all-to-all + DP/ZeRO collectives",
                "Shoeybi 2019 §3; Narayanan 2021 §4.1; Rajbhandari 2019 §7",
            ),
            fig(
                "step_seconds",
                "Step time",
                "seconds",
                "(m + (p−1)/v)·(compute + TP + p2p + all-to-all) + exposed DP",
                f"{nar} section 2.2; overlap model in core.comm",
            ),
            fig(
                "tokens_per_s",
                "Throughput",
                "tokens/s",
                "global batch · sequence length ÷ step time",
            ),
            fig(
                "mfu",
                "MFU",
                "percent",
                "model FLOPs/token (6·P, or + attention) · tokens/s ÷ (GPUs · peak)",
                "Kaplan et al. 2020 §2.1; Chowdhery et al. 2022 (PaLM) Appendix B",
            ),
            fig(
                "hfu",
                "HFU (executed FLOPs)",
                "percent",
                "FLOPs the step executes (6 × the parameters that multiply + attention, "
                "× recomputation) · tokens/s ÷ (GPUs · peak)",
                "Korthikanti et al. 2022, arXiv:2205.05198 section 6",
            ),
            fig("bottleneck", "Bottleneck", "text"),
        ]
        if unpriced:
            f.append(
                Figure(
                    key="not_priced",
                    label="Not priced",
                    value=(
                        "the plan does not fit in GPU memory at this layout"
                        if self.peak_bytes is None
                        else f"needs {units.format_gb(self.peak_bytes)} per GPU at this "
                        "layout: it does not fit"
                    ),
                    unit="text",
                )
            )
        else:
            f.extend(
                Figure(
                    key=f"time_{part}",
                    label=f"  time: {part.replace('_', ' ')}",
                    value=seconds,
                    unit="seconds",
                )
                for part, seconds in self.time_breakdown_seconds.items()
            )
        if self.zero_stage >= 3:
            f.append(
                fig(
                    "zero3_gathered_bytes",
                    "ZeRO-3 gathered parameters",
                    "bytes",
                    "2 blocks (current + prefetched) × block params ÷ tp × bytes/param",
                )
            )
        if self.gpus_per_instance is not None:
            f.append(
                fig(
                    "gpus_per_instance",
                    "Fewest GPUs for one instance",
                    "count",
                    "smallest power of two with a fitting layout (search)",
                )
            )
        if self.peak_bytes is not None:
            f.append(
                fig(
                    "peak_bytes",
                    "Peak memory per GPU",
                    "bytes",
                    "training estimator at this layout",
                )
            )
        f.extend(
            Figure(key="problem", label="Problem", value=p, unit="text") for p in self.problems
        )
        return f


def _num(x: float) -> float:
    """A JSON-safe float (no NaN/inf)."""
    return float(x) if math.isfinite(x) else 0.0


def parallelism_report(
    arch: Architecture,
    gpu: GPU,
    num_gpus: int,
    inputs: ParallelInputs,
    training_inputs: TrainingInputs,
    *,
    params_override: float | None = None,
    compute_dtype: str = "bf16",
    gpus_per_instance: int | None = None,
    include_attention_flops: bool = False,
    training_report: TrainingReport | None = None,
) -> ParallelismReport:
    """Price the scenario's layout; per-GPU memory from the training estimator.

    ``gpus_per_instance`` (the fewest GPUs one model instance fits on) is the search's
    answer, passed in by the composition layer (:mod:`llm_planner.core.composition.estimate`),
    which sits above both this section and the search. ``training_report``: the training
    estimator's report for this same layout when the caller already has it (``estimate``'s
    training section), so one computation gives both sections' peak."""
    lay = resolve_layout(
        inputs,
        num_gpus,
        int(training_inputs.micro_batch),
        str(training_inputs.recompute),
        arch.layers,
    )
    params = params_override or float(_count_parameters(arch).total)
    arrays = lay.as_arrays()
    work = workload_of(
        arch,
        int(training_inputs.seq_len),
        inputs.global_batch,
        params,
        None,
        training_inputs=training_inputs,
        include_attention_flops=include_attention_flops,
        only_recompute=RECOMPUTE_CODES[int(arrays.recompute[0])],  # the one layout's policy
    )
    cluster = cluster_of(gpu, inputs, compute_dtype)
    # the training report at this layout already holds the ZeRO-3 gather (the one memory
    # function, same terms, tp, shard group, ep and stage): the screen is priced only without it
    recipe = memory_terms(arch, training_inputs, params) if training_report is None else None
    priced = evaluate_layouts(work, cluster, arrays, recipe, step_inputs_of(arch, training_inputs))
    out = {k: float(v[0]) for k, v in priced.items()}
    if training_report is not None:
        out["zero3_gathered_bytes"] = float(training_report.zero3_gather_bytes)
    problems = list(lay.problems)
    if out["mfu"] > 1.0:
        problems.append(mfu_above_one(out["mfu"], out["hfu"], work))
    gemm_dtype = get_precision(training_inputs.precision).gemm_dtype
    if gemm_dtype is not None and not gpu.peak_flops.for_dtype(gemm_dtype):
        problems.append(
            f"precision {training_inputs.precision}: the {gpu.name} has no {gemm_dtype} "
            "tensor cores (Transformer Engine refuses the recipe there); priced with every "
            f"GEMM at {compute_dtype}"
        )
    exact = (
        training_report
        if training_report is not None
        else training_memory(
            arch,
            gpu,
            lay,
            training_inputs,
            params_override=params_override,
            gpus_per_node=inputs.gpus_per_node,
        )
    )
    peak = float(exact.peak_bytes)
    fits = peak <= gpu.memory_bytes and exact.host_fits  # offloaded state in host RAM too
    g = inputs.gpus_per_node
    domain = nvlink_domain_of(gpu, inputs)  # a group inside one NVLink domain stays on it
    links = {
        "tensor_parallel": _link_name(comm.crosses_nodes(1, lay.tp, domain)),
        "data_parallel": _link_name(comm.crosses_nodes(lay.tp, lay.dp, domain)),
        "pipeline": _link_name(comm.crosses_nodes(lay.tp * lay.cp * lay.dp, lay.pp, domain)),
    }
    if lay.cp > 1:
        links["context_parallel"] = _link_name(comm.crosses_nodes(lay.tp, lay.cp, domain))
    if lay.ep > 1:
        links["expert_parallel"] = _link_name(comm.crosses_nodes(lay.tp, lay.ep, domain))
    return ParallelismReport(
        gpus=lay.gpus,
        nodes=math.ceil(lay.gpus / g),
        gpus_per_node=g,
        dp=lay.dp,
        tp=lay.tp,
        pp=lay.pp,
        ep=lay.ep,
        cp=lay.cp,
        zero_stage=lay.zero_stage,
        fsdp_strategy=inputs.fsdp_strategy,
        sequence_parallel=lay.sequence_parallel,
        schedule=lay.schedule,
        interleave_chunks=lay.v,
        micro_batch=lay.micro_batch,
        global_batch=inputs.global_batch,
        gradient_accumulation_steps=lay.gradient_accumulation_steps,
        bubble_fraction=_num(out["bubble_fraction"]),
        mfu_flops_per_token=work.mfu_flops_per_token,
        step_seconds=_num(out["step_seconds"]),
        tokens_per_s=_num(out["tokens_per_s"]),
        mfu=_num(out["mfu"]),
        hfu=_num(out["hfu"]),
        comm_bytes_per_step=_num(out["comm_bytes_per_step"]),
        comm_bytes_breakdown={
            "tensor_parallel": _num(out["comm_tp_bytes"]),
            "pipeline_p2p": _num(out["comm_pp_bytes"]),
            "expert_all_to_all": _num(out["comm_ep_bytes"]),
            "context_parallel": _num(out["comm_cp_bytes"]),
            "data_parallel": _num(out["comm_dp_bytes"]),
        },
        time_breakdown_seconds={p: _num(out[f"time_{p}"]) for p in TIME_PARTS},
        time_breakdown=_time_breakdown(out),
        links=links,
        bottleneck=bottleneck_of(out),
        peak_bytes=peak,
        fits=fits,
        zero3_gathered_bytes=_num(out["zero3_gathered_bytes"]),
        gpus_per_instance=gpus_per_instance,
        problems=problems,
    )


MFU_ABOVE_ONE = "MFU above 100%"
"""The start of the problem :func:`mfu_above_one` names."""


def mfu_above_one(mfu: float, hfu: float, work: Workload) -> str:
    """Why a modeled MFU can exceed 1 (one line): its count credits more FLOPs than run.

    MFU counts 6·P per token (:func:`llm_planner.core.quantities.flops.mfu_flops_per_token`,
    the budget's C = 6·P·D); the step time prices the FLOPs the model executes (6 × the
    parameters that multiply, attention included). An untied input embedding is a lookup
    (no multiply), so with short sequences and a kernel efficiency near 1 the credited
    FLOPs run above the peak while the executed ones (HFU) do not.
    """
    return (
        f"{MFU_ABOVE_ONE} ({100 * mfu:.1f}%): its 6·P count credits "
        f"{work.mfu_flops_per_token / 1e9:,.4g} GFLOP per token, more than the "
        f"{work.model_flops_per_token / 1e9:,.4g} GFLOP the model multiplies (an untied "
        f"input embedding is a lookup); HFU {100 * hfu:.1f}% counts what runs"
    )


def _time_breakdown(out: dict[str, float]) -> dict[str, float | dict[str, float]]:
    """The step split into parts that add up to the step time (seconds per step)."""
    exposed = {
        kind: _num(out[f"time_{kind}"])
        for kind in (
            "tensor_parallel",
            "pipeline_p2p",
            "expert_all_to_all",
            "context_parallel",
            "data_parallel",
        )
    }
    return {
        "compute": _num(out["time_gemm_attention"]),
        "memory_bound": _num(out["time_memory_bound"]),
        "exposed_communication": exposed,
        "bubble": _num(out["time_bubble"]),
        "overhead": _num(out["time_overhead"]),
        "total": _num(out["step_seconds"]),
    }


def _link_name(crosses: bool) -> str:
    return "inter-node" if crosses else "intra-node"
