"""The weight format a checkpoint's ``quantization_config`` (or NVIDIA ModelOpt's
``hf_quant_config.json``) implies: fp8, GPTQ/AWQ integer layouts, bitsandbytes,
compressed-tensors, MXFP4 (a :mod:`.quantization` id).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from llm_planner.core.files.hf_config import (
    _parse_json_object,
    _read_limited,
)
from llm_planner.core.primitives.architecture import (
    Architecture,
    count_parameters,
)


def _int_layout(method: str, bits: Any, group: Any) -> str | None:
    """The weight format id of a GPTQ/AWQ checkpoint of ``bits`` and ``group`` size
    (``-1`` or None: per channel), or None when the numbers are not a layout."""
    from llm_planner.core.quantities.quantization import grouped_int_format

    if isinstance(bits, bool) or not isinstance(bits, int):
        return None
    if group is None or group == -1:
        size = None
    elif isinstance(group, int) and not isinstance(group, bool) and group > 0:
        size = group
    else:
        return None
    if (bits, size) == (4, 128) and method in ("gptq", "awq"):
        return "awq_int4_g128"  # the listed layout (GPTQ and AWQ store the same tensors)
    try:
        return grouped_int_format(bits, size, method).id
    except ValueError:
        return None


def _compressed_tensors(quant: dict[str, Any]) -> tuple[str | None, str]:
    """(format id, note) of a compressed-tensors ``quantization_config``: the weights of its
    first config group (llm-compressor writes one for ``Linear``). int: the integer layout
    (symmetric: one scale per group; asymmetric: a zero point too); float 8 bits: fp8;
    float 4 bits: NVFP4 (group 16, ``nvfp4-pack-quantized``) or MXFP4 (group 32).
    (compressed-tensors ``QuantizationArgs``: num_bits, type, symmetric, strategy,
    group_size.)"""
    groups = quant.get("config_groups")
    if not isinstance(groups, dict) or not groups:
        return None, "compressed-tensors without config_groups; ignored"
    first = next(iter(groups.values()))
    weights = first.get("weights") if isinstance(first, dict) else None
    if not isinstance(weights, dict):
        return None, "compressed-tensors group without weights; ignored"
    bits, kind = weights.get("num_bits"), str(weights.get("type", "int")).lower()
    strategy = str(weights.get("strategy", "")).lower()
    group = weights.get("group_size") if strategy in ("group", "tensor_group") else None
    acts = "weights only" if first.get("input_activations") is None else "weights and inputs"
    more = f" (first of {len(groups)} config groups)" if len(groups) > 1 else ""
    ignored = quant.get("ignore") or []
    kept = (
        f"; {len(ignored)} ignored module patterns kept in 16 bits, not split out"
        if ignored
        else ""
    )
    if kind == "float" and bits == 8:
        return "fp8", f"compressed-tensors fp8 {acts}{more}{kept}"
    if kind == "float" and bits == 4:
        fmt = {16: "nvfp4", 32: "mxfp4"}.get(group) if isinstance(group, int) else None
        return fmt, f"compressed-tensors fp4, group {group}, {acts}{more}{kept}"
    if kind == "int":
        method = "int" if weights.get("symmetric", True) else "gptq"
        fmt = _int_layout(method, bits, group)
        side = "symmetric" if method == "int" else "asymmetric"
        return fmt, f"compressed-tensors int{bits} {side}, group {group}, {acts}{more}{kept}"
    return None, f"compressed-tensors weights {kind} {bits}-bit not recognised; ignored"


_MODELOPT_ALGOS = {
    "nvfp4": "nvfp4",
    "w4a16_nvfp4": "nvfp4",
    "nvfp4_awq": "nvfp4",
    "w4a8_nvfp4_fp8": "nvfp4",
    "fp8": "fp8",
    "fp8_pb_wo": "fp8",
    "w4a16_awq": "awq_int4_g128",
    "w4a8_awq": "awq_int4_g128",
}
"""TensorRT Model Optimizer's ``quant_algo`` names (its ``hf_quant_config.json`` and the
``quantization_config`` with ``quant_method: modelopt``) → weights format."""


def _modelopt(quant: dict[str, Any]) -> tuple[str | None, str]:
    """(format id, note) of a ModelOpt quantization: ``quant_algo`` (NVFP4, FP8, ...); for
    ``MIXED_PRECISION``, the algorithm most of its ``quantized_layers`` use."""
    algo = str(quant.get("quant_algo", "")).lower()
    excluded = quant.get("exclude_modules") or quant.get("ignore") or []
    kept = (
        f"; {len(excluded)} excluded module patterns kept in 16 bits, not split out"
        if excluded
        else ""
    )
    if algo == "mixed_precision":
        layers = quant.get("quantized_layers")
        algos = [
            str(v.get("quant_algo", "")).lower()
            for v in (layers.values() if isinstance(layers, dict) else [])
            if isinstance(v, dict)
        ]
        if not algos:
            return None, "ModelOpt MIXED_PRECISION without quantized_layers; ignored"
        algo = max(set(algos), key=algos.count)
        fmt = _MODELOPT_ALGOS.get(algo)
        return (
            fmt,
            f"ModelOpt mixed precision: {algos.count(algo)} of {len(algos)} layer "
            f"groups {algo.upper()}, the rest counted the same{kept}",
        )
    fmt = _MODELOPT_ALGOS.get(algo)
    if fmt is None:
        return None, f"ModelOpt quant_algo {algo.upper()!r} not recognised; ignored"
    return fmt, f"ModelOpt {algo.upper()} weights{kept}"


def quantization_format(
    quant: Any, arch: Architecture
) -> tuple[str | None, float | None, str | None]:
    """(weights format id, exact bytes or None, note) from a ``quantization_config``.

    ``fp8`` (DeepSeek-V3's block-wise e4m3, ``fbgemm_fp8``): fp8 weights. GPTQ / AWQ:
    packed integers of their ``bits`` with an fp16 scale and a packed zero per
    ``group_size`` (transformers' GPTQConfig defaults: 4 bits, group 128; ``-1``: per
    channel): ``gptq_int3_g128``, 4-bit group 128 as ``awq_int4_g128``. compressed-tensors
    (llm-compressor): the first config group's weights (:func:`_compressed_tensors`).
    ModelOpt (``quant_method`` ``modelopt``, or the folder's ``hf_quant_config.json``):
    its ``quant_algo`` (:func:`_modelopt`). bitsandbytes ``load_in_4bit``: NF4,
    ``load_in_8bit``: int8. ``mxfp4`` (gpt-oss; transformers ``quantizer_mxfp4.py``): the
    routed experts' matrices in MXFP4 (4.25 bits), everything else in bf16, so the bytes
    are exact: experts·4.25/8 + rest·2.
    """
    if quant is None:
        return None, None, None
    if not isinstance(quant, dict):
        return None, None, "quantization_config is not an object; ignored"
    method = str(quant.get("quant_method", "")).lower()
    if method in ("fp8", "fbgemm_fp8"):
        return (
            "fp8",
            None,
            "fp8 weights (quantization_config); 16-bit embeddings and norms not split out",
        )
    if method in ("gptq", "awq"):
        bits = quant.get("bits", quant.get("w_bit", 4))
        group = quant.get("group_size", quant.get("q_group_size", 128))
        # AutoGPTQ stores packed qzeros even when symmetric; AWQ without zero points not
        kind = "int" if method == "awq" and not quant.get("zero_point", True) else method
        fmt = _int_layout(kind, bits, group)
        size = "per channel" if group in (None, -1) else f"group {group}"
        if fmt is None:
            return None, None, f"{method.upper()} bits {bits!r}, group {group!r}: not a layout"
        return fmt, None, f"{method.upper()} {bits}-bit weights, {size}"
    if method == "compressed-tensors":
        fmt, note = _compressed_tensors(quant)
        return fmt, None, note
    if method in ("modelopt", "modelopt_fp4"):
        fmt, note = _modelopt(quant)
        return fmt, None, note
    if method == "bitsandbytes":
        if quant.get("load_in_4bit"):
            return "nf4", None, "bitsandbytes 4-bit weights"
        if quant.get("load_in_8bit"):
            return "int8", None, "bitsandbytes 8-bit weights"
    if method == "mxfp4" and arch.moe is not None:
        from llm_planner.core.quantities.quantization import get_weight_format

        counts = count_parameters(arch)
        one = arch.moe.expert_ffn_size * arch.hidden_size * (3 if arch.gated else 2)
        matrices = arch.moe_layers * arch.moe.num_experts * one
        mx_bits = get_weight_format("mxfp4").bits_per_weight
        exact = matrices * mx_bits / 8 + (counts.total - matrices) * 2.0
        return "mxfp4", exact, "MXFP4 routed experts, the rest bf16 (quantization_config)"
    return None, None, f"quantization_config quant_method {method!r} not recognised; ignored"


HF_QUANT_CONFIG_MAX_BYTES = 4 * 2**20
"""hf_quant_config.json is a few KB (its exclude list grows with the layer count)."""


def modelopt_quant_config(folder: Path) -> dict[str, Any] | None:
    """The ``quantization`` block of a folder's ``hf_quant_config.json`` (written by NVIDIA
    TensorRT Model Optimizer next to config.json: ``{"producer": {"name": "modelopt"},
    "quantization": {"quant_algo": "NVFP4", "group_size": 16, "exclude_modules": [...]}}``)
    as a ``quantization_config`` (``quant_method: modelopt``); None without one."""
    path = folder / "hf_quant_config.json"
    if not path.is_file():
        return None
    data = _parse_json_object(
        _read_limited(path, HF_QUANT_CONFIG_MAX_BYTES, "hf_quant_config.json"),
        str(path),
        "hf_quant_config.json",
        tolerant=True,
    )
    block = data.get("quantization", data)
    if not isinstance(block, dict):
        return None
    return {"quant_method": "modelopt", **block}
