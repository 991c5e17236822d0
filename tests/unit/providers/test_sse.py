"""SSE framing: any chunking gives the same frames; lines and events are bounded."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stockade.providers.sse import MAX_LINE_LENGTH, SseDecoder, SseFrame, SseOverflow
from tests.conftest import examples

BODY = (
    "event: message_start\n"
    'data: {"a": 1}\n'
    "\n"
    ": a comment line\n"
    "data: café ☕ review — 😀\n"
    "\n"
    "event: ping\n"
    "id: 7\n"
    "retry: 100\n"
    "data:no-space\n"
    "\n"
).encode()

EXPECTED = [
    SseFrame(event="message_start", data='{"a": 1}'),
    SseFrame(event="message", data="café ☕ review — 😀"),
    SseFrame(event="ping", data="no-space"),
]


def decode(chunks: list[bytes]) -> list[SseFrame]:
    decoder = SseDecoder()
    frames: list[SseFrame] = []
    for chunk in chunks:
        frames.extend(decoder.feed(chunk))
    return frames


def test_whole_body_decodes_to_frames() -> None:
    assert decode([BODY]) == EXPECTED


def test_every_single_split_point_decodes_identically() -> None:
    for cut in range(1, len(BODY)):
        assert decode([BODY[:cut], BODY[cut:]]) == EXPECTED, cut


def test_byte_by_byte_feeding_decodes_identically() -> None:
    assert decode([BODY[i : i + 1] for i in range(len(BODY))]) == EXPECTED


@settings(max_examples=examples(200), deadline=None)
@given(st.lists(st.integers(min_value=1, max_value=len(BODY) - 1), max_size=20))
def test_any_chunking_gives_the_same_frames(cuts: list[int]) -> None:
    points = sorted(set(cuts))
    chunks = [BODY[a:b] for a, b in zip([0, *points], [*points, len(BODY)], strict=True)]
    assert decode(chunks) == EXPECTED


@pytest.mark.parametrize("newline", ["\r\n", "\r"])
def test_crlf_and_cr_line_endings_match_lf(newline: str) -> None:
    body = BODY.decode().replace("\n", newline).encode()
    assert decode([body]) == EXPECTED
    for cut in range(1, len(body)):
        assert decode([body[:cut], body[cut:]]) == EXPECTED, cut


def test_an_event_without_its_blank_line_is_never_dispatched() -> None:
    assert decode([b'event: message_stop\ndata: {"type":"message_stop"}\n']) == []


def test_event_name_resets_after_each_dispatch() -> None:
    frames = decode([b"event: a\ndata: 1\n\ndata: 2\n\n"])
    assert frames == [SseFrame("a", "1"), SseFrame("message", "2")]


def test_multiple_data_lines_join_with_newlines() -> None:
    assert decode([b"data: one\ndata: two\n\n"]) == [SseFrame("message", "one\ntwo")]


def test_invalid_utf8_becomes_replacement_characters() -> None:
    assert decode([b"data: a\xffb\n\n"]) == [SseFrame("message", "a\ufffdb")]


def test_an_unterminated_overlong_line_is_refused_and_the_decoder_recovers() -> None:
    decoder = SseDecoder()
    with pytest.raises(SseOverflow):
        decoder.feed(b"data: " + b"x" * (MAX_LINE_LENGTH + 10))
    assert decoder.feed(b"\ndata: {}\n\n")[-1] == SseFrame("message", "{}")


def test_long_terminated_lines_are_accepted() -> None:
    line = b"data: " + b"y" * 500_000 + b"\n\n"
    assert len(decode([line, line, line])) == 3
