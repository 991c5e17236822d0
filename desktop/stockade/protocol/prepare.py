"""One request made ready to send: preflight against the model list, then context budgeting."""

from __future__ import annotations

import dataclasses

from stockade.protocol.budget import budget_messages
from stockade.protocol.models import preflight, resolve_model
from stockade.protocol.request import ChatRequest


def prepare_request(request: ChatRequest) -> ChatRequest:
    """`request` with its history trimmed to the model's window, or `ProtocolException`.

    Raises `unsupported_capability` from preflight, or `context_overflow` when the newest
    exchange alone does not fit. An unlisted model (allowed only without tools) gets the full
    history, because its window is unknown.
    """
    preflight(request)
    model = resolve_model(request.provider, request.model)
    if model is None:
        return request
    kept = budget_messages(
        request.messages,
        max_input_tokens=model.context_window,
        reserve_output_tokens=request.max_output_tokens,
    )
    if kept == request.messages:
        return request
    return dataclasses.replace(request, messages=kept)
