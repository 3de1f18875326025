"""Layers grouped by their matrices: a hybrid's (or Gemma 4's) layers of one kind, dense or
MoE, differ, and what sums over layers (stage parameters, LoRA, the step time's GEMM
shapes, recomputation) takes each group of identical layers with its own matrices."""

from __future__ import annotations

from llm_planner.core.primitives.architecture import Architecture, LayerMatrix
from llm_planner.core.primitives.kept import kept
from llm_planner.core.primitives.layer_matrices import layers_differ

__all__ = ["layer_groups", "layers_differ"]


@kept()
def layer_groups(
    arch: Architecture, moe_layer: bool
) -> tuple[tuple[tuple[LayerMatrix, ...], int], ...]:
    """The model's MoE (``moe_layer``) or other layers as (their matrices, how many layers
    have exactly those): one group of the usual layer's matrices when layers do not differ
    (:func:`layers_differ`), else each layer's own (:meth:`Architecture.layer_matrices`
    with its index) grouped: Nemotron-H's Mamba-2, attention and MLP layers, Qwen3.5's
    Gated DeltaNet and attention layers, Gemma 4's local, global and KV-sharing layers."""
    if not layers_differ(arch):  # the kind's count as the layer counts have it
        n = arch.moe_layers if moe_layer else arch.dense_layers
        return ((arch.layer_matrices(moe_layer), n),) if n else ()
    kind = [i for i in range(arch.layers) if arch.is_moe_layer(i) == moe_layer]
    if not kind:
        return ()
    groups: dict[tuple[LayerMatrix, ...], int] = {}
    for i in kind:
        mats = arch.layer_matrices(index=i)
        groups[mats] = groups.get(mats, 0) + 1
    return tuple(groups.items())
