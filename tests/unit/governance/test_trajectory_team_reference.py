"""`audit verify` on a team's PostgreSQL store against the plain per-event reference walk of
`test_trajectory_verify_reference.py`: the rows now arrive as the server sends them (a stream
outside a transaction, batches inside one), so a trail damaged by the database's owner must
give exactly the reference's result, and a verify that stopped reading early must leave the
connection fit for the next one."""

from __future__ import annotations

import base64
import contextlib
import json
import os
import secrets as token
from typing import Any

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stockade.governance.chain import (
    HASH_PREFIX,
    MAC_PREFIX,
    AnchorError,
    ChainKey,
    plain_hash,
)
from stockade.governance.services import Governance
from stockade.governance.teamchain import TeamAnchor, TeamMarker
from stockade.governance.teamkeys import team_key_name
from stockade.governance.trajectory import GENESIS_HASH, event_text
from stockade.store import MemberKind
from stockade.store import runs as run_sql
from tests.conftest import examples
from tests.helpers.postgres import PostgresServer
from tests.helpers.teams import Team, new_team
from tests.unit.governance.conftest import DictSecrets, FakeClock
from tests.unit.governance.test_trajectory_verify_reference import (
    COLUMNS,
    _anchor_problem,
    _event_problem,
    _Walk,
)

# A team database's text holds anything but NUL.
TEXT = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"),
               max_size=10)
DAMAGES = ["none", "payload", "field", "delete", "swap", "move", "link", "forge", "rekey",
           "unkey_suffix", "truncate", "anchor_delete", "anchor_alter", "marker_alter",
           "run_emptied"]


def _rows(admin: psycopg.Connection[Any], team: str) -> list[tuple[Any, ...]]:
    return admin.execute(f"SELECT {COLUMNS} FROM stockade.event WHERE team_id = %s "
                         "ORDER BY seq", (team,)).fetchall()


def team_reference_verify(team: Team, db: Any, key: ChainKey) -> dict[str, Any]:
    """`verify_chain` as its definition reads, over the team's rows as the owner sees them."""
    since = TeamMarker(db).read()
    with team.admin() as admin:
        rows = _rows(admin, team.team)
        walk = _Walk(key, since)
        run_next: dict[str, int] = {}
        for row in rows:
            problem = _event_problem(walk, row, run_next)
            if problem is not None:
                return walk.fail(row[0], row[1], problem)
            run_next[row[1]] = row[2] + 1
            walk.keyed = walk.keyed or row[7].startswith(MAC_PREFIX)
            walk.legacy += 0 if row[7].startswith(MAC_PREFIX) else 1
            walk.prev, walk.last = row[7], row[0]
            walk.checked += 1
        try:
            anchored = TeamAnchor(db).read()
        except AnchorError as exc:
            return walk.fail(walk.last + 1, None, str(exc))
        found = None if anchored is None else admin.execute(
            "SELECT hash FROM stockade.event WHERE team_id = %s AND seq = %s",
            (team.team, anchored.seq)).fetchone()
        orphans = [r[0] for r in admin.execute(
            "SELECT run_id FROM stockade.run WHERE team_id = %s AND run_id NOT IN "
            "(SELECT run_id FROM stockade.event WHERE team_id = %s) ORDER BY created_ms, run_id",
            (team.team, team.team))]
    if since is not None and walk.last < since.seq:
        return walk.fail(walk.last + 1, None,
                         f"the keyring records keyed events from {since.seq} on, but the "
                         f"trail ends at {walk.last}: events were deleted")
    if walk.last or anchored is not None:
        problem = _anchor_problem(walk, anchored, None if found is None else found[0],
                                  walk.keyed or since is not None)
        if problem is not None:
            first = walk.last + 1 if anchored is None or anchored.seq > walk.last \
                else anchored.seq
            return walk.fail(first, None, problem)
    if orphans:
        return walk.fail(None, orphans[0], f"run {orphans[0]} is listed but has no audit "
                         "events: its trail was deleted")
    return {"ok": True, "checked": walk.checked, "first_broken": None, "run_id": None,
            "reason": None, "keyed": walk.keyed, "legacy_events": walk.legacy, "warnings": []}


