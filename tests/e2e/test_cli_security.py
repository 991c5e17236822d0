"""Red-team scenarios through the real CLI and the official SDK against the fake provider.

Each test is one attack from the security review (issue 14): forged decisions, replayed
snapshots, audit rewrites and truncation, the user's edit overwritten by a resume. The CLI runs
in this process (`main(argv)`), sharing one STOCKADE_HOME and one file keyring as a user's app
and terminal do; the attacker works on the SQLite file and the data folder directly, as anyone
who can write the user's files could.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import run_cli
from tests.helpers.cli import CliResult
from tests.helpers.fake_provider import FakeProviderServer, Reply, anthropic_sse

GENESIS_HASH = "sha256:" + "0" * 64
MODEL = "claude-sonnet-5"
API_KEY = "sk-ant-api03-E2eSecurityKey0123456789abcdef"
DELETE_THREAT = ("toolu_del", "delete_threat", {"action": "delete_threat", "id": "threat-3"})


@pytest.fixture
def env(tmp_path: Path, server: FakeProviderServer) -> dict[str, str]:
    return {
        "PYTHON_KEYRING_BACKEND": "tests.helpers.file_keyring.FileKeyring",
        "STOCKADE_TEST_KEYRING": str(tmp_path / "keyring.json"),
        "ANTHROPIC_BASE_URL": server.url,
        "ANTHROPIC_API_KEY": API_KEY,
    }


def cli(env: dict[str, str], *args: Any, input: str | None = None) -> CliResult:
    result = run_cli(*args, env=env, input=input)
    assert API_KEY not in result.stdout + result.stderr
    return result


def assist(env: dict[str, str], model_file: Path, *extra: str,
           prompt: str = "tidy the threats") -> CliResult:
    return cli(env, "assist", model_file, "--prompt", prompt, "--provider", "anthropic",
               "--model", MODEL, "--json", *extra)


def park(server: FakeProviderServer, env: dict[str, str], model_file: Path,
         call: tuple[str, str, Any] = DELETE_THREAT, *extra: str) -> str:
    server.script([Reply.sse(anthropic_sse(tool_calls=[call], model=MODEL))])
    result = assist(env, model_file, *extra)
    assert result.returncode == 3, result.stderr
    return str(json.loads(result.stdout)["run_id"])


def db(stockade_home: Path) -> sqlite3.Connection:
    return sqlite3.connect(stockade_home / "stockade.db")


def kinds(stockade_home: Path, run_id: str) -> list[str]:
    conn = db(stockade_home)
    try:
        return [k for (k,) in conn.execute(
            "SELECT kind FROM event WHERE run_id = ? ORDER BY run_seq", (run_id,))]
    finally:
        conn.close()


def verify(env: dict[str, str], *extra: str) -> tuple[int, dict[str, Any]]:
    result = cli(env, "audit", "verify", "--json", *extra)
    return result.returncode, json.loads(result.stdout)


def drop_triggers(conn: sqlite3.Connection) -> None:
    conn.execute("DROP TRIGGER IF EXISTS event_no_update")
    conn.execute("DROP TRIGGER IF EXISTS event_no_delete")


def event_text(seq: int, run_id: str, run_seq: int, kind: str, at_ms: int, payload: str,
               prev: str) -> str:
    """An event's canonical JSON, as an attacker rebuilding the chain would write it."""
    return json.dumps({"at_ms": at_ms, "kind": kind, "payload": json.loads(payload),
                       "prev_hash": prev, "run_id": run_id, "run_seq": run_seq, "seq": seq},
                      sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def rewrite_from(stockade_home: Path, first: int, edit: Any = None, *,
                 mac_key: bytes | None = None) -> None:
    """Rewrite the chain from event `first` on, consistently: apply `edit(seq, payload)`,
    then recompute every later link and hash, as plain sha256 or as an HMAC under `mac_key`
    (an attacker's guess: the real key is in the keyring)."""
    conn = db(stockade_home)
    drop_triggers(conn)
    rows = conn.execute("SELECT seq, run_id, run_seq, kind, at_ms, payload, prev_hash FROM event "
                        "ORDER BY seq").fetchall()
    prev = GENESIS_HASH if first == 1 else conn.execute(
        "SELECT hash FROM event WHERE seq = ?", (first - 1,)).fetchone()[0]
    # The key id is no secret (every MAC names it); the key itself is only in the keyring.
    key_id = conn.execute("SELECT hash FROM event ORDER BY seq DESC LIMIT 1").fetchone()[0] \
        .split(":")[1]
    for seq, run_id, run_seq, kind, at_ms, payload, _prev in rows:
        if seq < first:
            continue
        body = json.loads(payload)
        if edit is not None:
            body = edit(seq, body)
        payload = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        text = event_text(seq, run_id, run_seq, kind, at_ms, payload, prev)
        if mac_key is None:
            stored = "sha256:" + hashlib.sha256(text.encode()).hexdigest()
        else:
            stored = f"hmac-sha256:{key_id}:" + hmac.new(mac_key, text.encode(),
                                                         "sha256").hexdigest()
        conn.execute("UPDATE event SET payload = ?, prev_hash = ?, hash = ? WHERE seq = ?",
                     (payload, prev, stored, seq))
        prev = stored
    conn.commit()
    conn.close()


# -- authorization ---------------------------------------------------------------------------


def test_a_decision_row_inserted_into_the_database_is_refused_and_nothing_runs(
    server: FakeProviderServer, env: dict[str, str], model_file: Path, stockade_home: Path
) -> None:
    before = model_file.read_text()
    run_id = park(server, env, model_file, DELETE_THREAT, "--write")
    conn = db(stockade_home)
    conn.execute("INSERT INTO decision(run_id, call_id, decision, actor, reason, decided_ms) "
                 "VALUES (?, 'toolu_del', 'approved', 'mallory', NULL, 0)", (run_id,))
    conn.commit()
    conn.close()
    server.script([Reply.sse(anthropic_sse(text="deleted", model=MODEL))])

    forged = cli(env, "runs", "resume", run_id, "--json")
    assert forged.returncode == 1
    assert "not one Stockade recorded" in forged.stderr and "toolu_del" in forged.stderr
    assert server.requests == [] and model_file.read_text() == before
    assert "tool.started" not in kinds(stockade_home, run_id)
    assert "tool.approved" not in kinds(stockade_home, run_id)
    assert json.loads(cli(env, "runs", "list", "--json").stdout)[0]["status"] == "parked"

    # The user's own decision replaces the forged row; the run then continues as decided.
    denied = cli(env, "runs", "deny", run_id, "toolu_del", "--actor", "ana")
    assert denied.returncode == 0, denied.stderr
    resumed = cli(env, "runs", "resume", run_id, "--json")
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout)["calls"][0]["status"] == "denied"
    assert model_file.read_text() == before
    assert verify(env)[0] == 0


