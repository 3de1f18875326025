"""Replace the bundle's 32 MB ICU data library by one holding what Qt can use here (~3 MB).

Qt 6 Core links ICU for five things (``nm -D --undefined-only libQt6Core.so.6``):
case mapping (``u_strToUpper``: its data is compiled into libicuuc, not the data file),
legacy code pages (``ucnv_*``: the app reads and writes UTF-8 only; UTF-8/16/32, ASCII and
Latin-1 are algorithmic and need only the alias table ``cnvalias.icu``), collation
(``ucol_*``: QCollator, natural sort in the file dialog), and time-zone ids and display
names (``ucal_*``). Break iteration, transliteration, number spelling, units, currencies,
language and region names are never called. The window is English only.

Kept: every item that is not locale data (``*.icu``, ``*.nrm``, ``cnvalias.icu``,
``zoneinfo64.res``, ``supplementalData.res``, ``likelySubtags.res``, pools and indexes)
and the ``root`` and ``en*`` locales of the main, collation and zone trees. Dropped:
``*.cnv`` code-page tables, ``brkitr/``, ``translit/``, ``rbnf/``, ``unit/``, ``curr/``,
``lang/``, ``region/`` and every other locale. A locale whose data is gone falls back to
``root`` (ICU's documented resource fallback), as ICU does for any unknown locale.

The data file's format (ICU ``udata.h``, "common data" / ``CmnD``): a header, then a
table of contents (uint32 count, then count × (name offset, data offset), relative to the
table, names sorted), the names, and the items, each 16-byte aligned. The replacement
library exports the same symbol (``icudt73_dat``) and soname, assembled with ``cc``.

Usage: ``python packaging/icu_data.py BUNDLE_DIR`` (after PyInstaller; build.sh runs it).
"""

from __future__ import annotations

import re
import shutil
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

LOCALE = re.compile(r"^[a-z]{2,3}(_[A-Za-z0-9]+)*\.res$")
DROP_TREES = ("brkitr", "translit", "rbnf", "unit", "curr", "lang", "region")
KEEP_TREES_LOCALES = ("", "coll", "zone")


def keep(name: str) -> bool:
    """Whether item ``icudt73l/[tree/]file`` is kept (see the module docstring)."""
    parts = name.split("/")[1:]
    tree, leaf = ("/".join(parts[:-1]), parts[-1])
    if tree in DROP_TREES or (tree == "" and leaf.endswith(".cnv")):
        return False
    if LOCALE.match(leaf) and leaf != "res_index.res":
        return tree in KEEP_TREES_LOCALES and (leaf == "en.res" or leaf.startswith("en_"))
    return True


def read_items(data: bytes) -> tuple[bytes, list[tuple[str, bytes]]]:
    """The header and the (name, item bytes) of an ICU common data package."""
    header_size = struct.unpack_from("<H", data, 0)[0]
    if data[2:4] != b"\xda\x27" or data[12:16] != b"CmnD":
        raise ValueError("not a little-endian ICU common data package")
    toc = header_size
    count = struct.unpack_from("<I", data, toc)[0]
    entries = [struct.unpack_from("<II", data, toc + 4 + 8 * i) for i in range(count)]
    items = []
    for i, (name_offset, data_offset) in enumerate(entries):
        start = toc + name_offset
        name = data[start : data.index(b"\0", start)].decode("ascii")
        end = toc + entries[i + 1][1] if i + 1 < count else len(data)
        items.append((name, data[toc + data_offset : end]))
    return data[:header_size], items


def write_items(header: bytes, items: list[tuple[str, bytes]]) -> bytes:
    """A common data package of ``items`` (sorted by name, each 16-byte aligned)."""
    items = sorted(items)
    names = b"".join(name.encode("ascii") + b"\0" for name, _ in items)
    table = 4 + 8 * len(items)
    first = table + len(names)
    first += -(len(header) + first) % 16
    offsets, body, name_at = [], bytearray(), table
    for name, blob in items:
        offsets.append((name_at, first + len(body)))
        name_at += len(name) + 1
        body += blob + b"\0" * (-len(blob) % 16)
    toc = struct.pack("<I", len(items)) + b"".join(struct.pack("<II", *o) for o in offsets)
    pad = b"\0" * (first - table - len(names))
    return header + toc + names + pad + bytes(body)


def extract(library: Path) -> tuple[str, bytes]:
    """The data symbol's name and bytes in an ICU data library (``nm`` and ``readelf``)."""
    nm = subprocess.run(
        ["nm", "-D", "-S", str(library)], capture_output=True, text=True, check=True
    ).stdout
    match = re.search(r"^([0-9a-f]+) ([0-9a-f]+) R (icudt\d+_dat)$", nm, re.M)
    if match is None:
        raise ValueError(f"{library}: no icudt*_dat symbol")
    address, size, symbol = int(match[1], 16), int(match[2], 16), match[3]
    sections = subprocess.run(
        ["readelf", "-S", "-W", str(library)], capture_output=True, text=True, check=True
    ).stdout
    for line in sections.splitlines():
        cols = line.replace("[ ", "[").split()
        if len(cols) > 5 and cols[1] == ".rodata":
            section_address, section_offset = int(cols[3], 16), int(cols[4], 16)
            break
    else:
        raise ValueError(f"{library}: no .rodata section")
    offset = address - section_address + section_offset
    return symbol, library.read_bytes()[offset : offset + size]


def build_library(symbol: str, soname: str, data: bytes, out: Path) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        dat = Path(tmp) / "data.dat"
        dat.write_bytes(data)
        source = Path(tmp) / "data.S"
        source.write_text(
            f".section .rodata\n.globl {symbol}\n.type {symbol}, @object\n.balign 16\n"
            f'{symbol}:\n.incbin "{dat}"\n.size {symbol}, .-{symbol}\n'
            '.section .note.GNU-stack,"",@progbits\n',
            encoding="ascii",
        )
        subprocess.run(
            ["cc", "-shared", "-nostdlib", f"-Wl,-soname,{soname}", "-o", str(out), str(source)],
            check=True,
        )


def reduce_bundle(bundle: Path) -> int:
    libraries = [p for p in bundle.rglob("libicudata.so.*") if p.is_file() and not p.is_symlink()]
    if not libraries:
        print("icu: no libicudata in the bundle")
        return 0
    if not all(shutil.which(tool) for tool in ("cc", "nm", "readelf")):
        print("icu: cc, nm or readelf missing: the full ICU data stays in the bundle")
        return 0
    for library in libraries:
        symbol, data = extract(library)
        header, items = read_items(data)
        kept = [(name, blob) for name, blob in items if keep(name)]
        reduced = write_items(header, kept)
        if read_items(reduced)[1] != sorted(kept):
            raise ValueError("the rewritten package does not read back")
        out = library.with_suffix(library.suffix + ".new")
        build_library(symbol, library.name, reduced, out)
        out.replace(library)
        print(
            f"icu: {library.name}: {len(kept)} of {len(items)} items kept, "
            f"{len(data) / 1e6:.1f} MB → {len(reduced) / 1e6:.1f} MB"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(reduce_bundle(Path(sys.argv[1])))
