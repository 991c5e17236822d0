"""Incremental Server-Sent Events framing: bytes in any chunking → (event, data) frames."""

from __future__ import annotations

import codecs
from dataclasses import dataclass

MAX_LINE_LENGTH = 1_048_576
"""Longest line (code points) kept while waiting for its newline; real events are far smaller."""

MAX_EVENT_LENGTH = 4 * MAX_LINE_LENGTH
"""Longest data payload gathered for one event (several `data:` lines joined)."""


class SseOverflow(Exception):
    """The stream sent a line or an event too long to be a real provider event."""


@dataclass(frozen=True, slots=True)
class SseFrame:
    """One dispatched event: its name (`message` when none was given) and its data."""

    event: str
    data: str


class SseDecoder:
    """Turns byte chunks into frames, whatever the chunk boundaries are.

    Follows the SSE framing rules: lines end with LF, CRLF or CR; `event:` names the next
    dispatch; `data:` lines accumulate (joined with LF); a blank line dispatches. One leading
    space after the colon is dropped. Comments (`:`), `id:` and `retry:` are ignored. An
    event that never gets its blank line is never dispatched: a truncated body must not look
    complete. Bytes are decoded as UTF-8 incrementally (a character split across chunks is
    held), and bytes that are not UTF-8 become U+FFFD so one bad byte cannot stop a stream.
    """

    def __init__(self) -> None:
        self._utf8 = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._pending = ""
        self._event = ""
        self._data: list[str] = []
        self._data_size = 0
        self._has_data = False
        self._after_cr = False

    def feed(self, chunk: bytes) -> list[SseFrame]:
        """Decode one chunk; returns the frames it completed. Raises `SseOverflow`."""
        text = self._utf8.decode(chunk)
        frames: list[SseFrame] = []
        if not text:
            return frames
        if self._after_cr and text.startswith("\n"):
            # The second half of a CRLF split across chunks: the line already ended.
            text = text[1:]
        self._after_cr = False
        buffer = self._pending + text
        start = 0
        length = len(buffer)
        # Next CR / LF positions are cached so a chunk of many lines is scanned once.
        cr = buffer.find("\r")
        lf = buffer.find("\n")
        while True:
            if cr != -1 and cr < start:
                cr = buffer.find("\r", start)
            if lf != -1 and lf < start:
                lf = buffer.find("\n", start)
            if cr == -1 and lf == -1:
                break
            if lf == -1 or (cr != -1 and cr < lf):
                end, next_start = cr, cr + 1
                if next_start < length and buffer[next_start] == "\n":
                    next_start += 1
                elif next_start == length:
                    self._after_cr = True
            else:
                end, next_start = lf, lf + 1
            frame = self._line(buffer[start:end])
            if frame is not None:
                frames.append(frame)
            start = next_start
        self._pending = buffer[start:]
        if len(self._pending) > MAX_LINE_LENGTH:
            self._pending = ""
            raise SseOverflow("line")
        return frames

    def _line(self, line: str) -> SseFrame | None:
        if line == "":
            if not self._has_data:
                self._event = ""
                return None
            frame = SseFrame(event=self._event or "message", data="\n".join(self._data))
            self._event = ""
            self._data = []
            self._data_size = 0
            self._has_data = False
            return frame
        if line.startswith(":"):
            return None
        name, colon, value = line.partition(":")
        if colon and value.startswith(" "):
            value = value[1:]
        if name == "event":
            self._event = value
        elif name == "data":
            self._data.append(value)
            self._has_data = True
            self._data_size += len(value) + 1
            if self._data_size > MAX_EVENT_LENGTH:
                self._data = []
                self._data_size = 0
                self._has_data = False
                raise SseOverflow("event")
        return None
