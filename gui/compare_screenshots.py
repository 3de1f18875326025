"""Render the Compare-and-choose window offscreen: each tab at 1366×768, light and dark.

``python -m llm_planner.gui.compare_screenshots OUT_DIR`` (sets ``QT_QPA_PLATFORM=offscreen``;
the scenarios are the default one, a variant on twice the GPUs, and Llama-3.1-70B).
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path


def main(argv: list[str]) -> int:
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    os.environ.setdefault("LLM_PLANNER_HOME", tempfile.mkdtemp(prefix="llm-planner-shots-"))
    out = Path(argv[0] if argv else "shots")
    out.mkdir(parents=True, exist_ok=True)
    from PySide6.QtWidgets import QApplication

    from llm_planner.core.composition.scenario import ModelChoice
    from llm_planner.core.primitives.presets import get_preset
    from llm_planner.gui.app import make_application
    from llm_planner.gui.compare import open_choose_window
    from llm_planner.gui.main_window import MainWindow
    from llm_planner.gui.screenshots import dark_palette

    app = make_application()
    assert isinstance(app, QApplication)
    app.setStyle("Fusion")
    for theme, palette in (("light", app.palette()), ("dark", dark_palette())):
        app.setPalette(palette)
        window = MainWindow(restore=False)
        window.show()
        choose = open_choose_window(window)
        view = choose.compare
        big = get_preset("llama-3.1-70b")
        view.entries.append(
            window.state.scenario.model_copy(
                update={
                    "name": "Llama-3.1-70B, 2,048 GPUs",
                    "num_gpus": 2048,
                    "model": ModelChoice(preset=big.id, architecture=big.architecture),
                }
            )
        )
        view.duplicate_as_variant()
        window.state.set_field("num_gpus", 1024)
        choose.resize(1366, 768)
        for index in range(choose.tabs.count()):
            choose.tabs.setCurrentIndex(index)
            if index == 1:
                choose.hardware.start()
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                app.processEvents()
                busy = choose.hardware.runner.busy or choose.sensitivity.runner.busy
                if not busy:
                    break
                time.sleep(0.02)
            for _ in range(5):
                app.processEvents()
            name = f"compare-{theme}-1366x768-tab{index}.png"
            choose.grab().save(str(out / name))
        window.ask_before_discard = False
        choose.close()
        window.close()
    print(f"screenshots in {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
