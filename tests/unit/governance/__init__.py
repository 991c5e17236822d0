"""Governance tests."""
