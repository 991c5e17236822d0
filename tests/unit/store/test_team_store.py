"""The team store on a real PostgreSQL server: schema parity with SQLite, row-level security,
roles, the shared wallet, team keys, password sources, and tampering by the database's owner."""

from __future__ import annotations

import base64
import json
import os
import threading
import time
from pathlib import Path

import psycopg
import pytest

from stockade.governance.ledger import CreditBudgets, Hold, Ledger, LimitKind, LimitRefusal
from stockade.governance.runstate import RunStates
from stockade.governance.sealing import SnapshotKeyMissing
from stockade.governance.services import Governance, open_configured_store
from stockade.governance.teamkeys import TeamSnapshotKeys, team_key_name
from stockade.governance.trajectory import EventKind, Trajectory
from stockade.secrets import KeyStore
from stockade.settings import Settings, read_settings, settings_path
from stockade.store import MemberKind, StoreError, TeamWallet, open_database
from stockade.store import migrations as sqlite_migrations
from stockade.store.postgres.database import PermissionDenied, open_postgres, translate
from stockade.store.postgres.schema import MIGRATIONS, PG_ONLY_COLUMNS
from stockade.store.postgres.target import DatabaseUrlError, parse_database_url
from stockade.store.runs import Decision, PendingCallRow
from tests.helpers.postgres import PostgresServer
from tests.helpers.teams import Team, new_team
from tests.unit.governance.conftest import DictSecrets, FakeClock

TEAM_TABLES = {"team", "member", "team_lock", "chain_anchor", "chain_marker"}
"""Team-store-only tables: teams and members, the per-team lock, and the chain head and
keyed-since marker the SQLite store keeps in a file and the keyring."""


@pytest.fixture
def team(postgres_server: PostgresServer) -> Team:
    made = new_team(postgres_server, MemberKind.ANALYST, MemberKind.ANALYST, MemberKind.APPROVER,
                    MemberKind.AUDITOR)
    yield made
    made.close()


def test_both_stores_have_the_same_versions_and_columns(
    stockade_home: Path, postgres_server: PostgresServer
) -> None:
    assert [m.version for m in MIGRATIONS] == [m.version for m in sqlite_migrations.MIGRATIONS]
    assert [m.name for m in MIGRATIONS] == [m.name for m in sqlite_migrations.MIGRATIONS]
    db = open_database()
    conn = db.read()
    sqlite_tables = {name: [c[1] for c in conn.execute(f"PRAGMA table_info({name})")]
                     for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE "
                                                 "type = 'table' AND name <> 'schema_version'")}
    db.close()
    with psycopg.connect(postgres_server.admin_url) as admin:
        rows = admin.execute(
            "SELECT table_name, column_name FROM information_schema.columns "
            "WHERE table_schema = 'stockade' ORDER BY table_name, ordinal_position").fetchall()
    pg_tables: dict[str, list[str]] = {}
    for table, column in rows:
        if table not in TEAM_TABLES and table != "schema_version" \
                and column not in PG_ONLY_COLUMNS:
            pg_tables.setdefault(table, []).append(column)
    assert pg_tables == sqlite_tables


def test_qmark_sql_becomes_psycopg_placeholders_outside_literals() -> None:
    assert translate("SELECT ? WHERE a = '?' AND b LIKE '5%' AND c = ?") == \
        "SELECT %s WHERE a = '?' AND b LIKE '5%%' AND c = %s"
    assert translate('SELECT "odd?col" FROM t WHERE x % 2 = ?') == \
        'SELECT "odd?col" FROM t WHERE x %% 2 = %s'


def test_a_password_in_the_url_is_refused_by_settings_and_the_store(stockade_home: Path) -> None:
    with pytest.raises(DatabaseUrlError, match="contains a password"):
        parse_database_url("postgresql://ana:hunter2@db.example:5432/stockade")
    with pytest.raises(DatabaseUrlError, match="contains a password"):
        parse_database_url("host=db.example dbname=stockade user=ana password=hunter2")
    with pytest.raises(ValueError, match="contains a password"):
        Settings(database_url="postgresql://ana:hunter2@db.example/stockade")
    settings_path().write_text(json.dumps(
        {"database_url": "postgresql://ana:hunter2@db.example/stockade"}))
    read = read_settings()
    assert read.settings.database_url is None and read.problem is not None
    assert "contains a password" in read.problem and "hunter2" not in read.problem
    with pytest.raises(DatabaseUrlError, match="postgresql://"):
        parse_database_url("mysql://ana@db.example/stockade")
    assert Settings(database_url="postgresql://ana@db.example:5432/stockade").database_url


