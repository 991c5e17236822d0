"""The compiled hint scan answers for every part of a text as `may_be_redacted` does.

`secret_scan.hint_starts` (protocol/_hints.c) lists where each hint of `may_be_redacted`, and
each run of 32 token characters, begins in a lower-cased text, in one pass. The read tools'
text search asks it once per section and then decides each haystack (the parts between NULs)
by whether one of those offsets falls inside it. These tests compare that decision with
`may_be_redacted` on each part of generated texts: hints whole, cut, in other cases, next to
separators, runs of 31, 32 and more token characters, broken by non-ASCII letters.
"""

from __future__ import annotations

import os
from bisect import bisect_left

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from stockade.protocol import secret_scan
from stockade.protocol.secret_scan import _SECRET_HINTS, hint_starts, may_be_redacted
from tests.conftest import examples

if secret_scan._compiled_hint_starts is None:
    if os.environ.get("STOCKADE_ALLOW_NO_BLOCK_READER") != "1":
        pytest.fail("the compiled hint scan (stockade.protocol._hints) is not built: "
                    "tools/_setup.sh builds it with the package (needs a C compiler)",
                    pytrace=False)
    pytest.skip("this build has no compiled hint scan", allow_module_level=True)

PIECES = [*_SECRET_HINTS, "privatekey", "private  key", "gh_", "ghp", "github_pa", "sk", "k-",
          ":/", "//", "bear", "earer", "akiA", "\x00", "\n", " ", "é", "ǆ", "i̇", "a" * 31,
          "Ab1+/=_-" * 4, "x" * 32, "y" * 33, "z", "-", "_", "/"]
texts = st.lists(st.sampled_from(PIECES) | st.text("abgks:/-_ep\x00\n ", max_size=6),
                 max_size=12).map("".join)


def verdicts_from_offsets(text: str) -> list[bool]:
    offsets = hint_starts(text)
    assert offsets is not None
    assert offsets == sorted(offsets)
    verdicts = []
    start = 0
    for part in text.split("\x00"):
        end = start + len(part)
        at = bisect_left(offsets, start)
        verdicts.append(at < len(offsets) and offsets[at] < end)
        start = end + 1
    return verdicts


@settings(max_examples=examples(800), deadline=None)
@given(texts)
@example("x" * 31 + "\x00" + "y" * 32)
@example("github_pat_\x00ghp_")
@example("sk" + "\x00" + "-")
@example("ab" * 16 + "é" + "cd" * 16)
def test_each_part_is_decided_as_may_be_redacted_decides_it(text: str) -> None:
    lowered = text.lower()
    assert verdicts_from_offsets(lowered) == [may_be_redacted(part) for part in lowered.split("\x00")]


def test_offsets_point_at_each_hint_and_run() -> None:
    text = "a://b\x00" + "k" * 40 + "\x00bearer ghp_"
    assert hint_starts(text) == [1, 6, 47, 54]


# -- haystacks_containing: the read tools' text search over one section's joined haystacks --

from stockade.protocol._hints import haystacks_containing  # noqa: E402

# Any width of text: ASCII, Latin-1, BMP and astral characters, so the joined text is stored
# one, two or four bytes wide, and a needle's bytes can occur across two characters: stored two
# bytes wide, "ĀĀ\x00" is 00 01 00 01 00 00, which holds "\x01\x01" (01 00 01 00) one byte in.
CHARS = st.sampled_from(["a", "b", "\x01", "é", "ÿ", "Ā", "ā", "ĀĀ", "字", "\U0001f600", " "])
HAYSTACKS = st.lists(st.lists(CHARS, max_size=8).map("".join), min_size=0, max_size=12)
NEEDLES = st.lists(CHARS, max_size=3).map("".join)


def joined(haystacks: list[str]) -> tuple[str, list[int]]:
    starts = [0]
    for haystack in haystacks:
        starts.append(starts[-1] + len(haystack) + 1)
    return "\x00".join(haystacks), starts


@settings(max_examples=examples(1500), deadline=None)
@given(HAYSTACKS, NEEDLES)
@example(["\u0101\u0101", "a"], "\x01\x01")
@example(["ab", "ba"], "a")
@example([], "a")
@example(["a", "b"], "")
def test_haystacks_containing_is_the_plain_definition(haystacks: list[str], needle: str) -> None:
    text, starts = joined(haystacks)
    expected = [i for i, haystack in enumerate(haystacks) if needle in haystack]
    assert haystacks_containing(text, starts, needle) == expected


def test_a_needle_with_a_nul_is_refused() -> None:
    # A match could span two haystacks: the caller tests those one by one.
    with pytest.raises(ValueError):
        haystacks_containing("a\x00b", [0, 2, 4], "a\x00b")


@pytest.mark.parametrize("hint", _SECRET_HINTS)
def test_a_hint_is_found_at_every_offset_of_a_sixteen_byte_block(hint: str) -> None:
    # One-byte text is filtered sixteen positions at a time: a hint must be found wherever it
    # begins in a block, across the block's end, and at the text's very end.
    for offset in range(40):
        for tail in ("." * 20, "", "."):
            text = "." * offset + hint + tail
            assert hint_starts(text) == [offset], (offset, tail)
