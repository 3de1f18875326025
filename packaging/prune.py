"""Leave out of the Linux bundle what the app never loads (used by llm-planner.spec).

Two steps, each printed in the build log:

1. Files dropped by pattern (:data:`DROP`), each with its reason: Qt translations, the
   Qt platform plugins other than X11 (xcb) and offscreen, GTK's platform theme, image
   formats other than SVG and PNG (PNG is built into QtGui), test modules.
2. Shared libraries no longer reachable: starting from what Python or Qt loads by name
   (extension modules, Qt plugins, libpython), the ``DT_NEEDED`` entries are followed;
   a bundled library nobody needs any more (GTK's cairo/pango/gdk-pixbuf, Wayland's
   client libraries, EGLFS) is dropped with the plugin that needed it.

Wayland: the window runs on X11 (XWayland on a Wayland desktop). Qt tries the platforms
``wayland;xcb`` in order on a Wayland session and falls back to xcb when the Wayland
plugin is absent, so a Wayland desktop still opens the window; the Wayland path is not
bundled because nothing here can test it (no compositor in CI).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from fnmatch import fnmatch
from pathlib import PurePosixPath

QT = "PySide6/Qt"
KEEP_PLATFORMS = ("libqxcb.so", "libqoffscreen.so")
"""X11 for the desktop, offscreen for the smoke test and CI."""

DROP: tuple[tuple[str, str], ...] = (
    (f"{QT}/translations/*", "the window is English only (no QTranslator is installed)"),
    (f"{QT}/plugins/platforms/*", "only xcb and offscreen are used (see KEEP_PLATFORMS)"),
    (f"{QT}/plugins/egldeviceintegrations/*", "EGLFS (full-screen embedded) is not used"),
    (f"{QT}/plugins/wayland-*/*", "the Wayland platform plugin is not bundled"),
    (f"{QT}/plugins/generic/*", "evdev/tuio input is for EGLFS/linuxfb, not X11"),
    (f"{QT}/plugins/platformthemes/libqgtk3.so", "GTK theme: pulls GTK, cairo, pango (8 MB)"),
    (f"{QT}/plugins/imageformats/*", "the app reads SVG and PNG only"),
    ("numpy/_core/_multiarray_tests*", "numpy's own test helpers"),
    ("*/tests/*", "test files of packages"),
    ("*.pyi", "type stubs"),
    ("*/include/*", "C headers of packages"),
)
KEEP = (f"{QT}/plugins/platforms/{name}" for name in KEEP_PLATFORMS)
KEEP_PATTERNS = (*KEEP, f"{QT}/plugins/imageformats/libqsvg.so")

_ROOT = re.compile(r"(\.cpython-[^/]*\.so|\.abi3\.so|/plugins/.*\.so|libpython[^/]*\.so[.\d]*)$")
"""Loaded by name at run time (import, Qt's plugin loader, the bootloader): the roots."""


def _dropped_by_pattern(dest: str) -> str | None:
    if any(fnmatch(dest, keep) for keep in KEEP_PATTERNS):
        return None
    for pattern, reason in DROP:
        if fnmatch(dest, pattern):
            return reason
    return None


def _needed(path: str) -> list[str]:
    """The ``DT_NEEDED`` names of an ELF file (``readelf -d``), [] for other files."""
    out = subprocess.run(
        ["readelf", "-d", "--wide", path], capture_output=True, text=True, check=False
    ).stdout
    return re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", out)


def _unreached(binaries: list) -> list:  # type: ignore[type-arg]
    """Libraries no root reaches through ``DT_NEEDED`` (none when readelf is missing)."""
    if not shutil.which("readelf"):
        return []
    by_name: dict[str, list[tuple]] = {}  # type: ignore[type-arg]
    for entry in binaries:
        by_name.setdefault(PurePosixPath(entry[0]).name, []).append(entry)
    reached: set[str] = set()
    todo = [e for e in binaries if e[2] != "SYMLINK" and _ROOT.search(e[0])]
    while todo:
        entry = todo.pop()
        if entry[0] in reached:
            continue
        reached.add(entry[0])
        for name in _needed(entry[1]):
            todo.extend(e for e in by_name.get(name, ()) if e[0] not in reached)
    return [e for e in binaries if e[2] != "SYMLINK" and e[0] not in reached]


def prune(binaries: list, datas: list) -> tuple[list, list]:  # type: ignore[type-arg]
    """The TOC lists of ``Analysis`` without the files the app never loads."""
    dropped: dict[str, str] = {}
    kept: list[list] = [[], []]  # type: ignore[type-arg]
    for toc, out in ((binaries, kept[0]), (datas, kept[1])):
        for entry in toc:
            reason = _dropped_by_pattern(entry[0])
            if reason:
                dropped[entry[0]] = reason
            else:
                out.append(entry)
    kept_binaries, kept_datas = kept
    unreached = _unreached(kept_binaries)
    for entry in unreached:
        dropped[entry[0]] = "no longer needed by any bundled module or plugin"
    gone = {e[0] for e in unreached}
    gone_names = {PurePosixPath(d).name for d in dropped}
    kept_binaries = [  # and the top-level links to a dropped library
        e
        for e in kept_binaries
        if e[0] not in gone and not (e[2] == "SYMLINK" and PurePosixPath(e[1]).name in gone_names)
    ]
    for dest, reason in sorted(dropped.items()):
        print(f"prune: {dest}: {reason}")
    print(f"prune: {len(dropped)} files left out")
    return kept_binaries, kept_datas