def _remac(admin: psycopg.Connection[Any], team: str, rows: list[tuple[Any, ...]], start: int,
           key: ChainKey | None) -> None:
    prev = rows[start - 1][7] if start > 0 else GENESIS_HASH
    for seq, run_id, run_seq, kind, at_ms, payload, _prev, _stored in rows[start:]:
        text = event_text(seq, run_id, run_seq, kind, at_ms, payload, prev)
        stored = key.mac(text) if key is not None else plain_hash(text)
        admin.execute("UPDATE stockade.event SET prev_hash = %s, hash = %s "
                      "WHERE team_id = %s AND seq = %s", (prev, stored, team, seq))
        prev = stored


def _damage(data: st.DataObject, team: Team, key: ChainKey, run_ids: list[str]) -> str:
    """What the database's owner can do around the triggers and row-level security."""
    damage = data.draw(st.sampled_from(DAMAGES), label="damage")
    with team.admin() as admin:
        admin.execute("SET session_replication_role = replica")
        rows = _rows(admin, team.team)
        at = data.draw(st.integers(0, len(rows) - 1), label="position")
        seq = rows[at][0]
        where = "WHERE team_id = %s AND seq = %s"
        if damage == "payload":
            admin.execute(f"UPDATE stockade.event SET payload = %s {where}",
                          (json.dumps({"iteration": data.draw(st.integers(-5, 5))}),
                           team.team, seq))
        elif damage == "field":
            column, value = data.draw(st.one_of(
                st.tuples(st.just("kind"), TEXT),
                st.tuples(st.just("run_id"), st.sampled_from(run_ids)),
                st.tuples(st.just("at_ms"), st.integers(0, 2**45)),
                st.tuples(st.just("run_seq"), st.integers(0, 6))), label="field")
            with contextlib.suppress(psycopg.errors.UniqueViolation):  # (run_id, run_seq)
                admin.execute(f"UPDATE stockade.event SET {column} = %s {where}",
                              (value, team.team, seq))
        elif damage == "delete":
            admin.execute(f"DELETE FROM stockade.event {where}", (team.team, seq))
        elif damage == "swap":
            other = rows[data.draw(st.integers(0, len(rows) - 1), label="other")][0]
            admin.execute(f"UPDATE stockade.event SET seq = 1000000 {where}", (team.team, seq))
            admin.execute(f"UPDATE stockade.event SET seq = %s {where}",
                          (seq, team.team, other))
            admin.execute(f"UPDATE stockade.event SET seq = %s {where}",
                          (other, team.team, 1000000))
        elif damage == "move":
            admin.execute(f"UPDATE stockade.event SET seq = %s {where}",
                          (rows[-1][0] + data.draw(st.integers(1, 3)), team.team, seq))
        elif damage == "link":
            other = rows[data.draw(st.integers(0, len(rows) - 1), label="other")][7]
            admin.execute(f"UPDATE stockade.event SET prev_hash = %s {where}",
                          (data.draw(st.sampled_from([other, GENESIS_HASH])), team.team, seq))
        elif damage == "forge":
            forged = data.draw(st.sampled_from([
                f"{MAC_PREFIX}{key.key_id}:{token.token_hex(32)}",
                HASH_PREFIX + token.token_hex(32)]))
            admin.execute(f"UPDATE stockade.event SET hash = %s {where}",
                          (forged, team.team, seq))
        elif damage == "rekey":
            admin.execute(f"UPDATE stockade.event SET payload = %s {where}",
                          ('{"iteration":77}', team.team, seq))
            _remac(admin, team.team, _rows(admin, team.team)[:at + 1], at, key)
        elif damage == "unkey_suffix":
            _remac(admin, team.team, rows, at, None)
        elif damage == "truncate":
            admin.execute("DELETE FROM stockade.event WHERE team_id = %s AND seq >= %s",
                          (team.team, seq))
        elif damage == "anchor_delete":
            admin.execute("DELETE FROM stockade.chain_anchor WHERE team_id = %s", (team.team,))
        elif damage == "anchor_alter":
            (head,) = admin.execute("SELECT head FROM stockade.chain_anchor WHERE team_id = %s",
                                    (team.team,)).fetchone()
            data_ = json.loads(head)
            data_["seq"] -= 1
            admin.execute("UPDATE stockade.chain_anchor SET head = %s WHERE team_id = %s",
                          (json.dumps(data_), team.team))
        elif damage == "marker_alter":
            admin.execute("DELETE FROM stockade.chain_marker WHERE team_id = %s", (team.team,))
            admin.execute("INSERT INTO stockade.chain_marker(team_id, seq, mac) "
                          "VALUES (%s, %s, %s)", (team.team, seq, "x"))
        elif damage == "run_emptied":
            admin.execute("DELETE FROM stockade.event WHERE team_id = %s AND run_id = %s",
                          (team.team, rows[at][1]))
    return damage