def test_a_decision_row_edited_to_approve_a_denied_call_is_refused(
    server: FakeProviderServer, env: dict[str, str], model_file: Path, stockade_home: Path
) -> None:
    before = model_file.read_text()
    run_id = park(server, env, model_file, DELETE_THREAT, "--write")
    assert cli(env, "runs", "deny", run_id, "toolu_del", "--actor", "ana").returncode == 0
    conn = db(stockade_home)
    conn.execute("UPDATE decision SET decision = 'approved' WHERE run_id = ?", (run_id,))
    conn.commit()
    conn.close()
    server.script([Reply.sse(anthropic_sse(text="deleted", model=MODEL))])
    refused = cli(env, "runs", "resume", run_id)
    assert refused.returncode == 1 and "does not match its audit event" in refused.stderr
    assert "not one Stockade recorded" in refused.stderr
    assert server.requests == [] and model_file.read_text() == before


def test_a_stale_snapshot_put_back_after_a_resume_never_runs_the_call_twice(
    server: FakeProviderServer, env: dict[str, str], model_file: Path, stockade_home: Path
) -> None:
    run_id = park(server, env, model_file, DELETE_THREAT)
    assert cli(env, "runs", "approve", run_id, "toolu_del", "--actor", "ana").returncode == 0
    conn = db(stockade_home)
    stale = conn.execute("SELECT snapshot, seal_version FROM run WHERE run_id = ?",
                         (run_id,)).fetchone()
    conn.close()
    server.script([Reply.sse(anthropic_sse(text="deleted it", model=MODEL))])
    first = cli(env, "runs", "resume", run_id, "--json")
    assert first.returncode == 0, first.stderr
    assert kinds(stockade_home, run_id).count("tool.started") == 1

    # Roll the row back: parked again, with the snapshot that was already resumed.
    conn = db(stockade_home)
    conn.execute("UPDATE run SET status = 'parked', claimed = 0, snapshot = ?, seal_version = ?, "
                 "outcome = NULL, reason = NULL WHERE run_id = ?", (stale[0], stale[1], run_id))
    conn.commit()
    conn.close()
    server.script([Reply.sse(anthropic_sse(text="deleted it again", model=MODEL))])
    replay = cli(env, "runs", "resume", run_id, "--json")
    assert replay.returncode == 1 and "already resumed" in replay.stderr
    assert server.requests == []
    assert kinds(stockade_home, run_id).count("tool.started") == 1


