"""Invariants of the shared stream loop, over any chunking and any early end of a body."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from stockade.protocol.errors import ErrorCode
from stockade.protocol.events import MessageStop, StreamError, StreamEvent, is_terminal
from stockade.providers.anthropic import AnthropicMapper
from stockade.providers.openai import ERRORS, OpenAIMapper
from stockade.providers.streaming import FrameMapper, SdkStream, stream_events
from tests.conftest import examples

STREAMS = Path(__file__).resolve().parents[2] / "fixtures" / "streams"
BODIES = {
    name: (STREAMS / f"{name}_parallel_tools.sse").read_bytes() for name in ("anthropic", "openai")
}
MAPPERS: dict[str, type[AnthropicMapper] | type[OpenAIMapper]] = {
    "anthropic": AnthropicMapper,
    "openai": OpenAIMapper,
}


class _Response:
    def __init__(self, chunks: list[bytes]) -> None:
        self._chunks = chunks
        self.closed = False

    async def aiter_bytes(self) -> AsyncIterator[bytes]:
        for chunk in self._chunks:
            yield chunk

    async def aclose(self) -> None:
        self.closed = True


class _Stream:
    def __init__(self, chunks: list[bytes]) -> None:
        self.response = _Response(chunks)

    async def close(self) -> None:
        await self.response.aclose()


def run(chunks: list[bytes], mapper: FrameMapper) -> tuple[list[StreamEvent], bool]:
    stream = _Stream(chunks)

    async def open_stream() -> SdkStream:
        return stream  # type: ignore[return-value]

    async def collect() -> list[StreamEvent]:
        return [e async for e in stream_events("Test", open_stream, mapper, ERRORS)]

    events = asyncio.run(collect())
    return events, stream.response.closed


def chunked(body: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c for c in cuts if 0 < c < len(body)})
    return [body[a:b] for a, b in zip([0, *points], [*points, len(body)], strict=True)]


@settings(max_examples=examples(120), deadline=None)
@given(
    name=st.sampled_from(sorted(BODIES)),
    cuts=st.lists(st.integers(min_value=1, max_value=4000), max_size=15),
)
def test_any_chunking_yields_the_events_of_the_whole_body(name: str, cuts: list[int]) -> None:
    body = BODIES[name]
    whole, _ = run([body], MAPPERS[name]())
    split, closed = run(chunked(body, cuts), MAPPERS[name]())
    assert split == whole
    assert isinstance(whole[-1], MessageStop)
    assert closed


@settings(max_examples=examples(120), deadline=None)
@given(
    name=st.sampled_from(sorted(BODIES)),
    data=st.data(),
)
def test_a_body_cut_anywhere_ends_with_exactly_one_terminal_event(
    name: str, data: st.DataObject
) -> None:
    body = BODIES[name]
    end = data.draw(st.integers(min_value=0, max_value=len(body)), label="end")
    cuts = data.draw(st.lists(st.integers(min_value=1, max_value=len(body)), max_size=8))
    whole, _ = run([body], MAPPERS[name]())
    events, closed = run(chunked(body[:end], cuts), MAPPERS[name]())
    assert closed
    assert events and is_terminal(events[-1])
    assert not any(is_terminal(e) for e in events[:-1])
    if isinstance(events[-1], MessageStop):
        # Only a body that really reached its terminal frame may look complete.
        assert events == whole
    else:
        last = events[-1]
        assert isinstance(last, StreamError)
        assert last.error.code is ErrorCode.MALFORMED_STREAM and last.ends_stream
        # Everything before the failure is what the whole body would have produced so far.
        assert events[:-1] == whole[: len(events) - 1]
