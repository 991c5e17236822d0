"""`audit verify`'s compiled inline check (governance/_chainscan.c) against its Python twin.

Fed the same rows from the same state, `_chainscan.Scanner` and `chainscan.PlainScanner` pass
the same events and leave the same state behind (the last MAC passed, the next sequence number,
each run's next run_seq, the kinds quoted), and hand the same rows to their fallback in the same
order: rows from genuine keyed chains, with any text in ids, kinds and payloads, keys shorter and
longer than SHA-256's block, and rows damaged or retyped the ways a file can be (floats, big and
negative ints, bytes, None, another MAC). Whole trails, damaged, are compared with the reference
walk with either scanner in test_trajectory_verify_reference.py and
test_trajectory_scan_reference.py.
"""

from __future__ import annotations

import gc
import hmac
import os
import sqlite3
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stockade.governance import chainscan
from stockade.governance.chain import ChainKey
from stockade.governance.chainscan import PlainScanner
from stockade.governance.trajectory import GENESIS_HASH, _s, event_text
from tests.conftest import examples

if not chainscan.compiled_scanner_available():
    if os.environ.get("STOCKADE_ALLOW_NO_BLOCK_READER") != "1":
        pytest.fail("the compiled verify check (stockade.governance._chainscan) is not built: "
                    "tools/_setup.sh builds it with the package (needs a C compiler and "
                    "libcrypto's headers)", pytrace=False)
    pytest.skip("this build has no compiled verify check", allow_module_level=True)

from stockade.governance._chainscan import Scanner

TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=10)
KEYS = st.binary(min_size=32, max_size=130)  # below, at and above SHA-256's 64-byte block


def chain_rows(key: ChainKey, events: list[tuple[str, str, str, int]]) -> list[tuple[Any, ...]]:
    """Genuine rows for (run id, kind, payload JSON, at_ms) events, in chain order."""
    rows: list[tuple[Any, ...]] = []
    prev, next_in_run = GENESIS_HASH, dict[str, int]()
    for seq, (run_id, kind, payload, at_ms) in enumerate(events, start=1):
        run_seq = next_in_run.get(run_id, 0)
        next_in_run[run_id] = run_seq + 1
        stored = key.mac(event_text(seq, run_id, run_seq, kind, at_ms, payload, prev))
        rows.append((seq, run_id, run_seq, kind, at_ms, payload, prev, stored))
        prev = stored
    return rows


ODD_VALUES = st.sampled_from([None, 1.0, 2.5, b"x", "1", 2**63, -(2**63) - 1, -1, 0, True,
                              "hmac-sha256:" + "0" * 64, 'a"b', "é"])


