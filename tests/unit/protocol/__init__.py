"""Unit tests for stockade.protocol."""