def test_resume_write_back_keeps_an_edit_the_user_made_while_the_turn_ran(
    server: FakeProviderServer, env: dict[str, str], model_file: Path
) -> None:
    call = ("toolu_add", "add_threat", {"action": "add_threat", "threat": {
        "title": "Card data replay", "category": "Spoofing", "severity": "high",
        "element": "api-gateway", "description": "Replayed tokens are accepted twice."}})
    run_id = park(server, env, model_file, call, "--write")
    assert cli(env, "runs", "approve", run_id, "toolu_add", "--actor", "ana").returncode == 0
    edited = model_file.read_text().replace("Payment Processing Service", "Payments (edited)")

    def users_edit(_request: Any) -> None:
        model_file.write_text(edited)  # the user saves in their editor while the model answers

    server.script([Reply.sse(anthropic_sse(text="Added it.", model=MODEL))])
    server.on_request(users_edit)
    resumed = cli(env, "runs", "resume", run_id, "--write", "--json")
    assert resumed.returncode == 1
    assert "changed while the turn ran" in resumed.stderr
    assert model_file.read_text() == edited  # never overwritten
    conflict = model_file.with_name("model.stockade-conflict.thf")
    assert "Card data replay" in conflict.read_text()
    assert "Payments (edited)" not in conflict.read_text()


# -- the audit chain -------------------------------------------------------------------------


def _finished_runs(server: FakeProviderServer, env: dict[str, str], model_file: Path,
                   count: int = 2) -> list[str]:
    runs = []
    for i in range(count):
        server.script([
            Reply.sse(anthropic_sse(tool_calls=[(f"toolu_r{i}", "get_document_summary", {})],
                                    model=MODEL)),
            Reply.sse(anthropic_sse(text=f"summary {i}", model=MODEL))])
        result = assist(env, model_file)
        assert result.returncode == 0, result.stderr
        runs.append(json.loads(result.stdout)["run_id"])
    return runs


def _seq_of(stockade_home: Path, run_id: str, kind: str) -> int:
    conn = db(stockade_home)
    try:
        return int(conn.execute("SELECT seq FROM event WHERE run_id = ? AND kind = ? "
                                "ORDER BY seq LIMIT 1", (run_id, kind)).fetchone()[0])
    finally:
        conn.close()


def test_a_keyed_trail_verifies(server: FakeProviderServer, env: dict[str, str],
                                model_file: Path) -> None:
    _finished_runs(server, env, model_file, 1)
    code, report = verify(env)
    assert code == 0 and report["ok"] and report["keyed"] and report["legacy_events"] == 0
    human = cli(env, "audit", "verify")
    assert human.returncode == 0 and "intact (keyed)" in human.stdout


@pytest.mark.parametrize("mac_key", [None, b"guessed-key-" * 3], ids=["sha256", "guessed-hmac"])
def test_an_edited_actor_with_every_later_hash_recomputed_is_reported_at_that_event(
    server: FakeProviderServer, env: dict[str, str], model_file: Path, stockade_home: Path,
    mac_key: bytes | None
) -> None:
    runs = _finished_runs(server, env, model_file)
    target = _seq_of(stockade_home, runs[0], "tool.approved")

    def edit(seq: int, payload: dict[str, Any]) -> dict[str, Any]:
        return {**payload, "actor": "user:mallory"} if seq == target else payload

    rewrite_from(stockade_home, target, edit, mac_key=mac_key)
    code, report = verify(env)
    assert code == 1 and report["first_broken"] == target and report["run_id"] == runs[0]
    assert "without the key" in report["reason"] or "unkeyed" in report["reason"]


