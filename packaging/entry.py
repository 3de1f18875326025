"""PyInstaller entry point: the frozen app is the same ``llm-planner`` command."""

from llm_planner.cli import main

raise SystemExit(main())
