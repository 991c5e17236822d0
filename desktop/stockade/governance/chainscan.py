"""The inline check of `audit verify`'s walk: compiled (`_chainscan.c`) or in Python."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from stockade.governance.chain import ChainKey


class ChainScanner(Protocol):
    """Called with one event's columns `(seq, run_id, run_seq, kind, at_ms, payload,
    prev_hash, stored)`: passes the event when it is the next one in the chain, linked to
    `prev`, not the keyed boundary, next in its run and carrying its MAC, moving `prev`,
    `expected` and the run on; hands any other event to `fallback(*row)`, whose answer (1 go
    on, 0 stop) it returns. As a SQLite callback it keeps an exception in `error` and answers
    0; `run(rows)` raises it."""

    prev: str
    expected: int

    @property
    def error(self) -> BaseException | None: ...

    def __call__(self, *row: Any) -> int: ...

    def run(self, rows: Iterable[Any]) -> bool: ...


_INT64 = (-(2**63), 2**63 - 1)


class PlainScanner:
    """What `_chainscan.Scanner` does, in Python: for a build made without a C compiler, and
    the reference the tests compare the compiled one with."""

    __slots__ = ("_boundary", "_fallback", "_kinds", "_new_mac", "_prefix", "_quote", "_runs",
                 "error", "expected", "prev")

    def __init__(self, new_mac: Callable[[], Any], prefix: str, boundary: int, prev: str,
                 expected: int, runs: dict[str, list[Any]], kinds: dict[str, str],
                 quote: Callable[[str], str], fallback: Callable[..., int]) -> None:
        self._new_mac, self._prefix, self._boundary = new_mac, prefix, boundary
        self._runs, self._kinds, self._quote, self._fallback = runs, kinds, quote, fallback
        self.prev, self.expected = prev, expected
        self.error: BaseException | None = None

    def _passes(self, seq: Any, run_id: Any, run_seq: Any, kind: Any, at_ms: Any,
                payload: Any, prev_hash: Any, stored: Any) -> bool:
        prev = self.prev
        # Only what the compiled check takes: exact ints that fit in 64 bits, exact strs.
        if type(seq) is not int or seq != self.expected or seq == self._boundary:
            return False
        if not (type(run_id) is type(kind) is type(payload) is type(prev_hash) is type(stored)
                is type(prev) is str and type(run_seq) is int and type(at_ms) is int
                and _INT64[0] <= run_seq <= _INT64[1] and _INT64[0] <= at_ms <= _INT64[1]):
            return False
        if prev_hash != prev:
            return False
        run = self._runs.get(run_id)
        if run_seq != (0 if run is None else run[0]):
            return False
        run_json = self._quote(run_id) if run is None else run[1]
        kind_json = self._kinds.get(kind)
        if kind_json is None:
            kind_json = self._kinds[kind] = self._quote(kind)
        context = self._new_mac()
        context.update((f'{{"at_ms":{at_ms},"kind":{kind_json},"payload":{payload},'
                        f'"prev_hash":"{prev}","run_id":{run_json},"run_seq":{run_seq},'
                        f'"seq":{seq}}}').encode())
        if self._prefix + context.finalize().hex() != stored:
            return False
        if run is None:
            self._runs[run_id] = [run_seq + 1, run_json]
        else:
            run[0] = run_seq + 1
        self.prev, self.expected = stored, seq + 1
        return True

    def _check(self, row: tuple[Any, ...]) -> bool:
        if len(row) == 8 and self._passes(*row):
            return True
        return bool(self._fallback(*row))

    def __call__(self, *row: Any) -> int:
        try:
            return int(self._check(row))
        except BaseException as exc:  # SQLite would swallow it: kept for the caller
            self.error = exc
            return 0

    def run(self, rows: Iterable[Any]) -> bool:
        check = self._check
        return all(check(tuple(row)) for row in rows)


_Compiled: Callable[..., ChainScanner] | None
try:
    from stockade.governance._chainscan import Scanner as _Compiled
except ImportError:  # a build made without a C compiler (or libcrypto's headers)
    _Compiled = None


def compiled_scanner_available() -> bool:
    return _Compiled is not None


def new_scanner(key: ChainKey, boundary: int, prev: str, expected: int,
                runs: dict[str, list[Any]], kinds: dict[str, str], quote: Callable[[str], str],
                fallback: Callable[..., int], *, compiled: bool = True) -> ChainScanner:
    """The compiled scanner where the build has it (and `compiled`), else `PlainScanner`."""
    new_mac, prefix = key.prepared()
    if compiled and _Compiled is not None:
        return _Compiled(key.secret(), prefix, boundary, prev, expected, runs, kinds, quote,
                         fallback)
    return PlainScanner(new_mac, prefix, boundary, prev, expected, runs, kinds, quote, fallback)
