"""Governance benchmark: durable trajectory appends per second and `audit verify` over 100k
events, on both stores, and reserve/settle round trips under 4 concurrent writers.

Appends are measured the way the runner makes them: one event per write transaction, on the
keyed chain a user gets (HMAC-SHA-256 per event, the chain head rewritten in each
transaction; the key comes from an in-memory stand-in for the keyring). On the SQLite file
that is `BEGIN IMMEDIATE` in WAL mode with `synchronous=NORMAL` (durable against an
application crash) and the head in a file beside it; on the team store it is one PostgreSQL
transaction taking the team's row lock, the head in the team's `chain_anchor` row, against a server this benchmark starts itself (`initdb` in a temporary folder, the
server's durable defaults: fsync and synchronous commit on), connected over a Unix socket as
an analyst role of a team, so row-level security is in every statement. The round trips are
4 processes of one team, each a reserve transaction then a settle transaction, with no limit
in the way. `run()` returns rows for the bench runner; `ratio` is value/target for both, as
`docs/performance.md` reads it: at or above 1 meets a rate's target, at or below 1 a time's.
`audit verify` is timed on the wall clock (the target) and also reported as the verifying
process's CPU time over the same rounds, which a loaded machine stretches far less; each
round must check every event, keyed. `python tools/benchmarks/bench_governance.py` prints
them. Without the PostgreSQL server
binaries (Debian's `postgresql`) only the SQLite rows are printed.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent.parent
for _path in (str(ROOT), str(ROOT / "desktop")):
    if _path not in sys.path:
        sys.path.insert(0, _path)

APPENDS = 2_000
APPEND_RUNS = 5
VERIFY_EVENTS = 100_000
VERIFY_RUNS = 5
TARGET_APPENDS_PER_S = 1_000.0
TARGET_VERIFY_S = 0.3
WRITERS = 4
ROUND_TRIP_SECONDS = 5.0
# A team of 100 analysts each sending a request a second: a reserve and a settle apiece.
TARGET_ROUND_TRIPS_PER_S = 100.0


def _payload(i: int) -> dict[str, Any]:
    return {"call_id": f"call-{i}", "tool": "add_threat", "iteration": i % 8,
            "input_digest": "sha256:" + f"{i:064x}"}


Opener = Callable[[], Any]


class _MemorySecrets:
    """The keyring, in memory (the benchmark must not touch the real one)."""

    def __init__(self) -> None:
        self.items: dict[str, str] = {}

    def get_secret(self, name: str) -> str | None:
        return self.items.get(name)

    def set_secret(self, name: str, value: str) -> None:
        self.items[name] = value


def _keyed_trajectory(db: Any) -> Any:
    """The trajectory as `Governance` builds it for this store, keyed."""
    from stockade.governance.chain import AuditKeys
    from stockade.governance.sealing import SnapshotKeys
    from stockade.governance.teamchain import anchor_for, marker_for
    from stockade.governance.teamkeys import TeamSnapshotKeys, new_team_key, team_key_name
    from stockade.governance.trajectory import Trajectory

    secrets = _MemorySecrets()
    team = db.identity().team
    keys = SnapshotKeys(secrets)
    if team is not None:
        secrets.set_secret(team_key_name(team), new_team_key())
        keys = TeamSnapshotKeys(secrets, team)
    return Trajectory(db, keys=AuditKeys(keys), anchor=anchor_for(db),
                      marker=marker_for(db, secrets))


def _append_rate(open_store: Opener) -> float:
    from stockade.governance.trajectory import EventKind

    db = open_store()
    try:
        trajectory = _keyed_trajectory(db)
        started = time.perf_counter()
        for i in range(APPENDS):
            trajectory.append(f"run-{i // 50}", EventKind.TOOL_PROPOSED, _payload(i))
        elapsed = time.perf_counter() - started
    finally:
        db.close()
    return APPENDS / elapsed


def _verify_seconds(open_store: Opener, analyze: Callable[[], None] | None = None
                    ) -> tuple[float, float, int, float, float]:
    """(median wall seconds, median CPU seconds, events checked) of `verify_chain`, then the
    CPU seconds of its two parts (`_verify_parts`). `analyze` gathers the server's statistics
    after the set-up, as autovacuum does within a minute of a bulk insert: without them the
    planner takes the 100,000 rows for a few hundred and sorts them on disk (0.29-0.33 s of
    verify instead of 0.19-0.26 s on this machine)."""
    from stockade.governance.trajectory import EventKind

    db = open_store()
    try:
        trajectory = _keyed_trajectory(db)
        batch = 10_000
        for start in range(0, VERIFY_EVENTS, batch):  # set-up only: big transactions
            with db.write() as conn:
                for i in range(start, start + batch):
                    trajectory.append_in(conn, f"run-{i // 40}", EventKind.TOOL_RESULT,
                                         _payload(i))
        if analyze is not None:
            analyze()
        times, cpu_times = [], []
        checked = 0
        for _ in range(VERIFY_RUNS):
            started, cpu_started = time.perf_counter(), time.process_time()
            result = trajectory.verify_chain()
            times.append(time.perf_counter() - started)
            cpu_times.append(time.process_time() - cpu_started)
            if not result.ok:
                raise RuntimeError(f"benchmark chain failed to verify: {result.reason}")
            if result.checked != VERIFY_EVENTS or not result.keyed or result.legacy_events:
                raise RuntimeError(f"verify checked {result.checked} events (keyed "
                                   f"{result.keyed}, {result.legacy_events} legacy), not "
                                   f"{VERIFY_EVENTS} keyed ones")
            checked = result.checked
        parts = _verify_parts(trajectory, db)
    finally:
        db.close()
    return statistics.median(times), statistics.median(cpu_times), checked, *parts


def _keep(*_row: Any) -> int:
    return 1


def _read_every_event(conn: Any) -> None:
    """Every event's columns, the way verify reads them: handed to a callback inside SQLite's
    own scan (`visit_events`), or streamed from PostgreSQL (`event_rows`)."""
    from stockade.store import events as event_sql

    if event_sql.visit_events(conn, _keep) is None:
        for _row in event_sql.event_rows(conn):
            pass


def _verify_parts(trajectory: Any, db: Any) -> tuple[float, float]:
    """Median CPU seconds of verify's two parts, each alone on the same trail: reading every
    event's columns the way the walk reads them, and the inline check of every event (its
    canonical text and MAC, `chainscan.new_scanner`: compiled where built) over the rows
    already held in memory."""
    from stockade.governance.chainscan import new_scanner
    from stockade.governance.trajectory import GENESIS_HASH, _s
    from stockade.store import events as event_sql

    conn = db.read()
    read_times = []
    for _ in range(VERIFY_RUNS):
        cpu_started = time.process_time()
        _read_every_event(conn)
        read_times.append(time.process_time() - cpu_started)
    rows = list(event_sql.event_rows(conn))
    key = trajectory.existing_key()
    check_times = []
    for _ in range(VERIFY_RUNS):
        scanner = new_scanner(key, -1, GENESIS_HASH, 1, {}, {}, _s, _keep_none)
        cpu_started = time.process_time()
        passed = scanner.run(rows)
        check_times.append(time.process_time() - cpu_started)
        if not passed or scanner.expected != len(rows) + 1:
            raise RuntimeError("the benchmark trail did not pass the inline check")
    return statistics.median(read_times), statistics.median(check_times)


def _keep_none(*_row: Any) -> int:
    return 0


def _sqlite(folder: Path) -> Opener:
    def open_store() -> Any:
        from stockade.store import open_database

        return open_database(folder / "stockade.db")

    return open_store


def _round_trip_worker(url: str | None, folder: str, seconds: float) -> float:
    """One writer's reserve+settle round trips per second (run in its own process)."""
    from stockade.governance.ledger import CreditBudgets, Hold, Ledger

    db = _open(url, Path(folder))
    ledger = Ledger(db)
    budgets = CreditBudgets(per_turn=10**12)
    done = 0
    run = f"bench-{os.getpid()}"
    started = time.perf_counter()
    while time.perf_counter() - started < seconds:
        hold = ledger.reserve(run_id=run, provider="anthropic", model="m", credits=5,
                              estimated=5, budgets=budgets)
        assert isinstance(hold, Hold)
        ledger.settle(hold.id, actual=3)
        done += 1
    rate = done / (time.perf_counter() - started)
    db.close()
    return rate


