"""Render the window offscreen to PNG files: every tab, two sizes, light and dark.

``python -m llm_planner.gui.screenshots OUT_DIR`` (sets ``QT_QPA_PLATFORM=offscreen``).
Used to look at the window while developing and to refresh ``docs/screenshot.png``.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

SIZES = ((1366, 768), (1920, 1080))


def dark_palette() -> object:
    from PySide6.QtGui import QColor, QPalette

    palette = QPalette()
    role = QPalette.ColorRole
    for r, colour in (
        (role.Window, "#2b2b2b"),
        (role.WindowText, "#e6e6e6"),
        (role.Base, "#1e1e1e"),
        (role.AlternateBase, "#2a2a2a"),
        (role.ToolTipBase, "#333333"),
        (role.ToolTipText, "#e6e6e6"),
        (role.Text, "#e6e6e6"),
        (role.Button, "#353535"),
        (role.ButtonText, "#e6e6e6"),
        (role.Highlight, "#2f65ca"),
        (role.HighlightedText, "#ffffff"),
        (role.PlaceholderText, "#8a8a8a"),
        (role.Mid, "#444444"),
        (role.Dark, "#202020"),
        (role.Light, "#505050"),
    ):
        palette.setColor(r, QColor(colour))
    palette.setColor(QPalette.ColorGroup.Disabled, role.Text, QColor("#7a7a7a"))
    palette.setColor(QPalette.ColorGroup.Disabled, role.WindowText, QColor("#7a7a7a"))
    palette.setColor(QPalette.ColorGroup.Disabled, role.ButtonText, QColor("#7a7a7a"))
    return palette


def _sample_library() -> None:
    """A few saved scenarios, so the library panel looks as it does in use."""
    from llm_planner.core.composition.scenario import default_scenario
    from llm_planner.core.files.library import Library
    from llm_planner.core.primitives.presets import get_preset

    library = Library()
    if library.listing().entries:
        return
    base = default_scenario()
    library.save_as(base)
    seventy = get_preset("llama-3.1-70b")
    library.save_as(
        base.model_copy(
            update={
                "name": "Llama-3.1-70B on 2k GPUs",
                "model": base.model.model_copy(
                    update={"preset": seventy.id, "architecture": seventy.architecture}
                ),
                "num_gpus": 2048,
            }
        )
    )
    library.save_as(base.model_copy(update={"name": "8B fine-tune, 64 GPUs", "num_gpus": 64}))


def main(argv: list[str]) -> int:
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    # a throwaway home: renders never touch the user's library, settings or recovery copies
    os.environ.setdefault("LLM_PLANNER_HOME", tempfile.mkdtemp(prefix="llm-planner-shots-"))
    out = Path(argv[0] if argv else "shots")
    out.mkdir(parents=True, exist_ok=True)
    from PySide6.QtWidgets import QApplication

    from llm_planner.gui.app import make_application
    from llm_planner.gui.main_window import MainWindow

    app = make_application()
    assert isinstance(app, QApplication)
    _sample_library()
    app.setStyle("Fusion")
    light = app.palette()
    themes = [("light", light), ("dark", dark_palette())]
    only = os.environ.get("SHOT_THEMES")
    for theme, palette in themes:
        if only and theme not in only.split(","):
            continue
        app.setPalette(palette)  # type: ignore[arg-type]
        window = MainWindow(restore=False)
        window.show()
        for width, height in SIZES:
            window.resize(width, height)
            for index in range(window.tabs.count()):
                window.tabs.setCurrentIndex(index)
                app.processEvents()
                window.flush()
                app.processEvents()
                name = f"{theme}-{width}x{height}-tab{index}.png"
                window.grab().save(str(out / name))
        window.ask_before_discard = False
        window.close()
    print(f"screenshots in {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