def test_the_roles_password_comes_from_the_keyring_then_from_pgpassfile(
    team: Team, postgres_server: PostgresServer, monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path
) -> None:
    role = team.role(MemberKind.ANALYST)
    with team.admin() as admin:
        admin.execute(f"ALTER ROLE {role} PASSWORD 'pw-keyring-1'")
    url = postgres_server.url(role)  # TCP: scram-sha-256, a password is needed
    monkeypatch.setenv("STOCKADE_DATABASE_URL", url)
    monkeypatch.setenv("PGPASSFILE", str(tmp_path / "none"))
    with pytest.raises(StoreError, match="refused the login"):
        open_configured_store(KeyStore())
    KeyStore().set_secret(parse_database_url(url).password_secret, "pw-keyring-1")
    db = open_configured_store(KeyStore())
    assert db.identity().role == role and db.identity().team == team.team
    db.close()

    pgpass = tmp_path / "pgpass"
    pgpass.write_text(f"127.0.0.1:{postgres_server.port}:*:{role}:pw-keyring-1\n")
    pgpass.chmod(0o600)
    monkeypatch.setenv("PGPASSFILE", str(pgpass))
    db = open_configured_store(None)  # no keyring at all: libpq reads the password file
    assert db.identity().role == role
    db.close()

    # A libpq service file names the whole connection; the URL is just `service=NAME`.
    services = tmp_path / "pg_service.conf"
    services.write_text(f"[redteam]\nhost=127.0.0.1\nport={postgres_server.port}\n"
                        f"dbname=stockade\nuser={role}\n")
    monkeypatch.setenv("PGSERVICEFILE", str(services))
    monkeypatch.setenv("STOCKADE_DATABASE_URL", "service=redteam")
    db = open_configured_store(None)
    assert db.identity().role == role and db.identity().location == "service=redteam"
    db.close()


def test_an_auditor_reads_the_trail_but_cannot_write(team: Team) -> None:
    analyst = team.open(team.role(MemberKind.ANALYST))
    Trajectory(analyst).append("run-1", EventKind.RUN_STARTED, {"n": 1})
    auditor = team.open(team.role(MemberKind.AUDITOR))
    assert auditor.identity().member_kind is MemberKind.AUDITOR
    trail = Trajectory(auditor)
    assert trail.count() == 1 and trail.verify_chain().ok
    with pytest.raises(PermissionDenied, match="auditor"), auditor.write():
        pass
    # A hold a crashed analyst left open: recovery is the writers' job, and looking at the
    # runs as an auditor (which recovers first) must not fail on it.
    Ledger(analyst).reserve(run_id="gone", provider="p", model="m", credits=5, estimated=5,
                            budgets=CreditBudgets(per_turn=100))
    assert Governance(auditor).runs.recover_interrupted() == []


def test_only_an_approver_decides_a_run_another_analyst_started(team: Team) -> None:
    ana, other = team.open(team.role(MemberKind.ANALYST, 0)), team.open(
        team.role(MemberKind.ANALYST, 1))
    approver = team.open(team.role(MemberKind.APPROVER))
    secrets = DictSecrets()
    secrets.set_secret(team_key_name(team.team), base64.b64encode(os.urandom(32)).decode())

    def runs(db: object) -> RunStates:
        gov = Governance(db, secrets=secrets, clock_ms=FakeClock())  # type: ignore[arg-type]
        return gov.runs

    mine = runs(ana)
    mine.start("run-x", document_path="/m.thf", document_digest="sha256:x", provider="offline",
               model="m", payload={})
    mine.park("run-x", snapshot={"v": 1}, document_digest="sha256:x",
              pending=[PendingCallRow("c1", 0, "add_threat", "sha256:i", False)])
    with pytest.raises(PermissionDenied, match="approver"):
        runs(other).decide("run-x", "c1", Decision.APPROVED, "Other")
    outcome = runs(approver).decide("run-x", "c1", Decision.APPROVED, "Lead")
    assert not outcome.already_recorded
    (row,) = approver.read().execute("SELECT actor_role, actor FROM decision").fetchall()
    assert tuple(row) == (team.role(MemberKind.APPROVER), "Lead")
    event = next(e for e in Trajectory(ana).events("run-x") if e.kind == EventKind.TOOL_APPROVED)
    assert event.payload["actor_role"] == team.role(MemberKind.APPROVER)


