"""GGUF header reading (core/files/gguf.py) against the ``gguf`` package as ground truth.

The ``gguf`` package (llama.cpp's gguf-py) writes the test files and reads them back; our
reader must agree on every tensor's element count and byte size. Without the package, the
hand-written file tests still run.
"""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest

from llm_planner.cli import main
from llm_planner.core.files.gguf import (
    GGML_TYPES,
    HEADER_MAX_BYTES,
    GGUFError,
    read_gguf_header,
    weights_format_of,
)
from llm_planner.core.files.hf_import import HFImportError, architecture_from_path
from llm_planner.core.primitives.architecture import count_parameters

H, F, V, LAYERS, HEADS, KV = 256, 512, 320, 2, 4, 2
HEAD_DIM = H // HEADS


def _tensors() -> dict[str, tuple[tuple[int, int], str]]:
    """Tiny Llama in llama.cpp's names, numpy shapes (rows, cols) and ggml types."""
    out: dict[str, tuple[tuple[int, int], str]] = {
        "token_embd.weight": ((V, H), "Q8_0"),
        "output_norm.weight": ((1, H), "F32"),
        "output.weight": ((V, H), "Q6_K"),
    }
    for i in range(LAYERS):
        p = f"blk.{i}."
        out |= {
            p + "attn_norm.weight": ((1, H), "F32"),
            p + "attn_q.weight": ((H, H), "Q4_K"),
            p + "attn_k.weight": ((KV * HEAD_DIM, H), "Q4_K"),
            p + "attn_v.weight": ((KV * HEAD_DIM, H), "Q6_K"),
            p + "attn_output.weight": ((H, H), "Q4_K"),
            p + "ffn_norm.weight": ((1, H), "F32"),
            p + "ffn_gate.weight": ((F, H), "Q4_K"),
            p + "ffn_up.weight": ((F, H), "Q4_K"),
            p + "ffn_down.weight": ((H, F), "Q4_0"),
        }
    return out


