"""Render the window offscreen to PNG files: every tab of every state, each size, light and
dark.

``python -m llm_planner.gui.screenshots OUT_DIR`` (sets ``QT_QPA_PLATFORM=offscreen``).
Used to look at the window while developing and to refresh ``docs/screenshot.png``. Besides
the default scenario it renders the heavy states where labels are long and charts busy (a
70B run on 1,024 GPUs with an interleaved pipeline, every what-if part planned, a calibrated
scenario, a model that does not fit) at the smallest sizes the window supports, since that
is where text gets cut. ``SHOT_STATES=default,heavy`` and ``SHOT_THEMES=dark`` pick a subset.
"""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # Qt is imported when a render starts, not on import
    from PySide6.QtGui import QPalette
    from PySide6.QtWidgets import QApplication

    from llm_planner.core.composition.scenario import Scenario
    from llm_planner.gui.main_window import MainWindow

SIZES = ((1366, 768), (1024, 640), (1920, 1080))
HEAVY_SIZES = ((1366, 768), (1024, 640))
"""The heavy states at the laptop size and at the window's minimum."""


def dark_palette() -> QPalette:
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


def heavy_states() -> list[tuple[str, Scenario]]:
    """(name, scenario) of the states that stress the layout: long figures, busy charts."""
    from llm_planner.core.composition.scenario import default_scenario
    from llm_planner.core.composition.whatif.mixed import preset_cluster
    from llm_planner.core.inputs.calibration import Measurement
    from llm_planner.core.inputs.whatif import (
        CompressionInputs,
        MultimodalInputs,
        RLInputs,
    )
    from llm_planner.core.primitives.gpus import get_gpu
    from llm_planner.core.primitives.presets import get_preset

    base = default_scenario()
    seventy = get_preset("llama-3.1-70b")
    big = base.model_copy(
        update={
            "name": "Llama-3.1-70B, 1,024 H100, tp 4 · pp 8 interleaved",
            "model": base.model.model_copy(
                update={"preset": seventy.id, "architecture": seventy.architecture}
            ),
            "num_gpus": 1024,
            "parallelism": base.parallelism.model_copy(
                update={
                    "tp": 4,
                    "pp": 8,
                    "dp": None,
                    "schedule": "interleaved",
                    "interleave_chunks": 2,
                    "sequence_parallel": True,
                    "zero_stage": 1,
                    "global_batch": 256,  # 8 micro-batches: the timeline numbers them
                }
            ),
        }
    )
    whatif = big.model_copy(
        update={
            "name": "70B with every what-if",
            "whatif": big.whatif.model_copy(
                update={
                    "mixed_cluster": preset_cluster("h100-a100-mixed"),
                    "rl": RLInputs(),
                    "multimodal": MultimodalInputs(),
                    "compression": CompressionInputs(),
                }
            ),
        }
    )
    per_gpu = 1.1e6 / big.num_gpus  # a 70B run at 1.1M tokens/s over the cluster
    calibrated = big.model_copy(
        update={
            "name": "70B calibrated by a measured run",
            "measurements": [
                Measurement(
                    label="megatron_70b_1024.log",
                    source="megatron_70b_1024.log:412",
                    stack="megatron",
                    gpus=big.num_gpus,
                    tp=4,
                    pp=8,
                    tokens_per_s_per_gpu=per_gpu,
                )
            ],
        }
    )
    gpu = get_gpu("rtx-4090")
    eight = get_preset("llama-3.1-8b")
    too_big = base.model_copy(
        update={
            "name": "8B full fine-tune on one RTX 4090",
            "model": base.model.model_copy(
                update={"preset": eight.id, "architecture": eight.architecture}
            ),
            "gpu": gpu,
            "num_gpus": 1,
            "parallelism": base.parallelism.model_copy(
                update={"tp": 1, "pp": 1, "dp": None, "global_batch": 8}
            ),
        }
    )
    return [("big", big), ("whatif", whatif), ("calibrated", calibrated), ("nofit", too_big)]


def _shoot(
    app: QApplication,
    window: MainWindow,
    out: Path,
    prefix: str,
    sizes: Sequence[tuple[int, int]],
) -> None:
    for width, height in sizes:
        window.resize(width, height)
        for index in range(window.tabs.count()):
            window.tabs.setCurrentIndex(index)
            app.processEvents()
            window.flush()
            app.processEvents()
            window.grab().save(str(out / f"{prefix}-{width}x{height}-tab{index}.png"))


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
        app.setPalette(palette)
        window = MainWindow(restore=False)
        window.show()
        states = os.environ.get("SHOT_STATES", "default,heavy").split(",")
        if "default" in states:
            _shoot(app, window, out, theme, SIZES)
        if "heavy" in states:
            for name, scenario in heavy_states():
                window.state.load(scenario, None)
                _shoot(app, window, out, f"{theme}-{name}", HEAVY_SIZES)
        window.ask_before_discard = False
        window.close()
    print(f"screenshots in {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
