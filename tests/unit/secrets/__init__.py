"""Unit tests for stockade.secrets."""
