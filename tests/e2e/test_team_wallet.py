"""The shared wallet under concurrency: eight processes (four analysts, two machines each)
reserve against one team's limits at once; no committed state ever exceeds the team's daily
limit or an analyst's share, and the ledger balances (reserved = settled + released).

A short run always; the 30-second soak runs with `--soak` (.ci/run turns it on).
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time

import psycopg
import pytest

from stockade.store import MemberKind, TeamWallet
from tests.e2e.conftest import cli_env
from tests.helpers.postgres import PostgresServer
from tests.helpers.teams import new_team

TEAM_DAY = 3000
ANALYST_DAY = 1000
PROCESSES = 8


def _hammer(postgres_server: PostgresServer, seconds: float) -> None:
    team = new_team(postgres_server, *([MemberKind.ANALYST] * (PROCESSES // 2)),
                    wallet=TeamWallet(per_day=TEAM_DAY, per_analyst_day=ANALYST_DAY))
    roles = list(team.members)
    procs = [subprocess.Popen(
        [sys.executable, "-m", "tests.helpers.wallet_worker", team.url(roles[i % len(roles)]),
         str(seconds), str(i)], env=cli_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True) for i in range(PROCESSES)]

    # Meanwhile, sample committed states from outside: each snapshot is one the database
    # committed, and none may exceed a limit.
    samples: list[tuple[int, int]] = []
    stop = threading.Event()

    def watch() -> None:
        with psycopg.connect(postgres_server.admin_url, autocommit=True) as conn:
            while not stop.is_set():
                with conn.transaction():
                    conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
                    team_total, top_member = conn.execute(
                        "SELECT COALESCE(SUM(c), 0), COALESCE(MAX(c), 0) FROM ("
                        "SELECT created_by, SUM(CASE status WHEN 'open' THEN reserved "
                        "ELSE settled END) AS c FROM stockade.reservation "
                        "WHERE team_id = %s GROUP BY created_by) s", (team.team,)).fetchone()
                samples.append((int(team_total), int(top_member)))
                time.sleep(0.01)

    watcher = threading.Thread(target=watch, name="wallet-watcher")
    watcher.start()
    try:
        results = []
        for proc in procs:
            out, err = proc.communicate(timeout=seconds + 120)
            assert proc.returncode == 0, err
            results.append(json.loads(out.strip().splitlines()[-1]))
    finally:
        stop.set()
        watcher.join()
        for proc in procs:
            if proc.poll() is None:
                proc.kill()

    assert sum(r["granted"] for r in results) > PROCESSES  # everyone got through sometimes
    assert sum(r["refused"] for r in results) > 0  # and the limits were reached
    assert max(r["max_team"] for r in results) <= TEAM_DAY
    assert max(r["max_mine"] for r in results) <= ANALYST_DAY
    assert samples and max(t for t, _ in samples) <= TEAM_DAY
    assert max(m for _, m in samples) <= ANALYST_DAY
    with psycopg.connect(postgres_server.admin_url, autocommit=True) as conn:
        reserved, settled, released, still_open = conn.execute(
            "SELECT COALESCE(SUM(reserved), 0), COALESCE(SUM(settled), 0), "
            "COALESCE(SUM(released), 0), COUNT(*) FILTER (WHERE status = 'open') "
            "FROM stockade.reservation WHERE team_id = %s", (team.team,)).fetchone()
    assert still_open == 0
    assert reserved == settled + released
    assert sum(r["granted"] for r in results) == sum(r["settled"] for r in results)


def test_eight_processes_racing_for_one_team_wallet_never_overspend(
    postgres_server: PostgresServer,
) -> None:
    _hammer(postgres_server, seconds=3)


@pytest.mark.soak
def test_eight_processes_racing_for_one_team_wallet_for_thirty_seconds(
    postgres_server: PostgresServer,
) -> None:
    _hammer(postgres_server, seconds=30)