def _open(url: str | None, folder: Path) -> Any:
    if url is None:
        from stockade.store import open_database

        return open_database(folder / "stockade.db")
    from stockade.store.postgres.database import open_postgres
    from stockade.store.postgres.target import parse_database_url

    return open_postgres(parse_database_url(url))


def _round_trips(url: str | None, folder: Path) -> float:
    """Reserve+settle round trips per second summed over WRITERS concurrent processes."""
    _open(url, folder).close()  # create/migrate before the clock starts
    procs = [subprocess.Popen(
        [sys.executable, __file__, "--round-trip-worker", url or "", str(folder),
         str(ROUND_TRIP_SECONDS)], stdout=subprocess.PIPE, text=True)
        for _ in range(WRITERS)]
    rates = []
    for proc in procs:
        out, _err = proc.communicate(timeout=ROUND_TRIP_SECONDS + 120)
        if proc.returncode != 0:
            raise RuntimeError("a round-trip writer failed")
        rates.append(float(out.strip().splitlines()[-1]))
    return sum(rates)


@contextmanager
def _team_store() -> Iterator[tuple[Callable[[], str], Any] | None]:
    """A durable PostgreSQL server with the schema; yields (new team's analyst URL, server)."""
    from tests.helpers.postgres import running_server, server_binaries

    if server_binaries() is None:
        yield None
        return
    import psycopg

    from stockade.store import MemberKind
    from stockade.store.postgres.team import add_member, ensure_team, set_up_schema

    with running_server(durable=True) as server:
        with psycopg.connect(server.admin_url, autocommit=True) as conn:
            set_up_schema(conn)
        count = [0]

        def new_team_url() -> str:
            count[0] += 1
            team, role = f"bench-{count[0]}", f"bench_analyst_{count[0]}"
            with psycopg.connect(server.admin_url, autocommit=True) as conn:
                ensure_team(conn, team)
                add_member(conn, team, role, MemberKind.ANALYST)
            return server.url(role, socket_path=True)

        yield new_team_url, server


