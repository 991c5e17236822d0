"""secrets package."""
