"""The one interface every provider implements: a request in, a stream of events out."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Protocol

from stockade.protocol.events import StreamEvent
from stockade.protocol.request import ChatRequest


class Provider(Protocol):
    """Turns one `ChatRequest` into `StreamEvent`s.

    The iterator ends after exactly one terminal event (`message_stop`, `aborted`, or a
    terminal `error`). Cancelling the consuming task closes the underlying connection.
    Providers never raise for protocol outcomes; they yield an `error` event instead.
    """

    name: str

    def stream(self, request: ChatRequest) -> AsyncIterator[StreamEvent]: ...
