"""Read a GGUF file's header (metadata and tensor infos), never its tensor data.

GGUF is the single-file model format of llama.cpp (and so of Ollama and LM Studio). Layout
(ggml ``docs/gguf.md``, versions 2 and 3; all integers little-endian): the magic ``GGUF``,
a uint32 version, a uint64 tensor count and a uint64 metadata count; then each metadata
entry (a string key, a uint32 value type, the value: scalars, strings as uint64 length +
UTF-8 bytes, arrays as uint32 element type + uint64 count + elements); then each tensor's
info (name, uint32 number of dimensions, uint64 dimensions fastest-first, uint32 ggml type,
uint64 offset into the data section); then padding to ``general.alignment`` (default 32)
and the data section.

Our own small reader: the ``gguf`` package would pull numpy-heavy code and ``requests``
into a frozen app. The file is untrusted: every length is checked against the bytes left
before anything is allocated, the header may not exceed :data:`HEADER_MAX_BYTES`, counts are
limited, every tensor must lie inside the file, and parsing is one pass over the header
(linear in its size). Errors are one-line :class:`GGUFError` messages naming the file and
the byte offset.
"""

from __future__ import annotations

import math
import mmap
import os
import re
import struct
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from llm_planner.core.primitives.reading import FileReadError, open_regular

GGUF_MAGIC = b"GGUF"
SUPPORTED_VERSIONS = (2, 3)
DEFAULT_ALIGNMENT = 32
HEADER_MAX_BYTES = 512 * 2**20
"""The metadata and tensor infos; a 256k-token vocabulary is ~10 MiB. Anything over 512 MiB
is not a model header."""
MAX_TENSORS = 1_000_000
MAX_METADATA = 100_000
MAX_ARRAY_ELEMENTS = 50_000_000
MAX_STRING_ARRAY_ELEMENTS = 2_000_000
"""Strings in one array (skipped one by one): the largest vocabularies hold about 260,000
tokens and their merges about 500,000."""
MAX_DIMS = 8

GGML_TYPES: dict[int, tuple[str, int, int]] = {
    # ggml type id → (name, elements per block, bytes per block): ggml/src/ggml.c
    # ``type_traits`` (blck_size, type_size); the test compares every entry with the
    # ``gguf`` package's GGML_QUANT_SIZES.
    0: ("F32", 1, 4),
    1: ("F16", 1, 2),
    2: ("Q4_0", 32, 18),
    3: ("Q4_1", 32, 20),
    6: ("Q5_0", 32, 22),
    7: ("Q5_1", 32, 24),
    8: ("Q8_0", 32, 34),
    9: ("Q8_1", 32, 40),
    10: ("Q2_K", 256, 84),
    11: ("Q3_K", 256, 110),
    12: ("Q4_K", 256, 144),
    13: ("Q5_K", 256, 176),
    14: ("Q6_K", 256, 210),
    15: ("Q8_K", 256, 292),
    16: ("IQ2_XXS", 256, 66),
    17: ("IQ2_XS", 256, 74),
    18: ("IQ3_XXS", 256, 98),
    19: ("IQ1_S", 256, 50),
    20: ("IQ4_NL", 32, 18),
    21: ("IQ3_S", 256, 110),
    22: ("IQ2_S", 256, 82),
    23: ("IQ4_XS", 256, 136),
    24: ("I8", 1, 1),
    25: ("I16", 1, 2),
    26: ("I32", 1, 4),
    27: ("I64", 1, 8),
    28: ("F64", 1, 8),
    29: ("IQ1_M", 256, 56),
    30: ("BF16", 1, 2),
    34: ("TQ1_0", 256, 54),
    35: ("TQ2_0", 256, 66),
    39: ("MXFP4", 32, 17),
    40: ("NVFP4", 64, 36),
    41: ("Q1_0", 128, 18),
}

_SCALARS: dict[int, tuple[str, int]] = {
    0: ("<B", 1),
    1: ("<b", 1),
    2: ("<H", 2),
    3: ("<h", 2),
    4: ("<I", 4),
    5: ("<i", 4),
    6: ("<f", 4),
    7: ("<?", 1),
    10: ("<Q", 8),
    11: ("<q", 8),
    12: ("<d", 8),
}
_STRING, _ARRAY = 8, 9


