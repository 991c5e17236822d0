"""Governance benchmark: durable trajectory appends per second, and `audit verify` over 100k events.

Appends are measured the way the runner makes them: one event per `BEGIN IMMEDIATE`
transaction, committed in WAL mode with `synchronous=NORMAL` (durable against an application
crash), on the keyed chain a user gets: HMAC-SHA-256 per event and the chain head rewritten
beside the database in each transaction (the key comes from an in-memory stand-in for the
keyring). `run()` returns rows for the bench runner; `ratio` is target/value for the append rate
and value/target for the verify time, so a ratio at or below 1 always means the target is met.
`python tools/benchmarks/bench_governance.py` prints them.
"""

from __future__ import annotations

import json
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

APPENDS = 2_000
APPEND_RUNS = 5
VERIFY_EVENTS = 100_000
VERIFY_RUNS = 3
TARGET_APPENDS_PER_S = 1_000.0
TARGET_VERIFY_S = 0.3


def _payload(i: int) -> dict[str, Any]:
    return {"call_id": f"call-{i}", "tool": "add_threat", "iteration": i % 8,
            "input_digest": "sha256:" + f"{i:064x}"}


class _MemorySecrets:
    """The keyring, in memory (the benchmark must not touch the real one)."""

    def __init__(self) -> None:
        self.items: dict[str, str] = {}

    def get_secret(self, name: str) -> str | None:
        return self.items.get(name)

    def set_secret(self, name: str, value: str) -> None:
        self.items[name] = value


def _keyed_trajectory(db: Any) -> Any:
    from stockade.governance.chain import AuditKeys, KeyringMarker
    from stockade.governance.sealing import SnapshotKeys
    from stockade.governance.trajectory import Trajectory

    secrets = _MemorySecrets()
    return Trajectory(db, keys=AuditKeys(SnapshotKeys(secrets)),
                      marker=KeyringMarker(secrets, db.path))


def _append_rate(folder: Path) -> float:
    from stockade.governance.trajectory import EventKind
    from stockade.store import open_database

    db = open_database(folder / "stockade.db")
    try:
        trajectory = _keyed_trajectory(db)
        started = time.perf_counter()
        for i in range(APPENDS):
            trajectory.append(f"run-{i // 50}", EventKind.TOOL_PROPOSED, _payload(i))
        elapsed = time.perf_counter() - started
    finally:
        db.close()
    return APPENDS / elapsed


def _verify_seconds(folder: Path) -> tuple[float, int]:
    from stockade.governance.trajectory import EventKind
    from stockade.store import open_database

    db = open_database(folder / "stockade.db")
    try:
        trajectory = _keyed_trajectory(db)
        batch = 10_000
        for start in range(0, VERIFY_EVENTS, batch):  # set-up only: big transactions
            with db.write() as conn:
                for i in range(start, start + batch):
                    trajectory.append_in(conn, f"run-{i // 40}", EventKind.TOOL_RESULT,
                                         _payload(i))
        times = []
        checked = 0
        for _ in range(VERIFY_RUNS):
            started = time.perf_counter()
            result = trajectory.verify_chain()
            times.append(time.perf_counter() - started)
            if not result.ok:
                raise RuntimeError(f"benchmark chain failed to verify: {result.reason}")
            checked = result.checked
    finally:
        db.close()
    return statistics.median(times), checked


def run() -> list[dict[str, Any]]:
    rates = []
    for _ in range(APPEND_RUNS):
        with tempfile.TemporaryDirectory(prefix="stockade-bench-") as tmp:
            rates.append(_append_rate(Path(tmp)))
    rate = statistics.median(rates)
    with tempfile.TemporaryDirectory(prefix="stockade-bench-") as tmp:
        verify_s, checked = _verify_seconds(Path(tmp))
    return [
        {"benchmark": "governance", "metric": "durable keyed trajectory appends (median of "
         f"{APPEND_RUNS} x {APPENDS}) [in-process, SQLite file]", "value": round(rate, 1),
         "unit": "appends/s",
         "target": TARGET_APPENDS_PER_S, "ratio": round(TARGET_APPENDS_PER_S / rate, 3)},
        {"benchmark": "governance", "metric": f"audit verify over {checked} keyed events (median of "
         f"{VERIFY_RUNS}) [in-process, SQLite file]", "value": round(verify_s, 3), "unit": "s",
         "target": TARGET_VERIFY_S, "ratio": round(verify_s / TARGET_VERIFY_S, 3)},
    ]


if __name__ == "__main__":
    os.environ.setdefault("STOCKADE_HOME", tempfile.mkdtemp(prefix="stockade-bench-home-"))
    for row in run():
        print(json.dumps(row))
