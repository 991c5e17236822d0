"""The one interface every provider implements: a request in, a stream of events out."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Protocol

from stockade.protocol.events import StreamEvent
from stockade.protocol.request import ChatRequest


class Provider(Protocol):
    """Turns one `ChatRequest` into `StreamEvent`s.

    The iterator ends after exactly one terminal event (`message_stop`, `aborted`, or a
    terminal `error`). Providers never raise for protocol outcomes; they yield an `error`
    event instead. Cancelling the consuming task is not a protocol outcome: the provider
    closes the underlying connection and lets `CancelledError` through, with no terminal
    event, because only the canceller knows whether the user stopped or a deadline passed.
    """

    name: str

    def stream(self, request: ChatRequest) -> AsyncIterator[StreamEvent]: ...
