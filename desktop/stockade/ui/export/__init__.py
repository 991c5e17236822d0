"""Qt renderers for exported documents (the PDF report, the diagram as PNG)."""
