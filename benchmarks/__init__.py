"""Benchmarks of LLM Planner (scripts, not timed tests): ``python -m benchmarks``."""
