"""Triage from a terminal: bulk decisions on a parked run with the actor per call, denial
reasons reaching the model, policy denials marked as such, the declined-proposal memory
across runs, and what `runs list|show|resume` print — through the real `main(argv)`."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.test_cli_governance import (
    API_KEY,
    MODEL,
    add_threat_call,
    as_json,
    audit_kinds,
    cli,
)
from tests.helpers.fake_provider import FakeProviderServer, Reply, anthropic_sse
from tests.unit.catalog.samples import SAMPLES


@pytest.fixture
def env(tmp_path: Path, server: FakeProviderServer) -> dict[str, str]:
    return {
        "PYTHON_KEYRING_BACKEND": "tests.helpers.file_keyring.FileKeyring",
        "STOCKADE_TEST_KEYRING": str(tmp_path / "keyring.json"),
        "ANTHROPIC_BASE_URL": server.url,
        "ANTHROPIC_API_KEY": API_KEY,
    }


def _delete(call_id: str, threat_id: str) -> tuple[str, str, Any]:
    return (call_id, "delete_threat", {"action": "delete_threat", "id": threat_id})


def _park_three(server: FakeProviderServer, env: dict[str, str], model_file: Path,
                *extra: str) -> str:
    server.script([Reply.sse(anthropic_sse(tool_calls=[
        add_threat_call("toolu_1", "Card data replay"),
        add_threat_call("toolu_2", "Webhook forgery"),
        _delete("toolu_3", "threat-3")], model=MODEL))])
    result = cli(env, "assist", model_file, "--prompt", "triage", "--provider", "anthropic",
                 "--model", MODEL, "--json", *extra)
    assert result.returncode == 3, result.stderr
    return str(as_json(result)["run_id"])


def _tool_results(server: FakeProviderServer, request: int) -> dict[str, str]:
    found = {}
    for message in server.requests[request].body["messages"]:
        if message["role"] == "user" and isinstance(message["content"], list):
            for block in message["content"]:
                if block.get("type") == "tool_result":
                    content = block["content"]
                    found[block["tool_use_id"]] = content if isinstance(content, str) else \
                        "".join(p.get("text", "") for p in content)
    return found


def test_bulk_approve_skips_destructive_calls_and_bulk_deny_carries_the_reason(
    server: FakeProviderServer, env: dict[str, str], model_file: Path
) -> None:
    run_id = _park_three(server, env, model_file, "--write")
    listed = cli(env, "runs", "list")
    assert listed.stdout.splitlines()[0].split() == ["RUN", "STATUS", "OUTCOME", "UPDATED",
                                                     "DOCUMENT", "WAITING", "ON"]
    shown = cli(env, "runs", "show", run_id)
    assert "call toolu_1 (undecided): add_threat on api-gateway, severity high" in shown.stdout
    assert "Added threat 'threat-4' (Card data replay)" in shown.stdout
    assert "Added threat 'threat-5' (Webhook forgery)" in shown.stdout  # the real next id
    assert "call toolu_3 (undecided): delete_threat on threat-3 [destructive]" in shown.stdout
    assert f"stockade runs approve {run_id} --all-non-destructive --actor NAME" in shown.stdout

    approved = cli(env, "runs", "approve", run_id, "--all-non-destructive", "--actor", "ana",
                   "--json")
    assert approved.returncode == 0, approved.stderr
    result = as_json(approved)
    assert [c["call_id"] for c in result["calls"]] == ["toolu_1", "toolu_2"]
    assert result["undecided"] == ["toolu_3"] and result["actor"] == "ana"
    again = cli(env, "runs", "approve", run_id, "--all-non-destructive", "--actor", "ana")
    assert again.returncode == 1
    assert "toolu_3 not approved: delete_threat is destructive" in again.stdout

    denied = cli(env, "runs", "deny", run_id, "--all", "--actor", "bob", "--reason",
                 "keep threat-3 until the audit")
    assert denied.returncode == 0, denied.stderr
    assert denied.stdout.splitlines()[0] == "toolu_3 denied (delete_threat)"
    shown = cli(env, "runs", "show", run_id, "--json")
    decisions = {d["call_id"]: (d["decision"], d["actor"], d["reason"])
                 for d in as_json(shown)["decisions"]}
    assert decisions == {"toolu_1": ("approved", "ana", None),
                         "toolu_2": ("approved", "ana", None),
                         "toolu_3": ("denied", "bob", "keep threat-3 until the audit")}

    server.script([Reply.sse(anthropic_sse(text="Added two, kept threat-3.", model=MODEL))])
    summary = as_json(cli(env, "runs", "resume", run_id, "--json"))
    assert [(c["id"], c["status"], c["denial"]) for c in summary["calls"]] == [
        ("toolu_1", "succeeded", None), ("toolu_2", "succeeded", None),
        ("toolu_3", "denied", "user_declined")]
    assert _tool_results(server, -1)["toolu_3"] == (
        'Not run: the user declined this action. Their reason: "keep threat-3 until the audit"')
    text = model_file.read_text()
    assert "Card data replay" in text and "Webhook forgery" in text and "threat-3" in text


def test_bulk_decisions_need_a_call_or_the_flag_and_not_both(
    env: dict[str, str], model_file: Path
) -> None:
    neither = cli(env, "runs", "approve", "run-x", "--actor", "ana")
    assert neither.returncode == 2 and "--all-non-destructive" in neither.stderr
    both = cli(env, "runs", "deny", "run-x", "toolu_1", "--all", "--actor", "ana")
    assert both.returncode == 2 and "not both" in both.stderr


def test_approve_deny_policy_denials_are_policy_denials(
    server: FakeProviderServer, env: dict[str, str], model_file: Path, stockade_home: Path
) -> None:
    server.script([Reply.sse(anthropic_sse(tool_calls=[add_threat_call()], model=MODEL)),
                   Reply.sse(anthropic_sse(text="Nothing changed.", model=MODEL))])
    result = cli(env, "assist", model_file, "--prompt", "triage", "--provider", "anthropic",
                 "--model", MODEL, "--approve", "deny", "--json")
    summary = as_json(result)
    assert [(c["status"], c["denial"]) for c in summary["calls"]] == [("denied",
                                                                      "policy_denied")]
    told = _tool_results(server, 1)["toolu_1"]
    assert "approval policy" in told and "user" not in told
    assert "tool.denied" in audit_kinds(stockade_home, summary["run_id"])


def test_resuming_a_run_started_without_write_says_the_file_was_not_written(
    server: FakeProviderServer, env: dict[str, str], model_file: Path
) -> None:
    before = model_file.read_text()
    run_id = _park_three(server, env, model_file)
    cli(env, "runs", "approve", run_id, "--all-non-destructive", "--actor", "ana")
    cli(env, "runs", "deny", run_id, "toolu_3", "--actor", "ana")
    server.script([Reply.sse(anthropic_sse(text="Done.", model=MODEL))])
    resumed = cli(env, "runs", "resume", run_id)
    assert resumed.returncode == 0, resumed.stderr
    assert "was not written" in resumed.stderr and "--write" in resumed.stderr
    assert "discarded" in resumed.stderr
    assert model_file.read_text() == before


def test_the_offline_engine_does_not_propose_what_was_denied_from_the_terminal(
    env: dict[str, str], tmp_path: Path
) -> None:
    shop = tmp_path / "shop.thf"
    shutil.copy(SAMPLES / "ecommerce-platform.thf", shop)
    first = as_json(cli(env, "assist", shop, "--prompt", "propose missing threats",
                        "--provider", "offline", "--json"))
    assert first["outcome"] == "parked" and len(first["pending"]) == 12
    run_id = first["run_id"]
    shown = as_json(cli(env, "runs", "show", run_id, "--json"))
    denied = {(c["input"]["threat"].get("element") or c["input"]["threat"].get("flow"),
               c["input"]["threat"]["category"]) for c in shown["pending"]}
    assert cli(env, "runs", "deny", run_id, "--all", "--actor", "ana", "--reason",
               "not this quarter").returncode == 0
    assert cli(env, "runs", "resume", run_id).returncode == 0

    second = as_json(cli(env, "assist", shop, "--prompt", "propose missing threats",
                         "--provider", "offline", "--json"))
    shown = as_json(cli(env, "runs", "show", second["run_id"], "--json"))
    again = {(c["input"]["threat"].get("element") or c["input"]["threat"].get("flow"),
              c["input"]["threat"]["category"]) for c in shown["pending"]}
    assert len(again) == 12 and not again & denied
