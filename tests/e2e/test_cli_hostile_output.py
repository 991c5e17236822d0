"""Hostile model output through the real CLI and SDKs: it becomes error results, never crashes,
never rewrites the analyst's terminal and never writes a secret into the document.

The fake provider server plays the model; the official Anthropic and OpenAI SDKs parse its
streams exactly as they would a real provider's.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import run_cli
from tests.helpers.cli import CliResult
from tests.helpers.fake_provider import (
    FakeProviderServer,
    Fragments,
    Reply,
    anthropic_sse,
    openai_sse,
)

MODEL = "claude-sonnet-5"
OPENAI_MODEL = "gpt-5.6-sol"
API_KEY = "sk-ant-api03-HostileOutputKey0123456789abcdef"
OPENAI_KEY = "sk-proj-HostileOutputKey0123456789abcdef"


@pytest.fixture
def env(tmp_path: Path, server: FakeProviderServer) -> dict[str, str]:
    return {
        "PYTHON_KEYRING_BACKEND": "tests.helpers.file_keyring.FileKeyring",
        "STOCKADE_TEST_KEYRING": str(tmp_path / "keyring.json"),
        "ANTHROPIC_BASE_URL": server.url,
        "ANTHROPIC_API_KEY": API_KEY,
        "OPENAI_BASE_URL": f"{server.url}/v1",
        "OPENAI_API_KEY": OPENAI_KEY,
    }


def assist(env: dict[str, str], model_file: Path, *extra: str,
           provider: str = "anthropic") -> CliResult:
    model = MODEL if provider == "anthropic" else OPENAI_MODEL
    return run_cli("assist", model_file, "--prompt", "review", "--provider", provider,
                   "--model", model, *extra, env=env)


def tool_results(body: Any) -> list[dict[str, Any]]:
    """The tool results a request carries (Anthropic or OpenAI shape), as {id, text, error}."""
    out = []
    for message in body["messages"]:
        if message["role"] == "tool":  # OpenAI
            out.append({"id": message["tool_call_id"], "text": message["content"],
                        "error": None})
            continue
        content = message.get("content")
        if isinstance(content, list):
            for block in content:
                if block.get("type") == "tool_result":
                    text = block["content"]
                    if isinstance(text, list):
                        text = "".join(part.get("text", "") for part in text)
                    out.append({"id": block["tool_use_id"], "text": text,
                                "error": block.get("is_error")})
    return out


def _refuse_constant(name: str) -> Any:
    raise AssertionError(f"{name} in a request body")


NEW_THREAT = {"title": "Replay", "category": "Spoofing", "severity": "high",
              "element": "api-gateway", "description": "Tokens replay."}


@pytest.mark.parametrize(("arguments", "problem"), [
    ('{"action":"add_threat","threat":{"title":"x","category":"Spoofing","severity":"high",'
     '"element":"api-gateway","description":"d","position":NaN}}', "must be a finite number"),
    ('{"kind":"elements","id":"web-app","limit":Infinity}', "must be a finite number"),
    ('{"kind":"elements","id":-Infinity}', "must be a finite number"),
    ('{"kind":"elements","id":' + "[" * 900 + "]" * 900 + "}", "nests deeper than 64"),
    ('{"kind":"elements","id":"' + "A" * 100_000 + '"}', "larger than 64 KiB"),
], ids=["nan", "infinity", "minus-infinity", "900-deep", "oversized"])
def test_a_hostile_tool_input_is_answered_with_an_error_result_and_the_turn_goes_on(
    server: FakeProviderServer, env: dict[str, str], model_file: Path, arguments: str,
    problem: str
) -> None:
    before = model_file.read_text()
    name = "add_threat" if "add_threat" in arguments else "get_entity"
    server.script([
        Reply.sse(anthropic_sse(tool_calls=[("toolu_1", name, Fragments((arguments,)))],
                                model=MODEL)),
        Reply.sse(anthropic_sse(text="Understood.", model=MODEL)),
    ])
    result = assist(env, model_file, "--json", "--write")
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert summary["outcome"] == "completed" and summary["text"] == "Understood."
    assert [c["status"] for c in summary["calls"]] == ["failed"]
    assert summary["violations"] == [{"kind": "refused_input", "call_id": "toolu_1"}]
    assert len(server.requests) == 2  # the model was told, and answered
    (answer,) = tool_results(server.requests[1].body)
    assert answer["id"] == "toolu_1" and answer["error"] is True and problem in answer["text"]
    assert "internal error" not in result.stderr and model_file.read_text() == before


def test_arguments_nested_past_the_parsers_stack_are_a_damaged_call_not_a_failed_turn(
    server: FakeProviderServer, env: dict[str, str], model_file: Path
) -> None:
    deep = '{"kind":"elements","id":' + "[" * 5000 + "]" * 5000 + "}"
    server.script([
        Reply.sse(anthropic_sse(tool_calls=[("toolu_1", "get_entity", Fragments((deep,)))],
                                model=MODEL)),
        Reply.sse(anthropic_sse(text="Retrying later.", model=MODEL)),
    ])
    result = assist(env, model_file, "--json")
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert summary["outcome"] == "completed"
    assert {"kind": "dropped_tool_call", "call_id": "toolu_1"} in summary["violations"]
    (answer,) = tool_results(server.requests[1].body)
    assert answer["error"] is True and "damaged" in answer["text"]


def test_an_over_long_call_id_is_refused_and_never_parks(
    server: FakeProviderServer, env: dict[str, str], model_file: Path
) -> None:
    call_id = "toolu_" + "a" * 300
    server.script([
        Reply.sse(anthropic_sse(tool_calls=[(call_id, "add_threat", {
            "action": "add_threat", "threat": NEW_THREAT})], model=MODEL)),
        Reply.sse(anthropic_sse(text="ok", model=MODEL)),
    ])
    result = assist(env, model_file, "--json")
    assert result.returncode == 0, result.stderr  # not parked (3), not an internal error (1)
    summary = json.loads(result.stdout)
    assert summary["outcome"] == "completed"
    assert [c["status"] for c in summary["calls"]] == ["failed"]
    assert summary["violations"][0]["kind"] == "refused_input"
    (answer,) = tool_results(server.requests[1].body)
    assert "longer than 128" in answer["text"]
    listed = json.loads(run_cli("runs", "list", "--json", env=env).stdout)
    assert [r["status"] for r in listed] == ["finished"]
    assert run_cli("audit", "verify", env=env).returncode == 0


def test_non_finite_arguments_through_the_openai_sdk_are_refused_too(
    server: FakeProviderServer, env: dict[str, str], model_file: Path
) -> None:
    server.script([
        Reply.sse(openai_sse(tool_calls=[("call_1", "get_entity", Fragments(
            ('{"kind":"elements","id":NaN}',)))], model=OPENAI_MODEL)),
        Reply.sse(openai_sse(text="Noted.", model=OPENAI_MODEL)),
    ])
    result = assist(env, model_file, "--json", provider="openai")
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert summary["outcome"] == "completed" and summary["calls"][0]["status"] == "failed"
    (answer,) = tool_results(server.requests[1].body)
    assert "must be a finite number" in answer["text"]
    # The next request is strict JSON: the model's NaN was not replayed to the provider.
    json.loads(server.requests[1].raw_body, parse_constant=_refuse_constant)


def test_a_document_with_non_finite_positions_is_refused_before_any_request(
    server: FakeProviderServer, env: dict[str, str], model_file: Path
) -> None:
    model_file.write_text(model_file.read_text().replace("x: 100.0", "x: .nan", 1))
    validated = run_cli("validate", model_file, "--json", env=env)
    assert validated.returncode == 1 and "invalid_field" in validated.stdout
    result = assist(env, model_file)
    assert result.returncode == 1 and "internal error" not in result.stderr
    assert server.requests == []


RAW_CONTROLS = ("\x1b", "\x07", "\x9b", "\u202e", "\r")


def _terminal_safe(text: str) -> bool:
    return not any(c in text for c in RAW_CONTROLS)


def test_terminal_controls_from_the_model_are_escaped_in_every_cli_output(
    server: FakeProviderServer, env: dict[str, str], model_file: Path
) -> None:
    hostile_text = ("Done.\x1b]0;owned title\x07 \x1b[8mhidden\x1b[0m \x9b2J \u202eevil\r"
                    "\x1b]8;;https://attacker.example/\x07click\x1b]8;;\x07")
    call_id = "toolu_\x1b]0;x\x07"
    threat = {**NEW_THREAT, "title": "Replay\x1b[31m red \u202e"}
    server.script([Reply.sse(anthropic_sse(text=hostile_text, tool_calls=[
        ("toolu_u", "get_document_summary\x1b[2J", {}),
        (call_id, "add_threat", {"action": "add_threat", "threat": threat}),
    ], model=MODEL))])
    human = assist(env, model_file)
    assert human.returncode == 3, human.stderr
    assert _terminal_safe(human.stdout) and _terminal_safe(human.stderr)
    assert "get_document_summary\\x1b[2J" in human.stdout

    listed = run_cli("runs", "list", env=env)
    assert listed.returncode == 0 and _terminal_safe(listed.stdout)
    assert "toolu_\\x1b]0;x\\x07" in listed.stdout
    run_id = json.loads(run_cli("runs", "list", "--json", env=env).stdout)[0]["run_id"]
    shown = run_cli("runs", "show", run_id, env=env)
    assert shown.returncode == 0 and _terminal_safe(shown.stdout)
    assert "Replay\\x1b[31m red \\u202e" in shown.stdout

    # --json stays exact JSON: the same strings come back, escaped only as JSON escapes them.
    as_json = run_cli("runs", "show", run_id, "--json", env=env)
    assert _terminal_safe(as_json.stdout)
    pending = json.loads(as_json.stdout)["pending"]
    assert pending[0]["call_id"] == call_id
    assert pending[0]["input"]["threat"]["title"] == threat["title"]
    server.script([Reply.sse(anthropic_sse(text=hostile_text, model=MODEL))])
    denied = run_cli("runs", "deny", run_id, call_id, "--actor", "ana", env=env)
    assert denied.returncode == 0 and _terminal_safe(denied.stdout)
    resumed = run_cli("runs", "resume", run_id, env=env)
    assert resumed.returncode == 0 and _terminal_safe(resumed.stdout)
    assert "\\x1b]0;owned title\\x07" in resumed.stdout and "\\u202eevil\\x0d" in resumed.stdout

    server.script([Reply.sse(anthropic_sse(text=hostile_text, model=MODEL))])
    completed = assist(env, model_file, "--json")
    assert completed.returncode == 0 and _terminal_safe(completed.stdout)
    assert json.loads(completed.stdout)["text"] == hostile_text
    exported = run_cli("audit", "export", run_id, env=env)
    assert exported.returncode == 0 and _terminal_safe(exported.stdout)
    assert all(json.loads(line) for line in exported.stdout.splitlines())


# -- secrets ---------------------------------------------------------------------------------

AWS_KEY = "AKIAIOSFODNN7EXAMPLE"
BEARER = "Bearer abcdefghijklmnopqrstuv"


def _with_secret_description(model_file: Path) -> None:
    text = model_file.read_text()
    model_file.write_text(text.replace(
        "  description: React frontend served via CDN\n",
        "  description: |-\n    Rotation notes:\n    " + AWS_KEY + "\n    " + BEARER + "\n", 1))


def test_a_provider_key_the_model_echoes_into_a_tool_input_never_reaches_the_document(
    server: FakeProviderServer, env: dict[str, str], model_file: Path
) -> None:
    plain_key = "Xq7plainProviderKey"  # no known key shape: only an exact match finds it
    threat = {**NEW_THREAT, "description": f"The gateway accepts {plain_key} as a key."}
    server.script([
        Reply.sse(anthropic_sse(tool_calls=[("toolu_1", "add_threat", {
            "action": "add_threat", "threat": threat})], model=MODEL)),
        Reply.sse(anthropic_sse(text="Added.", model=MODEL)),
    ])
    result = assist({**env, "ANTHROPIC_API_KEY": plain_key}, model_file, "--approve", "mutate",
                    "--write", "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["calls"][0]["status"] == "succeeded"
    saved = model_file.read_text()
    assert plain_key not in saved and "[redacted-secret]" in saved
    assert plain_key not in server.requests[1].raw_body.decode()  # nor replayed to the model


def test_with_the_block_policy_a_secret_in_a_tool_input_is_refused_naming_the_field(
    server: FakeProviderServer, env: dict[str, str], model_file: Path, stockade_home: Path
) -> None:
    (stockade_home / "settings.json").write_text(json.dumps({"guard_policy": "block"}))
    before = model_file.read_text()
    threat = {**NEW_THREAT, "description": f"Leaked key {AWS_KEY} in the logs."}
    server.script([
        Reply.sse(anthropic_sse(tool_calls=[("toolu_1", "add_threat", {
            "action": "add_threat", "threat": threat})], model=MODEL)),
        Reply.sse(anthropic_sse(text="Understood.", model=MODEL)),
    ])
    result = assist(env, model_file, "--approve", "mutate", "--write", "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["calls"][0]["status"] == "failed"
    (answer,) = tool_results(server.requests[1].body)
    assert answer["error"] is True and "threat.description" in answer["text"]
    assert "secret-shaped" in answer["text"] and AWS_KEY not in answer["text"]
    assert model_file.read_text() == before


def test_secrets_at_the_start_of_a_line_in_a_multi_line_field_are_redacted_before_sending(
    server: FakeProviderServer, env: dict[str, str], model_file: Path
) -> None:
    _with_secret_description(model_file)
    server.script([
        Reply.sse(anthropic_sse(tool_calls=[("toolu_1", "get_entity", {
            "kind": "elements", "id": "web-app"})], model=MODEL)),
        Reply.sse(anthropic_sse(text="Seen.", model=MODEL)),
    ])
    result = assist(env, model_file, "--json")
    assert result.returncode == 0, result.stderr
    (answer,) = tool_results(server.requests[1].body)
    assert "Rotation notes" in answer["text"] and "[redacted-secret]" in answer["text"]
    for request in server.requests:
        body = request.raw_body.decode()
        assert AWS_KEY not in body and "abcdefghijklmnopqrstuv" not in body


def test_search_counts_cannot_confirm_a_guessed_secret(
    server: FakeProviderServer, env: dict[str, str], model_file: Path
) -> None:
    _with_secret_description(model_file)
    right, wrong = AWS_KEY.lower(), AWS_KEY.lower()[:-1] + "f"
    server.script([
        Reply.sse(anthropic_sse(tool_calls=[
            ("toolu_a", "search_entities", {"kind": "elements", "text": right}),
            ("toolu_b", "search_entities", {"kind": "elements", "text": wrong}),
            ("toolu_c", "search_entities", {"kind": "elements", "text": "rotation notes"}),
        ], model=MODEL)),
        Reply.sse(anthropic_sse(text="Nothing found.", model=MODEL)),
    ])
    result = assist(env, model_file, "--json")
    assert result.returncode == 0, result.stderr
    totals = {}
    for answer in tool_results(server.requests[1].body):
        body = json.loads(answer["text"].splitlines()[1])
        totals[answer["id"]] = body["page"]["total"]
    assert totals == {"toolu_a": 0, "toolu_b": 0, "toolu_c": 1}


# -- billing ---------------------------------------------------------------------------------


def _reservations(stockade_home: Path) -> list[tuple[str, int, int, int, int]]:
    import sqlite3

    conn = sqlite3.connect(stockade_home / "stockade.db")
    try:
        return conn.execute("SELECT status, reserved, settled, overrun, actual FROM reservation "
                            "ORDER BY created_ms").fetchall()
    finally:
        conn.close()


def test_usage_above_the_reservation_is_charged_in_full_and_stops_the_turn_at_once(
    server: FakeProviderServer, env: dict[str, str], model_file: Path, stockade_home: Path
) -> None:
    before = model_file.read_text()
    server.script([Reply.sse(anthropic_sse(tool_calls=[("toolu_1", "add_threat", {
        "action": "add_threat", "threat": NEW_THREAT})], usage=(50_000_000, 9_000_000),
        model=MODEL))])
    result = assist(env, model_file, "--approve", "mutate", "--write", "--json")
    assert result.returncode == 1
    summary = json.loads(result.stdout)
    [(status, reserved, settled, overrun, actual)] = _reservations(stockade_home)
    assert status == "settled" and settled == reserved and overrun == actual - reserved > 0
    # $3 and $15 per million tokens: 150 + 135 dollars, 10,000 credits to the dollar.
    assert actual == 2_850_000 and summary["credits_spent"] == actual
    assert summary["credits_over_reservation"] == overrun
    assert summary["outcome"] == "failed" and summary["reason"] == "credits"
    assert "more than the" in summary["notice"]
    assert summary["calls"][0]["status"] != "succeeded" and model_file.read_text() == before
    assert len(server.requests) == 1  # stopped at once: no second request either
    *lines, _sealing = run_cli("audit", "export", summary["run_id"], env=env).stdout.splitlines()
    [flag] = [json.loads(line) for line in lines if json.loads(line)["kind"] == "meter.overrun"]
    assert flag["payload"]["overrun"] == overrun and flag["payload"]["actual"] == actual
    # The real spend is on the wallet: today's limit is used up, so the next turn is refused.
    server.script([Reply.sse(anthropic_sse(text="never sent", model=MODEL))])
    refused = assist(env, model_file, "--json")
    assert json.loads(refused.stdout)["reason"] == "credits" and server.requests == []


def test_an_overrun_on_a_turn_that_already_ended_is_flagged_to_the_user(
    server: FakeProviderServer, env: dict[str, str], model_file: Path
) -> None:
    server.script([Reply.sse(anthropic_sse(text="Short answer.", usage=(400_000, 0),
                                           model=MODEL))])
    human = assist(env, model_file)
    assert human.returncode == 0 and "above what was reserved" in human.stdout


def test_a_stream_that_fails_after_it_started_is_never_settled_at_zero(
    server: FakeProviderServer, env: dict[str, str], model_file: Path, stockade_home: Path
) -> None:
    body = anthropic_sse(text=["The payment flow ", "lacks mTLS and "], usage=(1200, 40),
                         model=MODEL)
    server.script([Reply.sse(body, drop_after=body.index(b"lacks"))])
    result = assist(env, model_file, "--json")
    assert result.returncode == 1
    summary = json.loads(result.stdout)
    [(status, reserved, settled, _overrun, _actual)] = _reservations(stockade_home)
    assert status == "settled" and settled > 0 and summary["credits_spent"] == settled
    assert settled in (reserved, 36 + 1)  # reported usage, or the reservation when none