@pytest.fixture(scope="module")
def server(postgres_server: PostgresServer) -> PostgresServer:
    return postgres_server


@settings(max_examples=examples(100), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=st.data())
def test_team_verify_reports_what_the_reference_walk_reports(
        data: st.DataObject, server: PostgresServer) -> None:
    team = new_team(server, MemberKind.ANALYST, MemberKind.AUDITOR)
    try:
        secrets = DictSecrets()
        secrets.set_secret(team_key_name(team.team), base64.b64encode(os.urandom(32)).decode())
        clock = FakeClock()
        gov = Governance(team.open(team.role(MemberKind.ANALYST)), secrets=secrets,
                         clock_ms=clock)
        run_ids = data.draw(st.lists(TEXT, min_size=1, max_size=3, unique=True), label="runs")
        listed: set[str] = set()
        with gov.db.write() as conn:
            for i in range(data.draw(st.integers(1, 14), label="events")):
                run_id = data.draw(st.sampled_from(run_ids), label="run")
                if run_id not in listed and data.draw(st.booleans(), label="listed"):
                    run_sql.insert_run(conn, run_id=run_id, document_path="m.thf",
                                       document_digest=None, provider="offline", model="m",
                                       now_ms=clock.now, owner_pid=1, owner_host="h")
                    listed.add(run_id)
                clock.now += data.draw(st.integers(0, 5000))
                gov.trajectory.append_in(conn, run_id, data.draw(TEXT, label="kind"),
                                         {"iteration": i, "name": data.draw(TEXT, label="name")})
        key = gov.trajectory.existing_key()
        assert key is not None
        damage = _damage(data, team, key, run_ids)
        auditor = Governance(team.open(team.role(MemberKind.AUDITOR)), secrets=secrets)
        expected = team_reference_verify(team, auditor.db, key)
        first = auditor.trajectory.verify_chain().to_json()
        # A verify that stopped reading early leaves the connection usable: again, the same.
        again = auditor.trajectory.verify_chain().to_json()
        inside = _verify_inside_a_transaction(auditor)
    finally:
        team.close()
    assert first == expected, damage
    assert again == expected and inside == expected, damage


def _verify_inside_a_transaction(gov: Governance) -> dict[str, Any]:
    """The rows read inside an open transaction come in batches, never from a stream that an
    early stop would cancel (and so abort the transaction)."""
    conn = gov.db.read()
    conn.execute("BEGIN")
    try:
        result = gov.trajectory.verify_chain().to_json()
        conn.execute("SELECT 1").fetchone()  # the transaction is still usable
    finally:
        conn.execute("ROLLBACK")
    return result

