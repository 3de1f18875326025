"""Data files shipped with the app: GPU catalog, model presets, JSON Schema, icons."""
