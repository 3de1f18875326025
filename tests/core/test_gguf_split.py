"""Split GGUF models (every shard read) and file-type labels from the file's own type
(issue 28). Files are written by hand here (GGUF v3 layout, ggml docs/gguf.md), so the tests
run without the ``gguf`` package; the counts are written out below.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from gguf_writer import I32, STR, U16, U32, Meta, Tensors
from gguf_writer import gguf_bytes as _gguf

from llm_planner.core.files.gguf import GGUFError, read_gguf_header, read_gguf_model
from llm_planner.core.files.hf_import import architecture_from_path, inference_fields
from llm_planner.core.primitives.architecture import count_parameters
from llm_planner.core.quantities.quantization import get_weight_format

H, F, V, HEADS, KV, LAYERS = 64, 128, 96, 4, 2, 2
HEAD_DIM = H // HEADS


def _layer(i: int) -> Tensors:
    """One Llama block in llama.cpp's names, ggml shapes (fastest dimension first)."""
    p = f"blk.{i}."
    return [
        (p + "attn_norm.weight", (H,)),
        (p + "attn_q.weight", (H, H)),
        (p + "attn_k.weight", (H, KV * HEAD_DIM)),
        (p + "attn_v.weight", (H, KV * HEAD_DIM)),
        (p + "attn_output.weight", (H, H)),
        (p + "ffn_norm.weight", (H,)),
        (p + "ffn_gate.weight", (H, F)),
        (p + "ffn_up.weight", (H, F)),
        (p + "ffn_down.weight", (F, H)),
    ]


LLAMA_META: Meta = [
    ("general.architecture", STR, "llama"),
    ("general.name", STR, "tiny split llama"),
    ("llama.block_count", U32, LAYERS),
    ("llama.context_length", U32, 256),
    ("llama.embedding_length", U32, H),
    ("llama.feed_forward_length", U32, F),
    ("llama.attention.head_count", U32, HEADS),
    ("llama.attention.head_count_kv", U32, KV),
]

# Hand count: embeddings and output V·H each, output norm H; a layer: 2 norms of H, q and o
# H·H, k and v H·(kv·d) = 64·32, gate/up/down H·F.
EMBED = V * H
LAYER = 2 * H + 2 * H * H + 2 * H * KV * HEAD_DIM + 3 * H * F
TOTAL = 2 * EMBED + H + LAYERS * LAYER


def _write_split(folder: Path) -> list[Path]:
    """The tiny Llama in two shards, as gguf-split writes them: shard 1 carries the model's
    metadata and split.{no,count,tensors.count}; shard 2 its own split keys and blk.1."""
    first = [("token_embd.weight", (H, V)), ("output_norm.weight", (H,))]
    first += [("output.weight", (H, V)), *_layer(0)]
    second = _layer(1)
    split = [("split.count", U16, 2), ("split.tensors.count", I32, len(first) + len(second))]
    paths = [folder / "tiny-00001-of-00002.gguf", folder / "tiny-00002-of-00002.gguf"]
    paths[0].write_bytes(_gguf([*LLAMA_META, ("split.no", U16, 0), *split], first))
    paths[1].write_bytes(_gguf([("split.no", U16, 1), *split], second))
    return paths


def test_hand_count() -> None:
    assert (EMBED, LAYER, TOTAL) == (6144, 36992, 86336)


def test_a_split_model_is_read_from_all_its_shards(tmp_path: Path) -> None:
    first, second = _write_split(tmp_path)
    # one shard alone holds the embeddings, output and block 0: 6144·2 + 64 + 36992
    assert read_gguf_header(first).parameter_count == 2 * EMBED + H + LAYER
    for path in (first, second):  # any shard names the whole model
        model = read_gguf_model(path)
        assert model.shards == 2
        assert model.parameter_count == TOTAL
        assert model.weight_bytes == 4 * TOTAL  # F32
    imported = architecture_from_path(first)
    assert count_parameters(imported.architecture).total == TOTAL
    assert imported.file_params == TOTAL
    assert imported.weights_bytes == 4 * TOTAL
    assert not imported.warnings
    assert "in 2 files" in imported.notes[0]


def test_a_folder_of_shards_is_one_model(tmp_path: Path) -> None:
    _write_split(tmp_path)
    assert architecture_from_path(tmp_path).file_params == TOTAL


def test_a_missing_shard_is_an_error_not_a_partial_model(tmp_path: Path) -> None:
    first, second = _write_split(tmp_path)
    second.unlink()
    with pytest.raises(GGUFError, match=r"missing tiny-00002-of-00002\.gguf"):
        read_gguf_model(first)


def test_a_shard_count_that_disagrees_with_the_tensors_is_an_error(tmp_path: Path) -> None:
    first, _ = _write_split(tmp_path)
    (tmp_path / "tiny-00002-of-00002.gguf").write_bytes(
        _gguf([("split.no", U16, 1), ("split.count", U16, 2)], _layer(1)[:3])
    )
    with pytest.raises(GGUFError, match=r"split\.tensors\.count"):
        read_gguf_model(first)


@pytest.mark.parametrize(
    ("file_type", "label", "bits"),
    [
        # llama.h LLAMA_FTYPE_MOSTLY_*: 19 IQ2_XXS, 30 IQ4_XS, 24 IQ1_S, 27 IQ3_M
        (19, "iq2_xxs", 8 * 66 / 256),
        (30, "iq4_xs", 8 * 136 / 256),
        (24, "iq1_s", 8 * 50 / 256),
        (27, "iq3_m", 3.66),
    ],
)
def test_file_type_labels_come_from_the_file(
    tmp_path: Path, file_type: int, label: str, bits: float
) -> None:
    tensors = [("token_embd.weight", (H, V)), ("output_norm.weight", (H,)), *_layer(0)]
    meta = [*LLAMA_META[:2], ("llama.block_count", U32, 1), *LLAMA_META[3:]]
    path = tmp_path / "one.gguf"
    path.write_bytes(_gguf([*meta, ("general.file_type", U32, file_type)], tensors))
    imported = architecture_from_path(path)
    assert imported.weights_format == label
    fields = inference_fields(imported)
    assert fields["weights_format"] == label
    # the stored bytes are the file's own (F32 here), whatever the label
    assert fields["stored_weights"]["bytes"] == imported.weights_bytes
    assert get_weight_format(label).bits_per_weight == pytest.approx(bits)
