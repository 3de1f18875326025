"""LLM Planner: plan a large-model run offline (compute, time, cost, memory, parallel layout).

The package is split in three: ``llm_planner.core`` (headless estimators, no Qt),
``llm_planner.gui`` (PySide6 + pyqtgraph window) and ``llm_planner.resources`` (catalog
data). This top package holds only the version and the command line.
"""

import os

__version__ = "0.1.0"
"""The one place the version is written (pyproject.toml reads it: ``[tool.setuptools.dynamic]``).
A constant, not ``importlib.metadata.version()``: that lookup imports email, zipfile and csv
(≈ 15 ms of every command's start) and needs the dist-info, which a frozen bundle may lack."""

# The estimators use numpy element-wise; OpenBLAS's thread pool, started when numpy is
# imported (one thread per core), is never used and costs ≈ 25 ms of CPU at every start
# on 2 cores, more on large machines. A user's own setting wins.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