def _write_tiny_llama(path: Path) -> None:
    gguf = pytest.importorskip("gguf")
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_name("tiny-llama")
    writer.add_block_count(LAYERS)
    writer.add_embedding_length(H)
    writer.add_feed_forward_length(F)
    writer.add_head_count(HEADS)
    writer.add_head_count_kv(KV)
    writer.add_context_length(256)
    writer.add_file_type(gguf.LlamaFileType.MOSTLY_Q4_K_M)
    writer.add_token_list([f"t{i}" for i in range(V)])
    for name, ((rows, cols), kind) in _tensors().items():
        qtype = gguf.GGMLQuantizationType[kind]
        if kind == "F32":
            writer.add_tensor(name, np.zeros(cols if rows == 1 else (rows, cols), np.float32))
            continue
        block, size = gguf.GGML_QUANT_SIZES[qtype]
        raw = np.zeros((rows, cols // block * size), np.uint8)
        writer.add_tensor(name, raw, raw_dtype=qtype)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


@pytest.fixture
def tiny(tmp_path: Path) -> Path:
    path = tmp_path / "tiny.gguf"
    _write_tiny_llama(path)
    return path


def test_ggml_type_table_matches_the_gguf_package():
    gguf = pytest.importorskip("gguf")
    for qtype, (block, size) in gguf.GGML_QUANT_SIZES.items():
        assert GGML_TYPES[int(qtype)] == (qtype.name, block, size)


def test_count_and_bytes_equal_the_gguf_packages_reading(tiny):
    gguf = pytest.importorskip("gguf")
    reference = gguf.GGUFReader(str(tiny))
    header = read_gguf_header(tiny)
    assert header.architecture == "llama"
    assert header.parameter_count == sum(int(t.n_elements) for t in reference.tensors)
    assert header.weight_bytes == sum(int(t.n_bytes) for t in reference.tensors)
    ours = {t.name: (t.type_name, t.elements, t.bytes) for t in header.tensors}
    theirs = {
        t.name: (t.tensor_type.name, int(t.n_elements), int(t.n_bytes)) for t in reference.tensors
    }
    assert ours == theirs
    assert header.data_offset == reference.data_offset


def test_hand_count_and_quantization_types(tiny):
    header = read_gguf_header(tiny)
    # hand count: 2 layers of q 256², k and v 128·256, o 256², 3·512·256 FFN, 2 norms; two
    # 320×256 tables and the final norm
    layer = 2 * H * H + 2 * KV * HEAD_DIM * H + 3 * F * H + 2 * H
    assert header.parameter_count == LAYERS * layer + 2 * V * H + H == 1_344_768
    # Q4_K: 144 bytes per 256 weights; Q6_K 210; Q4_0 18 per 32; Q8_0 34 per 32; F32 4
    q4k = LAYERS * (2 * H * H + 2 * F * H + KV * HEAD_DIM * H) // 256 * 144
    q6k = (LAYERS * KV * HEAD_DIM * H + V * H) // 256 * 210
    q40 = LAYERS * H * F // 32 * 18
    q80 = V * H // 32 * 34
    f32 = (2 * LAYERS + 1) * H * 4
    assert header.weight_bytes == q4k + q6k + q40 + q80 + f32
    assert header.bytes_by_type()["Q4_K"] == q4k
    assert weights_format_of(header) == "Q4_K_M"


def test_architecture_from_the_file_matches_its_count(tiny):
    imported = architecture_from_path(tiny)
    arch = imported.architecture
    assert (arch.layers, arch.hidden_size, arch.heads, arch.kv_heads) == (LAYERS, H, HEADS, KV)
    assert (arch.ffn_size, arch.vocab_size, arch.ffn_kind, arch.tied_embeddings) == (
        F,
        V,
        "swiglu",
        False,
    )
    assert imported.file_params == count_parameters(arch).total == 1_344_768
    assert imported.warnings == ()
    assert imported.weights_format == "q4_k_m"
    assert imported.weights_bytes == read_gguf_header(tiny).weight_bytes


def test_cli_model_reads_a_gguf_file(tiny, capsys):
    assert main(["model", str(tiny)]) == 0
    out = capsys.readouterr().out
    assert "1,344,768" in out
    assert "q4_k_m" in out


def test_report_uses_the_files_own_weight_bytes(tiny, capsys):
    import json

    assert main(["report", "--model", str(tiny), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    inference = data["inference"]
    assert inference["weights_format"] == "q4_k_m"
    assert inference["weights_bytes"] == read_gguf_header(tiny).weight_bytes


# ------------------------------------------------------------------ corrupt files


def _string(text: str) -> bytes:
    raw = text.encode()
    return struct.pack("<Q", len(raw)) + raw


def _hand_file(tensor_bytes: int = 16, data: bytes | None = None, version: int = 3) -> bytes:
    """A hand-written GGUF: one metadata string, one F32 tensor of 4 elements."""
    head = b"GGUF" + struct.pack("<IQQ", version, 1, 1)
    head += _string("general.architecture") + struct.pack("<I", 8) + _string("llama")
    head += _string("w") + struct.pack("<I", 1) + struct.pack("<Q", 4) + struct.pack("<IQ", 0, 0)
    head += bytes(-len(head) % 32)
    return head + (bytes(tensor_bytes) if data is None else data)


def test_hand_written_file_reads_without_the_package(tmp_path):
    path = tmp_path / "hand.gguf"
    path.write_bytes(_hand_file())
    header = read_gguf_header(path)
    assert (header.parameter_count, header.weight_bytes, header.version) == (4, 16, 3)


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        (b"GGUX" + bytes(40), "not a GGUF file"),
        (b"GG", "too short"),
        (_hand_file(version=1), "version 1 is not supported"),
        (_hand_file(tensor_bytes=8), "truncated: tensor 'w' ends at byte"),
        (_hand_file()[:40], "truncated"),
        (b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + struct.pack("<Q", 2**62), "truncated"),
        (b"GGUF" + struct.pack("<IQQ", 3, 2**40, 0) + bytes(8), "over the limit"),
    ],
)
def test_corrupt_or_truncated_files_get_one_line(tmp_path, content, needle):
    path = tmp_path / "bad.gguf"
    path.write_bytes(content)
    with pytest.raises(GGUFError) as caught:
        read_gguf_header(path)
    message = str(caught.value)
    assert needle in message
    assert message.startswith(str(path))
    assert "\n" not in message


def test_truncated_real_file_and_the_cli_message(tiny, tmp_path, capsys):
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(tiny.read_bytes()[: tiny.stat().st_size // 2])
    with pytest.raises(HFImportError, match="truncated"):
        architecture_from_path(cut)
    assert main(["model", str(cut)]) == 2
    err = capsys.readouterr().err
    assert "truncated" in err
    assert err.count("\n") == 1


def test_huge_array_count_is_refused_before_reading(tmp_path):
    head = b"GGUF" + struct.pack("<IQQ", 3, 0, 1)
    head += _string("tokenizer.ggml.tokens") + struct.pack("<IIQ", 9, 8, 10**12)
    path = tmp_path / "big.gguf"
    path.write_bytes(head + bytes(64))
    with pytest.raises(GGUFError, match="over the limit"):
        read_gguf_header(path)
    assert HEADER_MAX_BYTES == 512 * 2**20
