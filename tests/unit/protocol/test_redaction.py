"""Redaction of provider text (spec 5.3, SEC-P-06) and the authored error builders."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stockade.protocol.errors import (
    ErrorCode,
    ProtocolError,
    TransportReason,
    cap_utf16,
    http_status,
    no_api_key,
    provider_error_message,
    redact,
    transport,
    utf16_len,
)

R = "[redacted-key]"


@pytest.mark.parametrize(
    "text",
    [
        "sk-abc123DEF",
        "sk-ant-xyz_789",
        "sk-proj-QQ-11",
        "SK-ABC123",
        "Sk-Ant-Xyz",
        "sk-ant-api03-AbC-dE_f",
    ],
)
def test_every_sk_family_key_is_masked_whatever_its_case(text: str) -> None:
    assert redact(f"invalid key {text} given") == f"invalid key {R} given"


@pytest.mark.parametrize("text", ["task-123", "desk-check", "sk- alone", "risk-based", "ask-me"])
def test_words_that_merely_contain_sk_dash_are_untouched(text: str) -> None:
    assert redact(text) == text


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Authorization: Bearer abc.DEF-123_x", f"Authorization: Bearer {R}"),
        ("authorization: bearer eyJhbGciOi.payload.sig", f"authorization: bearer {R}"),
        ("x-api-key: hunter2", f"x-api-key: {R}"),
        ("X-Api-Key=hunter2;", f"X-Api-Key={R};"),
        ('{"api_key": "zzz-top"}', f'{{"api_key": "{R}"}}'),
        ("?apikey=abc&x=1", f"?apikey={R}&x=1"),
        ("access_token=ya29.a0AfH6", f"access_token={R}"),
        ("password: 'pa55'", f"password: '{R}'"),
    ],
)
def test_labelled_secrets_lose_their_value_but_keep_the_label(text: str, expected: str) -> None:
    assert redact(text) == expected


def test_long_opaque_tokens_mixing_letters_and_digits_are_masked() -> None:
    key = "AIzaSyD4x9Qk2LmN0pR7sT1uV3wX5yZ8aBcDeFg"
    assert redact(f"bad key {key}.") == f"bad key {R}."
    assert redact("id 0123456789abcdef0123456789abcdef!") == f"id {R}!"


def test_long_words_without_digits_and_short_tokens_survive() -> None:
    text = "Supercalifragilisticexpialidocious_and_more_words_here req_123"
    assert redact(text) == text


def test_detail_is_capped_at_200_utf16_units_with_an_ellipsis() -> None:
    out = redact("x" * 500)
    assert out == "x" * 200 + "…"
    assert len(out) == 201


def test_text_at_exactly_the_cap_is_not_cut() -> None:
    assert redact("y" * 200) == "y" * 200


def test_masking_happens_before_the_cap_so_no_key_prefix_survives() -> None:
    assert redact("x" * 196 + " sk-secret123456789") == "x" * 196 + " [re…"
    out = redact("x" * 189 + " sk-" + "a" * 64)
    assert "sk-" not in out
    assert "aaa" not in out


def test_cap_never_splits_a_surrogate_pair() -> None:
    assert redact("x" * 199 + "😀" + "y" * 50) == "x" * 199 + "…"


def test_cap_counts_utf16_units_not_code_points() -> None:
    assert redact("é" * 300) == "é" * 200 + "…"
    assert redact("🔑" * 150) == "🔑" * 100 + "…"


@settings(deadline=None)  # a loaded CI machine must not turn slowness into failure
@given(st.text(max_size=600))
def test_redacted_text_never_exceeds_the_cap_or_holds_a_lone_surrogate(text: str) -> None:
    out = redact(text)
    assert utf16_len(out) <= 201
    out.encode("utf-8")  # a lone surrogate would fail to encode


@settings(deadline=None)  # a loaded CI machine must not turn slowness into failure
@given(
    st.text(
        alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-",
        min_size=1,
        max_size=60,
    ),
    st.text(max_size=300),
)
def test_an_sk_key_never_survives_redaction_wherever_it_sits(secret: str, filler: str) -> None:
    key = "sk-" + secret
    out = redact(f"{filler} {key} tail")
    assert key not in out


def test_cap_utf16_leaves_short_text_alone() -> None:
    assert cap_utf16("abc", 3) == "abc"
    assert cap_utf16("abcd", 3) == "abc…"


@pytest.mark.parametrize(
    ("status", "fragment"),
    [
        (400, "invalid"),
        (401, "API key was not accepted"),
        (403, "refused"),
        (404, "does not exist"),
        (413, "larger"),
        (429, "too many requests"),
        (503, "having trouble"),
        (302, "redirect"),
        (418, "did not succeed"),
    ],
)
def test_status_messages_are_authored_one_liners(status: int, fragment: str) -> None:
    message = provider_error_message("Anthropic", status)
    assert message.startswith(f"Anthropic returned HTTP {status}: ")
    assert fragment in message
    assert "\n" not in message


def test_http_status_builder_maps_429_to_rate_limited_and_redacts_detail() -> None:
    err = http_status(
        "OpenAI", 429, detail="quota for sk-live-abcdef123 exceeded", retry_after_ms=2000
    )
    assert err.code is ErrorCode.RATE_LIMITED
    assert err.status == 429
    assert err.retry_after_ms == 2000
    assert err.provider_detail == f"quota for {R} exceeded"
    assert "sk-" not in err.message


def test_http_status_builder_keeps_the_status_and_drops_blank_detail() -> None:
    err = http_status("Anthropic", 401, detail="   ")
    assert err.code is ErrorCode.HTTP_STATUS
    assert err.status == 401
    assert err.provider_detail is None


def test_no_api_key_names_the_provider_and_how_to_fix_it() -> None:
    err = no_api_key("openai")
    assert err.code is ErrorCode.NO_API_KEY
    assert "openai" in err.message
    assert "stockade keys set openai" in err.message


def test_transport_errors_carry_their_reason_through_json() -> None:
    err = transport("Anthropic", TransportReason.RESPONSE_TOO_LARGE)
    assert ProtocolError.from_json(err.to_json()) == err
    assert err.to_json()["transport_reason"] == "response_too_large"


def test_json_without_a_transport_reason_still_round_trips() -> None:
    err = ProtocolError(code=ErrorCode.HTTP_STATUS, message="m", status=500)
    assert "transport_reason" not in err.to_json()
    assert ProtocolError.from_json(err.to_json()) == err


def test_utf16_length_counts_astral_characters_twice_and_survives_lone_surrogates() -> None:
    assert utf16_len("") == 0
    assert utf16_len("aé") == 2
    assert utf16_len("a🔑b") == 4
    assert utf16_len("\ud800x") == 2
