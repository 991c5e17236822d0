"""Governance through the real CLI: assist, runs, audit — against the fake provider server.

Commands run through `main(argv)` in this process (`run_cli`), sharing one temporary
STOCKADE_HOME and one test file keyring as a user's app and terminal share the real ones; the
official SDK talks HTTP to the fake server on 127.0.0.1, reached through `ANTHROPIC_BASE_URL`
exactly as a user's gateway would be. Real processes are used where the process boundary is
the point: two concurrent resumes, and kill -9 in the middle of a turn.
"""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import cli_env, run_cli, stockade_command
from tests.helpers.cli import CliResult
from tests.helpers.fake_provider import FakeProviderServer, Reply, anthropic_sse
from tests.helpers.file_keyring import read_keyring_file

MODEL = "claude-sonnet-5"
API_KEY = "sk-ant-api03-E2eGovernanceKey0123456789"


@pytest.fixture
def env(tmp_path: Path, server: FakeProviderServer) -> dict[str, str]:
    return {
        "PYTHON_KEYRING_BACKEND": "tests.helpers.file_keyring.FileKeyring",
        "STOCKADE_TEST_KEYRING": str(tmp_path / "keyring.json"),
        "ANTHROPIC_BASE_URL": server.url,
        "ANTHROPIC_API_KEY": API_KEY,
    }


def cli(env: dict[str, str], *args: Any) -> CliResult:
    result = run_cli(*args, env=env)
    assert API_KEY not in result.stdout + result.stderr
    return result


def assist(
    env: dict[str, str], model_file: Path, *extra: str, prompt: str = "review the payment flows"
) -> CliResult:
    return cli(
        env,
        "assist",
        model_file,
        "--prompt",
        prompt,
        "--provider",
        "anthropic",
        "--model",
        MODEL,
        "--json",
        *extra,
    )


def as_json(result: CliResult | subprocess.CompletedProcess[str]) -> Any:
    assert result.stdout, result.stderr
    return json.loads(result.stdout)


def add_threat_call(
    call_id: str = "toolu_1", title: str = "Card data replay"
) -> tuple[str, str, Any]:
    return (
        call_id,
        "add_threat",
        {
            "action": "add_threat",
            "threat": {
                "title": title,
                "category": "Spoofing",
                "severity": "high",
                "element": "api-gateway",
                "description": "Replayed card tokens are accepted twice.",
            },
        },
    )


def db_path(stockade_home: Path) -> Path:
    return stockade_home / "stockade.db"


def audit_kinds(stockade_home: Path, run_id: str) -> list[str]:
    """The run's audit event kinds in order, read straight from the database."""
    conn = sqlite3.connect(db_path(stockade_home))
    try:
        rows = conn.execute("SELECT kind FROM event WHERE run_id = ? ORDER BY run_seq",
                            (run_id,)).fetchall()
    finally:
        conn.close()
    return [kind for (kind,) in rows]


def chain_verifies(env: dict[str, str]) -> bool:
    """`stockade audit verify`: the keyed chain, its anchor and every run's events."""
    return cli(env, "audit", "verify").returncode == 0


def approve(env: dict[str, str], run_id: str, call_id: str) -> None:
    """`stockade runs approve` (the decision is authenticated with the run's snapshot key)."""
    result = cli(env, "runs", "approve", run_id, call_id, "--actor", "ana")
    assert result.returncode == 0, result.stderr


def ledger_balanced(stockade_home: Path) -> bool:
    conn = sqlite3.connect(db_path(stockade_home))
    try:
        open_count, reserved, settled, released = conn.execute(
            "SELECT SUM(status = 'open'), COALESCE(SUM(reserved), 0), "
            "COALESCE(SUM(settled), 0), COALESCE(SUM(released), 0) FROM reservation"
        ).fetchone()
        return (open_count or 0) == 0 and reserved == settled + released
    finally:
        conn.close()


