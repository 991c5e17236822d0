"""loop package."""
