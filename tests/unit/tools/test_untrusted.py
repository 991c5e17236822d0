"""The untrusted-data fence: sanitizing, escaping and the envelope."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stockade.tools.untrusted import (
    END_MARKER,
    READ_RESULT_MAX_BYTES,
    START_MARKER,
    EnvelopeTooLarge,
    envelope,
    escape,
    is_forbidden_code_point,
    sanitize,
    scalar,
)
from tests.conftest import examples

BIDI = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"


def test_markers_are_the_agreed_strings() -> None:
    assert START_MARKER == "<<<UNTRUSTED_DOCUMENT_DATA>>>"
    assert END_MARKER == "<<<END_UNTRUSTED_DOCUMENT_DATA>>>"


def test_sanitize_removes_controls_and_bidi_but_keeps_zero_width_space() -> None:
    text, cut = sanitize("a\x00b\x07c\x1bd\x7fe\x85f" + BIDI + "g\u200bh", 200)
    assert (text, cut) == ("abcdefg\u200bh", False)


def test_line_breaks_become_backslash_n_and_tabs_become_spaces() -> None:
    assert sanitize("one\ntwo\r\nthree\rfour\tfive", 200) == ("one\\ntwo\\nthree\\nfour five", False)


def test_cap_counts_code_points_and_ends_with_ellipsis() -> None:
    assert sanitize("abcdef", 6) == ("abcdef", False)
    assert sanitize("abcdefg", 6) == ("abcde…", True)
    bombs, cut = sanitize("💣" * 10, 4)
    assert bombs == "💣💣💣…" and cut


def test_cap_applies_after_stripping() -> None:
    assert sanitize("\x00" * 50 + "abc", 3) == ("abc", False)


def test_unpaired_surrogate_becomes_replacement_character() -> None:
    assert sanitize("a\udc00b", 10) == ("a\ufffdb", False)


def test_escape_backslashes_first_then_angle_brackets() -> None:
    assert escape("a\\<b>") == "a\\\\\\<b\\>"
    assert escape(END_MARKER) == "\\<\\<\\<END_UNTRUSTED_DOCUMENT_DATA\\>\\>\\>"


def test_scalar_keeps_real_and_typed_line_breaks_apart() -> None:
    real, _ = scalar("a\nb", 200)
    typed, _ = scalar("a\\nb", 200)
    assert real == "a\\nb"
    assert typed == "a\\\\nb"


def test_envelope_layout_is_marker_body_marker() -> None:
    text = envelope({"b": 1, "a": "x"})
    assert text == f'{START_MARKER}\n{{"a":"x","b":1}}\n{END_MARKER}'


def test_envelope_refuses_an_oversized_body() -> None:
    with pytest.raises(EnvelopeTooLarge):
        envelope({"a": "x" * READ_RESULT_MAX_BYTES})
    envelope({"a": "x" * (READ_RESULT_MAX_BYTES - 8)})  # exactly at the cap: {"a":"…"} is 8 bytes more


@settings(max_examples=examples(300), deadline=None)
@given(st.text(), st.integers(min_value=1, max_value=300))
def test_sanitized_and_escaped_text_never_carries_a_marker_or_forbidden_code_point(text: str, cap: int) -> None:
    for out in (escape(sanitize(text, cap)[0]), scalar(text, cap)[0]):
        assert "<<<" not in out and ">>>" not in out
        assert START_MARKER not in out and END_MARKER not in out
        assert not any(is_forbidden_code_point(ch) for ch in out)
        out.encode("utf-8")  # always encodable


@settings(max_examples=examples(200), deadline=None)
@given(st.lists(st.sampled_from(["<", ">", "\\", "<<<", "END_UNTRUSTED_DOCUMENT_DATA", ">>>", "\n", "\u202e", "a"]), max_size=40))
def test_marker_fragments_cannot_be_reassembled(parts: list[str]) -> None:
    out = scalar("".join(parts), 300)[0]
    assert "<<<" not in out and ">>>" not in out


@settings(max_examples=examples(200), deadline=None)
@given(st.text().filter(lambda t: "\\" not in t), st.integers(min_value=1, max_value=50))
def test_sanitize_never_exceeds_cap_in_source_code_points(text: str, cap: int) -> None:
    # Without typed backslashes every `\\n` in the output is one source line break.
    out, cut = sanitize(text, cap)
    assert len(out.replace("\\n", "\n")) <= cap
    if cut:
        assert out.endswith("…")


@settings(max_examples=examples(500))
@given(st.one_of(st.text(), st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=0x7F)),
                 st.text(alphabet=st.characters(min_codepoint=0x20, max_codepoint=0x7E))),
       st.integers(min_value=1, max_value=60))
def test_printable_ascii_shortcut_cleans_as_the_passes_do(text: str, cap: int) -> None:
    """Printable ASCII skips the cleaning passes: it comes out as the passes make it."""
    from stockade.tools.untrusted import ELLIPSIS, _clean, _cleaned_text

    cleaned = _cleaned_text(text)
    expected = (cleaned[: cap - 1] + ELLIPSIS, True) if len(cleaned) > cap else (cleaned, False)
    assert _clean(text, cap) == expected
    assert type(_clean(text, cap)[0]) is str


@settings(max_examples=examples(500))
@given(st.one_of(st.text(), st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=0x7F)),
                 st.text(alphabet=st.characters(min_codepoint=0x20, max_codepoint=0x7E))),
       st.integers(min_value=-1, max_value=60))
def test_sanitize_shortcut_answers_as_the_passes_do(text: str, cap: int) -> None:
    """Printable ASCII within the cap comes back as the cleaning passes would return it (and a
    cap below one is refused either way)."""
    from stockade.tools.untrusted import _clean

    try:
        cleaned, cut = _clean(text, cap)
    except ValueError:
        with pytest.raises(ValueError):
            sanitize(text, cap)
        return
    assert sanitize(text, cap) == (cleaned.replace("\n", "\\n"), cut)
