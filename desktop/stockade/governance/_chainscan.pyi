"""Compiled fast path of audit verify's walk over a keyed trail (_chainscan.c)."""

from collections.abc import Callable, Iterable
from typing import Any

class Scanner:
    prev: str
    expected: int
    @property
    def error(self) -> BaseException | None: ...
    def __init__(self, key: bytes, prefix: str, boundary: int, prev: str,
                 expected: int, runs: dict[str, list[Any]], kinds: dict[str, str],
                 quote: Callable[[str], str], fallback: Callable[..., int]) -> None: ...
    def __call__(self, *row: Any) -> int: ...
    def run(self, rows: Iterable[Any], /) -> bool: ...
