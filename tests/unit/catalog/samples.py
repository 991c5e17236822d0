"""Where the six starter templates live (the app's own samples, read as users get them)."""

from __future__ import annotations

from pathlib import Path

SAMPLES = Path(__file__).resolve().parents[3] / "resources" / "samples"
