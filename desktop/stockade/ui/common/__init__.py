"""Widgets and helpers shared by the document and assistant panes."""
