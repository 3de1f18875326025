"""LLM Planner: plan a large-model run offline (compute, time, cost, memory, parallel layout).

The package is split in three: ``llm_planner.core`` (headless estimators, no Qt),
``llm_planner.gui`` (PySide6 + pyqtgraph window) and ``llm_planner.resources`` (catalog
data). This top package (the folder ``cli/``) holds the command line and re-exports the version,
which lives in ``llm_planner.core.primitives.version``.
"""

import os

# The estimators use numpy element-wise; OpenBLAS's thread pool, started when numpy is
# imported (one thread per core), is never used and costs ≈ 25 ms of CPU at every start
# on 2 cores, more on large machines. A user's own setting wins.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from llm_planner.core.primitives.version import __version__

__all__ = ["__version__"]