def test_reordered_events_are_reported(server: FakeProviderServer, env: dict[str, str],
                                       model_file: Path, stockade_home: Path) -> None:
    _finished_runs(server, env, model_file)
    conn = db(stockade_home)
    drop_triggers(conn)
    conn.execute("UPDATE event SET seq = 1000 WHERE seq = 3")
    conn.execute("UPDATE event SET seq = 3 WHERE seq = 4")
    conn.execute("UPDATE event SET seq = 4 WHERE seq = 1000")
    conn.commit()
    conn.close()
    code, report = verify(env)
    assert code == 1 and report["first_broken"] == 3


@pytest.mark.parametrize("newest", [1, 3])
def test_truncating_the_newest_events_is_reported(
    server: FakeProviderServer, env: dict[str, str], model_file: Path, stockade_home: Path,
    newest: int
) -> None:
    _finished_runs(server, env, model_file)
    conn = db(stockade_home)
    drop_triggers(conn)
    (last,) = conn.execute("SELECT MAX(seq) FROM event").fetchone()
    conn.execute("DELETE FROM event WHERE seq > ?", (last - newest,))
    conn.commit()
    conn.close()
    code, report = verify(env)
    assert code == 1 and report["first_broken"] == last - newest + 1
    assert f"newest {newest} event(s) are missing" in report["reason"]


def test_deleting_every_event_of_the_newest_run_is_reported(
    server: FakeProviderServer, env: dict[str, str], model_file: Path, stockade_home: Path
) -> None:
    runs = _finished_runs(server, env, model_file)
    conn = db(stockade_home)
    drop_triggers(conn)
    conn.execute("DELETE FROM event WHERE run_id = ?", (runs[-1],))
    conn.commit()
    conn.close()
    code, report = verify(env)
    assert code == 1 and "missing" in report["reason"]
    # ... and with the head file deleted too, the keyring's record still catches a trail that
    # was rewritten whole into the unkeyed form.
    (stockade_home / "stockade.db.audit-head").unlink()
    rewrite_from(stockade_home, 1)
    code, report = verify(env)
    assert code == 1 and report["first_broken"] == 1 and "unkeyed" in report["reason"]


def test_a_listed_run_whose_events_were_all_deleted_is_reported(
    server: FakeProviderServer, env: dict[str, str], model_file: Path, stockade_home: Path
) -> None:
    runs = _finished_runs(server, env, model_file)
    conn = db(stockade_home)
    drop_triggers(conn)
    conn.execute("DELETE FROM event WHERE run_id = ?", (runs[0],))
    conn.commit()
    conn.close()
    # The events after the hole no longer link: the first of them is named.
    code, report = verify(env)
    assert code == 1 and report["first_broken"] is not None


def test_an_unkeyed_legacy_trail_verifies_with_a_warning(
    env: dict[str, str], stockade_home: Path
) -> None:
    from stockade.governance.trajectory import EventKind, Trajectory
    from stockade.store import open_database

    database = open_database(stockade_home / "stockade.db")
    try:
        trail = Trajectory(database)  # no key: what earlier builds wrote
        trail.append("run-old", EventKind.RUN_STARTED, {"provider": "offline"})
        trail.append("run-old", EventKind.RUN_FINISHED, {"outcome": "completed"})
    finally:
        database.close()
    result = cli(env, "audit", "verify")
    assert result.returncode == 0 and "legacy, unkeyed" in result.stdout
    assert "warning" in result.stderr
    code, report = verify(env)
    assert code == 0 and not report["keyed"] and report["legacy_events"] == 2
    assert report["warnings"]


def test_an_exported_run_verifies_against_its_sealed_head_and_edits_are_caught(
    server: FakeProviderServer, env: dict[str, str], model_file: Path, tmp_path: Path
) -> None:
    run_id = _finished_runs(server, env, model_file, 1)[0]
    exported = cli(env, "audit", "export", run_id)
    assert exported.returncode == 0
    lines = exported.stdout.splitlines()
    assert json.loads(lines[-1])["export"]["chain_head"]["count"] >= len(lines) - 1
    good = tmp_path / "trail.jsonl"
    good.write_text(exported.stdout)
    code, report = verify(env, "--export", str(good))
    assert code == 0 and report["keyed"] and report["checked"] == len(lines) - 1

    edited = [json.loads(line) for line in lines[:-1]]
    edited[1]["payload"]["iteration"] = 99
    tampered = tmp_path / "edited.jsonl"
    tampered.write_text("\n".join([*map(json.dumps, edited), lines[-1]]) + "\n")
    code, report = verify(env, "--export", str(tampered))
    assert code == 1 and report["first_broken"] == edited[1]["seq"]

    cut = tmp_path / "cut.jsonl"
    cut.write_text("\n".join([*lines[:-2], lines[-1]]) + "\n")
    code, report = verify(env, "--export", str(cut))
    assert code == 1 and "removed from its end" in report["reason"]

    unsealed = tmp_path / "unsealed.jsonl"
    unsealed.write_text("\n".join(lines[:-1]) + "\n")
    code, report = verify(env, "--export", str(unsealed))
    assert code == 1 and "no sealing line" in report["reason"]
    assert cli(env, "audit", "verify", "--export", str(tmp_path / "none")).returncode == 2


