"""Tests for reports and starter templates."""
