"""Compressed communication as a what-if: fewer bytes on the wire, a kernel to pay for it.

For the chosen collective kind k with exposed time t_k in the step (the parallelism
section's breakdown) and W_k bytes per GPU per step:

    t_k' = t_k ÷ r  +  2 · W_k ÷ κ        step' = step − t_k + t_k'

with r the compression ratio and κ the compress + decompress kernel rate per GPU (each byte
is compressed once and decompressed once; the kernels are assumed not to overlap the
transfer — pessimistic for pipelined implementations). r = 1 with free kernels leaves the
step unchanged. Only the exposed time shrinks: what the step hides behind compute stays
hidden (Dettmers 2016, "8-bit approximations for parallelism in deep learning", and
Bernstein et al. 2018, signSGD, show the trade; the model here is their first-order cost).

The seed's aim — move spending from network fabric to GPUs — as a figure: the network
bandwidth B* at which the compressed run matches the uncompressed one on today's fabric B:
exposed time scales as 1/B, so t_k·(B/B*)/r + 2·W_k/κ = t_k gives
B* = B · t_k ÷ (r · (t_k − 2·W_k/κ)), defined when the kernels cost less than t_k.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from llm_planner.core.composition.whatif.estimated import Estimated
from llm_planner.core.inputs.whatif import CompressionInputs
from llm_planner.core.sections.parallelism import bottleneck_of

BYTES_KEY = {
    "data_parallel": "data_parallel",
    "tensor_parallel": "tensor_parallel",
    "pipeline_p2p": "pipeline_p2p",
    "expert_all_to_all": "expert_all_to_all",
}
"""The kind's key in ``comm_bytes_breakdown`` (same names as the time breakdown)."""


class CompressionPlan(BaseModel):
    """The step with one kind of collective compressed."""

    model_config = ConfigDict(frozen=True)

    kind: str
    ratio: float
    exposed_seconds_before: float
    exposed_seconds_after: float
    kernel_seconds: float
    step_seconds_before: float
    step_seconds_after: float
    speedup: float
    bottleneck_before: str
    bottleneck_after: str
    network_bytes_per_s: float
    """Today's inter-node network per node (the scenario's)."""
    matching_network_bytes_per_s: float | None
    """B*: the network on which the compressed run is as fast as today's uncompressed one
    (None: the kernels cost more than the transfer they shorten)."""


def compressed_step(
    step: float, exposed: float, bytes_per_step: float, ratio: float, kernel_rate: float | None
) -> tuple[float, float, float]:
    """(step', exposed', kernel seconds) for one kind compressed by ``ratio``."""
    kernel = 2.0 * bytes_per_step / kernel_rate if kernel_rate else 0.0
    after = exposed / ratio + kernel
    return step - exposed + after, after, kernel


def matching_bandwidth(
    bandwidth: float, exposed: float, ratio: float, kernel_seconds: float
) -> float | None:
    """B* = B · t ÷ (r · (t − kernel)); None when the kernels eat the whole transfer."""
    if exposed <= kernel_seconds or exposed <= 0:
        return None
    return bandwidth * exposed / (ratio * (exposed - kernel_seconds))


def plan_compression(
    report: Estimated, inputs: CompressionInputs, network_bytes_per_s: float
) -> CompressionPlan:
    """Compress ``inputs.kind`` in the scenario's modeled step."""
    par = report.parallelism
    times = dict(par.time_breakdown_seconds)
    exposed = times.get(inputs.kind, 0.0)
    moved = par.comm_bytes_breakdown.get(BYTES_KEY[inputs.kind], 0.0)
    step, after, kernel = compressed_step(
        par.step_seconds, exposed, moved, inputs.ratio, inputs.kernel_bytes_per_s
    )
    new_times = {**times, inputs.kind: after}
    row_before = {f"time_{k}": v for k, v in times.items()}
    row_after = {f"time_{k}": v for k, v in new_times.items()}
    return CompressionPlan(
        kind=inputs.kind,
        ratio=inputs.ratio,
        exposed_seconds_before=exposed,
        exposed_seconds_after=after,
        kernel_seconds=kernel,
        step_seconds_before=par.step_seconds,
        step_seconds_after=step,
        speedup=par.step_seconds / step if step > 0 else 1.0,
        bottleneck_before=bottleneck_of(row_before),
        bottleneck_after=bottleneck_of(row_after),
        network_bytes_per_s=network_bytes_per_s,
        matching_network_bytes_per_s=matching_bandwidth(
            network_bytes_per_s, exposed, inputs.ratio, kernel
        ),
    )
