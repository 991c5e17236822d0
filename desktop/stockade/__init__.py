"""Stockade: offline threat-model review with a governed AI assistant."""

__version__ = "0.1.0"
