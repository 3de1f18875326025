"""Multimodal placement: where a vision (or audio) encoder runs beside the text model.

Work per optimizer step (sequences B = the global batch, images I per sequence, T_e encoder
tokens per image, P_e encoder parameters): encoder FLOPs F_e = B·I·T_e·(6·P_e) when trained,
2·P_e per token when frozen (forward only; Kaplan et al. 2020 section 2.1: forward 2N,
backward 4N). The text model's step is the estimate's modeled step time t_text(N) on N GPUs
(scaled as N/n for n GPUs: perfect data-parallel scaling assumed); the encoder runs at the
same achieved FLOP/s per GPU as the text model (its MFU), an assumption: a smaller model's
kernels are usually less efficient, so this is optimistic for the encoder.

The three placements the seed names:

- **own GPUs** (n_e for the encoder, N − n_e for the text model, pipelined across steps so
  they overlap): step = max(t_e(n_e), t_text(N − n_e)); the faster pool idles for the
  difference. The plan picks the n_e (whole nodes' worth of GPUs where possible) that
  minimises the step unless the user fixes it.
- **sharded with the text model** (every GPU runs both, one after the other): step =
  t_e(N) + t_text(N); nobody idles; every GPU holds the encoder's state too.
- **a pipeline stage** (the encoder is stage 0 of a p + 1-stage pipeline with the text
  model's p stages; p = the scenario's pp, m its micro-batches): the text stages' slot is
  t_text ÷ (m + p − 1) rescaled to their GPUs, the encoder's its work per micro-batch on its
  GPUs; the pipeline runs at its slowest stage: step = (m + p) · max(slot) (GPipe/1F1B run
  m + stages − 1 slots, Narayanan et al. 2021 section 2.2), and the idle share is
  1 − Σ stage work ÷ (N · step).
"""

from __future__ import annotations

import math

from pydantic import BaseModel, ConfigDict

from llm_planner.core.composition.scenario import Scenario
from llm_planner.core.composition.whatif.estimated import Estimated
from llm_planner.core.inputs.whatif import MultimodalInputs


class Placement(BaseModel):
    """One placement's step, idle share and the encoder's memory per GPU."""

    model_config = ConfigDict(frozen=True)

    name: str
    encoder_gpus: int
    text_gpus: int
    step_seconds: float
    idle_fraction: float
    """Share of all GPU-time spent waiting (bubble or the faster pool's idle)."""
    encoder_state_bytes_per_gpu: float


class MultimodalPlan(BaseModel):
    """The three placements, best first."""

    model_config = ConfigDict(frozen=True)

    encoder_flops_per_step: float
    text_step_seconds: float
    flops_per_gpu_per_s: float
    placements: list[Placement]
    best: str


def encoder_flops_per_step(inputs: MultimodalInputs, sequences: int) -> float:
    """B · I · T_e · (6·P_e trained, 2·P_e frozen)."""
    per_token = (6.0 if inputs.encoder_trained else 2.0) * inputs.encoder_params
    return sequences * inputs.images_per_sequence * inputs.tokens_per_image * per_token


def own_gpus_step(t_encoder_all: float, t_text_all: float, n: int, n_e: int) -> float:
    """max(t_e·N/n_e, t_text·N/(N − n_e)): times measured on all N GPUs, rescaled."""
    if not 0 < n_e < n:
        return math.inf
    return max(t_encoder_all * n / n_e, t_text_all * n / (n - n_e))


def pipeline_stage_step(
    t_encoder_all: float, t_text_all: float, n: int, *, encoder_gpus: int, pp: int, m: int
) -> tuple[float, float]:
    """(step, idle share) with the encoder as an extra first stage on ``encoder_gpus`` GPUs
    and the text model's ``pp`` stages sharing the other GPUs evenly; ``m`` micro-batches."""
    text_gpus = n - encoder_gpus
    if encoder_gpus < 1 or text_gpus < 1:
        return math.inf, 0.0
    stage_e = t_encoder_all * n / encoder_gpus / m
    # the text step already spans m + pp − 1 slots of its own pipeline (its bubble included)
    stage_t = t_text_all * n / text_gpus / (m + pp - 1)
    slowest = max(stage_e, stage_t)
    step = (m + pp) * slowest
    busy = stage_e * encoder_gpus * m + stage_t * text_gpus * m  # GPU-seconds of work
    return step, 1.0 - busy / (n * step)


def plan_multimodal(
    scenario: Scenario, report: Estimated, mm: MultimodalInputs
) -> MultimodalPlan | None:
    """The three placements on the scenario's GPUs; None without a modeled step time."""
    par = report.parallelism
    n = par.gpus
    flops_rate = report.compute.flops_per_gpu_per_s
    if not flops_rate or not par.step_seconds > 0 or n < 2:
        return None
    batch = scenario.parallelism.global_batch
    f_e = encoder_flops_per_step(mm, batch)
    t_text = par.step_seconds
    t_enc = f_e / (n * flops_rate)  # the encoder's work spread over all N GPUs
    state_per_param = 16.0 if mm.encoder_trained else 2.0  # mixed-precision Adam / bf16 weights
    encoder_state = mm.encoder_params * state_per_param
    placements: list[Placement] = []
    # own GPUs: best split in steps of a node (or of one GPU on small clusters)
    unit = scenario.parallelism.gpus_per_node if n >= 4 * scenario.parallelism.gpus_per_node else 1
    choices = [mm.encoder_gpus] if mm.encoder_gpus else list(range(unit, n, unit))
    n_e = min(choices, key=lambda k: (own_gpus_step(t_enc, t_text, n, k), k))
    own = own_gpus_step(t_enc, t_text, n, n_e)
    busy = t_enc * n + t_text * n
    placements.append(
        Placement(
            name="own GPUs",
            encoder_gpus=n_e,
            text_gpus=n - n_e,
            step_seconds=own,
            idle_fraction=1.0 - busy / (n * own) if math.isfinite(own) else 1.0,
            encoder_state_bytes_per_gpu=encoder_state / max(n_e, 1),
        )
    )
    shared = t_enc + t_text
    placements.append(
        Placement(
            name="sharded with the text model",
            encoder_gpus=n,
            text_gpus=n,
            step_seconds=shared,
            idle_fraction=0.0,
            encoder_state_bytes_per_gpu=encoder_state / n,
        )
    )
    pp = max(1, par.pp)
    m = max(1, par.gradient_accumulation_steps)
    stage_gpus = min(
        (k for k in choices if k < n),
        key=lambda k: (pipeline_stage_step(t_enc, t_text, n, encoder_gpus=k, pp=pp, m=m)[0], k),
    )
    stage_step, stage_idle = pipeline_stage_step(
        t_enc, t_text, n, encoder_gpus=stage_gpus, pp=pp, m=m
    )
    placements.append(
        Placement(
            name="a pipeline stage",
            encoder_gpus=stage_gpus,
            text_gpus=n - stage_gpus,
            step_seconds=stage_step,
            idle_fraction=stage_idle,
            encoder_state_bytes_per_gpu=encoder_state / stage_gpus,
        )
    )
    placements.sort(key=lambda p: p.step_seconds)
    return MultimodalPlan(
        encoder_flops_per_step=f_e,
        text_step_seconds=t_text,
        flops_per_gpu_per_s=flops_rate,
        placements=placements,
        best=placements[0].name,
    )
