"""Retries through `stockade assist`: the real SDKs against the fake server on 127.0.0.1.

The turn loop retries a request that failed before its first event, for transient failures
only, waiting out `retry-after` or backing off with jitter; every attempt is reserved, sent and
audited like the first.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import run_cli
from tests.helpers.fake_provider import FakeProviderServer, Reply, anthropic_sse, openai_sse

MODEL = "claude-sonnet-5"
API_KEY = "sk-ant-api03-E2eRetriesKey0123456789abcdef"
OPENAI_KEY = "sk-proj-E2eRetriesKey0123456789abcdef"


@pytest.fixture
def env(server: FakeProviderServer) -> dict[str, str]:
    return {"ANTHROPIC_BASE_URL": server.url, "ANTHROPIC_API_KEY": API_KEY,
            "OPENAI_BASE_URL": f"{server.url}/v1", "OPENAI_API_KEY": OPENAI_KEY}


def assist(env: dict[str, str], model_file: Path, *extra: str) -> tuple[int, dict[str, Any], str]:
    result = run_cli("assist", model_file, "--prompt", "review", "--provider", "anthropic",
                     "--model", MODEL, "--json", *extra, env=env)
    assert API_KEY not in result.stdout + result.stderr
    return result.returncode, json.loads(result.stdout), result.stderr


def events(stockade_home: Path, run_id: str) -> list[tuple[str, dict[str, Any]]]:
    conn = sqlite3.connect(stockade_home / "stockade.db")
    try:
        rows = conn.execute("SELECT kind, payload FROM event WHERE run_id = ? ORDER BY run_seq",
                            (run_id,)).fetchall()
    finally:
        conn.close()
    return [(kind, json.loads(payload)) for kind, payload in rows]


def reservations(stockade_home: Path, run_id: str) -> list[tuple[str, int]]:
    conn = sqlite3.connect(stockade_home / "stockade.db")
    try:
        return conn.execute("SELECT status, reserved FROM reservation WHERE run_id = ? "
                            "ORDER BY created_ms, rowid", (run_id,)).fetchall()
    finally:
        conn.close()


def test_a_429_with_retry_after_is_resent_no_sooner_and_the_turn_completes(
        server: FakeProviderServer, env: dict[str, str], model_file: Path,
        stockade_home: Path) -> None:
    server.script([
        Reply.status_reply(429, {"type": "error", "error": {"type": "rate_limit_error",
                                                            "message": "slow down"}},
                           headers={"retry-after": "2"}),
        Reply.sse(anthropic_sse(text="Reviewed.", model=MODEL)),
    ])
    code, summary, stderr = assist(env, model_file)
    assert code == 0, stderr
    assert summary["outcome"] == "completed" and summary["text"] == "Reviewed."
    first, second = server.requests
    assert second.at - first.at >= 2.0
    trail = events(stockade_home, summary["run_id"])
    requests = [p for k, p in trail if k == "model.request"]
    assert [r["attempt"] for r in requests] == [1, 2]
    assert all(r["reserved_credits"] > 0 for r in requests)
    [retry] = [p for k, p in trail if k == "model.retry"]
    assert retry["status"] == 429 and retry["retry_after_ms"] == 2000 and retry["delay_ms"] == 2000
    # The failed attempt's hold was refunded; the second was settled at its usage.
    assert [s for s, _ in reservations(stockade_home, summary["run_id"])] == [
        "refunded", "settled"]


@pytest.mark.parametrize("status", [503, 529])
def test_server_trouble_and_overload_are_retried_with_a_backoff(
        server: FakeProviderServer, env: dict[str, str], model_file: Path,
        stockade_home: Path, status: int) -> None:
    server.script([
        Reply.status_reply(status, {"type": "error", "error": {"type": "overloaded_error",
                                                               "message": "busy"}}),
        Reply.sse(anthropic_sse(text="Done.", model=MODEL)),
    ])
    code, summary, stderr = assist(env, model_file)
    assert code == 0, stderr
    assert summary["outcome"] == "completed" and len(server.requests) == 2
    [retry] = [p for k, p in events(stockade_home, summary["run_id"]) if k == "model.retry"]
    assert retry["status"] == status and 0 <= retry["delay_ms"] <= 500
    first, second = server.requests
    assert second.at - first.at >= retry["delay_ms"] / 1000 - 0.01


def test_a_400_is_sent_once(server: FakeProviderServer, env: dict[str, str], model_file: Path,
                            stockade_home: Path) -> None:
    server.script([
        Reply.status_reply(400, {"type": "error", "error": {"type": "invalid_request_error",
                                                            "message": "bad"}}),
        Reply.sse(anthropic_sse(text="never", model=MODEL)),
    ])
    code, summary, _stderr = assist(env, model_file)
    assert code == 1 and summary["outcome"] == "failed" and len(server.requests) == 1
    assert "model.retry" not in [k for k, _ in events(stockade_home, summary["run_id"])]


def test_a_provider_that_always_answers_503_stops_within_the_retry_budget(
        server: FakeProviderServer, env: dict[str, str], model_file: Path,
        stockade_home: Path) -> None:
    server.script([Reply.status_reply(503, "unavailable") for _ in range(8)])
    code, summary, _stderr = assist(env, model_file)
    assert code == 1 and summary["outcome"] == "failed"
    # max_retries is 3 by default: the first attempt and three more.
    assert len(server.requests) == 4
    trail = events(stockade_home, summary["run_id"])
    assert [k for k, _ in trail].count("model.retry") == 3
    requests = [p for k, p in trail if k == "model.request"]
    assert [r["attempt"] for r in requests] == [1, 2, 3, 4]
    holds = reservations(stockade_home, summary["run_id"])
    assert len(holds) == 4 and all(status == "refunded" and reserved > 0
                                   for status, reserved in holds)


def test_openai_rate_limits_are_retried_too(server: FakeProviderServer, env: dict[str, str],
                                            model_file: Path) -> None:
    server.script([
        Reply.status_reply(429, {"error": {"type": "rate_limit_exceeded", "message": "wait"}},
                           headers={"retry-after": "1"}),
        Reply.sse(openai_sse(text="Fine.", model="gpt-5.6-sol")),
    ])
    result = run_cli("assist", model_file, "--prompt", "review", "--provider", "openai",
                     "--json", env=env)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["text"] == "Fine."
    first, second = server.requests
    assert second.at - first.at >= 1.0 and first.path == second.path == "/v1/chat/completions"
