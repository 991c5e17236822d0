"""The replay provider: plays recorded answers from a JSON-lines file of events.

Each line is one `event_to_json` dict. A recorded answer ends at its terminal event; each
`stream()` call plays the next answer. A file that cannot be read, a line that is not a
valid event, or running out of answers is reported as a terminal error event, never raised.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path

from stockade.protocol import errors
from stockade.protocol.errors import TransportReason
from stockade.protocol.events import (
    StreamError,
    StreamEvent,
    event_from_json,
    event_to_json,
    is_terminal,
)
from stockade.protocol.request import ChatRequest

LABEL = "The replay provider"
MAX_FILE_BYTES = 64 * 1024 * 1024
"""A replay file is a test or demo recording; anything larger is a mistake."""


class ReplayFileError(Exception):
    """The replay file could not be used; the message is authored and names the line."""


def load_responses(path: Path) -> list[list[StreamEvent]]:
    """The recorded answers in `path`; raises `ReplayFileError` with a specific message."""
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            raise ReplayFileError(
                f"The replay file {path.name} is larger than {MAX_FILE_BYTES // (1024 * 1024)} MiB."
            )
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ReplayFileError(f"The replay file {path.name} does not exist.") from None
    except UnicodeDecodeError:
        raise ReplayFileError(f"The replay file {path.name} is not UTF-8 text.") from None
    except OSError:
        raise ReplayFileError(f"The replay file {path.name} could not be read.") from None
    responses: list[list[StreamEvent]] = []
    current: list[StreamEvent] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except ValueError:
            raise ReplayFileError(
                f"Line {number} of the replay file {path.name} is not valid JSON."
            ) from None
        if not isinstance(data, dict):
            raise ReplayFileError(
                f"Line {number} of the replay file {path.name} is not a JSON object."
            )
        try:
            event = event_from_json(data)
        except ValueError as exc:
            raise ReplayFileError(
                f"Line {number} of the replay file {path.name} is not a valid event ({exc})."
            ) from None
        current.append(event)
        if is_terminal(event):
            responses.append(current)
            current = []
    if current:
        # A recording cut short plays as what it was: an answer that never finished.
        current.append(StreamError(error=errors.truncated(LABEL), ends_stream=True))
        responses.append(current)
    return responses


def write_responses(path: str | Path, responses: list[list[StreamEvent]]) -> None:
    """Record answers as a replay file (one `event_to_json` object per line)."""
    lines = [
        json.dumps(event_to_json(event), ensure_ascii=False, sort_keys=True)
        for response in responses
        for event in response
    ]
    Path(path).write_text("".join(line + "\n" for line in lines), encoding="utf-8")


def _refused(message: str) -> StreamError:
    return StreamError(error=errors.transport(LABEL, TransportReason.REFUSED, message=message))


class ReplayProvider:
    """Plays the next recorded answer from a JSON-lines file on every `stream()` call."""

    name = "replay"

    def __init__(self, path: str | Path) -> None:
        self._path = Path(path)
        self._responses: list[list[StreamEvent]] | None = None
        self._load_error: str | None = None
        self._played = 0

    def __repr__(self) -> str:
        return f"ReplayProvider(path={self._path.name!r}, played={self._played})"

    @property
    def played(self) -> int:
        return self._played

    def _load(self) -> list[list[StreamEvent]] | None:
        if self._responses is None and self._load_error is None:
            try:
                self._responses = load_responses(self._path)
            except ReplayFileError as exc:
                self._load_error = str(exc)
        return self._responses

    async def stream(self, request: ChatRequest) -> AsyncIterator[StreamEvent]:
        responses = self._load()
        if responses is None:
            yield _refused(self._load_error or "The replay file could not be used.")
            return
        if self._played >= len(responses):
            yield _refused(
                f"The replay file {self._path.name} has no more recorded answers "
                f"(it holds {len(responses)} and all were played)."
            )
            return
        response = responses[self._played]
        self._played += 1
        for event in response:
            await asyncio.sleep(0)  # a cancelling consumer gets a chance between events
            yield event
