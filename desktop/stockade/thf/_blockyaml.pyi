"""Compiled reader for the plain block-YAML subset that `.thf` writers emit (_blockyaml.c)."""

from typing import Any

def loads(text: str, /) -> dict[str, Any] | None:
    """The parsed document when `text` is inside the subset (what yaml-rs returns), else None."""