def test_a_process_without_the_audit_key_appends_nothing_to_a_keyed_trail(
    server: FakeProviderServer, env: dict[str, str], model_file: Path, tmp_path: Path
) -> None:
    _finished_runs(server, env, model_file, 1)
    keyring_file = tmp_path / "keyring.json"
    saved = json.loads(keyring_file.read_text())
    keyring_file.write_text(json.dumps({k: v for k, v in saved.items()
                                        if not k.endswith("snapshot-key")}))
    server.script([Reply.sse(anthropic_sse(text="must not be asked", model=MODEL))])
    result = assist(env, model_file)
    assert result.returncode == 1 and "keyed" in result.stderr
    assert "internal error" not in result.stderr and server.requests == []
    assert cli(env, "runs", "list").returncode == 0  # reading still works
    unchecked = cli(env, "audit", "verify")
    assert unchecked.returncode == 1 and "cannot be checked here" in unchecked.stdout
    keyring_file.write_text(json.dumps(saved))
    assert verify(env)[0] == 0
    assert os.environ.get("STOCKADE_SNAPSHOT_KEY") is None


# -- files -----------------------------------------------------------------------------------


def test_fmt_and_assist_write_both_write_through_a_symlinked_model_and_keep_the_link(
    env: dict[str, str], model_file: Path, tmp_path: Path
) -> None:
    target = tmp_path / "models" / "payments.thf"
    target.parent.mkdir()
    target.write_text(model_file.read_text().replace("version: '1.0'", 'version: "1.0"', 1))
    link = tmp_path / "linked.thf"
    try:
        link.symlink_to(target)
    except OSError:
        pytest.skip("this file system cannot make symbolic links")

    formatted = cli(env, "fmt", link)
    assert formatted.returncode == 0 and "reformatted" in formatted.stdout
    assert link.is_symlink() and link.resolve() == target
    assert "version: '1.0'" in target.read_text()

    from stockade.thf.reader import read_file

    threats_before = len(read_file(target).threats)
    written = cli(env, "assist", link, "--prompt", "find threats", "--provider", "offline",
                  "--approve", "mutate", "--write", "--json")
    assert written.returncode == 0, written.stderr
    assert json.loads(written.stdout)["document"]["written"] is True
    assert link.is_symlink() and link.resolve() == target
    assert len(read_file(target).threats) > threats_before
    assert not list(tmp_path.glob(".linked.thf.*"))  # no temporary file left beside the link


def test_the_export_says_what_each_change_did_and_who_decided_while_the_database_holds_no_text(
    server: FakeProviderServer, env: dict[str, str], model_file: Path, stockade_home: Path
) -> None:
    call = ("toolu_add", "add_threat", {"action": "add_threat", "threat": {
        "title": "Card data replay", "category": "Spoofing", "severity": "high",
        "element": "api-gateway", "description": "Replayed tokens are accepted twice."}})
    run_id = park(server, env, model_file, call, "--write")
    assert cli(env, "runs", "approve", run_id, "toolu_add", "--actor", "ana").returncode == 0
    server.script([Reply.sse(anthropic_sse(text="Added it.", model=MODEL))])
    assert cli(env, "runs", "resume", run_id).returncode == 0
    events = [json.loads(line) for line in
              cli(env, "audit", "export", run_id).stdout.splitlines()[:-1]]
    [committed] = [e for e in events if e["kind"] == "document.committed"]
    assert committed["changes"] == ["Added threat 'threat-4' (Card data replay)"]
    assert committed["payload"]["changes"] == 1
    [approved] = [e for e in events if e["kind"] == "tool.approved"]
    assert approved["payload"]["actor"] == "ana" and approved["payload"]["os_user"]
    for name in ("stockade.db", "stockade.db-wal"):
        stored = stockade_home / name
        if stored.exists():
            assert b"Card data replay" not in stored.read_bytes()


