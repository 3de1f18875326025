"""Reusable widgets: figure tables, memory bars, series charts, the pipeline timeline."""
