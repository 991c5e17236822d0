"""Compiled scan of a long text for what any secret pattern needs (_hints.c)."""

def hint_starts(text: str, hints: tuple[str, ...], token_chars: str, run: int, /) -> list[int]:
    """Ascending offsets where a hint or a run of `run` token characters begins."""
