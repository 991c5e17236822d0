"""Unit tests for stockade.tools."""
