"""providers package."""