class GGUFError(ValueError):
    """A file that is not a readable GGUF model; one line naming the file and the place."""


class GGUFTensor(BaseModel):
    """One tensor's info: name, shape (ggml order, fastest dimension first), ggml type."""

    model_config = ConfigDict(frozen=True)

    name: str
    shape: tuple[int, ...]
    type_name: str
    elements: int
    bytes: int
    offset: int


class GGUFArray(BaseModel):
    """An array value kept by length only (the tokenizer's vocabulary, merges, scores)."""

    model_config = ConfigDict(frozen=True)

    element_type: int
    length: int


class GGUFHeader(BaseModel):
    """What a GGUF header says: version, metadata (arrays by length), tensor infos."""

    model_config = ConfigDict(frozen=True)

    path: Path
    version: int
    metadata: dict[str, Any]
    tensors: tuple[GGUFTensor, ...]
    data_offset: int
    file_bytes: int
    shards: int = 1
    """Files the model was read from (a split model: all of them, tensors merged)."""

    @property
    def architecture(self) -> str:
        value = self.metadata.get("general.architecture")
        return value if isinstance(value, str) else ""

    @property
    def parameter_count(self) -> int:
        """Σ elements of every tensor: the exact parameter count stored in the file."""
        return sum(t.elements for t in self.tensors)

    @property
    def weight_bytes(self) -> int:
        """Σ bytes of every tensor (blocks × block size): the file's own weight memory."""
        return sum(t.bytes for t in self.tensors)

    def bytes_by_type(self) -> dict[str, int]:
        """Tensor bytes per ggml type (Q4_K, Q6_K, F32, ...), largest first."""
        out: dict[str, int] = {}
        for t in self.tensors:
            out[t.type_name] = out.get(t.type_name, 0) + t.bytes
        return dict(sorted(out.items(), key=lambda kv: -kv[1]))

    def tensor(self, name: str) -> GGUFTensor | None:
        return next((t for t in self.tensors if t.name == name), None)


class _Reader:
    """Bounds-checked little-endian reads from a memory map."""

    def __init__(self, data: mmap.mmap | bytes, path: Path, limit: int) -> None:
        self.data = data
        self.path = path
        self.pos = 0
        self.limit = limit

    def fail(self, message: str) -> GGUFError:
        return GGUFError(f"{self.path}: {message} (at byte {self.pos:,})")

    def take(self, n: int, what: str) -> int:
        if n < 0 or self.pos + n > self.limit:
            if self.limit < len(self.data) and self.pos + n <= len(self.data):
                raise self.fail(f"header is over the {HEADER_MAX_BYTES:,}-byte limit")
            raise self.fail(f"truncated: {what} runs past the end of the file")
        start = self.pos
        self.pos += n
        return start

    def scalar(self, fmt: str, size: int, what: str) -> Any:
        start = self.take(size, what)
        return struct.unpack_from(fmt, self.data, start)[0]

    def u32(self, what: str) -> int:
        return int(self.scalar("<I", 4, what))

    def u64(self, what: str) -> int:
        return int(self.scalar("<Q", 8, what))

    def string(self, what: str) -> str:
        length = self.u64(f"{what} length")
        start = self.take(length, what)
        try:
            return bytes(self.data[start : start + length]).decode("utf-8")
        except UnicodeDecodeError:
            raise self.fail(f"{what} is not UTF-8") from None

    def skip_string(self, what: str) -> None:
        self.take(self.u64(f"{what} length"), what)

    def value(self, kind: int, key: str) -> Any:
        if kind in _SCALARS:
            fmt, size = _SCALARS[kind]
            return self.scalar(fmt, size, f"value of {key!r}")
        if kind == _STRING:
            return self.string(f"value of {key!r}")
        if kind == _ARRAY:
            element = self.u32(f"array type of {key!r}")
            count = self.u64(f"array length of {key!r}")
            if count > MAX_ARRAY_ELEMENTS:
                raise self.fail(f"array {key!r} has {count:,} elements, over the limit")
            if element in _SCALARS:
                self.take(count * _SCALARS[element][1], f"array {key!r}")
            elif element == _STRING:
                # each string is at least its 8-byte length: a count the bytes left cannot
                # hold is refused before the loop (50 million declared in a sparse file
                # took 16 s); the loop itself is capped at MAX_STRING_ARRAY_ELEMENTS
                if count > MAX_STRING_ARRAY_ELEMENTS:
                    raise self.fail(
                        f"array {key!r} has {count:,} strings, over the "
                        f"{MAX_STRING_ARRAY_ELEMENTS:,} limit"
                    )
                if count * 8 > self.limit - self.pos:
                    raise self.fail(f"truncated: array {key!r} runs past the end of the file")
                for _ in range(count):
                    self.skip_string(f"string in {key!r}")
            else:
                raise self.fail(f"array {key!r} has unsupported element type {element}")
            return GGUFArray(element_type=element, length=count)
        raise self.fail(f"metadata {key!r} has unknown value type {kind}")


