"""``python -m llm_planner`` is the same as the ``llm-planner`` command."""

from llm_planner.cli import main

raise SystemExit(main())
