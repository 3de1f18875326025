"""From a target parameter count to a proposed dense architecture (core/shapes.py)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llm_planner.core.primitives.architecture import count_parameters
from llm_planner.core.primitives.shapes import llama_ffn_size, propose_architecture


def test_llama_reference_ffn_rule():
    # Meta's llama/model.py: int(2·4h/3) rounded up to a multiple of 256.
    # Published intermediate sizes: Llama-2-7B 11008, Llama-2-13B 13824, LLaMA-65B 22016.
    assert llama_ffn_size(4096) == 11008
    assert llama_ffn_size(5120) == 13824
    assert llama_ffn_size(8192) == 22016


def test_13b_gives_llama_2_13b():
    proposal = propose_architecture(13e9)
    arch = proposal.architecture
    # Llama-2-13B (Touvron et al. 2023, config of meta-llama/Llama-2-13b-hf): 40 layers,
    # hidden 5120, 40 heads of 128, FFN 13824, vocabulary 32000, untied.
    assert (arch.layers, arch.hidden_size, arch.heads, arch.head_dim) == (40, 5120, 40, 128)
    assert arch.ffn_size == 13824
    # hand count: 40·(4·5120² + 3·5120·13824 + 2·5120) + 2·32000·5120 + 5120
    assert proposal.params_exact == 40 * (4 * 5120**2 + 3 * 5120 * 13824 + 2 * 5120) + (
        2 * 32000 * 5120 + 5120
    )
    assert proposal.params_exact == 13_015_864_320


def test_6_7b_and_175b_give_gpt3_shapes():
    # GPT-3 (Brown et al. 2020, Table 2.1): 6.7B is 32 layers × 4096, 175B is 96 × 12288.
    small = propose_architecture(6.7e9).architecture
    assert (small.layers, small.hidden_size) == (32, 4096)
    large = propose_architecture(175e9).architecture
    assert (large.layers, large.hidden_size) == (96, 12288)
    # with the Llama-2 recipe, 32 × 4096 is exactly Llama-2-7B: 6,738,415,616 parameters
    assert propose_architecture(6.7e9).params_exact == 6_738_415_616


def test_rule_names_its_sources():
    rule = propose_architecture(13e9).rule
    assert "Brown et al. 2020, Table 2.1" in rule
    assert "Kaplan et al. 2020" in rule
    assert "32,000" in rule
    assert "40 layers x 5120 hidden" in rule


@pytest.mark.parametrize("bad", [0.0, -1e9, 1e6, 5e6, 1e15, float("inf"), float("nan")])
def test_out_of_range_is_a_clear_error(bad):
    with pytest.raises(ValueError, match="cannot propose a shape"):
        propose_architecture(bad)


@settings(max_examples=200, deadline=None)
@given(st.floats(min_value=1e8, max_value=2e12))
def test_proposal_is_close_and_well_formed(target):
    proposal = propose_architecture(target)
    arch = proposal.architecture
    exact = count_parameters(arch).total
    assert proposal.params_exact == exact
    assert abs(exact - target) / target <= 0.03
    assert arch.heads * arch.head_dim == arch.hidden_size
    assert arch.head_dim == 128
    assert arch.ffn_size % 256 == 0
    assert 8 * arch.hidden_size / 3 <= arch.ffn_size < 8 * arch.hidden_size / 3 + 256
    assert arch.ffn_kind == "swiglu"
    assert arch.norm == "rmsnorm"
    assert arch.positions == "rotary"
    assert not arch.tied_embeddings
    assert arch.vocab_size == 32000
    assert arch.kv_heads == arch.heads
    assert arch.moe is None


@settings(max_examples=150, deadline=None)
@given(st.floats(min_value=1e9, max_value=1e12), st.floats(min_value=1.25, max_value=20))
def test_more_parameters_never_fewer_layers_above_1b(target, ratio):
    assert (
        propose_architecture(target * ratio).architecture.layers
        >= propose_architecture(target).architecture.layers
    )


@settings(max_examples=150, deadline=None)
@given(st.floats(min_value=3e8, max_value=1e12), st.floats(min_value=2, max_value=50))
def test_doubling_never_gives_fewer_layers_above_300m(target, ratio):
    # below ~1B the 128-wide head granularity lets depth wobble by a layer between
    # nearby targets; doubling the size still never loses depth
    assert (
        propose_architecture(target * ratio).architecture.layers
        >= propose_architecture(target).architecture.layers
    )
