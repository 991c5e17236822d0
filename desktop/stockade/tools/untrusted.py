"""The untrusted-data fence: markers, sanitizing, escaping and the read-result envelope.

Line breaks: CRLF, a lone CR and LF each become one line break, written as the two characters
backslash and `n` (counted as one code point against the cap, since it is one in the source).
A tab becomes a single space. Every other C0/C1 control, DEL and the bidi controls are removed;
an unpaired surrogate becomes U+FFFD so the text can always be encoded as UTF-8.

`sanitize` then `escape` is always safe. Read tools use `scalar`, which escapes before writing
line breaks, so a real line break (`\\n` after escaping) stays distinguishable from a typed
backslash-n (`\\\\n`).
"""

from __future__ import annotations

import re
from typing import Any

from stockade.thf.canonical import canonical_json

START_MARKER = "<<<UNTRUSTED_DOCUMENT_DATA>>>"
END_MARKER = "<<<END_UNTRUSTED_DOCUMENT_DATA>>>"

READ_RESULT_MAX_BYTES = 8192
"""UTF-8 bytes of an envelope's JSON body (markers excluded)."""

ELLIPSIS = "…"

BIDI_CONTROLS = frozenset(
    "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
)

_DROPPED = re.compile(
    "[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]"
)
_SURROGATE = re.compile("[\ud800-\udfff]")
_LINE_BREAK = re.compile("\r\n?")


def is_forbidden_code_point(ch: str) -> bool:
    """True for a code point that never reaches the model raw: controls, bidi, surrogates."""
    cp = ord(ch)
    return cp <= 0x1F or 0x7F <= cp <= 0x9F or ch in BIDI_CONTROLS or 0xD800 <= cp <= 0xDFFF


def _clean(text: str, max_code_points: int) -> tuple[str, bool]:
    """Unsafe code points removed, line breaks unified to LF (still raw), capped."""
    if max_code_points < 1:
        raise ValueError("max_code_points must be at least 1")
    if type(text) is str and text.isascii() and text.isprintable():
        # Printable ASCII (nearly every name and id) holds nothing the passes below change.
        cleaned = text
    else:
        cleaned = _cleaned_text(text)
    if len(cleaned) > max_code_points:
        return cleaned[: max_code_points - 1] + ELLIPSIS, True
    return cleaned, False


def _cleaned_text(text: str) -> str:
    cleaned = _LINE_BREAK.sub("\n", text).replace("\t", " ")
    cleaned = _DROPPED.sub("", cleaned)
    if not cleaned.isascii():
        cleaned = _SURROGATE.sub("\ufffd", cleaned)
    return cleaned


def sanitize(text: str, max_code_points: int) -> tuple[str, bool]:
    """Strip unsafe code points, cap at `max_code_points` (ending in `…`), escape line breaks.

    Returns the text and whether it was cut. Astral characters are never split. The result
    holds no control, bidi or surrogate code point.
    """
    if (type(text) is str and 0 < len(text) <= max_code_points and text.isascii()
            and text.isprintable()):
        # Printable ASCII within the cap (nearly every summary field): nothing below changes it.
        return text, False
    cleaned, truncated = _clean(text, max_code_points)
    return cleaned.replace("\n", "\\n"), truncated


def escape(text: str) -> str:
    """Backslash-escape `\\`, `<` and `>` so no value can spell or close a marker."""
    return text.replace("\\", "\\\\").replace("<", "\\<").replace(">", "\\>")


def scalar(value: Any, max_code_points: int) -> tuple[str, bool]:
    """One document- or catalog-derived value as read tools emit it: cleaned, capped, escaped.

    Escaping runs before line breaks become `\\n`, so a real line break reads `\\n` while a
    typed backslash-n reads `\\\\n`: the two stay distinguishable.
    """
    cleaned, truncated = _clean(str(value), max_code_points)
    return escape(cleaned).replace("\n", "\\n"), truncated


class EnvelopeTooLarge(ValueError):
    """A read-result body came out over the byte cap (the caller measured wrongly)."""

    def __init__(self, size: int) -> None:
        super().__init__(f"read result body is {size} bytes, over the {READ_RESULT_MAX_BYTES}-byte cap")
        self.size = size


def body_bytes(payload: dict[str, Any]) -> int:
    """UTF-8 size of `payload` as canonical JSON: what `envelope` holds against the cap."""
    return len(canonical_json(payload).encode("utf-8"))


def envelope(payload: dict[str, Any]) -> str:
    """Start marker, canonical JSON of `payload`, end marker, one per line."""
    body = canonical_json(payload)
    size = len(body.encode("utf-8"))
    if size > READ_RESULT_MAX_BYTES:
        raise EnvelopeTooLarge(size)
    return f"{START_MARKER}\n{body}\n{END_MARKER}"
