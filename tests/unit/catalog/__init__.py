"""Unit tests for stockade.catalog."""
