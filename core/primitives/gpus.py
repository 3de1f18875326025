"""The GPU catalog: memory, bandwidth, dense peak throughput per dtype, links.

Data lives in ``resources/gpus.json`` (each entry with the datasheet it comes from and a
note on how it was checked); this module validates it into :class:`GPU` values. Users add
custom GPUs with :func:`custom_gpu` or a JSON file that :func:`get_gpu` reads; a scenario
carries its GPU inline, so a saved file stays self-contained. Names people type (``H100``,
``RTX 4090``, ``nvidia-smi``'s ``NVIDIA A100-SXM4-40GB``) are read through one
normalisation and the ``aliases`` table of the data file (:func:`find_gpu`), and an
unknown name gets the closest ids.

Conventions (``conventions`` in the data file says the same):

* memory in bytes *as sold* (decimal GB: H100 80 GB = 80e9 bytes = 74.5 GiB);
* bandwidths in bytes/s; the GPU-to-GPU link is one GPU's bandwidth in ONE direction
  (NVLink 4's quoted 900 GB/s counts both directions: 450e9 per direction);
* peak throughput in FLOP/s (OP/s for int8), dense: without 2:4 structured sparsity;
  GeForce tensor rates are those with FP32 accumulate;
* one entry per package as sold (an MI250X is one entry with both of its dies).
"""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from llm_planner.core.primitives.resources import read_json

PCIE_GEN4_X16_BYTES_PER_S = 32e9
"""PCIe 4.0 x16, one direction: 16 GT/s × 16 lanes × 128/130 encoding ÷ 8 ≈ 31.5e9 B/s,
quoted as 32 GB/s (PCI-SIG PCIe 4.0 base specification; NVIDIA datasheets: "64 GB/s
bidirectional"). The default link of a custom GPU."""


CUDA_CONTEXT_BYTES = 1e9
"""Per-GPU memory taken before any tensor, for inference and training alike: the CUDA
context plus cuBLAS/NCCL workspaces (a few hundred MB to about 1 GB with lazy module
loading, depending on driver and GPU). An assumption, stated and adjustable per scenario:
measure it as the memory ``nvidia-smi`` shows for a process that has only initialised CUDA
and the libraries it uses."""


