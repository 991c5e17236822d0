"""The secret scan's skipped passes: `scan` finds exactly what running every pattern finds."""

from __future__ import annotations

import re
from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from stockade.protocol.secret_scan import (
    _PATTERNS,
    _TOKEN,
    MIN_HELD_KEY_LENGTH,
    REDACTED,
    SecretKind,
    _looks_random,
    scan,
)
from tests.conftest import examples


def _every_pass(text: str, held: tuple[str, ...] = ()) -> tuple[str, Counter[str]]:
    """The plain definition: held keys, then every pattern in order, then the entropy pass,
    each over the whole text whatever it holds."""
    kinds: Counter[str] = Counter()
    out = text
    for key in held:
        if len(key) >= MIN_HELD_KEY_LENGTH and key in out:
            kinds[SecretKind.HELD_KEY.value] += out.count(key)
            out = out.replace(key, REDACTED)
    for kind, pattern in _PATTERNS:
        def _sub(match: re.Match[str], kind: SecretKind = kind) -> str:
            kinds[kind.value] += 1
            start, end = match.span("s")
            whole, base = match.group(0), match.start()
            return whole[: start - base] + REDACTED + whole[end - base:]
        out = pattern.sub(_sub, out)

    def _entropy_sub(match: re.Match[str]) -> str:
        token = match.group(0)
        if REDACTED in token or not _looks_random(token):
            return token
        kinds[SecretKind.HIGH_ENTROPY.value] += 1
        return REDACTED

    return _TOKEN.sub(_entropy_sub, out), kinds


# Pieces of every pattern (whole secrets, their prefixes cut short, look-alikes in other
# cases, escaped line breaks) mixed with arbitrary text, so the skipped passes are tested
# where they matter: near the edge of a match.
_PIECES = st.sampled_from([
    "sk-", "sk-ant-api03-", "sk-proj-AbCdEf1234567890GhIjKl", "SK-abcdefghijklmnopqrs",
    "AKIA", "ASIA", "AKIAIOSFODNN7EXAMPLE", "akiaIOSFODNN7EXAMPLE", "ghp_", "gho_", "gh_",
    "ghp_" + "a1B2c3D4e5" * 4, "github_pat_" + "A1b2_" * 9, "GITHUB_PAT_",
    "-----BEGIN RSA PRIVATE KEY-----", "-----END RSA PRIVATE KEY-----", "PRIVATE KEY",
    "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAA\n", "private key",
    "://", "postgres://admin:s3cretPass@db", "https://example.com/x", "a://b:c@d",
    "Bearer ", "bearer", "BEARER\teyJhbGciOiJIUzI1NiJ9.payload", "beare", "Authorization:",
    "Zx9qL2mN8vB4cR7tY1uI3oP5aS6dF0gH2jK4", "0f" * 20, "x" * 31, "A1b" * 11, REDACTED,
    "\\n", "\\t", "\n", " ", "_", "-", "=", "é", "ſ", "K",
])
_TEXTS = st.lists(_PIECES | st.text(max_size=12), max_size=12).map("".join)
_HELD = st.lists(st.sampled_from(["sk-held-0123456789", "short", "Gateway 1", "é" * 8]),
                 max_size=2).map(tuple)


@settings(max_examples=examples(1000), deadline=None)
@given(_TEXTS, _HELD)
def test_the_scan_finds_exactly_what_every_pattern_pass_finds(
    text: str, held: tuple[str, ...]
) -> None:
    result = scan(text, held)
    expected_text, expected_kinds = _every_pass(text, held)
    assert result.text == expected_text
    assert result.kinds == expected_kinds


@settings(max_examples=examples(300), deadline=None)
@given(st.text(max_size=80))
def test_arbitrary_text_scans_as_every_pattern_pass_scans_it(text: str) -> None:
    result = scan(text)
    assert (result.text, result.kinds) == _every_pass(text)


def test_text_with_a_secret_of_each_kind_still_has_each_found() -> None:
    text = ("sk-proj-AbCdEf1234567890GhIjKl AKIAIOSFODNN7EXAMPLE ghp_" + "a1B2c3D4e5" * 4
            + " postgres://admin:s3cretPass@db Bearer eyJhbGciOiJIUzI1NiJ9.payload"
            + " -----BEGIN RSA PRIVATE KEY-----\\nMIIB\\n-----END RSA PRIVATE KEY-----"
            + " Zx9qL2mN8vB4cR7tY1uI3oP5aS6dF0gH2jK4")
    result = scan(text)
    assert set(result.kinds) == {k.value for k in SecretKind} - {SecretKind.HELD_KEY.value}
    assert (result.text, result.kinds) == _every_pass(text)
