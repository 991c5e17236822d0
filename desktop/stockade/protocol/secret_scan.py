"""Secret-shaped strings: the one set of patterns egress, tool inputs and read tools share.

Provider keys, AWS access key ids, GitHub tokens, PEM private keys, passwords in URLs, bearer
tokens and long high-entropy tokens are found and replaced by `[redacted-secret]`; keys
Stockade itself holds can be given to `scan` to be matched exactly as well, whatever their
shape. Findings are kinds and counts only: the matched text never leaves this module.

A pattern's start is a word boundary, or the two characters backslash and n/r/t: text that
went through the untrusted-data envelope (or JSON) writes a line break as `\\n`, and a secret at
the start of a line there must be found as surely as one in the middle of a line.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import StrEnum

REDACTED = "[redacted-secret]"


class SecretKind(StrEnum):
    API_KEY = "api_key"
    AWS_ACCESS_KEY = "aws_access_key"
    GITHUB_TOKEN = "github_token"
    PRIVATE_KEY = "private_key"
    URL_PASSWORD = "url_password"
    BEARER_TOKEN = "bearer_token"
    HIGH_ENTROPY = "high_entropy"
    HELD_KEY = "held_key"
    """A key Stockade holds (a provider key), matched exactly."""


_START = r"(?:(?<=\\[nrt])|(?<![A-Za-z0-9_]))"
"""Where a secret may begin: not inside a word, or right after an escaped line break or tab."""

# Each pattern's group "s" (or the whole match) is the secret to replace; order matters: a PEM
# block is removed before the entropy scan could see its base64 lines.
_PATTERNS: tuple[tuple[SecretKind, re.Pattern[str]], ...] = (
    (SecretKind.PRIVATE_KEY, re.compile(
        r"(?P<s>-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"
        r"(?:[\s\S]*?-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"
        # Unterminated: take only the key body (base64, line breaks, JSON-escaped breaks),
        # never the rest of the text, so fences and JSON around it survive.
        r"|(?:[A-Za-z0-9+/=\s]|\\[nr])*))")),
    (SecretKind.URL_PASSWORD, re.compile(
        _START + r"[a-zA-Z][a-zA-Z0-9+.\-]{1,20}://[^\s:/@]{1,128}:(?P<s>[^\s@/]{1,256})@")),
    (SecretKind.BEARER_TOKEN, re.compile(
        r"(?i)" + _START + r"bearer\s+(?P<s>[A-Za-z0-9\-._~+/]{12,}=*)")),
    (SecretKind.API_KEY, re.compile(_START + r"(?P<s>sk-(?:[A-Za-z0-9]+-)*[A-Za-z0-9_\-]{16,})")),
    (SecretKind.AWS_ACCESS_KEY, re.compile(_START + r"(?P<s>(?:AKIA|ASIA)[0-9A-Z]{16}\b)")),
    (SecretKind.GITHUB_TOKEN, re.compile(
        _START + r"(?P<s>(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{40,}))")),
)
_TOKEN = re.compile(r"[A-Za-z0-9+/=_\-]{32,}")
_BEARER = re.compile(r"[Bb][Ee][Aa][Rr][Ee][Rr]")  # no other code point folds to these letters


def _needs(kind: SecretKind) -> Callable[[str], bool]:
    """A cheap test for something every match of `kind`'s pattern contains. It runs on the
    text as the earlier patterns left it: text failing it cannot match, so that pattern's own
    pass is skipped and the result is the same (most text fails every test)."""
    if kind is SecretKind.PRIVATE_KEY:
        return lambda text: "PRIVATE KEY" in text
    if kind is SecretKind.URL_PASSWORD:
        return lambda text: "://" in text
    if kind is SecretKind.BEARER_TOKEN:
        return lambda text: _BEARER.search(text) is not None
    if kind is SecretKind.API_KEY:
        return lambda text: "sk-" in text
    if kind is SecretKind.AWS_ACCESS_KEY:
        return lambda text: "AKIA" in text or "ASIA" in text
    if kind is SecretKind.GITHUB_TOKEN:
        return lambda text: ("gh" in text and "_" in text) or "github_pat_" in text
    raise ValueError(f"no pattern for {kind}")


_GATED = tuple((kind, _needs(kind), pattern) for kind, pattern in _PATTERNS)

# What each pattern above needs to find anything, in lower case (the `_needs` tests, with the
# GitHub one made exact: `gh` and a letter before `_`), for the read tools' lower-cased text.
# The patterns run one after another on what the earlier ones left, but a text holding none of
# these is left unchanged by every one of them, so `redacted` returns it as it is.
# `tests/unit/tools/test_text_search.py` checks this against `redacted` and fails when a
# new kind of secret is added there.
_SECRET_HINTS = ("private key", "://", "bearer", "sk-", "akia", "asia", "github_pat_", "ghp_",
                 "gho_", "ghu_", "ghs_", "ghr_")
_TOKEN_CLASS = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=_-"
_TOKEN_BYTES = bytes(0x74 if b in _TOKEN_CLASS else 0x20 for b in range(256))
_TOKEN_RUN = b"t" * 32
"""The shortest high-entropy candidate: 32 characters of the token class in a row."""


def may_be_redacted(lowered: str) -> bool:
    """Whether `redacted` could change a text whose lower-cased form is `lowered` (False means
    it certainly returns the text unchanged). Lower-casing keeps each ASCII character one
    ASCII character in place, so every hint in the text is a hint in `lowered`."""
    if any(hint in lowered for hint in _SECRET_HINTS):
        return True
    # A run of token characters, found with C-level byte operations rather than a regex scan
    # (non-ASCII characters encode to bytes outside the class).
    return len(lowered) >= len(_TOKEN_RUN) and _TOKEN_RUN in lowered.encode(
        "utf-8", "surrogatepass").translate(_TOKEN_BYTES)


_compiled_hint_starts: Callable[[str, tuple[str, ...], str, int], list[int]] | None
try:
    from stockade.protocol._hints import hint_starts as _compiled_hint_starts
except ImportError:  # a build made without a C compiler
    _compiled_hint_starts = None

_TOKEN_CHARS = _TOKEN_CLASS.decode("ascii")


def hint_starts(lowered: str) -> list[int] | None:
    """Ascending offsets in `lowered` where a hint of `may_be_redacted` or a run of 32 token
    characters begins, from one compiled pass; None in a build without it. A part of the text
    that holds none of these offsets (with room for what starts there: hints and runs never
    span a NUL or a line break) is one `may_be_redacted` says False for."""
    if _compiled_hint_starts is None:
        return None
    return _compiled_hint_starts(lowered, _SECRET_HINTS, _TOKEN_CHARS, len(_TOKEN_RUN))


_TOKEN_MIN = 32
"""The shortest run `_TOKEN` matches: shorter text has no high-entropy token."""
_HEX = re.compile(r"[0-9a-fA-F\-]+")
# Random base64 of 32+ characters scores above ~4.5 bits per character; hex digests (at most 4)
# and ordinary identifiers stay below, so sha256 digests and uuids are never flagged.
_ENTROPY_BITS = 4.3
# Held keys shorter than this are not matched exactly: they would redact ordinary words.
MIN_HELD_KEY_LENGTH = 8


def _entropy(text: str) -> float:
    counts = Counter(text)
    n = len(text)
    return -sum(c / n * math.log2(c / n) for c in counts.values())


def _looks_random(token: str) -> bool:
    if _HEX.fullmatch(token):
        return False
    has_digit = any(ch.isdigit() for ch in token)
    has_upper = any(ch.isupper() for ch in token)
    has_lower = any(ch.islower() for ch in token)
    return has_digit and has_upper and has_lower and _entropy(token) >= _ENTROPY_BITS


@dataclass(frozen=True, slots=True)
class ScanResult:
    """A text with its secrets replaced, and what was found (kinds and counts only)."""

    text: str
    kinds: Counter[str]

    @property
    def count(self) -> int:
        return sum(self.kinds.values())


def scan(text: str, held: Iterable[str] = ()) -> ScanResult:
    """Find and replace every secret-shaped string in `text`, and every exact `held` key."""
    kinds: Counter[str] = Counter()
    out = text
    for key in held:
        if len(key) >= MIN_HELD_KEY_LENGTH and key in out:
            kinds[SecretKind.HELD_KEY.value] += out.count(key)
            out = out.replace(key, REDACTED)
    for kind, needed, pattern in _GATED:
        if not needed(out):
            continue

        def _sub(match: re.Match[str], kind: SecretKind = kind) -> str:
            kinds[kind.value] += 1
            start, end = match.span("s")
            base = match.start()
            whole = match.group(0)
            return whole[: start - base] + REDACTED + whole[end - base:]
        out = pattern.sub(_sub, out)
    if len(out) < _TOKEN_MIN:
        return ScanResult(out, kinds)

    def _entropy_sub(match: re.Match[str]) -> str:
        token = match.group(0)
        if REDACTED in token or not _looks_random(token):
            return token
        kinds[SecretKind.HIGH_ENTROPY.value] += 1
        return REDACTED

    out = _TOKEN.sub(_entropy_sub, out)
    return ScanResult(out, kinds)


def redacted(text: str) -> str:
    """`text` with every secret-shaped string replaced (what the model is shown of it)."""
    return scan(text).text
