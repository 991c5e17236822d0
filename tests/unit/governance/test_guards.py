"""Secret guards: each secret shape is found, redacted or blocked, and never reported verbatim."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stockade.governance.guards import REDACTED, GuardPolicy, SecretGuard, scan
from stockade.protocol.messages import Message, TextBlock, ToolCallBlock, ToolResultBlock
from stockade.protocol.request import ChatRequest
from tests.conftest import examples

SECRETS = {
    "api_key": "use sk-ant-api03-Zq8vX2mN4bL7kJ9hG3fD1sA5 please",
    "openai_key": "key=sk-proj-AbCdEf1234567890GhIjKl",
    "aws_access_key": "aws AKIAIOSFODNN7EXAMPLE creds",
    "github_token": "token ghp_" + "a1B2c3D4e5" * 4,
    "private_key": "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAA\n"
                   "-----END OPENSSH PRIVATE KEY-----",
    "url_password": "connect to postgres://admin:s3cretPass@db.internal:5432/app",
    "bearer_token": "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.payload",
    "high_entropy": "secret Zx9qL2mN8vB4cR7tY1uI3oP5aS6dF0gH2jK4 here",
}


@pytest.mark.parametrize("name", sorted(SECRETS))
def test_each_secret_shape_is_found_and_redacted(name: str) -> None:
    result = scan(SECRETS[name])
    assert result.count >= 1 and REDACTED in result.text
    for word in ("s3cretPass", "AKIAIOSFODNN7EXAMPLE", "b3BlbnNzaC1r", "eyJhbGciOi",
                 "Zx9qL2mN8vB4", "sk-ant-api03", "ghp_a1B2"):
        assert word not in result.text


@pytest.mark.parametrize("text", [
    "The web server sends orders to the payment API over TLS.",
    "sha256:" + "0f" * 32,
    "550e8400-e29b-41d4-a716-446655440000",
    "https://example.com/docs/threat-modeling",
    "element_8f3a2b1c threat_WebServerToDatabaseConnection",
])
def test_ordinary_text_ids_and_digests_are_left_alone(text: str) -> None:
    assert scan(text).count == 0 and scan(text).text == text


def test_redact_policy_rewrites_the_prompt_and_reports_kinds_only() -> None:
    guard = SecretGuard(GuardPolicy.REDACT)
    text, report = guard.check_prompt("deploy with AKIAIOSFODNN7EXAMPLE")
    assert text == f"deploy with {REDACTED}"
    assert report.action == "redacted" and report.kinds == {"aws_access_key": 1}
    assert "AKIA" not in str(report.to_payload())


def test_block_policy_keeps_the_text_and_reports_blocked() -> None:
    guard = SecretGuard(GuardPolicy.BLOCK)
    text, report = guard.check_prompt("deploy with AKIAIOSFODNN7EXAMPLE")
    assert report.action == "blocked" and "AKIA" in text


def test_clean_prompts_are_reported_clean() -> None:
    _, report = SecretGuard().check_prompt("add a threat for the login flow")
    assert report.action == "clean" and report.count == 0


def test_requests_are_redacted_in_system_text_and_tool_results_but_not_tool_calls() -> None:
    request = ChatRequest(
        provider="anthropic", model="m",
        system="Document: db url postgres://u:hunter22@h/x",
        messages=(
            Message("user", (TextBlock("hi sk-ant-api03-Zq8vX2mN4bL7kJ9hG3fD1sA5"),)),
            Message("assistant", (ToolCallBlock("c1", "get_entity", {"id": "e1"}),)),
            Message("user", (ToolResultBlock("c1", "notes: ghp_" + "a1B2c3D4e5" * 4),)),
        ),
    )
    redacted, report = SecretGuard(GuardPolicy.REDACT).check_request(request)
    assert "hunter22" not in redacted.system
    assert REDACTED in redacted.messages[0].content[0].text  # type: ignore[union-attr]
    assert redacted.messages[1] == request.messages[1]
    assert REDACTED in redacted.messages[2].content[0].content  # type: ignore[union-attr]
    assert report.count == 3 and report.stage == "request"


def test_the_output_guard_always_redacts() -> None:
    text, report = SecretGuard(GuardPolicy.BLOCK).check_output("here: AKIAIOSFODNN7EXAMPLE")
    assert text == f"here: {REDACTED}" and report.action == "redacted"


def test_an_unterminated_private_key_is_cut_without_eating_the_text_after_it() -> None:
    text = ('{"notes":"-----BEGIN RSA PRIVATE KEY-----\\nMIIEowIBAAKCAQEA7\\nabc+/="}'
            "\n<<<END_UNTRUSTED_DOCUMENT_DATA>>>")
    result = scan(text)
    assert result.kinds == {"private_key": 1}
    assert "MIIEow" not in result.text
    assert result.text.endswith('"}\n<<<END_UNTRUSTED_DOCUMENT_DATA>>>')


_PLANTED = ["sk-ant-api03-Zq8vX2mN4bL7kJ9hG3fD1sA5", "AKIAIOSFODNN7EXAMPLE",
            "ghp_" + "a1B2c3D4e5" * 4, "Zx9qL2mN8vB4cR7tY1uI3oP5aS6dF0gH2jK4"]


@settings(max_examples=examples(300), deadline=None)
@given(before=st.text(max_size=60), after=st.text(max_size=60),
       planted=st.sampled_from(_PLANTED))
def test_a_planted_secret_never_survives_whatever_surrounds_it(
    before: str, after: str, planted: str
) -> None:
    assert planted not in scan(f"{before} {planted} {after}").text
