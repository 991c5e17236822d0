"""Endpoints as a real setting: `--base-url` on `assist` and `runs resume` for every HTTP
provider, unsafe URLs refused, no environment switch, and write-backs in the audit trail."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from stockade.thf.canonical import digest
from stockade.thf.digest import document_digest
from stockade.thf.reader import read_file
from tests.e2e.conftest import run_cli
from tests.helpers.fake_provider import FakeProviderServer, Reply, anthropic_sse, openai_sse

KEYS = {"ANTHROPIC_API_KEY": "sk-ant-api03-EndpointKey0123456789abcd",
        "OPENAI_API_KEY": "sk-proj-EndpointKey0123456789abcdef"}
NO_ENDPOINT_ENV: dict[str, str | None] = {"ANTHROPIC_BASE_URL": None, "OPENAI_BASE_URL": None}
ADD_THREAT = {"action": "add_threat", "threat": {
    "title": "Card data replay", "category": "Spoofing", "severity": "high",
    "element": "api-gateway", "description": "Replayed card tokens are accepted twice."}}


@pytest.fixture
def second() -> Iterator[FakeProviderServer]:
    with FakeProviderServer() as fake:
        yield fake


def env() -> dict[str, str | None]:
    return {**KEYS, **NO_ENDPOINT_ENV}


def reply(provider: str, *, text: str | None = None,
          call: tuple[str, str, Any] | None = None) -> Reply:
    calls = [call] if call else []
    if provider == "anthropic":
        return Reply.sse(anthropic_sse(text=text, tool_calls=calls, model="claude-sonnet-5"))
    return Reply.sse(openai_sse(text=text, tool_calls=calls, model="m"))


def base_url(provider: str, server: FakeProviderServer) -> str:
    return server.url if provider == "anthropic" else f"{server.url}/v1"


def trail(stockade_home: Path, run_id: str) -> list[tuple[str, dict[str, Any]]]:
    conn = sqlite3.connect(stockade_home / "stockade.db")
    try:
        rows = conn.execute("SELECT kind, payload FROM event WHERE run_id = ? ORDER BY run_seq",
                            (run_id,)).fetchall()
    finally:
        conn.close()
    return [(k, json.loads(p)) for k, p in rows]


@pytest.mark.parametrize("provider", ["anthropic", "openai", "local"])
def test_base_url_reaches_the_server_on_assist_and_on_resume(
        provider: str, server: FakeProviderServer, second: FakeProviderServer, model_file: Path,
        stockade_home: Path) -> None:
    model = ["--model", "llama3.1"] if provider == "local" else []
    server.script([reply(provider, call=("call_1", "add_threat", ADD_THREAT))])
    parked = run_cli("assist", model_file, "--prompt", "find threats", "--provider", provider,
                     *model, "--base-url", base_url(provider, server), "--write", "--json",
                     env=env())
    assert parked.returncode == 3, parked.stderr
    run_id = json.loads(parked.stdout)["run_id"]
    assert len(server.requests) == 1
    started = trail(stockade_home, run_id)[0]
    assert started == ("run.started", {**started[1], "endpoint": base_url(provider, server)})

    assert run_cli("runs", "approve", run_id, "call_1", "--actor", "ana",
                   env=env()).returncode == 0
    second.script([reply(provider, text="Added.")])
    resumed = run_cli("runs", "resume", run_id, "--base-url", base_url(provider, second),
                      "--json", env=env())
    assert resumed.returncode == 0, resumed.stderr
    summary = json.loads(resumed.stdout)
    assert summary["outcome"] == "completed" and summary["document"]["written"] is True
    assert len(second.requests) == 1 and len(server.requests) == 1
    events = trail(stockade_home, run_id)
    [resumed_event] = [p for k, p in events if k == "run.resumed"]
    assert resumed_event["endpoint"] == base_url(provider, second)
    # The resume wrote the file, and said so in the trail before closing the run.
    kinds = [k for k, _ in events]
    assert kinds[-2:] == ["document.written", "run.finished"]
    [written] = [p for k, p in events if k == "document.written"]
    assert written["path_digest"] == digest(str(model_file.resolve()))
    assert written["document_digest"] == document_digest(read_file(model_file))
    assert "Card data replay" in model_file.read_text()


@pytest.mark.parametrize("url", ["http://gateway.example.com/v1", "https://key:secret@gw.example",
                                 "ftp://127.0.0.1/"])
def test_an_unsafe_base_url_is_a_usage_error_before_anything_runs(
        url: str, model_file: Path, stockade_home: Path) -> None:
    result = run_cli("assist", model_file, "--prompt", "x", "--provider", "openai",
                     "--base-url", url, env=env())
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "--base-url" in result.stderr
    assert not (stockade_home / "stockade.db").exists()
    resume = run_cli("runs", "resume", "run-x", "--base-url", url, env=env())
    assert resume.returncode == 2 and "--base-url" in resume.stderr


def test_plain_http_to_another_machine_says_why(model_file: Path) -> None:
    result = run_cli("assist", model_file, "--prompt", "x", "--provider", "anthropic",
                     "--base-url", "http://gateway.example.com", env=env())
    assert result.returncode == 2 and "unencrypted" in result.stderr


def test_the_sdk_endpoint_variable_is_honoured_and_checked(
        server: FakeProviderServer, model_file: Path) -> None:
    server.script([reply("openai", text="Hello.")])
    ok = run_cli("assist", model_file, "--prompt", "x", "--provider", "openai", "--json",
                 env={**env(), "OPENAI_BASE_URL": f"{server.url}/v1"})
    assert ok.returncode == 0, ok.stderr and len(server.requests) == 1
    bad = run_cli("assist", model_file, "--prompt", "x", "--provider", "openai",
                  env={**env(), "OPENAI_BASE_URL": "http://proxy.example.com/v1"})
    assert bad.returncode == 2 and "OPENAI_BASE_URL" in bad.stderr


def test_no_test_switch_redirects_a_provider(server: FakeProviderServer, model_file: Path,
                                             stockade_home: Path) -> None:
    # The first release honoured STOCKADE_TESTING + STOCKADE_TEST_API_BASE. A 1-credit budget
    # stops the turn before any request is sent, so nothing leaves the machine here.
    result = run_cli("assist", model_file, "--prompt", "x", "--provider", "anthropic",
                     "--budget", "1", "--json",
                     env={**env(), "STOCKADE_TESTING": "1",
                          "STOCKADE_TEST_API_BASE": server.url})
    summary = json.loads(result.stdout)
    assert summary["outcome"] == "bounded" and server.requests == []
    started = trail(stockade_home, summary["run_id"])[0][1]
    assert started["endpoint"] == "https://api.anthropic.com"


def test_assist_write_is_recorded_as_document_written(model_file: Path,
                                                      stockade_home: Path) -> None:
    result = run_cli("assist", model_file, "--prompt", "find threats", "--provider", "offline",
                     "--approve", "mutate", "--write", "--json", env=env())
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert summary["document"]["written"] is True
    events = trail(stockade_home, summary["run_id"])
    assert [k for k, _ in events][-2:] == ["document.written", "run.finished"]
    [written] = [p for k, p in events if k == "document.written"]
    assert written["path_digest"] == digest(str(model_file.resolve()))
    assert written["document_digest"] == summary["document"]["digest"] == document_digest(
        read_file(model_file))
