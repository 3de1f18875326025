"""The app's version: written once, here, where every layer can read it.

``core`` stamps it into scenario files and exported stack configs; the command line prints
it; ``pyproject.toml`` reads it (``[tool.setuptools.dynamic]``). A constant, not
``importlib.metadata.version()``: that lookup imports email, zipfile and csv (≈ 15 ms of
every command's start) and needs the dist-info, which a frozen bundle may lack.
"""

__version__ = "0.1.0"