def read_gguf_header(path: Path) -> GGUFHeader:
    """The header of the GGUF file at ``path`` (see the module docstring for the layout and
    the checks). Raises :class:`GGUFError` with a one-line message."""
    path = Path(path)
    try:
        file = open_regular(path, 2**63 - 1, "a GGUF file")
    except FileReadError as error:
        raise GGUFError(str(error)) from None
    try:
        with file:
            size = os.fstat(file.fileno()).st_size
            if size < 24:
                raise GGUFError(f"{path}: too short for a GGUF file ({size} bytes)")
            with mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ) as data:
                return _parse(data, path, size)
    except OSError as error:
        raise GGUFError(f"{path}: cannot read ({error.strerror or error})") from None


_SPLIT_NAME = re.compile(r"^(?P<prefix>.+)-(?P<no>\d{5})-of-(?P<count>\d{5})\.gguf$")
"""llama.cpp's shard names: ``llama_split_path`` writes ``%s-%05d-of-%05d.gguf``
(``src/llama.cpp``; ``gguf-split --split`` and the Hub's large GGUF models use it)."""


def split_model_first_shard(paths: list[Path]) -> Path | None:
    """The first shard when ``paths`` are exactly the shards of one split model (one
    prefix, ``-00001-of-0000n`` .. ``-0000n-of-0000n``), else None."""
    matches = [_SPLIT_NAME.match(p.name) for p in paths]
    if not paths or any(m is None for m in matches):
        return None
    keys = {(m["prefix"], m["count"]) for m in matches if m is not None}
    numbers = sorted(int(m["no"]) for m in matches if m is not None)
    if len(keys) != 1 or numbers != list(range(1, int(next(iter(keys))[1]) + 1)):
        return None
    return min(paths, key=lambda p: p.name)


def read_gguf_model(path: Path) -> GGUFHeader:
    """The whole model a GGUF file belongs to: the file itself, or, for a split model
    (``split.count`` > 1 in its metadata, the shards named ``<prefix>-0000k-of-0000n.gguf``),
    every shard read and merged: the first shard's metadata, all shards' tensors (names
    unique across them, ``split.tensors.count`` checked when given), the files' bytes
    summed. Any shard named here may be given. A missing or mismatched shard is a
    :class:`GGUFError` naming it, never a silently partial model."""
    path = Path(path)
    header = read_gguf_header(path)
    count = header.metadata.get("split.count")
    if not isinstance(count, int) or isinstance(count, bool) or count <= 1:
        return header
    match = _SPLIT_NAME.match(path.name)
    if match is None or int(match["count"]) != count:
        raise GGUFError(
            f"{path}: split.count {count} but the name is not <prefix>-NNNNN-of-{count:05d}.gguf"
        )
    paths = [
        path.with_name(f"{match['prefix']}-{i:05d}-of-{count:05d}.gguf")
        for i in range(1, count + 1)
    ]
    missing = [p.name for p in paths if not p.is_file()]
    if missing:
        raise GGUFError(f"{path}: split model of {count} files; missing {', '.join(missing[:4])}")
    headers = [header if p == path else read_gguf_header(p) for p in paths]
    for number, shard in enumerate(headers):
        if shard.metadata.get("split.no", number) != number:
            raise GGUFError(
                f"{shard.path}: split.no {shard.metadata.get('split.no')} in shard {number + 1}"
            )
    tensors = [t for shard in headers for t in shard.tensors]
    names = [t.name for t in tensors]
    if len(set(names)) != len(names):
        raise GGUFError(f"{path}: a tensor appears in two shards of the split model")
    declared = headers[0].metadata.get("split.tensors.count")
    if isinstance(declared, int) and declared != len(tensors):
        raise GGUFError(
            f"{path}: split.tensors.count {declared} but the {count} shards hold {len(tensors)}"
        )
    first = headers[0]
    return first.model_copy(
        update={
            "tensors": tuple(tensors),
            "file_bytes": sum(h.file_bytes for h in headers),
            "shards": count,
        }
    )


