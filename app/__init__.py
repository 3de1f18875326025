"""LLM Planner: plan a large-model run offline (compute, time, cost, memory, parallel layout).

The package is split in three: ``llm_planner.core`` (headless estimators, no Qt),
``llm_planner.gui`` (PySide6 + pyqtgraph window) and ``llm_planner.resources`` (catalog
data). This top package holds only the version and the command line.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("llm-planner")
except PackageNotFoundError:  # running from a source tree that was not installed
    __version__ = "0.0.0+source"
