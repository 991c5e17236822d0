"""Compiled scans of the read tools' search text (_hints.c)."""

def hint_starts(text: str, hints: tuple[str, ...], token_chars: str, run: int, /) -> list[int]:
    """Ascending offsets where a hint or a run of `run` token characters begins."""

def haystacks_containing(text: str, starts: list[int], needle: str, /) -> list[int]:
    """Ascending positions whose haystack (text[starts[i]:starts[i + 1] - 1]) holds `needle`."""
