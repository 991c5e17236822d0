"""Team mode end to end: analysts on "different machines" (separate processes, each with its
own STOCKADE_HOME and keyring) sharing one real PostgreSQL team database.

The administrator sets the team up with `stockade team init`; members log in over TCP with a
password (scram-sha-256) kept in their keyring or a PGPASSFILE, never in settings; the team's
snapshot key is handed out with `keys import-team-key`. The provider is the fake Anthropic
server on 127.0.0.1 reached through the official SDK.
"""

from __future__ import annotations

import base64
import itertools
import json
import os
import socket
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import pytest

from tests.e2e.conftest import cli_env, run_cli, run_cli_process, stockade_command
from tests.helpers.fake_provider import FakeProviderServer, Reply, anthropic_sse
from tests.helpers.file_keyring import read_keyring_file
from tests.helpers.postgres import PostgresServer

MODEL = "claude-sonnet-5"
API_KEY = "sk-ant-api03-E2eTeamModeKey0123456789"
KEYRING = "tests.helpers.file_keyring.FileKeyring"
_teams = itertools.count(1)


@dataclass
class Machine:
    """One analyst's machine: a data folder, a keyring file and the role it logs in as."""

    name: str
    role: str
    env: dict[str, str]

    def run(self, *args: Any, input: str | None = None) -> subprocess.CompletedProcess[str]:
        result = run_cli_process(*args, env=self.env, input=input)
        assert API_KEY not in result.stdout + result.stderr
        return result

    def popen(self, *args: str) -> subprocess.Popen[str]:
        return subprocess.Popen([*stockade_command(), *args], env=cli_env(self.env),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _password(role: str) -> str:
    return f"pw-{role}-7Qz"


@pytest.fixture
def team(postgres_server: PostgresServer, tmp_path: Path, server: FakeProviderServer
         ) -> dict[str, Machine]:
    """Team `<unique>` with analyst, two approvers and an auditor; another team with one analyst."""
    suffix = f"{os.getpid() % 10000}x{next(_teams)}"
    name, other = f"red{suffix}", f"blue{suffix}"
    roles = {"ana": f"ana_{suffix}", "bob": f"bob_{suffix}", "cyd": f"cyd_{suffix}",
             "aud": f"aud_{suffix}", "eve": f"eve_{suffix}"}
    init = run_cli("team", "init", "--database-url", postgres_server.admin_url, "--team", name,
                   "--analyst", roles["ana"], "--approver", roles["bob"], "--approver",
                   roles["cyd"], "--auditor", roles["aud"], "--day", "1000000", "--json")
    assert init.returncode == 0, init.stderr
    report = json.loads(init.stdout)
    assert report["team"] == name and set(report["roles_created"]) == {
        roles["ana"], roles["bob"], roles["cyd"], roles["aud"]}
    other_init = run_cli("team", "init", "--database-url", postgres_server.admin_url, "--team",
                         other, "--analyst", roles["eve"])
    assert other_init.returncode == 0, other_init.stderr
    with psycopg.connect(postgres_server.admin_url, autocommit=True) as admin:
        for role in roles.values():
            admin.execute(f"ALTER ROLE {role} PASSWORD '{_password(role)}'")

    machines: dict[str, Machine] = {}
    for who, role in roles.items():
        home = tmp_path / f"home-{who}"
        home.mkdir()
        machines[who] = Machine(who, role, {
            "STOCKADE_HOME": str(home),
            "PYTHON_KEYRING_BACKEND": KEYRING,
            "STOCKADE_TEST_KEYRING": str(tmp_path / f"keyring-{who}.json"),
            "STOCKADE_DATABASE_URL": postgres_server.url(role),
            "ANTHROPIC_BASE_URL": server.url,
            "ANTHROPIC_API_KEY": API_KEY,
            "PGPASSFILE": str(tmp_path / "no-such-pgpass"),
        })
    # Passwords: most members keep theirs in the keyring; bob uses a libpq password file.
    for who in ("ana", "cyd", "aud", "eve"):
        saved = run_cli("keys", "set-database-password", env=machines[who].env,
                        input=_password(roles[who]) + "\n")
        assert saved.returncode == 0, saved.stderr
    pgpass = tmp_path / "bob.pgpass"
    pgpass.write_text(f"127.0.0.1:{postgres_server.port}:*:{roles['bob']}:"
                      f"{_password(roles['bob'])}\n")
    pgpass.chmod(0o600)
    machines["bob"].env["PGPASSFILE"] = str(pgpass)
    # The team key: made once, handed to every member of the team out of band.
    made = run_cli("keys", "import-team-key", name, "--generate", "--json",
                   env=machines["ana"].env)
    assert made.returncode == 0, made.stderr
    key = json.loads(made.stdout)["key"]
    for who in ("bob", "cyd", "aud"):
        imported = run_cli("keys", "import-team-key", name, env=machines[who].env,
                           input=key + "\n")
        assert imported.returncode == 0, imported.stderr
    machines["ana"].env["TEAM"] = name
    machines["eve"].env["TEAM"] = other
    return machines


def _park(ana: Machine, server: FakeProviderServer, model_file: Path) -> str:
    server.script([Reply.sse(anthropic_sse(tool_calls=[(
        "toolu_1", "add_threat", {"action": "add_threat", "threat": {
            "title": "Card data replay", "category": "Spoofing", "severity": "high",
            "element": "api-gateway", "description": "Replayed card tokens are accepted twice."}})],
        model=MODEL))])
    parked = ana.run("assist", model_file, "--prompt", "review the payment flows",
                     "--provider", "anthropic", "--model", MODEL, "--write", "--json")
    assert parked.returncode == 3, parked.stderr
    summary = json.loads(parked.stdout)
    assert summary["outcome"] == "parked"
    return str(summary["run_id"])


def test_a_run_parked_on_one_machine_is_approved_on_another_and_resumed_once(
    team: dict[str, Machine], server: FakeProviderServer, model_file: Path,
    postgres_server: PostgresServer, tmp_path: Path,
) -> None:
    ana, bob, cyd = team["ana"], team["bob"], team["cyd"]
    run_id = _park(ana, server, model_file)

    # The approver's machine lists and shows it (decrypted with the team key) and approves.
    listed = json.loads(bob.run("runs", "list", "--json").stdout)
    assert [r["run_id"] for r in listed] == [run_id] and listed[0]["status"] == "parked"
    shown = bob.run("runs", "show", run_id)
    assert shown.returncode == 0 and "Card data replay" in shown.stdout, shown.stderr
    approved = bob.run("runs", "approve", run_id, "toolu_1", "--actor", "Bob B.", "--json")
    assert approved.returncode == 0, approved.stderr

    # The analyst and a second approver resume at the same moment: the claim holds across
    # machines, so exactly one continues the turn and the other is refused.
    server.script([Reply.sse(anthropic_sse(text="Added the replay threat.", model=MODEL)),
                   Reply.sse(anthropic_sse(text="must never be sent", model=MODEL))])
    procs = [ana.popen("runs", "resume", run_id, "--json"),
             cyd.popen("runs", "resume", run_id, "--json")]
    outcomes = [(p.wait(120), *p.communicate()) for p in procs]
    codes = sorted(code for code, _out, _err in outcomes)
    assert codes == [0, 1], outcomes
    loser = next(err for code, _out, err in outcomes if code == 1)
    assert "resumed" in loser or "claimed" in loser or "running" in loser, loser
    assert len(server.requests) == 1
    assert model_file.read_text().count("Card data replay") == 1  # the edit landed once

    # The decision names the approver's database role, filled in by the database itself.
    with psycopg.connect(postgres_server.admin_url, autocommit=True) as admin:
        (actor_role, actor), = admin.execute(
            "SELECT actor_role, actor FROM stockade.decision WHERE run_id = %s",
            (run_id,)).fetchall()
        assert (actor_role, actor) == (bob.role, "Bob B.")
        payloads = [json.loads(p) for (p,) in admin.execute(
            "SELECT payload FROM stockade.event WHERE run_id = %s AND kind = 'tool.approved'",
            (run_id,)).fetchall()]
        assert [p.get("actor_role") for p in payloads] == [bob.role]
        reserved, settled, released, open_count = admin.execute(
            "SELECT COALESCE(SUM(reserved), 0), COALESCE(SUM(settled), 0), "
            "COALESCE(SUM(released), 0), COUNT(*) FILTER (WHERE status = 'open') "
            "FROM stockade.reservation r JOIN stockade.member m ON m.team_id = r.team_id "
            "WHERE m.role_name = %s", (ana.role,)).fetchone()
        assert open_count == 0 and reserved == settled + released

    # The auditor verifies the team's trail from a third machine, and may not decide.
    verified = team["aud"].run("audit", "verify", "--team", "--json")
    assert verified.returncode == 0, verified.stderr
    result = json.loads(verified.stdout)
    assert result["ok"] and result["team"] == ana.env["TEAM"] and result["checked"] > 5
    assert result["keyed"] is True  # MACs under the audit key derived from the team's key
    listed_by_auditor = json.loads(team["aud"].run("runs", "list", "--json").stdout)
    assert [r["run_id"] for r in listed_by_auditor] == [run_id]
    exported = team["aud"].run("audit", "export", run_id)
    assert exported.returncode == 0, exported.stderr
    kinds = [json.loads(line)["kind"] for line in exported.stdout.splitlines()
             if line.startswith("{") and '"kind"' in line]
    assert kinds.count("tool.approved") == 1 and "run.finished" in kinds
    # The export, checked on another member's machine against the head sealed into it.
    export_file = tmp_path / "run.jsonl"
    export_file.write_text(exported.stdout, encoding="utf-8")
    checked = bob.run("audit", "verify", "--export", export_file, "--json")
    assert checked.returncode == 0, checked.stderr
    assert json.loads(checked.stdout)["ok"]


def test_another_teams_role_sees_nothing_even_with_raw_sql(
    team: dict[str, Machine], server: FakeProviderServer, model_file: Path,
    postgres_server: PostgresServer,
) -> None:
    ana, eve = team["ana"], team["eve"]
    run_id = _park(ana, server, model_file)
    assert json.loads(eve.run("runs", "list", "--json").stdout) == []
    refused = eve.run("runs", "approve", run_id, "toolu_1", "--actor", "eve")
    assert refused.returncode == 1 and "no run" in refused.stderr

    with psycopg.connect(postgres_server.url(eve.role), password=_password(eve.role),
                         autocommit=True) as raw:
        for table in ("event", "run", "pending_call", "decision", "reservation"):
            count = raw.execute(f"SELECT COUNT(*) FROM stockade.{table}").fetchone()
            assert count == (0,), table
        assert raw.execute("SELECT team_id FROM stockade.team").fetchall() == [
            (eve.env["TEAM"],)]
        assert raw.execute("SELECT role_name FROM stockade.member").fetchall() == [(eve.role,)]
        assert raw.execute("UPDATE stockade.run SET reason = 'x'").rowcount == 0
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            raw.execute(
                "INSERT INTO stockade.event(team_id, seq, run_id, run_seq, kind, at_ms, "
                "payload, prev_hash, hash) VALUES (%s, 999, %s, 99, 'tool.approved', 0, '{}', "
                "'x', 'y')", (ana.env["TEAM"], run_id))
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            raw.execute("SELECT stockade.my_team() FROM stockade.member WHERE role_name <> "
                        "current_user FOR UPDATE")


def test_an_auditor_cannot_decide_and_an_analyst_cannot_decide_anothers_run(
    team: dict[str, Machine], server: FakeProviderServer, model_file: Path,
    postgres_server: PostgresServer,
) -> None:
    run_id = _park(team["bob"], server, model_file)  # started by an approver
    auditor = team["aud"].run("runs", "approve", run_id, "toolu_1", "--actor", "aud")
    assert auditor.returncode == 1 and "auditor" in auditor.stderr, auditor.stderr
    analyst = team["ana"].run("runs", "deny", run_id, "toolu_1", "--actor", "ana")
    assert analyst.returncode == 1 and "approver" in analyst.stderr, analyst.stderr
    # Forging another role's name in raw SQL is refused by the database too.
    with psycopg.connect(postgres_server.url(team["ana"].role),
                         password=_password(team["ana"].role), autocommit=True) as raw, \
            pytest.raises(psycopg.errors.InsufficientPrivilege):
        raw.execute("INSERT INTO stockade.decision(actor_role, run_id, call_id, decision, "
                    "actor, decided_ms) VALUES (%s, %s, 'toolu_1', 'approved', 'x', 0)",
                    (team["bob"].role, run_id))


def test_team_status_and_a_password_in_the_url_is_refused(
    team: dict[str, Machine], postgres_server: PostgresServer
) -> None:
    status = team["ana"].run("team", "status", "--json")
    assert status.returncode == 0, status.stderr
    report = json.loads(status.stdout)
    assert report["role"] == team["ana"].role and report["team"] == team["ana"].env["TEAM"]
    assert [t["team"] for t in report["teams"]] == [team["ana"].env["TEAM"]]
    admin = json.loads(run_cli("team", "status", "--database-url", postgres_server.admin_url,
                               "--json").stdout)
    assert admin["team"] is None and len(admin["teams"]) >= 2

    with_password = dict(team["ana"].env, STOCKADE_DATABASE_URL=(
        f"postgresql://{team['ana'].role}:secret@127.0.0.1:{postgres_server.port}/stockade"))
    refused = run_cli_process("runs", "list", env=with_password)
    assert refused.returncode == 1 and "contains a password" in refused.stderr
    assert "secret" not in refused.stderr

    wrong = dict(team["ana"].env, STOCKADE_TEST_KEYRING=os.devnull + ".missing")
    denied = run_cli_process("runs", "list", env=wrong)
    assert denied.returncode == 1 and "refused the login" in denied.stderr, denied.stderr


def test_team_keys_and_database_passwords_are_checked_and_never_echoed(tmp_path: Path) -> None:
    env = {"PYTHON_KEYRING_BACKEND": KEYRING,
           "STOCKADE_TEST_KEYRING": str(tmp_path / "keyring.json")}
    short = run_cli("keys", "import-team-key", "red", env=env, input="c2hvcnQ=\n")
    assert short.returncode == 2 and "32 bytes" in short.stderr
    assert "c2hvcnQ" not in short.stderr + short.stdout
    bad_team = run_cli("keys", "import-team-key", "Red Team", env=env, input="x\n")
    assert bad_team.returncode == 2 and "not a team id" in bad_team.stderr
    key = base64.b64encode(bytes(range(32))).decode()
    saved = run_cli("keys", "import-team-key", "red", "--json", env=env, input=key + "\n")
    assert saved.returncode == 0 and json.loads(saved.stdout) == {
        "team": "red", "saved": True, "generated": False}
    assert key not in saved.stdout
    assert read_keyring_file(tmp_path / "keyring.json")[("stockade", "team-key-red")] == key

    nowhere = run_cli("keys", "set-database-password", env=env, input="pw\n")
    assert nowhere.returncode == 2 and "no team database is configured" in nowhere.stderr
    session_only = run_cli("keys", "import-team-key", "red", env={
        "PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring"}, input=key + "\n")
    assert session_only.returncode == 1 and "No secure system keyring" in session_only.stderr


def test_team_commands_without_a_reachable_database_fail_clearly(tmp_path: Path) -> None:
    unused = socket.socket()
    unused.bind(("127.0.0.1", 0))
    port = unused.getsockname()[1]
    unused.close()
    url = f"postgresql://ana@127.0.0.1:{port}/stockade"
    status = run_cli("team", "status", "--database-url", url)
    assert status.returncode == 1 and "cannot connect" in status.stderr
    listed = run_cli_process("runs", "list", env={"STOCKADE_DATABASE_URL": url})
    assert listed.returncode == 1 and "cannot be reached" in listed.stderr, listed.stderr
    assert "Traceback" not in listed.stderr
