"""Headless estimators: pure Python, pydantic inputs, plain data out. Never imports Qt."""