def _rows(store: str, rate: float, verify: tuple[float, float, int, float, float],
          verified_store: str | None = None) -> list[dict[str, Any]]:
    verify_s, verify_cpu_s, checked, read_cpu_s, mac_cpu_s = verify
    appended_store, store = store, verified_store or store
    return [
        {"benchmark": "governance", "metric": "durable keyed trajectory appends (median of "
         f"{APPEND_RUNS} x {APPENDS}) [in-process, {appended_store}]", "value": round(rate, 1),
         "unit": "appends/s",
         "target": TARGET_APPENDS_PER_S, "ratio": round(rate / TARGET_APPENDS_PER_S, 3)},
        {"benchmark": "governance", "metric": f"audit verify over {checked} keyed events (median "
         f"of {VERIFY_RUNS}) [in-process, {store}]", "value": round(verify_s, 3), "unit": "s",
         "target": TARGET_VERIFY_S, "ratio": round(verify_s / TARGET_VERIFY_S, 3)},
        {"benchmark": "governance", "metric": f"audit verify over {checked} keyed events, CPU "
         f"time of the process (median of {VERIFY_RUNS}) [in-process, {store}]",
         "value": round(verify_cpu_s, 3), "unit": "s CPU", "target": None, "ratio": None},
        {"benchmark": "governance", "metric": f"audit verify part: reading the {checked} "
         f"events' columns alone, CPU time (median of {VERIFY_RUNS}) [in-process, {store}]",
         "value": round(read_cpu_s, 3), "unit": "s CPU", "target": None, "ratio": None},
        {"benchmark": "governance", "metric": f"audit verify part: the inline check of the "
         f"{checked} events alone (texts and MACs), rows in memory, CPU time (median of "
         f"{VERIFY_RUNS}) [in-process, {store}]",
         "value": round(mac_cpu_s, 3), "unit": "s CPU", "target": None, "ratio": None},
    ]


def _round_trip_row(store: str, rate: float) -> dict[str, Any]:
    return {"benchmark": "governance", "metric": f"reserve+settle round trips, {WRITERS} "
            f"concurrent writers x {ROUND_TRIP_SECONDS:.0f} s [{WRITERS} processes, {store}]",
            "value": round(rate, 1), "unit": "round trips/s",
            "target": TARGET_ROUND_TRIPS_PER_S,
            "ratio": round(rate / TARGET_ROUND_TRIPS_PER_S, 3)}


def run() -> list[dict[str, Any]]:
    rates = []
    for _ in range(APPEND_RUNS):
        with tempfile.TemporaryDirectory(prefix="stockade-bench-") as tmp:
            rates.append(_append_rate(_sqlite(Path(tmp))))
    with tempfile.TemporaryDirectory(prefix="stockade-bench-") as tmp:
        verify = _verify_seconds(_sqlite(Path(tmp)))
    rows = _rows("SQLite file", statistics.median(rates), verify)
    with tempfile.TemporaryDirectory(prefix="stockade-bench-") as tmp:
        sqlite_trips = _round_trips(None, Path(tmp))
    with _team_store() as team:
        if team is None:
            print("governance: PostgreSQL server binaries not installed; team-store rows "
                  "skipped", file=sys.stderr)
            rows.append(_round_trip_row("SQLite file", sqlite_trips))
            return rows
        new_team_url, server = team
        from stockade.store.postgres.database import open_postgres
        from stockade.store.postgres.target import parse_database_url

        def team_opener() -> Opener:
            url = new_team_url()
            return lambda: open_postgres(parse_database_url(url))

        pg_rates = [_append_rate(team_opener()) for _ in range(APPEND_RUNS)]
        def analyze() -> None:
            import psycopg

            with psycopg.connect(server.admin_url, autocommit=True) as admin:
                admin.execute("ANALYZE")

        rows += _rows("PostgreSQL team store", statistics.median(pg_rates),
                      _verify_seconds(team_opener(), analyze),
                      "PostgreSQL team store, table analyzed")
        with tempfile.TemporaryDirectory(prefix="stockade-bench-") as tmp:
            pg_trips = _round_trips(new_team_url(), Path(tmp))
    rows.append(_round_trip_row("SQLite file", sqlite_trips))
    rows.append(_round_trip_row("PostgreSQL team store", pg_trips))
    return rows


if __name__ == "__main__":
    if sys.argv[1:2] == ["--round-trip-worker"]:
        print(_round_trip_worker(sys.argv[2] or None, sys.argv[3], float(sys.argv[4])))
        raise SystemExit(0)
    os.environ.setdefault("STOCKADE_HOME", tempfile.mkdtemp(prefix="stockade-bench-home-"))
    for row in run():
        print(json.dumps(row))