def test_a_parked_snapshot_opens_only_with_the_teams_key(team: Team) -> None:
    key = base64.b64encode(os.urandom(32)).decode()
    holder, other_holder, outsider = DictSecrets(), DictSecrets(), DictSecrets()
    holder.set_secret(team_key_name(team.team), key)
    other_holder.set_secret(team_key_name(team.team), key)
    ana = Governance(team.open(team.role(MemberKind.ANALYST)), secrets=holder)
    assert isinstance(ana.keys, TeamSnapshotKeys)
    ana.runs.start("run-k", document_path="/m.thf", document_digest=None, provider="offline",
                   model="m", payload={})
    ana.runs.park("run-k", snapshot={"secret": "the turn's messages"},
                  document_digest="sha256:x", pending=[])
    raw = ana.db.read().execute("SELECT snapshot FROM run").fetchone()[0]
    assert b"the turn's messages" not in bytes(raw)
    lead = Governance(team.open(team.role(MemberKind.APPROVER)), secrets=other_holder)
    assert lead.runs.open_snapshot("run-k") == {"secret": "the turn's messages"}
    stranger = Governance(team.open(team.role(MemberKind.ANALYST, 1)), secrets=outsider)
    with pytest.raises(SnapshotKeyMissing, match="import-team-key"):
        stranger.runs.open_snapshot("run-k")
    with pytest.raises(SnapshotKeyMissing):  # nor is a key made up to park with
        stranger.keys.for_sealing()  # type: ignore[union-attr]


def test_the_team_wallet_is_shared_and_each_analyst_has_a_share(team: Team) -> None:
    team.set_wallet(TeamWallet(per_day=100, per_analyst_day=70))
    clock = FakeClock()
    first = Ledger(team.open(team.role(MemberKind.ANALYST, 0)), clock)
    second = Ledger(team.open(team.role(MemberKind.ANALYST, 1)), clock)
    budgets = CreditBudgets(per_turn=1000, per_day=None, per_month=None)

    def reserve(ledger: Ledger, credits: int) -> Hold | LimitRefusal:
        return ledger.reserve(run_id="r", provider="p", model="m", credits=credits,
                              estimated=credits, budgets=budgets)

    assert isinstance(reserve(first, 60), Hold)
    share = reserve(first, 20)
    assert isinstance(share, LimitRefusal) and share.limit is LimitKind.ANALYST_DAY
    assert "your share" in share.message
    assert isinstance(reserve(second, 40), Hold)
    full = reserve(second, 1)
    assert isinstance(full, LimitRefusal) and full.limit is LimitKind.TEAM_DAY
    assert "the team's credits for today" in full.message


def test_the_owner_editing_an_event_is_caught_by_verify(team: Team) -> None:
    trail = Trajectory(team.open(team.role(MemberKind.ANALYST)))
    for i in range(5):
        trail.append("run-t", EventKind.TOOL_RESULT, {"i": i})
    with team.admin() as admin:
        # Only the owner can go around the triggers (members are not even granted UPDATE).
        admin.execute("SET session_replication_role = replica")
        admin.execute("UPDATE stockade.event SET payload = '{\"i\":99}' "
                      "WHERE team_id = %s AND seq = 3", (team.team,))
    result = trail.verify_chain()
    assert not result.ok and result.first_broken == 3


