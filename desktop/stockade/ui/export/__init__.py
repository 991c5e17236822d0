"""Qt renderers for exported documents (the PDF report)."""