@st.composite
def damaged(draw: st.DrawFn, rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    rows = list(rows)
    for _ in range(draw(st.integers(0, 3))):
        if not rows:
            break
        at = draw(st.integers(0, len(rows) - 1))
        row = list(rows[at])
        how = draw(st.sampled_from(["column", "swap", "drop", "short"]))
        if how == "column" and row:
            row[draw(st.integers(0, len(row) - 1))] = draw(ODD_VALUES | TEXT | st.integers())
            rows[at] = tuple(row)
        elif how == "swap" and at + 1 < len(rows):
            rows[at], rows[at + 1] = rows[at + 1], rows[at]
        elif how == "drop":
            del rows[at]
        elif how == "short":
            rows[at] = tuple(row[:draw(st.integers(0, 7))])
    return rows


class Recorder:
    """A fallback that records the rows it is handed and lets a row through by rule: a row
    whose seq is the next one moves the chain on (as `event` would for a legacy event)."""

    def __init__(self, stop_at: int | None) -> None:
        self.rows: list[tuple[Any, ...]] = []
        self.scanner: Any = None
        self.stop_at = stop_at

    def __call__(self, *row: Any) -> int:
        self.rows.append(row)
        if len(self.rows) == self.stop_at:
            return 0
        if len(row) == 8 and isinstance(row[7], str):
            self.scanner.prev, self.scanner.expected = row[7], self.scanner.expected + 1
        return 1


def run_both(key: ChainKey, rows: list[tuple[Any, ...]], stop_at: int | None,
             via_call: bool) -> list[Any]:
    outcomes = []
    for make in (Scanner, PlainScanner):
        runs: dict[str, list[Any]] = {}
        kinds: dict[str, str] = {}
        recorder = Recorder(stop_at)
        first = key.secret() if make is Scanner else key.prepared()[0]
        scanner = make(first, key.prepared()[1], -1, GENESIS_HASH, 1, runs, kinds, _s, recorder)
        recorder.scanner = scanner
        if via_call:
            answers = []
            for row in rows:
                answers.append(scanner(*row))
                if answers[-1] == 0:
                    break
            went_on: Any = answers
        else:
            went_on = scanner.run(rows)
        outcomes.append((went_on, scanner.prev, scanner.expected, runs, kinds, recorder.rows,
                         scanner.error))
    return outcomes


@settings(max_examples=examples(300), deadline=None)
@given(key=KEYS, data=st.data())
def test_the_compiled_check_passes_what_the_python_one_passes(key: bytes,
                                                             data: st.DataObject) -> None:
    chain_key = ChainKey(key)
    run_ids = data.draw(st.lists(TEXT, min_size=1, max_size=3, unique=True))
    events = data.draw(st.lists(st.tuples(
        st.sampled_from(run_ids), TEXT,
        st.sampled_from(['{"a":1}', "{}", '{"name":"é\\u0000"}', '{"t":"\\"x\\""}', "[]"]),
        st.integers(-(2**63), 2**63 - 1) | st.integers()), max_size=8))
    rows = data.draw(damaged(chain_rows(chain_key, events)))
    stop_at = data.draw(st.none() | st.integers(1, 4))
    compiled, plain = run_both(chain_key, rows, stop_at, data.draw(st.booleans()))
    assert compiled == plain


@settings(max_examples=examples(200), deadline=None)
@given(key=KEYS, text=st.binary(max_size=300))
def test_its_mac_is_hmac_sha256(key: bytes, text: bytes) -> None:
    # A genuine row passes without the fallback exactly when its MAC is RFC 2104's.
    chain_key = ChainKey(key)
    payload = text.decode("latin-1")  # any text: the payload is written as stored
    row = chain_rows(chain_key, [("r", "k", payload, 7)])[0]
    expected_text = event_text(1, "r", 0, "k", 7, payload, GENESIS_HASH).encode()
    mac = hmac.new(key, expected_text, "sha256").hexdigest()
    assert row[7].endswith(":" + mac)
    recorder = Recorder(None)
    scanner = Scanner(key, chain_key.prepared()[1], -1, GENESIS_HASH, 1, {}, {}, _s, recorder)
    recorder.scanner = scanner
    assert scanner(*row) == 1 and recorder.rows == []
    assert scanner.prev == row[7] and scanner.expected == 2
    flipped = row[7][:-1] + ("0" if row[7][-1] != "0" else "1")
    other = Scanner(key, chain_key.prepared()[1], -1, GENESIS_HASH, 1, {}, {}, _s, recorder)
    recorder.scanner = other
    assert other(*row[:7], flipped) == 1 and recorder.rows == [(*row[:7], flipped)]


def test_an_error_inside_sqlites_scan_is_kept_and_run_raises_it() -> None:
    chain_key = ChainKey(b"k" * 32)
    rows = chain_rows(chain_key, [("r", "kind", "{}", 1), ("r", "new kind", "{}", 2)])

    def quote(text: str) -> str:
        if text == "new kind":
            raise KeyboardInterrupt
        return _s(text)

    recorder = Recorder(None)
    scanner = Scanner(chain_key.secret(), chain_key.prepared()[1], -1, GENESIS_HASH, 1, {}, {},
                      quote, recorder)
    recorder.scanner = scanner
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE event(seq, run_id, run_seq, kind, at_ms, payload, prev_hash, "
                 "hash)")
    conn.executemany("INSERT INTO event VALUES (?, ?, ?, ?, ?, ?, ?, ?)", rows)
    conn.create_function("visit", 8, scanner)
    stopped = conn.execute("SELECT seq FROM event WHERE NOT visit(seq, run_id, run_seq, kind, "
                           "at_ms, payload, prev_hash, hash) LIMIT 1").fetchone()
    assert stopped == (2,)
    assert isinstance(scanner.error, KeyboardInterrupt) and scanner.expected == 2
    again = Scanner(chain_key.secret(), chain_key.prepared()[1], -1, GENESIS_HASH, 1, {}, {},
                    quote, recorder)
    with pytest.raises(KeyboardInterrupt):
        again.run(rows)
    conn.close()


def test_a_scanner_never_initialised_refuses_rows_and_lets_its_state_go() -> None:
    bare = Scanner.__new__(Scanner)
    with pytest.raises(TypeError):
        bare.run([(1, "r", 0, "k", 1, "{}", GENESIS_HASH, "x")])
    del bare
    gc.collect()
    before = sum(type(o) is Scanner for o in gc.get_objects())
    recorder = Recorder(None)
    scanner = Scanner(b"k" * 32, "hmac-sha256:id:", -1, GENESIS_HASH, 1, {}, {}, _s, recorder)
    recorder.scanner = scanner  # a cycle through the fallback: the collector must free it
    del scanner, recorder
    gc.collect()
    assert sum(type(o) is Scanner for o in gc.get_objects()) == before