def test_assist_meters_a_text_turn_then_is_bounded_by_credits_and_never_overspends(
    server: FakeProviderServer, env: dict[str, str], model_file: Path, stockade_home: Path
) -> None:
    server.script(
        [
            Reply.sse(
                anthropic_sse(text="The payment flow lacks mTLS.", usage=(1200, 40), model=MODEL)
            )
        ]
    )
    result = assist(env, model_file)
    assert result.returncode == 0, result.stderr
    summary = as_json(result)
    assert summary["outcome"] == "completed" and summary["text"] == "The payment flow lacks mTLS."
    assert summary["usage"] == {"input_tokens": 1200, "output_tokens": 40}
    assert summary["credits_spent"] == 36 + 6  # $3/MTok in, $15/MTok out, rounded up per leg
    assert set(summary) >= {
        "run_id",
        "outcome",
        "reason",
        "iterations",
        "calls",
        "violations",
        "text",
        "usage",
        "credits_spent",
        "document",
    }
    assert summary["document"]["written"] is False
    assert len(server.requests) == 1 and ledger_balanced(stockade_home)

    # The same prompt over the same file reserves the same first hold, so a budget 20 credits
    # above it lets one request through but not the second, which carries a tool result.
    conn = sqlite3.connect(db_path(stockade_home))
    try:
        (first_hold,) = conn.execute(
            "SELECT reserved FROM reservation WHERE run_id = ?", (summary["run_id"],)
        ).fetchone()
    finally:
        conn.close()
    budget = first_hold + 20
    server.script(
        [
            Reply.sse(
                anthropic_sse(tool_calls=[("toolu_1", "get_document_summary", {})], model=MODEL)
            ),
            Reply.sse(anthropic_sse(text="never sent", model=MODEL)),
        ]
    )
    result = assist(env, model_file, "--budget", str(budget))
    bounded = as_json(result)
    assert result.returncode == 0, result.stderr
    assert bounded["outcome"] == "bounded" and bounded["reason"] == "credits"
    assert 0 < bounded["credits_spent"] <= budget
    # `script` forgot the first turn's request: this turn sent one, never the second.
    assert len(server.requests) == 1 and ledger_balanced(stockade_home)


def test_assist_with_the_offline_provider_adds_threats_and_writes_them(
    env: dict[str, str], model_file: Path
) -> None:
    from stockade.thf.reader import read_file

    before = model_file.read_text()
    threats_before = len(read_file(model_file).threats)
    result = cli(
        env,
        "assist",
        model_file,
        "--prompt",
        "find threats",
        "--provider",
        "offline",
        "--approve",
        "mutate",
        "--write",
        "--json",
    )
    assert result.returncode == 0, result.stderr
    summary = as_json(result)
    assert summary["outcome"] in ("completed", "bounded") and summary["credits_spent"] == 0
    assert summary["document"]["written"] is True
    assert model_file.read_text() != before
    # What `stockade validate` runs: the file reads back valid, with the new threats in it.
    assert len(read_file(model_file).threats) > threats_before


def test_assist_is_bounded_by_max_iterations(
    server: FakeProviderServer, env: dict[str, str], model_file: Path
) -> None:
    summary_call = ("toolu_{}", "get_document_summary", {"action": "get_document_summary"})
    server.script(
        [
            Reply.sse(
                anthropic_sse(
                    tool_calls=[(summary_call[0].format(i), summary_call[1], {})], model=MODEL
                )
            )
            for i in range(4)
        ]
    )
    result = assist(env, model_file, "--max-iterations", "2")
    summary = as_json(result)
    assert result.returncode == 0, result.stderr
    assert summary["outcome"] == "bounded" and summary["reason"] == "iterations"
    assert summary["iterations"] == 2 and len(server.requests) == 2


def _park(
    server: FakeProviderServer, env: dict[str, str], model_file: Path, *extra: str
) -> dict[str, Any]:
    server.script([Reply.sse(anthropic_sse(tool_calls=[add_threat_call()], model=MODEL))])
    result = assist(env, model_file, *extra)
    assert result.returncode == 3, result.stderr
    summary = as_json(result)
    assert summary["outcome"] == "parked"
    assert [c["status"] for c in summary["calls"]] == ["pending"]
    return summary