class PeakFlops(BaseModel):
    """Dense peak throughput per math dtype, FLOP/s (None where the GPU has no such unit)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    fp32: float | None = Field(default=None, ge=0, description="non-tensor (vector) FP32")
    tf32: float | None = Field(default=None, ge=0, description="TF32 tensor core, dense")
    bf16: float | None = Field(default=None, ge=0, description="BF16 tensor core, dense")
    fp16: float | None = Field(default=None, ge=0, description="FP16 tensor core, dense")
    fp8: float | None = Field(default=None, ge=0, description="FP8 tensor core, dense")
    fp4: float | None = Field(
        default=None, ge=0, description="FP4 tensor core (NVFP4 / MXFP4), dense"
    )
    int8: float | None = Field(default=None, ge=0, description="INT8 tensor core OP/s, dense")

    def for_dtype(self, dtype: str) -> float | None:
        """Dense peak for math in ``dtype`` (``fp32``, ``tf32``, ``bf16``, ``fp16``, ``fp8``,
        ``fp4``, ``int8``); None where the GPU has no unit for it or the dtype is not a math dtype.

        There is no fallback from one dtype to another: a V100 has FP16 but no BF16 tensor
        cores, so ``for_dtype("bf16")`` is None there, and a caller must say what it does
        instead (e.g. ask for fp16) rather than silently get another unit's rate.
        """
        if dtype not in type(self).model_fields:
            return None
        value = getattr(self, dtype)
        return None if value is None else float(value)


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
    nvlink_domain_gpus: int | None = Field(
        default=None,
        ge=1,
        description="GPUs one NVLink fabric joins beyond a node (GB200/GB300 NVL72 racks: 72, "
        "through the NVLink switch trays); None: a node",
    )
    network_bytes_per_s_per_gpu: float | None = Field(
        default=None,
        gt=0,
        description="scale-out network per GPU, one direction, bytes/s (its NIC share: GB200 "
        "NVL72 one 400 Gb/s ConnectX-7 per GPU = 50e9); None: 400 Gb/s "
        "(comm.NETWORK_BYTES_PER_S_PER_GPU)",
    )
    tdp_watts: float | None = Field(default=None, gt=0)
    sustained_tensor_fraction: float | None = Field(
        default=None,
        gt=0,
        le=1,
        description="share of the datasheet's tensor-core peaks the GPU sustains in "
        "measured training runs, where they show it below its datasheet (GB200 NVL72: "
        "0.9229, NVIDIA's paired runs against HGX B200); None: the datasheet's",
    )
    source: str = Field(default="", description="datasheet or paper the figures come from")
    notes: str = ""
    custom: bool = Field(default=False, description="entered by the user, not from the catalog")

    @property
    def tensor_rate_fraction(self) -> float:
        """:attr:`sustained_tensor_fraction`, 1 where the catalog states none."""
        return 1.0 if self.sustained_tensor_fraction is None else self.sustained_tensor_fraction

    @property
    def memory_gib(self) -> float:
        """Memory in GiB (2^30 bytes), as nvidia-smi and PyTorch count it."""
        return self.memory_bytes / 2**30


class GPUNotFoundError(KeyError):
    """No catalog GPU with that id, or a GPU file that cannot be used; the message says why.

    A KeyError, so callers that look ids up keep working; ``str()`` gives the plain message
    (KeyError's own ``str()`` would quote it).
    """

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


@cache
def gpu_catalog() -> dict[str, GPU]:
    """Every catalog GPU by id, in catalog order."""
    data = read_json("gpus.json")
    gpus = [GPU.model_validate(entry) for entry in data["gpus"]]
    return {gpu.id: gpu for gpu in gpus}


def custom_id(name: str) -> str:
    """The id of a custom GPU called ``name``: ``custom-`` + its name in lower case with runs
    of other characters as ``-`` (``"My Card 48GB"`` → ``custom-my-card-48gb``), so it never
    collides with a catalog id."""
    slug = re.sub(r"[^a-z0-9._]+", "-", name.lower()).strip("-._")
    return f"custom-{slug}" if slug else "custom"


def custom_gpu(
    name: str,
    memory_bytes: float,
    memory_bandwidth_bytes_per_s: float,
    bf16_flops: float,
    *,
    fp16_flops: float | None = None,
    fp32_flops: float | None = None,
    tf32_flops: float | None = None,
    fp8_flops: float | None = None,
    fp4_flops: float | None = None,
    int8_ops: float | None = None,
    link_name: str = "PCIe Gen4 x16",
    link_bandwidth_bytes_per_s: float = PCIE_GEN4_X16_BYTES_PER_S,
    tdp_watts: float | None = None,
    vendor: str = "",
    source: str = "entered by the user",
    notes: str = "",
) -> GPU:
    """A user-defined GPU (``custom=True``, id from :func:`custom_id`).

    Give dense peaks (without sparsity) in FLOP/s and bandwidths in bytes/s, memory in bytes.
    Assumption: ``fp16_flops`` defaults to ``bf16_flops`` (the same tensor rate on every GPU
    in the catalog that has both); the other dtypes default to None (no such unit). The link
    defaults to PCIe Gen4 x16, one direction (:data:`PCIE_GEN4_X16_BYTES_PER_S`).
    Raises pydantic's ValidationError for non-positive sizes or negative rates.
    """
    return GPU(
        id=custom_id(name),
        name=name,
        vendor=vendor,
        memory_bytes=memory_bytes,
        memory_bandwidth_bytes_per_s=memory_bandwidth_bytes_per_s,
        peak_flops=PeakFlops(
            fp32=fp32_flops,
            tf32=tf32_flops,
            bf16=bf16_flops,
            fp16=bf16_flops if fp16_flops is None else fp16_flops,
            fp8=fp8_flops,
            fp4=fp4_flops,
            int8=int8_ops,
        ),
        link_name=link_name,
        link_bandwidth_bytes_per_s=link_bandwidth_bytes_per_s,
        tdp_watts=tdp_watts,
        source=source,
        notes=notes,
        custom=True,
    )


def _looks_like_path(text: str) -> bool:
    return text.lower().endswith(".json") or "/" in text or "\\" in text or Path(text).is_file()


def _first_error(error: ValidationError) -> str:
    first = error.errors()[0]
    where = ".".join(str(part) for part in first["loc"]) or "(top level)"
    return f"{where}: {first['msg']}"


MAX_GPU_FILE_BYTES = 1_000_000
"""Largest custom GPU file read (a GPU entry is under 2 kB; a saved scenario holding one is
at most the scenario files' 1 MB)."""


def load_gpu_file(path: str | Path) -> GPU:
    """A custom GPU from a JSON file: either a GPU object (the fields of :class:`GPU`; ``id``
    may be left out and is then derived from ``name``) or an object with such a GPU under
    ``"gpu"`` (a saved scenario). The result is marked ``custom=True``.

    Raises :class:`GPUNotFoundError` naming the file and what is wrong with it.
    """
    from llm_planner.core.primitives.reading import (
        FileReadError,
        check_structure,
        read_text_bounded,
    )

    file = Path(path)
    if not file.exists():
        raise GPUNotFoundError(f"GPU file {str(file)!r} does not exist")
    try:
        text = read_text_bounded(file, MAX_GPU_FILE_BYTES, "a GPU file")
        check_structure(text, str(file))
        data: Any = json.loads(text)
    except FileReadError as error:
        raise GPUNotFoundError(f"cannot read GPU file {error}") from None
    except json.JSONDecodeError as error:
        raise GPUNotFoundError(f"GPU file {str(file)!r} is not valid JSON: {error}") from None
    except (ValueError, RecursionError) as error:
        raise GPUNotFoundError(f"GPU file {str(file)!r} is not read: {error}") from None
    if isinstance(data, dict) and isinstance(data.get("gpu"), dict):
        data = data["gpu"]
    if not isinstance(data, dict):
        raise GPUNotFoundError(f"GPU file {str(file)!r} must hold a JSON object")
    entry = dict(data)
    if "id" not in entry and isinstance(entry.get("name"), str):
        entry["id"] = custom_id(entry["name"])
    entry["custom"] = True
    try:
        return GPU.model_validate(entry)
    except ValidationError as error:
        raise GPUNotFoundError(f"GPU file {str(file)!r}: {_first_error(error)}") from None


_DROPPED_WORDS = frozenset(
    {"nvidia", "amd", "geforce", "tesla", "instinct", "tensor", "core", "gpu"}
)
"""Vendor and family words a typed or ``nvidia-smi`` name may carry that no id does."""


def normalize_gpu_name(text: str) -> str:
    """The key a typed GPU name is looked up under: lower case; spaces, underscores and
    slashes as ``-``; a size's unit joined to its number (``80 GB`` → ``80gb``); ``rtx4090``
    → ``rtx-4090``; vendor and family words dropped (``NVIDIA GeForce RTX 4090`` →
    ``rtx-4090``, ``NVIDIA A100-SXM4-40GB`` → ``a100-sxm4-40gb``)."""
    key = re.sub(r"[\s_/]+", "-", text.strip().lower())
    key = re.sub(r"(\d)-gb\b", r"\1gb", key)
    key = re.sub(r"\brtx(?=\d)", "rtx-", key)
    words = [word for word in key.split("-") if word and word not in _DROPPED_WORDS]
    return "-".join(words)


@cache
def gpu_aliases() -> dict[str, str]:
    """The names people type (normalised, :func:`normalize_gpu_name`) → catalog id, from
    ``aliases`` in ``resources/gpus.json`` (its ``conventions.aliases`` says what a bare
    product name means)."""
    data = read_json("gpus.json")
    aliases: dict[str, str] = dict(data.get("aliases", {}))
    return aliases


class GPUChoice(BaseModel):
    """A GPU found for a typed name, and how the name was read.

    ``read_as`` is None when the name was the catalog id (in any case) or a file; otherwise
    it says which entry the name was taken to mean, for the command line to echo."""

    model_config = ConfigDict(frozen=True)

    gpu: GPU
    read_as: str | None = None


def _suggestions(key: str, limit: int = 3) -> list[str]:
    """Catalog ids whose id or alias is closest to ``key`` (difflib's ratio ≥ 0.6), best first;
    also every id that starts with ``key`` or that ``key`` starts with."""
    catalog = gpu_catalog()
    aliases = gpu_aliases()
    names = [*catalog, *aliases]
    import difflib  # only when an id is unknown: not on the report's path

    close = difflib.get_close_matches(key, names, n=2 * limit, cutoff=0.6)
    prefixed = [i for i in catalog if key and (i.startswith(key) or key.startswith(i))]
    found: list[str] = []
    for name in [*close, *prefixed]:
        gpu_id = aliases.get(name, name)
        if gpu_id not in found:
            found.append(gpu_id)
    return found[:limit]


def find_gpu(text: str) -> GPUChoice:
    """The GPU ``text`` names: a catalog id (case-insensitive); a name people type, read
    through :func:`normalize_gpu_name` and the alias table (``H100``, ``h100-80gb``,
    ``A100-40GB``, ``RTX 4090``, ``4090``, ``NVIDIA H100 80GB HBM3``), with ``read_as``
    saying which entry it was taken to mean; or, when ``text`` is the path of a JSON file
    (ends in ``.json``, contains a path separator, or names an existing file), the custom
    GPU in it (:func:`load_gpu_file`).

    Raises :class:`GPUNotFoundError` (a KeyError) whose message offers the closest ids
    ("did you mean") and lists the known ones.
    """
    catalog = gpu_catalog()
    found = catalog.get(text.strip().lower())
    if found is not None:
        return GPUChoice(gpu=found)
    if _looks_like_path(text):
        return GPUChoice(gpu=load_gpu_file(text))
    key = normalize_gpu_name(text)
    gpu_id = key if key in catalog else gpu_aliases().get(key)
    if gpu_id is not None:
        gpu = catalog[gpu_id]
        return GPUChoice(gpu=gpu, read_as=f"{text.strip()!r} read as {gpu.id} ({gpu.name})")
    close = _suggestions(key)
    hint = f"; did you mean {' or '.join(close)}?" if close else ";"
    raise GPUNotFoundError(
        f"unknown GPU {text!r}{hint} known: {', '.join(catalog)} (or the path of a GPU JSON file)"
    )


def catalog_id(text: str) -> str | None:
    """The catalog id a GPU name reads as (an id in any case, or a name from the alias
    table), or None: for keys that name catalog GPUs (price overrides), not files."""
    if _looks_like_path(text):
        return None
    try:
        return find_gpu(text).gpu.id
    except KeyError:
        return None


def get_gpu(gpu_id: str) -> GPU:
    """The GPU ``gpu_id`` names, as :func:`find_gpu` reads it (catalog id, a name people
    type, or a GPU JSON file). Raises :class:`GPUNotFoundError` (a KeyError) whose message
    offers the closest ids and lists the known ones."""
    return find_gpu(gpu_id).gpu
