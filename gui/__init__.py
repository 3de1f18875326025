"""The desktop window (PySide6 + pyqtgraph). Holds no formulas: everything comes from core."""
