"""One layer's weight matrices (:class:`LayerMatrix`), and what depends on the shapes alone
and is asked for many times per estimate, kept once per (frozen) shapes: the attention
matrices of a layer of one form and the layer counts by kind (read by
:class:`.architecture.Architecture`'s methods and properties)."""

from __future__ import annotations

from typing import Literal, NamedTuple, Protocol

from llm_planner.core.primitives.architecture_parts import MLAConfig, RecurrentConfig
from llm_planner.core.primitives.kept import kept


class Shapes(Protocol):
    """What these functions read of an :class:`.architecture.Architecture` (which imports
    this module, so it is not named here)."""

    @property
    def hidden_size(self) -> int: ...
    @property
    def heads(self) -> int: ...
    @property
    def layers(self) -> int: ...
    @property
    def attention_output_gate(self) -> bool: ...
    @property
    def mla(self) -> MLAConfig | None: ...
    @property
    def recurrent(self) -> RecurrentConfig | None: ...
    @property
    def kv_shared_layers(self) -> int: ...
    @property
    def global_head_dim(self) -> int | None: ...
    @property
    def global_kv_heads(self) -> int | None: ...
    @property
    def global_values_are_keys(self) -> bool: ...
    def is_moe_layer(self, index: int) -> bool: ...
    def is_attention_layer(self, index: int) -> bool: ...
    def is_recurrent_layer(self, index: int) -> bool: ...
    def is_windowed_layer(self, index: int) -> bool: ...


TensorSplit = Literal["columns", "rows", "none"]
"""How tensor parallelism splits a matrix (Shoeybi et al. 2019, arXiv:1909.08053, section 3):
``columns`` (column-parallel: d_out ÷ tp, Q/K/V and the MLP's first linear), ``rows``
(row-parallel: d_in ÷ tp, the attention output and the MLP's second linear), ``none``
(replicated on every tp rank: MLA's down-projections, the router)."""


LORA_TARGETS: tuple[str, ...] = ("q", "k", "v", "o", "gate", "up", "down")
"""The names a layer's weight matrices answer to as LoRA targets (:attr:`LayerMatrix.target`,
PEFT's ``target_modules`` for Llama: q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj,
down_proj; the router is not a target)."""


class LayerMatrix(NamedTuple):
    """One weight matrix of a layer: a token's (1 × d_in) input times W (d_in × d_out)."""

    name: str
    """The layer's own name for it (q, k, v, o; MLA: q_a, q_b, kv_a, kv_b; gate, up, down;
    router)."""
    target: str
    """The LoRA target it belongs to (q, k, v, o, gate, up, down; the router is none)."""
    d_in: int
    d_out: int
    copies: int
    """Copies in the layer: 1, or the routed or shared experts' number."""
    tp_split: TensorSplit
    routed: bool
    """A routed expert: expert parallelism splits the copies over ep ranks; each token passes
    ``experts_per_token`` of them."""
    gemm: str
    """The GEMM it runs in (Megatron-LM fuses q, k, v into one, and gate with up); ""
    for the router, which the step time does not price as a GEMM."""

    @property
    def elements(self) -> int:
        """d_in · d_out · copies."""
        return self.d_in * self.d_out * self.copies


@kept()
def attention_matrices_of_form(
    arch: Shapes, kv_heads: int, d: int, keys: bool, values: bool
) -> tuple[LayerMatrix, ...]:
    """:meth:`.Architecture.attention_matrices` of a layer of this form
    (:meth:`.Architecture.attention_form`), once per form."""
    h = arch.hidden_size
    if arch.mla is not None:
        m = arch.mla
        qk = arch.heads * (m.qk_nope_head_dim + m.qk_rope_head_dim)
        mats: list[LayerMatrix] = []
        if m.q_lora_rank is None:
            mats.append(LayerMatrix("q", "q", h, qk, 1, "columns", False, "q"))
        else:
            mats.append(LayerMatrix("q_a", "q", h, m.q_lora_rank, 1, "none", False, "q_a"))
            mats.append(LayerMatrix("q_b", "q", m.q_lora_rank, qk, 1, "columns", False, "q_b"))
        kv_a = m.kv_lora_rank + m.qk_rope_head_dim
        kv_b = arch.heads * (m.qk_nope_head_dim + m.v_head_dim)
        mats.append(LayerMatrix("kv_a", "k", h, kv_a, 1, "none", False, "kv_a"))
        mats.append(LayerMatrix("kv_b", "v", m.kv_lora_rank, kv_b, 1, "columns", False, "kv_b"))
        mats.append(LayerMatrix("o", "o", arch.heads * m.v_head_dim, h, 1, "rows", False, "o"))
        return tuple(mats)
    q = arch.heads * d
    gate = 2 if arch.attention_output_gate else 1
    out = [LayerMatrix("q", "q", h, gate * q, 1, "columns", False, "qkv")]
    if keys:
        out.append(LayerMatrix("k", "k", h, kv_heads * d, 1, "columns", False, "qkv"))
    if values:
        out.append(LayerMatrix("v", "v", h, kv_heads * d, 1, "columns", False, "qkv"))
    out.append(LayerMatrix("o", "o", q, h, 1, "rows", False, "o"))
    return tuple(out)


@kept()
def layer_counts(arch: Shapes) -> tuple[int, int, int, int]:
    """(MoE, attention, recurrent, windowed attention) layers, counted layer by layer once
    per (frozen) shapes: the properties ``moe_layers``, ``attention_layers``,
    ``recurrent_layers`` and ``windowed_attention_layers`` read them (an estimate asks for
    them dozens of times)."""
    layers = range(arch.layers)
    return (
        sum(1 for i in layers if arch.is_moe_layer(i)),
        sum(1 for i in layers if arch.is_attention_layer(i)),
        sum(1 for i in layers if arch.is_recurrent_layer(i)),
        sum(1 for i in layers if arch.is_attention_layer(i) and arch.is_windowed_layer(i)),
    )


def layers_differ(arch: Shapes) -> bool:
    """Whether layers of one kind (dense or MoE) differ in their matrices: a recurrent or
    hybrid model (Jamba, Nemotron-H, Qwen3.5), or Gemma 4's global and KV-sharing layers."""
    return (
        arch.recurrent is not None
        or arch.kv_shared_layers > 0
        or arch.global_head_dim is not None
        or arch.global_kv_heads is not None
        or arch.global_values_are_keys
    )