# -- no secure keyring: a passphrase -----------------------------------------------------------

PASSPHRASE = "correct horse battery staple"


def _headless(env: dict[str, str], passphrase: str | None = PASSPHRASE) -> dict[str, str]:
    """keyring's `fail` backend (what a headless box has): Stockade treats it as session-only."""
    out: dict[str, Any] = {**env, "PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring",
                           "STOCKADE_SNAPSHOT_PASSPHRASE": passphrase}
    return out


def _snapshot_kind(stockade_home: Path, run_id: str) -> int:
    conn = db(stockade_home)
    try:
        (blob,) = conn.execute("SELECT snapshot FROM run WHERE run_id = ?", (run_id,)).fetchone()
    finally:
        conn.close()
    return int(blob[6])  # envelope v2: 0 = keyring key, 1 = scrypt from a passphrase


def test_without_a_secure_keyring_runs_park_and_resume_under_a_passphrase(
    server: FakeProviderServer, env: dict[str, str], model_file: Path, stockade_home: Path
) -> None:
    headless = _headless(env)
    run_id = park(server, headless, model_file, DELETE_THREAT)
    assert _snapshot_kind(stockade_home, run_id) == 1
    raw = b"".join(p.read_bytes() for p in stockade_home.rglob("*") if p.is_file())
    assert PASSPHRASE.encode() not in raw

    # Nobody to ask (stdin is not a terminal) and no variable: a clear refusal, nothing sent.
    server.script([Reply.sse(anthropic_sse(text="removed", model=MODEL))])
    unasked = cli(_headless(env, None), "runs", "approve", run_id, "toolu_del", "--actor", "ana")
    assert unasked.returncode == 1 and "STOCKADE_SNAPSHOT_PASSPHRASE" in unasked.stderr
    wrong = cli(_headless(env, "not the passphrase"), "runs", "show", run_id)
    assert wrong.returncode == 1 and "passphrase is wrong" in wrong.stderr

    assert cli(headless, "runs", "approve", run_id, "toolu_del", "--actor", "ana").returncode == 0
    resumed = cli(headless, "runs", "resume", run_id, "--json")
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout)["calls"][0]["status"] == "succeeded"
    code, report = verify(headless)
    assert code == 0 and not report["keyed"] and report["warnings"]  # no key: legacy form


def test_runs_resume_asks_for_the_passphrase_at_a_hidden_prompt(
    server: FakeProviderServer, env: dict[str, str], model_file: Path
) -> None:
    import subprocess

    from tests.e2e.conftest import cli_env, stockade_command

    pty = pytest.importorskip("pty")
    headless = _headless(env)
    run_id = park(server, headless, model_file, DELETE_THREAT)
    assert cli(headless, "runs", "approve", run_id, "toolu_del", "--actor", "ana").returncode == 0
    server.script([Reply.sse(anthropic_sse(text="removed", model=MODEL))])

    import select
    import time

    controller, terminal = pty.openpty()
    child = {**cli_env(_headless(env, None))}
    child.pop("STOCKADE_SNAPSHOT_PASSPHRASE", None)
    proc = subprocess.Popen([*stockade_command(), "runs", "resume", run_id], env=child,
                            stdin=terminal, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)
    os.close(terminal)
    assert proc.stderr is not None
    # Type only once the prompt is up: turning echo off flushes input typed before it.
    err = b""
    deadline = time.monotonic() + 120
    while b"Passphrase for parked runs" not in err and time.monotonic() < deadline:
        ready, _, _ = select.select([proc.stderr], [], [], 1.0)
        if ready:
            chunk = os.read(proc.stderr.fileno(), 4096)
            if not chunk:
                break
            err += chunk
    os.write(controller, (PASSPHRASE + "\n").encode())
    out, rest = proc.communicate(timeout=120)
    err += rest
    echoed = b""
    try:
        while select.select([controller], [], [], 0.2)[0]:
            chunk = os.read(controller, 4096)
            if not chunk:
                break
            echoed += chunk
    except OSError:
        pass  # the terminal closed with the child
    finally:
        os.close(controller)
    assert proc.returncode == 0, err.decode()
    assert b"Passphrase for parked runs" in err
    assert PASSPHRASE.encode() not in out + err + echoed  # typed, never shown
    assert len(server.requests) == 1


