"""thf package."""
