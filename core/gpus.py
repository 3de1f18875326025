"""The GPU catalog: memory, bandwidth, dense peak throughput per dtype, links.

Data lives in ``resources/gpus.json`` (each entry with the datasheet it comes from); this
module validates it into :class:`GPU` values. Users may add custom GPUs (a scenario carries
its GPU inline, so a file stays self-contained).

Units: memory in bytes *as sold* (decimal GB, e.g. H100 80 GB = 80e9 bytes), bandwidths in
bytes/s, peak throughput in FLOP/s (or OP/s for int8), dense (without 2:4 sparsity).
"""

from __future__ import annotations

from functools import cache

from pydantic import BaseModel, ConfigDict, Field

from llm_planner.core.resources import read_json


class PeakFlops(BaseModel):
    """Dense peak throughput per math dtype, FLOP/s (None where the GPU has no such unit)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    fp32: float | None = Field(default=None, ge=0, description="non-tensor FP32")
    tf32: float | None = Field(default=None, ge=0, description="TF32 tensor core, dense")
    bf16: float | None = Field(default=None, ge=0, description="BF16 tensor core, dense")
    fp16: float | None = Field(default=None, ge=0, description="FP16 tensor core, dense")
    fp8: float | None = Field(default=None, ge=0, description="FP8 tensor core, dense")
    int8: float | None = Field(default=None, ge=0, description="INT8 tensor core OP/s, dense")

    def for_dtype(self, dtype: str) -> float | None:
        """Peak for ``dtype``; bf16 falls back to fp16 (same rate on every GPU here) if missing."""
        value = getattr(self, dtype, None)
        if value is None and dtype == "bf16":
            return self.fp16
        return value if isinstance(value, float) else None


class GPU(BaseModel):
    """One accelerator model, as its datasheet describes it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str = Field(pattern=r"^[a-z0-9][a-z0-9._-]*$", description="command-line id")
    name: str
    vendor: str = ""
    memory_bytes: float = Field(gt=0, description="memory as sold, bytes (decimal GB × 1e9)")
    memory_bandwidth_bytes_per_s: float = Field(gt=0, description="HBM/GDDR bandwidth, bytes/s")
    peak_flops: PeakFlops
    link_name: str = Field(default="PCIe", description="GPU-to-GPU link inside a node")
    link_bandwidth_bytes_per_s: float = Field(
        gt=0,
        description="GPU-to-GPU bandwidth per GPU, one direction, bytes/s (NVLink 4: 450e9 of "
        "the 900 GB/s bidirectional figure)",
    )
    tdp_watts: float | None = Field(default=None, gt=0)
    source: str = Field(default="", description="datasheet or paper the figures come from")
    notes: str = ""
    custom: bool = Field(default=False, description="entered by the user, not from the catalog")


@cache
def gpu_catalog() -> dict[str, GPU]:
    """Every catalog GPU by id, in catalog order."""
    data = read_json("gpus.json")
    gpus = [GPU.model_validate(entry) for entry in data["gpus"]]
    return {gpu.id: gpu for gpu in gpus}


def get_gpu(gpu_id: str) -> GPU:
    """The catalog GPU ``gpu_id``; a KeyError message lists the known ids."""
    catalog = gpu_catalog()
    try:
        return catalog[gpu_id.lower()]
    except KeyError:
        raise KeyError(f"unknown GPU {gpu_id!r}; known: {', '.join(catalog)}") from None
