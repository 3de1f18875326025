"""Layer groups (core/primitives/architecture_groups.py) count each kind's layers as the
layers themselves say: for every preset, dense and MoE, the groups' counts sum to the
layers whose is_moe_layer is that kind (DeepSeek-V3's three dense leads, Jamba's MoE
period, the hybrids' patterns), and the groups' matrices are each counted layer's own."""

from __future__ import annotations

from llm_planner.core.primitives.architecture_groups import layer_groups, layers_differ
from llm_planner.core.primitives.kept import forget_all
from llm_planner.core.primitives.presets import get_preset, model_presets


def test_groups_count_the_layers_of_their_kind() -> None:
    moe_models = dense_leads = 0
    for name in sorted(model_presets()):
        arch = get_preset(name).architecture
        forget_all()
        for moe_layer in (False, True):
            kind = [i for i in range(arch.layers) if arch.is_moe_layer(i) == moe_layer]
            groups = layer_groups(arch, moe_layer)
            assert sum(n for _, n in groups) == len(kind), (name, moe_layer)
            if kind and not layers_differ(arch):
                assert groups == ((arch.layer_matrices(moe_layer), len(kind)),), name
        moe_models += arch.moe is not None
        dense_leads += arch.moe is not None and not arch.is_moe_layer(0)
    assert moe_models >= 5
    assert dense_leads >= 1  # a dense lead before the MoE layers (DeepSeek-V3)
