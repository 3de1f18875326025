"""CUDA graph capture choices of a training step (issue 27): what Megatron-Core captures and
replays as one graph launch instead of launching kernel by kernel.

Read from NVIDIA/Megatron-LM@d98e8a64ddf34856e74b24714e3bedb2f5a39553
megatron/core/transformer/transformer_config.py (``cuda_graph_impl``, ``cuda_graph_modules``
— the renamed ``cuda_graph_scope`` — and their validation in ``__post_init__``). The host's
launch floor these graphs remove is priced in
:mod:`llm_planner.core.sections.parallelism.step_time_host`."""

from __future__ import annotations

from typing import Literal

CudaGraphs = Literal[
    "none", "attn", "mlp", "moe_router", "attn_moe_router", "layer", "full_iteration"
]

CUDA_GRAPHS: dict[str, str] = {
    "none": "every kernel launched by the host (cuda_graph_impl none)",
    "attn": "each layer's attention block captured, forward and backward "
    "(per-layer graphs, cuda_graph_modules [attn])",
    "mlp": "each dense layer's MLP block captured (cuda_graph_modules [mlp]; Megatron refuses "
    "it for a model whose every layer is MoE)",
    "moe_router": "the MoE router with the dispatcher's preprocessing captured "
    "(cuda_graph_modules [moe_router, moe_preprocess]); attention, the experts, "
    "permutations and all-to-alls stay eager",
    "attn_moe_router": "attention and the MoE router with the dispatcher's preprocessing "
    "captured (cuda_graph_modules [attn, moe_router, moe_preprocess]); the experts, "
    "permutations and all-to-alls stay eager",
    "layer": "each whole transformer layer captured (cuda_graph_modules empty, the deprecated "
    "'full'); Megatron captures an MoE block only with drop-and-pad (a capacity factor)",
    "full_iteration": "the whole forward-backward of the step captured as one graph "
    "(cuda_graph_impl full_iteration)",
}
"""The choices, as Megatron-Core's ``cuda_graph_impl`` / ``cuda_graph_modules`` name them."""
