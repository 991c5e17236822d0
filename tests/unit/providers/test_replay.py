"""The replay provider: recorded answers played in order, every problem an error event."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from stockade.protocol.errors import ErrorCode, malformed
from stockade.protocol.events import (
    MessageStart,
    MessageStop,
    StopReason,
    StreamError,
    StreamEvent,
    TextDelta,
    ToolCallComplete,
    Usage,
    event_to_json,
)
from stockade.protocol.request import ChatRequest
from stockade.providers.replay import ReplayProvider, write_responses

REQUEST = ChatRequest(provider="replay", model="m", system="", messages=())

FIRST: list[StreamEvent] = [
    MessageStart(model="m"),
    TextDelta(text="Adding."),
    ToolCallComplete(id="c1", name="add_threat", input={"action": "add_threat"}),
    Usage(input_tokens=3, output_tokens=4),
    MessageStop(stop_reason=StopReason.TOOL_USE),
]
SECOND: list[StreamEvent] = [
    MessageStart(model="m"),
    TextDelta(text="Done."),
    MessageStop(stop_reason=StopReason.END_TURN),
]


def write(path: Path, events: list[StreamEvent], extra: str = "") -> Path:
    lines = [json.dumps(event_to_json(e)) for e in events]
    path.write_text("\n".join(lines) + "\n" + extra, encoding="utf-8")
    return path


def play(provider: ReplayProvider) -> list[StreamEvent]:
    async def run() -> list[StreamEvent]:
        return [e async for e in provider.stream(REQUEST)]

    return asyncio.run(run())


def test_each_stream_plays_the_next_recorded_answer(tmp_path: Path) -> None:
    provider = ReplayProvider(write(tmp_path / "r.jsonl", [*FIRST, *SECOND]))
    assert play(provider) == FIRST
    assert play(provider) == SECOND


def test_running_out_of_answers_is_a_terminal_error(tmp_path: Path) -> None:
    provider = ReplayProvider(write(tmp_path / "r.jsonl", FIRST))
    play(provider)
    [event] = play(provider)
    assert isinstance(event, StreamError) and event.is_terminal
    assert "no more recorded answers" in event.error.message


def test_a_recording_cut_short_ends_with_a_truncation_error(tmp_path: Path) -> None:
    provider = ReplayProvider(write(tmp_path / "r.jsonl", FIRST[:2]))
    events = play(provider)
    assert events[:2] == FIRST[:2]
    last = events[-1]
    assert isinstance(last, StreamError) and last.ends_stream
    assert last.error.code is ErrorCode.MALFORMED_STREAM


def test_a_bad_line_is_reported_with_its_number(tmp_path: Path) -> None:
    path = write(tmp_path / "r.jsonl", FIRST, extra="{not json\n")
    [event] = play(ReplayProvider(path))
    assert isinstance(event, StreamError) and event.is_terminal
    assert "Line 6" in event.error.message


def test_an_unknown_event_type_is_reported(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    path.write_text('{"type": "telepathy"}\n', encoding="utf-8")
    [event] = play(ReplayProvider(path))
    assert isinstance(event, StreamError) and "Line 1" in event.error.message


def test_a_missing_file_is_an_error_event_not_an_exception(tmp_path: Path) -> None:
    [event] = play(ReplayProvider(tmp_path / "absent.jsonl"))
    assert isinstance(event, StreamError) and "does not exist" in event.error.message
    assert str(tmp_path) not in event.error.message


def test_non_terminal_notices_stay_inside_one_answer(tmp_path: Path) -> None:
    notice = StreamError(error=malformed("bad frame"))
    provider = ReplayProvider(write(tmp_path / "r.jsonl", [FIRST[0], notice, *FIRST[1:]]))
    assert play(provider) == [FIRST[0], notice, *FIRST[1:]]


def test_recorded_answers_round_trip_through_write_responses(tmp_path: Path) -> None:
    path = tmp_path / "recorded.jsonl"
    write_responses(path, [FIRST, SECOND])
    provider = ReplayProvider(path)
    assert play(provider) == FIRST
    assert play(provider) == SECOND