def test_parked_run_is_approved_from_another_process_and_resumed(
    server: FakeProviderServer,
    env: dict[str, str],
    model_file: Path,
    stockade_home: Path,
    tmp_path: Path,
) -> None:
    parked = _park(server, env, model_file, "--write")
    run_id = parked["run_id"]
    assert "snapshot-key" in {u for (_s, u) in read_keyring_file(tmp_path / "keyring.json")}
    raw = db_path(stockade_home).read_bytes()
    assert b"Card data replay" not in raw  # the sealed snapshot holds the input encrypted

    shown = cli(env, "runs", "show", run_id)
    assert shown.returncode == 0 and "add_threat" in shown.stdout
    assert "Card data replay" in shown.stdout  # summary and decrypted input

    approved = cli(env, "runs", "approve", run_id, "toolu_1", "--actor", "ana")
    assert approved.returncode == 0, approved.stderr
    again = as_json(cli(env, "runs", "approve", run_id, "toolu_1", "--actor", "ana", "--json"))
    assert again["already_recorded"] is True

    server.script([Reply.sse(anthropic_sse(text="Added the replay threat.", model=MODEL))])
    resumed = cli(env, "runs", "resume", run_id, "--json")
    assert resumed.returncode == 0, resumed.stderr
    summary = as_json(resumed)
    assert summary["run_id"] == run_id and summary["outcome"] == "completed"
    assert summary["calls"][0]["status"] == "succeeded"
    assert summary["document"]["written"] is True
    assert "Card data replay" in model_file.read_text()

    events = audit_kinds(stockade_home, run_id)
    assert events.count("tool.approved") == 1
    assert events[-1] == "run.finished" and "run.parked" in events and "run.resumed" in events
    assert chain_verifies(env)
    assert ledger_balanced(stockade_home)


def test_parked_run_denied_then_resumed_never_runs_the_call(
    server: FakeProviderServer, env: dict[str, str], model_file: Path
) -> None:
    before = model_file.read_text()
    run_id = _park(server, env, model_file, "--write")["run_id"]
    denied = cli(env, "runs", "deny", run_id, "toolu_1", "--actor", "ana", "--reason", "dup")
    assert denied.returncode == 0, denied.stderr
    conflict = cli(env, "runs", "approve", run_id, "toolu_1", "--actor", "bob")
    assert conflict.returncode == 1 and "already denied" in conflict.stderr
    server.script([Reply.sse(anthropic_sse(text="Understood, no change.", model=MODEL))])
    summary = as_json(cli(env, "runs", "resume", run_id, "--json"))
    assert summary["outcome"] == "completed"
    assert summary["calls"][0]["status"] == "denied"
    assert model_file.read_text() == before


def test_resume_refuses_a_changed_document_a_missing_key_and_a_tampered_snapshot(
    server: FakeProviderServer, env: dict[str, str], model_file: Path, stockade_home: Path,
    tmp_path: Path
) -> None:
    run_id = _park(server, env, model_file)["run_id"]
    approve(env, run_id, "toolu_1")
    server.script([Reply.sse(anthropic_sse(text="must not be asked", model=MODEL))])

    original = model_file.read_text()
    model_file.write_text(original.replace("Payment", "Billing", 1))
    changed = cli(env, "runs", "resume", run_id)
    assert changed.returncode == 1 and "changed" in changed.stderr
    model_file.write_text(original)

    keyring_file = tmp_path / "keyring.json"
    saved_keys = keyring_file.read_text()
    keyring_file.write_text(json.dumps({k: v for k, v in json.loads(saved_keys).items()
                                        if not k.endswith("snapshot-key")}))
    missing = cli(env, "runs", "resume", run_id)
    assert missing.returncode == 1 and "keyring" in missing.stderr
    keyring_file.write_text(saved_keys)

    conn = sqlite3.connect(db_path(stockade_home))
    blob = bytearray(conn.execute("SELECT snapshot FROM run WHERE run_id = ?",
                                  (run_id,)).fetchone()[0])
    blob[40] ^= 0x55
    conn.execute("UPDATE run SET snapshot = ? WHERE run_id = ?", (bytes(blob), run_id))
    conn.commit()
    conn.close()
    tampered = cli(env, "runs", "resume", run_id, "--json")
    assert tampered.returncode == 1 and "altered" in tampered.stderr

    assert server.requests == []  # nothing ran on any refusal
    listed = as_json(cli(env, "runs", "list", "--json"))
    assert listed[0]["status"] == "parked" and listed[0]["pending"] == ["toolu_1"]


