"""Render resources/llm-planner.svg to the PNG sizes in resources/icons/ (and, with
--all, the Windows .ico and macOS .icns that packaging needs, via Pillow).

Usage: python scripts/gen_icons.py [--all]   (needs PySide6; --all also needs Pillow)
The PNGs are committed (a few kB each); .ico/.icns are build outputs, not committed.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtCore import Qt
from PySide6.QtGui import QGuiApplication, QImage, QPainter
from PySide6.QtSvg import QSvgRenderer

ROOT = Path(__file__).resolve().parent.parent
SVG = ROOT / "resources" / "llm-planner.svg"
OUT = ROOT / "resources" / "icons"
SIZES = (16, 24, 32, 48, 64, 128, 256)


def render(size: int) -> QImage:
    image = QImage(size, size, QImage.Format.Format_ARGB32)
    image.fill(Qt.GlobalColor.transparent)
    painter = QPainter(image)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    QSvgRenderer(str(SVG)).render(painter)
    painter.end()
    return image


def main() -> int:
    _app = QGuiApplication.instance() or QGuiApplication(sys.argv[:1])
    OUT.mkdir(parents=True, exist_ok=True)
    for size in SIZES:
        path = OUT / f"llm-planner-{size}.png"
        if not render(size).save(str(path), "PNG"):
            print(f"could not write {path}", file=sys.stderr)
            return 1
    if "--all" in sys.argv:
        from PIL import Image

        big = Image.open(OUT / "llm-planner-256.png")
        build = ROOT / "build" / "icons"
        build.mkdir(parents=True, exist_ok=True)
        big.save(build / "llm-planner.ico", sizes=[(s, s) for s in (16, 24, 32, 48, 64, 128, 256)])
        big.save(build / "llm-planner.icns")
        print(f"wrote {build}/llm-planner.ico and .icns")
    print(f"wrote {len(SIZES)} PNGs to {OUT}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