# -- expiry ----------------------------------------------------------------------------------


def test_parked_runs_expire_are_listed_as_expired_and_never_resumed(
    server: FakeProviderServer, env: dict[str, str], model_file: Path, stockade_home: Path
) -> None:
    (stockade_home / "settings.json").write_text(json.dumps({"parked_run_days": 2}))
    old, fresh = (park(server, env, model_file, DELETE_THREAT) for _ in range(2))
    for run_id in (old, fresh):
        assert cli(env, "runs", "approve", run_id, "toolu_del", "--actor", "ana").returncode == 0
    conn = db(stockade_home)
    conn.execute("UPDATE run SET updated_ms = updated_ms - ? WHERE run_id = ?",
                 (3 * 24 * 3600 * 1000, old))  # parked three days ago
    conn.commit()
    conn.close()
    server.script([Reply.sse(anthropic_sse(text="deleted", model=MODEL))])
    refused = cli(env, "runs", "resume", old)
    assert refused.returncode == 1 and "expired" in refused.stderr and server.requests == []
    listed = {r["run_id"]: r for r in json.loads(cli(env, "runs", "list", "--json").stdout)}
    assert listed[old]["status"] == "expired" and listed[fresh]["status"] == "parked"
    only = json.loads(cli(env, "runs", "list", "--status", "expired", "--json").stdout)
    assert [r["run_id"] for r in only] == [old]
    # The sweep finished it and dropped its sealed snapshot; it stays expired for good.
    conn = db(stockade_home)
    assert conn.execute("SELECT snapshot FROM run WHERE run_id = ?", (old,)).fetchone() == (None,)
    conn.close()
    assert "run.finished" in kinds(stockade_home, old)
    again = cli(env, "runs", "resume", old)
    assert again.returncode == 1 and "expired" in again.stderr
    assert cli(env, "runs", "resume", fresh).returncode == 0
    assert verify(env)[0] == 0


def test_a_turn_that_waits_after_a_write_conflict_is_left_parked_on_its_own_copy(
    server: FakeProviderServer, env: dict[str, str], model_file: Path
) -> None:
    add = ("toolu_add", "add_threat", {"action": "add_threat", "threat": {
        "title": "Card data replay", "category": "Spoofing", "severity": "high",
        "element": "api-gateway", "description": "Replayed tokens are accepted twice."}})
    edited = model_file.read_text().replace("Payment Processing Service", "Payments (edited)")
    requests = 0

    def users_edit(_request: Any) -> None:
        nonlocal requests
        requests += 1
        if requests == 2:  # the user saves while the model works on its second step
            model_file.write_text(edited)

    server.script([Reply.sse(anthropic_sse(tool_calls=[add], model=MODEL)),
                   Reply.sse(anthropic_sse(tool_calls=[DELETE_THREAT], model=MODEL))])
    server.on_request(users_edit)
    parked = assist(env, model_file, "--approve", "mutate", "--write")
    assert parked.returncode == 3, parked.stderr  # the delete waits; the add was committed
    assert "changed while the turn ran" in parked.stderr
    conflict = model_file.with_name("model.stockade-conflict.thf")
    assert model_file.read_text() == edited and "Card data replay" in conflict.read_text()
    run_id = json.loads(parked.stdout)["run_id"]
    assert cli(env, "runs", "approve", run_id, "toolu_del", "--actor", "ana").returncode == 0

    # Resuming on the user's edit would overwrite it with the turn's document: refused.
    server.script([Reply.sse(anthropic_sse(text="Done.", model=MODEL))])
    refused = cli(env, "runs", "resume", run_id, "--write")
    assert refused.returncode == 1 and "stockade-conflict.thf" in refused.stderr
    assert model_file.read_text() == edited and server.requests == []
    # Adopting the turn's copy lets it continue there.
    model_file.write_text(conflict.read_text())
    resumed = cli(env, "runs", "resume", run_id, "--write", "--json")
    assert resumed.returncode == 0, resumed.stderr
    final = model_file.read_text()
    assert "Card data replay" in final and "threat-3" not in final
