"""Desktop integration files and the frozen bundle (packaging/)."""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
import sys
import xml.etree.ElementTree as ET
from fnmatch import fnmatch
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGING = ROOT / "packaging"
LINUX = PACKAGING / "linux"
BUNDLE = ROOT / "dist" / "llm-planner"
MAX_BUNDLE_BYTES = 150e6
sys.path.insert(0, str(PACKAGING))
import icu_data  # noqa: E402  (packaging/, not a package)
import prune  # noqa: E402

DESKTOP = LINUX / "io.github.llm_planner.LLMPlanner.desktop"
MIME = LINUX / "llm-planner-mime.xml"
ICONS = ROOT / "resources" / "icons"


def _desktop_entry() -> dict[str, str]:
    lines = DESKTOP.read_text(encoding="utf-8").splitlines()
    assert lines[0] == "[Desktop Entry]"
    return dict(line.split("=", 1) for line in lines[1:] if "=" in line)


def test_desktop_entry_validates() -> None:
    validator = shutil.which("desktop-file-validate")
    if validator is None:
        pytest.skip("desktop-file-validate not installed (Debian package desktop-file-utils)")
    result = subprocess.run([validator, str(DESKTOP)], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.strip() == "", result.stdout  # no warnings or hints either


def test_desktop_entry_opens_scenario_files() -> None:
    entry = _desktop_entry()
    assert entry["Exec"].endswith("%f")  # the file double-clicked is passed on
    assert entry["Icon"] == "llm-planner"
    mime_types = entry["MimeType"].rstrip(";").split(";")
    tree = ET.parse(MIME)
    ns = {"m": "http://www.freedesktop.org/standards/shared-mime-info"}
    mime = tree.getroot().find("m:mime-type", ns)
    assert mime is not None
    assert mime.get("type") in mime_types
    globs = [g.get("pattern", "") for g in mime.findall("m:glob", ns)]
    assert any(fnmatch("70b pretrain.llmplan.json", glob) for glob in globs)
    assert not any(fnmatch("package.json", glob) for glob in globs)


def test_icon_pngs_are_committed_at_every_size_and_small() -> None:
    for size in (16, 24, 32, 48, 64, 128, 256):
        png = ICONS / f"llm-planner-{size}.png"
        header = png.read_bytes()[:24]
        assert header[:8] == b"\x89PNG\r\n\x1a\n"
        width, height = struct.unpack(">II", header[16:24])
        assert (width, height) == (size, size)
    total = sum(p.stat().st_size for p in ICONS.glob("*.png"))
    assert total < 64_000, f"committed icons take {total} bytes"


def test_install_and_uninstall_scripts_round_trip(tmp_path: Path) -> None:
    exe = tmp_path / "bin" / "llm-planner-gui"
    exe.parent.mkdir()
    exe.write_text("#!/bin/sh\n")
    exe.chmod(0o755)
    env = {**os.environ, "XDG_DATA_HOME": str(tmp_path / "data"), "HOME": str(tmp_path)}
    subprocess.run(
        ["bash", str(LINUX / "install-desktop.sh"), str(exe)],
        env=env,
        check=True,
        capture_output=True,
    )
    installed = tmp_path / "data" / "applications" / DESKTOP.name
    assert f'Exec="{exe}" %f' in installed.read_text(encoding="utf-8")
    assert (tmp_path / "data" / "mime" / "packages" / "llm-planner.xml").exists()
    assert (tmp_path / "data" / "icons" / "hicolor" / "48x48" / "apps" / "llm-planner.png").exists()
    subprocess.run(
        ["bash", str(LINUX / "uninstall-desktop.sh")], env=env, check=True, capture_output=True
    )
    assert not installed.exists()
    assert not list((tmp_path / "data" / "icons").rglob("llm-planner.png"))


# ------------------------------------------------------------------ what the bundle leaves out


@pytest.mark.parametrize(
    ("dest", "kept"),
    [
        ("PySide6/Qt/plugins/platforms/libqxcb.so", True),  # X11
        ("PySide6/Qt/plugins/platforms/libqoffscreen.so", True),  # smoke test, CI
        ("PySide6/Qt/plugins/platforms/libqwayland.so", False),
        ("PySide6/Qt/plugins/platforms/libqeglfs.so", False),
        ("PySide6/Qt/plugins/platforms/libqvnc.so", False),
        ("PySide6/Qt/plugins/imageformats/libqsvg.so", True),  # the window icon
        ("PySide6/Qt/plugins/imageformats/libqjpeg.so", False),
        ("PySide6/Qt/plugins/iconengines/libqsvgicon.so", True),
        ("PySide6/Qt/plugins/platforminputcontexts/libcomposeplatforminputcontextplugin.so", True),
        ("PySide6/Qt/plugins/platformthemes/libqxdgdesktopportal.so", True),
        ("PySide6/Qt/plugins/platformthemes/libqgtk3.so", False),
        ("PySide6/Qt/plugins/xcbglintegrations/libqxcb-glx-integration.so", True),
        ("PySide6/Qt/plugins/wayland-shell-integration/libxdg-shell.so", False),
        ("PySide6/Qt/translations/qtbase_de.qm", False),
        ("PySide6/Qt/lib/libQt6Core.so.6", True),
        ("numpy/_core/_multiarray_umath.cpython-311-x86_64-linux-gnu.so", True),
        ("numpy/_core/_multiarray_tests.cpython-311-x86_64-linux-gnu.so", False),
        ("llm_planner/resources/models.json", True),
    ],
)
def test_prune_patterns_keep_the_platform_paths_the_app_uses(dest: str, kept: bool) -> None:
    assert (prune._dropped_by_pattern(dest) is None) is kept


def test_prune_drops_libraries_only_a_dropped_plugin_needed(monkeypatch: Any) -> None:
    """Extension → libA → libB stays; libgtk (needed only by the GTK theme) goes."""
    needed = {
        "/src/ext.cpython-311-x86_64-linux-gnu.so": ["libA.so.1"],
        "/src/libA.so.1": ["libB.so.2", "libc.so.6"],
        "/src/libB.so.2": [],
        "/src/libqgtk3.so": ["libgtk-3.so.0"],
        "/src/libgtk-3.so.0": ["libB.so.2"],
    }
    monkeypatch.setattr(prune, "_needed", lambda path: needed[path])
    monkeypatch.setattr(prune.shutil, "which", lambda tool: "/usr/bin/" + tool)
    binaries = [
        (
            "mod/ext.cpython-311-x86_64-linux-gnu.so",
            "/src/ext.cpython-311-x86_64-linux-gnu.so",
            "EXTENSION",
        ),
        ("libA.so.1", "/src/libA.so.1", "BINARY"),
        ("libB.so.2", "/src/libB.so.2", "BINARY"),
        ("PySide6/Qt/plugins/platformthemes/libqgtk3.so", "/src/libqgtk3.so", "BINARY"),
        ("libgtk-3.so.0", "/src/libgtk-3.so.0", "BINARY"),
        ("libgtk-link.so", "libgtk-3.so.0", "SYMLINK"),
    ]
    kept, datas = prune.prune(binaries, [("PySide6/Qt/translations/qt_fr.qm", "/x", "DATA")])
    assert [e[0] for e in kept] == [
        "mod/ext.cpython-311-x86_64-linux-gnu.so",
        "libA.so.1",
        "libB.so.2",
    ]
    assert datas == []


# ------------------------------------------------------------------ the reduced ICU data


@pytest.mark.parametrize(
    ("item", "kept"),
    [
        ("icudt73l/cnvalias.icu", True),  # converter names: UTF-8, UTF-16 by name
        ("icudt73l/root.res", True),
        ("icudt73l/res_index.res", True),
        ("icudt73l/en.res", True),
        ("icudt73l/en_GB.res", True),
        ("icudt73l/de.res", False),
        ("icudt73l/zh_Hant_TW.res", False),
        ("icudt73l/ibm-1252_P100-2000.cnv", False),
        ("icudt73l/zoneinfo64.res", True),
        ("icudt73l/coll/root.res", True),
        ("icudt73l/coll/ucadata.icu", True),
        ("icudt73l/coll/fr.res", False),
        ("icudt73l/zone/en.res", True),
        ("icudt73l/zone/ja.res", False),
        ("icudt73l/brkitr/cjdict.dict", False),
        ("icudt73l/translit/root.res", False),
        ("icudt73l/curr/en.res", False),
    ],
)
def test_icu_items_kept(item: str, kept: bool) -> None:
    assert icu_data.keep(item) is kept


def test_icu_package_rewrite_reads_back_aligned() -> None:
    """A package written by write_items: ToC names sorted, items 16-byte aligned, same bytes."""
    header = struct.pack("<HBB", 32, 0xDA, 0x27) + b"\x14\x00\x00\x00\x00\x00\x02\x00CmnD"
    header += b"\x01\x00\x00\x00" + b"\x00" * (32 - len(header) - 4)
    assert len(header) == 32
    items = [("icudt73l/b.res", b"B" * 20), ("icudt73l/a.icu", b"A" * 3), ("icudt73l/c", b"")]
    package = icu_data.write_items(header, items)
    back_header, back = icu_data.read_items(package)
    assert back_header == header
    assert [name for name, _ in back] == ["icudt73l/a.icu", "icudt73l/b.res", "icudt73l/c"]
    toc = 32
    count = struct.unpack_from("<I", package, toc)[0]
    offsets = [struct.unpack_from("<II", package, toc + 4 + 8 * i)[1] for i in range(count)]
    assert all((toc + offset) % 16 == 0 for offset in offsets)
    # each item's bytes, then zero padding to the next 16-byte boundary
    assert back[0][1] == b"A" * 3 + b"\x00" * 13
    assert back[1][1] == b"B" * 20 + b"\x00" * 12


# ------------------------------------------------------------------ the Debian package


def test_deb_control_declares_what_the_bundle_does_not_carry() -> None:
    fields = dict(
        line.split(": ", 1)
        for line in (PACKAGING / "deb" / "control.in").read_text(encoding="utf-8").splitlines()
        if ": " in line and not line.startswith(" ")
    )
    assert fields["Package"] == "llm-planner"
    assert fields["Architecture"] == "amd64"
    # GL/EGL and libxcb are never bundled (PyInstaller's exclude list); icccm/keysyms were
    # not on the build machine: the system provides them
    depends = {d.split(" ")[0] for d in fields["Depends"].split(", ")}
    assert {"libgl1", "libegl1", "libxcb1", "libxcb-icccm4", "libxcb-keysyms1"} <= depends


def _manifest() -> list[tuple[float, str]]:
    rows = []
    for line in (PACKAGING / "bundle-files.txt").read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            size, path = line.split(" ", 1)
            rows.append((float(size) * 1e6, path))
    return rows


def check_bundle_sizes(bundle: Path) -> list[str]:
    """What grew in ``bundle`` beyond packaging/bundle-files.txt (empty: nothing)."""
    manifest = _manifest()
    problems = []
    files = [p for p in bundle.rglob("*") if p.is_file() and not p.is_symlink()]
    for path in files:
        size = path.stat().st_size
        name = path.relative_to(bundle).as_posix()
        listed = [limit for limit, pattern in manifest if fnmatch(name, pattern)]
        if size >= 1e6 and not listed:
            problems.append(f"new file of {size / 1e6:.1f} MB: {name}")
        elif listed and size > 1.15 * listed[0] + 0.1e6:
            problems.append(f"{name}: {size / 1e6:.1f} MB, listed at {listed[0] / 1e6:.1f} MB")
    on_disk = sum(p.stat().st_blocks * 512 for p in files)
    if on_disk > MAX_BUNDLE_BYTES:
        problems.append(f"bundle: {on_disk / 1e6:.1f} MB on disk > {MAX_BUNDLE_BYTES / 1e6:.0f} MB")
    if problems:
        largest = sorted(files, key=lambda p: -p.stat().st_size)[:20]
        problems.append("largest files now:")
        problems += [
            f"  {p.stat().st_size / 1e6:6.1f} MB  {p.relative_to(bundle)}" for p in largest
        ]
    return problems


def test_bundle_size_check_sees_a_new_large_file(tmp_path: Path) -> None:
    bundle = tmp_path / "llm-planner"
    (bundle / "_internal").mkdir(parents=True)
    (bundle / "llm-planner").write_bytes(b"\x00" * 1000)
    (bundle / "_internal" / "libnew.so").write_bytes(b"\x00" * 1_200_000)
    problems = check_bundle_sizes(bundle)
    assert problems[0] == "new file of 1.2 MB: _internal/libnew.so"
    assert "largest files now:" in problems


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="only Linux is built here")
def test_frozen_bundle_builds_and_passes_its_smoke_test() -> None:
    """packaging/build.sh --deb: build the one-folder bundle, run it offscreen with
    --smoke-test, package it as a .deb and test that; the bundle stays in its size budget."""
    if os.environ.get("LLM_PLANNER_SKIP_BUNDLE") == "1":
        pytest.skip("LLM_PLANNER_SKIP_BUNDLE=1")
    result = subprocess.run(
        ["bash", str(ROOT / "packaging" / "build.sh"), "--deb"],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
        cwd=ROOT,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "frozen smoke test passed" in result.stdout
    assert "icu check: the reduced ICU data answers" in result.stdout
    # the .deb installed in a throwaway root, ran (--version, report --json, smoke test on
    # a scenario file) and uninstalled, keeping the user's scenario
    assert "deb test passed (throwaway root)" in result.stdout
    problems = check_bundle_sizes(BUNDLE)
    assert not problems, "\n".join(problems)
