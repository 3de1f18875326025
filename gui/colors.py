"""Colours: one per memory component, the same in every tab, and the status colours.

Okabe–Ito based (colour-blind safe); over capacity is always red.
"""

from __future__ import annotations

COMPONENTS: tuple[tuple[str, str, str], ...] = (
    # key, label, colour
    ("weights", "Weights", "#0072B2"),
    ("gradients", "Gradients", "#E69F00"),
    ("optimizer", "Optimizer", "#009E73"),
    ("activations", "Activations", "#CC79A7"),
    ("kv_cache", "KV cache", "#56B4E9"),
    ("temporaries", "Temporaries", "#8C6BB1"),
    ("overhead", "Overhead", "#999999"),
)
"""Every memory component the bars draw, in stacking order."""

COMPONENT_COLOR: dict[str, str] = {key: colour for key, _, colour in COMPONENTS}
COMPONENT_LABEL: dict[str, str] = {key: label for key, label, _ in COMPONENTS}

OK = "#2CA02C"
WARN = "#E8A317"
BAD = "#D62728"
CAPACITY = "#D62728"
SERIES = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#56B4E9", "#8C6BB1")
"""Line colours for series charts (first: primary quantity, second: secondary)."""