def test_two_concurrent_resumes_run_the_turn_once(
    server: FakeProviderServer, env: dict[str, str], model_file: Path, stockade_home: Path
) -> None:
    run_id = _park(server, env, model_file)["run_id"]
    approve(env, run_id, "toolu_1")
    server.script(
        [
            Reply.sse(anthropic_sse(text="done", model=MODEL)),
            Reply.sse(anthropic_sse(text="done twice?", model=MODEL)),
        ]
    )
    procs = [
        subprocess.Popen(
            [*stockade_command(), "runs", "resume", run_id, "--json"],
            env=cli_env(env),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    codes = sorted(p.wait(120) for p in procs)
    for p in procs:
        p.communicate()
    assert codes == [0, 1]
    assert len(server.requests) == 1


def test_audit_verify_detects_a_tampered_trajectory(
    env: dict[str, str], stockade_home: Path
) -> None:
    # A short trail written in this process: the CLI's verify of real turns' trails is shown
    # by the park/resume and kill tests here and in test_reliability.py.
    from stockade.governance.trajectory import EventKind, Trajectory
    from stockade.store import open_database

    db = open_database(db_path(stockade_home))
    try:
        trail = Trajectory(db)
        trail.append("run-t", EventKind.RUN_STARTED, {"provider": "anthropic", "model": MODEL})
        trail.append("run-t", EventKind.MODEL_REQUEST, {"iteration": 1})
        trail.append("run-t", EventKind.RUN_FINISHED, {"outcome": "completed"})
    finally:
        db.close()
    assert chain_verifies(env)
    conn = sqlite3.connect(db_path(stockade_home))
    with pytest.raises(sqlite3.IntegrityError):
        conn.execute("UPDATE event SET payload = '{}' WHERE seq = 2")
    conn.execute("DROP TRIGGER event_no_update")
    conn.execute("UPDATE event SET payload = '{\"iteration\":7}' WHERE seq = 2")
    conn.commit()
    conn.close()
    result = cli(env, "audit", "verify", "--json")
    assert result.returncode == 1
    report = as_json(result)
    assert report["ok"] is False and report["first_broken"] == 2
    human = cli(env, "audit", "verify")
    assert human.returncode == 1 and "event 2" in human.stdout


def test_kill_9_mid_turn_leaves_a_consistent_database_and_an_interrupted_run(
    server: FakeProviderServer, env: dict[str, str], model_file: Path, stockade_home: Path
) -> None:
    # The stream starts but never ends: the CLI sits inside a reserved, unsettled request.
    server.script(
        [Reply.sse(anthropic_sse(text="thinking", model=MODEL, terminal=False), stall=True)]
    )
    proc = subprocess.Popen(
        [
            *stockade_command(),
            "assist",
            str(model_file),
            "--prompt",
            "go",
            "--provider",
            "anthropic",
            "--model",
            MODEL,
        ],
        env=cli_env(env),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    while not server.requests and time.monotonic() < deadline:
        time.sleep(0.05)
    assert server.requests, "the CLI never reached the provider"
    time.sleep(0.3)
    proc.send_signal(signal.SIGKILL)
    proc.wait(30)

    conn = sqlite3.connect(db_path(stockade_home))
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert conn.execute("SELECT COUNT(*) FROM reservation WHERE status = 'open'").fetchone()[0] == 1
    conn.close()

    runs = as_json(cli(env, "runs", "list", "--json"))  # the next start recovers
    assert [r["status"] for r in runs] == ["interrupted"]
    assert ledger_balanced(stockade_home)
    verify = cli(env, "audit", "verify")
    assert verify.returncode == 0, verify.stdout
    *lines, sealing = cli(env, "audit", "export", runs[0]["run_id"]).stdout.splitlines()
    events = [json.loads(line)["kind"] for line in lines]
    assert json.loads(sealing)["export"]["events"] == len(events)
    assert events[-1] == "run.interrupted"
    assert cli(env, "runs", "resume", runs[0]["run_id"]).returncode == 1


def test_a_damaged_database_file_gives_a_clear_error(
    env: dict[str, str], stockade_home: Path
) -> None:
    db_path(stockade_home).write_bytes(b"not a database at all\n" * 500)
    result = cli(env, "runs", "list")
    assert result.returncode == 1
    assert "Move it aside" in result.stderr and "stockade.db" in result.stderr
    assert "Traceback" not in result.stderr