def test_writers_of_one_team_wait_for_each_other_but_other_teams_do_not(
    team: Team, postgres_server: PostgresServer
) -> None:
    other = new_team(postgres_server)
    a1, a2 = team.open(team.role(MemberKind.ANALYST, 0)), team.open(team.role(MemberKind.ANALYST, 1))
    b = other.open(other.role(MemberKind.ANALYST))
    entered = threading.Event()
    release = threading.Event()
    waited: list[float] = []

    def hold() -> None:
        with a1.write():
            entered.set()
            release.wait(10)

    def second_writer() -> None:
        started = time.monotonic()
        with a2.write():
            waited.append(time.monotonic() - started)

    holder = threading.Thread(target=hold)
    holder.start()
    assert entered.wait(10)
    started = time.monotonic()
    with b.write():  # another team: never waits
        pass
    assert time.monotonic() - started < 1.0
    follower = threading.Thread(target=second_writer)
    follower.start()
    time.sleep(0.3)
    assert not waited  # still blocked on the team's lock
    release.set()
    holder.join()
    follower.join()
    assert waited and waited[0] >= 0.25
    other.close()


def test_team_init_upgrades_an_older_schema_and_members_wait_for_it(
    postgres_server: PostgresServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    from stockade.store.postgres import team as admin_ops

    with psycopg.connect(postgres_server.admin_url, autocommit=True) as admin:
        admin.execute("CREATE DATABASE upgrade_check")
    url = postgres_server.admin_url.replace("/stockade?", "/upgrade_check?")
    with psycopg.connect(url, autocommit=True) as admin:
        monkeypatch.setattr(admin_ops, "MIGRATIONS", MIGRATIONS[:3])
        assert admin_ops.set_up_schema(admin) == [1, 2, 3]
        admin_ops.ensure_team(admin, "late")
        admin_ops.add_member(admin, "late", "late_analyst", MemberKind.ANALYST)
        member_url = postgres_server.url("late_analyst", socket_path=True).replace(
            "/stockade?", "/upgrade_check?")
        with pytest.raises(StoreError, match="is at schema 3 and this build needs"):
            open_postgres(parse_database_url(member_url))
        monkeypatch.setattr(admin_ops, "MIGRATIONS", MIGRATIONS)
        assert admin_ops.set_up_schema(admin) == [m.version for m in MIGRATIONS[3:]]
        assert admin_ops.set_up_schema(admin) == []  # idempotent
    db = open_postgres(parse_database_url(member_url))
    assert db.schema_version() == MIGRATIONS[-1].version and db.identity().team == "late"
    db.close()


def test_concurrent_appends_from_several_members_make_one_chain_without_forks(
    team: Team,
) -> None:
    writers = [team.open(team.role(MemberKind.ANALYST, i % 2)) for i in range(4)]
    failures: list[BaseException] = []

    def append_many(db: object, n: int) -> None:
        try:
            trail = Trajectory(db)  # type: ignore[arg-type]
            for i in range(40):
                trail.append(f"run-{n}", EventKind.TOOL_RESULT, {"i": i})
        except BaseException as exc:  # reported below
            failures.append(exc)

    threads = [threading.Thread(target=append_many, args=(db, n))
               for n, db in enumerate(writers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not failures
    auditor = Trajectory(team.open(team.role(MemberKind.AUDITOR)))
    result = auditor.verify_chain()
    assert result.ok and result.checked == 160
    seqs = [r[0] for r in writers[0].read().execute("SELECT seq FROM event ORDER BY seq")]
    assert seqs == list(range(1, 161))


def test_the_owner_deleting_the_newest_events_is_caught_by_the_team_head(team: Team) -> None:
    secrets = DictSecrets()
    secrets.set_secret(team_key_name(team.team), base64.b64encode(os.urandom(32)).decode())
    gov = Governance(team.open(team.role(MemberKind.ANALYST)), secrets=secrets)
    for i in range(4):
        gov.trajectory.append("run-h", EventKind.TOOL_RESULT, {"i": i})
    assert gov.trajectory.verify_chain().ok and gov.trajectory.verify_chain().keyed
    (head,) = gov.db.read().execute("SELECT head FROM chain_anchor").fetchone()
    assert json.loads(head)["count"] == 4
    with team.admin() as admin:
        admin.execute("SET session_replication_role = replica")
        admin.execute("DELETE FROM stockade.event WHERE team_id = %s AND seq = 4", (team.team,))
    result = gov.trajectory.verify_chain()
    assert not result.ok, result
    # An auditor with the team's key sees the same, from its own connection.
    auditor = Governance(team.open(team.role(MemberKind.AUDITOR)), secrets=secrets)
    assert not auditor.trajectory.verify_chain().ok
