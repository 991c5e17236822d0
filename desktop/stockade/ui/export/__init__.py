"""Images rendered with Qt for export (the diagram as PNG)."""
