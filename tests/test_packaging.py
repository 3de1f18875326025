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

import pytest

ROOT = Path(__file__).resolve().parent.parent
LINUX = ROOT / "packaging" / "linux"
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


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="only Linux is built here")
def test_frozen_bundle_builds_and_passes_its_smoke_test() -> None:
    """packaging/build.sh: build the one-folder bundle, run it offscreen with --smoke-test."""
    if os.environ.get("LLM_PLANNER_SKIP_BUNDLE") == "1":
        pytest.skip("LLM_PLANNER_SKIP_BUNDLE=1")
    result = subprocess.run(
        ["bash", str(ROOT / "packaging" / "build.sh")],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
        cwd=ROOT,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "frozen smoke test passed" in result.stdout
