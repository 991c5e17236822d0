"""Compiled reader for the plain block-YAML subset that `.thf` writers emit (_blockyaml.c)."""

from typing import Any, overload

@overload
def loads(text: str, /) -> dict[str, Any] | None:
    """The parsed document when `text` is inside the subset (what yaml-rs returns), else None."""

@overload
def loads(
    text: str, capture: dict[str, tuple[tuple[Any, ...], tuple[str, ...]]], /
) -> (
    tuple[
        dict[str, Any],
        dict[str, tuple[str, list[int]]],
        dict[str, dict[str, tuple[list[Any], str | None]]],
    ]
    | None
):
    """Also what `capture` asks for, per section (`thf.capture`): search texts and columns."""
