"""Store tests."""