def _parse(data: mmap.mmap, path: Path, size: int) -> GGUFHeader:
    if data[:4] != GGUF_MAGIC:
        raise GGUFError(f"{path}: not a GGUF file (magic {bytes(data[:4])!r}, expected b'GGUF')")
    r = _Reader(data, path, min(size, HEADER_MAX_BYTES))
    r.pos = 4
    version = r.u32("version")
    if version not in SUPPORTED_VERSIONS:
        raise GGUFError(f"{path}: GGUF version {version} is not supported (2 or 3)")
    tensor_count = r.u64("tensor count")
    kv_count = r.u64("metadata count")
    if tensor_count > MAX_TENSORS or kv_count > MAX_METADATA:
        raise r.fail(f"{tensor_count:,} tensors / {kv_count:,} metadata entries, over the limit")
    metadata: dict[str, Any] = {}
    for _ in range(kv_count):
        key = r.string("metadata key")
        kind = r.u32(f"value type of {key!r}")
        metadata[key] = r.value(kind, key)
    infos: list[tuple[str, tuple[int, ...], int, int]] = []
    for _ in range(tensor_count):
        name = r.string("tensor name")
        dims = r.u32(f"dimensions of {name!r}")
        if dims > MAX_DIMS:
            raise r.fail(f"tensor {name!r} has {dims} dimensions")
        shape = tuple(r.u64(f"shape of {name!r}") for _ in range(dims))
        kind = r.u32(f"type of {name!r}")
        offset = r.u64(f"offset of {name!r}")
        infos.append((name, shape, kind, offset))
    alignment = metadata.get("general.alignment", DEFAULT_ALIGNMENT)
    if not isinstance(alignment, int) or alignment < 1 or alignment & (alignment - 1):
        raise GGUFError(f"{path}: general.alignment {alignment!r} is not a power of two")
    data_offset = -(-r.pos // alignment) * alignment
    tensors = []
    seen: set[str] = set()
    for name, shape, kind, offset in infos:
        tensors.append(_tensor(path, (name, shape, kind, offset), data_offset, size))
        if name in seen:
            raise GGUFError(f"{path}: tensor {name[:200]!r} appears twice")
        seen.add(name)
    return GGUFHeader(
        path=path,
        version=version,
        metadata=metadata,
        tensors=tuple(tensors),
        data_offset=data_offset,
        file_bytes=size,
    )


def _tensor(
    path: Path, info: tuple[str, tuple[int, ...], int, int], start: int, size: int
) -> GGUFTensor:
    """One tensor's info checked: known ggml type, whole blocks, inside the file."""
    name, shape, kind, offset = info
    if kind not in GGML_TYPES:
        raise GGUFError(f"{path}: tensor {name[:200]!r} has unknown ggml type {kind}")
    type_name, block, block_bytes = GGML_TYPES[kind]
    elements = math.prod(shape)
    if shape and shape[0] % block:
        raise GGUFError(
            f"{path}: tensor {name[:200]!r} of {type_name} has a first dimension {shape[0]} "
            f"not a multiple of its block of {block}"
        )
    nbytes = elements // block * block_bytes
    end = start + offset + nbytes
    if end > size:
        raise GGUFError(
            f"{path}: truncated: tensor {name[:200]!r} ends at byte {end:,}, past the end of "
            f"the file ({size:,} bytes)"
        )
    return GGUFTensor(
        name=name, shape=shape, type_name=type_name, elements=elements, bytes=nbytes, offset=offset
    )


# ------------------------------------------------------------------ architecture

SUPPORTED_ARCHITECTURES = (
    "llama", "mistral", "qwen2", "qwen3", "qwen2moe", "qwen3moe", "gemma", "gemma2", "gemma3",
    "phi3", "starcoder2", "olmo", "olmo2", "olmoe", "granite", "granitemoe", "internlm2",
    "deepseek", "command-r", "cohere2", "stablelm", "mixtral", "mamba",
    "deepseek2", "gpt-oss", "llama4",
)  # fmt: skip
"""``general.architecture`` values mapped from tensor names and shapes (llama.cpp
``gguf-py/gguf/constants.py`` MODEL_TENSORS names); others get a one-line error."""


def _meta_int(header: GGUFHeader, key: str, default: int | None = None) -> int:
    value = header.metadata.get(f"{header.architecture}.{key}", default)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        if default is not None and value is None:
            return default
        raise GGUFError(f"{header.path}: metadata {header.architecture}.{key} is {value!r}")
    return value


_NOT_LAYER_NORMS = ("attn_q_norm", "attn_k_norm", "attn_q_a_norm", "attn_kv_a_norm")
"""Norm tensors inside attention (q/k norms; MLA's latent norms, counted with the MLA
projections), not the layer's own hidden-size norms."""


def architecture_fields(header: GGUFHeader) -> dict[str, Any]:
    """Keyword arguments of an :class:`Architecture` for this file, read from the tensor
    names and shapes (ggml order: ``token_embd`` is [h, V], ``attn_q`` [h, a·d]) and the
    ``{arch}.*`` metadata (block_count, context_length, attention.head_count[_kv],
    attention.key_length, ssm.*). Tensors decide biases, gating, norms and tying, so the
    count matches the file wherever the layout is a standard one; the caller compares."""
    arch = header.architecture
    if arch not in SUPPORTED_ARCHITECTURES:
        raise GGUFError(
            f"{header.path}: general.architecture {arch!r} is not supported "
            f"(supported: {', '.join(SUPPORTED_ARCHITECTURES)})"
        )
    shapes = {t.name: t.shape for t in header.tensors}
    embed = shapes.get("token_embd.weight")
    if embed is None or len(embed) != 2:
        raise GGUFError(f"{header.path}: no 2-D token_embd.weight tensor")
    hidden, vocab = embed
    layers = _meta_int(header, "block_count")
    blk = {n[len("blk.0.") :]: s for n, s in shapes.items() if n.startswith("blk.0.")}
    norm = "layernorm" if "attn_norm.bias" in blk else "rmsnorm"
    layer_norms = [
        n for n in blk if n.endswith("norm.weight") and not n.startswith(_NOT_LAYER_NORMS)
    ]
    fields: dict[str, Any] = {
        "name": str(header.metadata.get("general.name") or header.path.stem)[:200],
        "layers": layers,
        "hidden_size": hidden,
        "vocab_size": vocab,
        "max_context": _meta_int(header, "context_length", 4096),
        "tied_embeddings": "output.weight" not in shapes,
        "head_bias": "output.bias" in shapes,
        "norm": norm,
        "norms_per_layer": len(layer_norms),
        "embedding_norm": "token_embd_norm.weight" in shapes,
        "positions": "learned" if "position_embd.weight" in shapes else "rotary",
    }
    if "position_embd.weight" in shapes:
        fields["max_context"] = shapes["position_embd.weight"][1]
    if arch == "mamba":
        return _mamba_fields(header, fields, blk)
    heads = _meta_int(header, "attention.head_count")
    kv_heads = _meta_int(header, "attention.head_count_kv", heads)
    head_dim = _meta_int(header, "attention.key_length", hidden // heads)
    gated = "ffn_gate.weight" in blk or "ffn_gate_exps.weight" in blk
    fields.update(
        heads=heads,
        kv_heads=kv_heads,
        head_dim=head_dim,
        ffn_kind=("geglu" if arch.startswith("gemma") else "swiglu") if gated else "gelu_mlp",
        attention_bias=_attention_bias(blk),
        mlp_bias="ffn_up.bias" in blk or "ffn_up_exps.bias" in blk,
        parallel_attention=len(layer_norms) == 1 and "ffn_norm.weight" not in blk,
        attention_sinks="attn_sinks.weight" in blk or "attn_sinks" in blk,
    )
    if "attn_q_norm.weight" in blk:
        fields["qk_norm"] = "head" if blk["attn_q_norm.weight"][0] == head_dim else "full"
    dense_ffn = next((shapes[n] for n in shapes if n.endswith(".ffn_up.weight")), None)
    fields["ffn_size"] = dense_ffn[1] if dense_ffn else _meta_int(header, "feed_forward_length")
    moe_layers = [i for i in range(layers) if f"blk.{i}.ffn_gate_inp.weight" in shapes]
    if moe_layers:
        fields["moe"] = _moe_fields(header, shapes, moe_layers, layers)
    if arch == "deepseek2":
        _mla_fields(header, shapes, fields)
    return fields


def _mla_fields(
    header: GGUFHeader, shapes: dict[str, tuple[int, ...]], fields: dict[str, Any]
) -> None:
    """DeepSeek-V2/V3 (``deepseek2``, also Kimi-K2's files): multi-head latent attention
    read from the tensors of a layer (llama.cpp ``MODEL_TENSORS[DEEPSEEK2]``):
    ``attn_q_a`` [h, q_lora] (absent: a direct ``attn_q``), ``attn_kv_a_norm`` [kv_lora],
    ``attn_kv_a_mqa`` [h, kv_lora + rope], and the latent-to-heads map either as one
    ``attn_kv_b`` [kv_lora, heads·(nope + v)] or split into ``attn_k_b`` (heads·nope·kv_lora
    elements) and ``attn_v_b`` (heads·v·kv_lora), as newer conversions write it."""
    heads = fields["heads"]
    q_a = shapes.get("blk.0.attn_q_a.weight")
    norm = shapes.get("blk.0.attn_kv_a_norm.weight")
    mqa = shapes.get("blk.0.attn_kv_a_mqa.weight")
    if norm is None or mqa is None or len(mqa) != 2:
        raise GGUFError(f"{header.path}: deepseek2 without attn_kv_a_norm / attn_kv_a_mqa")
    kv_lora = norm[0]
    rope = mqa[1] - kv_lora
    kv_b = shapes.get("blk.0.attn_kv_b.weight")
    k_b, v_b = shapes.get("blk.0.attn_k_b.weight"), shapes.get("blk.0.attn_v_b.weight")
    if kv_b is not None:
        v_dim = _meta_int(header, "attention.value_length")
        nope = kv_b[1] // heads - v_dim
    elif k_b is not None and v_b is not None:
        nope = math.prod(k_b) // (heads * kv_lora)
        v_dim = math.prod(v_b) // (heads * kv_lora)
    else:
        raise GGUFError(f"{header.path}: deepseek2 without attn_kv_b (or attn_k_b/attn_v_b)")
    fields.update(
        kv_heads=heads,
        head_dim=v_dim,
        attention_bias="none",
        mla={
            "q_lora_rank": q_a[1] if q_a is not None else None,
            "kv_lora_rank": kv_lora,
            "qk_nope_head_dim": nope,
            "qk_rope_head_dim": rope,
            "v_head_dim": v_dim,
        },
    )
    fields.pop("qk_norm", None)


def _attention_bias(blk: dict[str, tuple[int, ...]]) -> str:
    if "attn_output.bias" in blk:
        return "all"
    if "attn_q.bias" in blk or "attn_qkv.bias" in blk:
        return "qkv"
    return "none"


def _moe_fields(
    header: GGUFHeader, shapes: dict[str, tuple[int, ...]], moe_layers: list[int], layers: int
) -> dict[str, Any]:
    first = moe_layers[0]
    period = moe_layers[1] - first if len(moe_layers) > 1 else 1
    if moe_layers == list(range(first, layers)):
        lead, period, offset = first, 1, 0
    elif first < period and moe_layers == list(range(first, layers, period)):
        lead, offset = 0, first  # every period-th layer (Llama 4: 1, 3, 5, ...)
    else:
        raise GGUFError(
            f"{header.path}: MoE layers are neither all layers from {first} on nor every {period}th"
        )
    up = shapes.get(f"blk.{first}.ffn_up_exps.weight")
    if up is None or len(up) != 3:
        raise GGUFError(f"{header.path}: no 3-D blk.{first}.ffn_up_exps.weight tensor")
    expert_ffn, experts = up[1], up[2]
    shared = shapes.get(f"blk.{first}.ffn_up_shexp.weight")
    return {
        "num_experts": experts,
        "experts_per_token": _meta_int(header, "expert_used_count"),
        "expert_ffn_size": expert_ffn,
        "num_shared_experts": shared[1] // expert_ffn if shared else 0,
        "first_dense_layers": lead,
        "layer_period": period,
        "layer_offset": offset,
        "router_bias": f"blk.{first}.ffn_gate_inp.bias" in shapes
        or f"blk.{first}.exp_probs_b.bias" in shapes,
        "shared_expert_gate": f"blk.{first}.ffn_gate_inp_shexp.weight" in shapes,
    }


def _mamba_fields(
    header: GGUFHeader, fields: dict[str, Any], blk: dict[str, tuple[int, ...]]
) -> dict[str, Any]:
    inner = _meta_int(header, "ssm.inner_size")
    fields.update(
        heads=1,
        kv_heads=1,
        head_dim=fields["hidden_size"],
        ffn_size=inner,
        ffn_kind="gelu_mlp",
        positions="none",
        recurrent={
            "kind": "mamba",
            "inner_size": inner,
            "state_size": _meta_int(header, "ssm.state_size"),
            "conv_kernel": _meta_int(header, "ssm.conv_kernel"),
            "time_step_rank": _meta_int(header, "ssm.time_step_rank"),
            "conv_bias": "ssm_conv1d.bias" in blk,
            "proj_bias": "ssm_in.bias" in blk,
        },
    )
    return fields


def weights_format_of(header: GGUFHeader) -> str:
    """A name for the file's mix: ``general.file_type`` as llama.cpp names it when known
    (``Q4_K_M``), else the ggml type holding the most bytes."""
    file_type = header.metadata.get("general.file_type")
    # llama.h enum llama_ftype (LLAMA_FTYPE_MOSTLY_*), as tools/quantize/quantize.cpp lists
    # them: "19 or IQ2_XXS", "20 or IQ2_XS", "21 or Q2_K_S", "22 or IQ3_XS" ...
    names = {0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 7: "Q8_0", 8: "Q5_0", 9: "Q5_1",
             10: "Q2_K", 11: "Q3_K_S", 12: "Q3_K_M", 13: "Q3_K_L", 14: "Q4_K_S", 15: "Q4_K_M",
             16: "Q5_K_S", 17: "Q5_K_M", 18: "Q6_K", 19: "IQ2_XXS", 20: "IQ2_XS", 21: "Q2_K_S",
             22: "IQ3_XS", 23: "IQ3_XXS", 24: "IQ1_S", 25: "IQ4_NL", 26: "IQ3_S", 27: "IQ3_M",
             28: "IQ2_S", 29: "IQ2_M", 30: "IQ4_XS", 31: "IQ1_M", 32: "BF16", 36: "TQ1_0",
             37: "TQ2_0", 38: "MXFP4_MOE"}  # fmt: skip
    if isinstance(file_type, int) and file_type in names:
        return names[file_type]
    by_type = header.bytes_by_type()
    return next(iter(by_type), "unknown")
