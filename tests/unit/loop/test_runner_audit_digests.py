"""The runner's audit digests: each `model.request` step's `request_digest` is the plain
canonical digest of exactly the request sent, though the runner keeps each message's JSON
between requests instead of rebuilding it."""

from __future__ import annotations

import asyncio
from typing import Any

from stockade.loop.history import DocumentSession
from stockade.loop.hooks import RequestPermit, StepKind
from stockade.loop.runner import TurnRunner
from stockade.protocol.messages import Message, TextBlock, message_to_json
from stockade.protocol.request import ChatRequest
from stockade.thf.canonical import digest
from stockade.tools.registry import default_registry
from tests.unit.loop.fakes import base_model
from tests.unit.loop.scripted import RecordingHooks, ScriptedProvider, calls_reply, text_reply


def plain_digest(request: ChatRequest) -> str:
    return digest({
        "provider": request.provider,
        "model": request.model,
        "system": request.system,
        "messages": [message_to_json(m) for m in request.messages],
        "tools": [t.name for t in request.tools],
        "max_output_tokens": request.max_output_tokens,
    })


class RedactingHooks(RecordingHooks):
    """Sends a redacted copy of each request (new message objects), as the input guard may."""

    async def before_request(self, request: ChatRequest, iteration: int) -> Any:
        permit = await super().before_request(request, iteration)
        first = Message("user", (TextBlock('redacted "é" \\ [secret]'),))
        sent = ChatRequest(request.provider, request.model, request.system,
                           (first, *request.messages[1:]), request.tools,
                           request.max_output_tokens)
        return RequestPermit(handle=permit.handle, request=sent)


def run_turn(hooks: RecordingHooks) -> tuple[ScriptedProvider, RecordingHooks]:
    scripts = [
        calls_reply(("r1", "get_document_summary", {}), ("r2", "get_entity", {"kind": "elements", "id": "web-app"})),
        calls_reply(("r3", "search_entities", {"kind": "elements", "text": "web"})),
        text_reply("Done: the web app has no threats yet."),
    ]
    provider = ScriptedProvider(scripts)
    runner = TurnRunner(
        provider, default_registry(), DocumentSession(base_model()), hooks=hooks,
        model="test-model", provider_name="scripted", system_prompt="You review threat models.",
        clock_ms=lambda: 0, request_check=None,
    )
    asyncio.run(runner.submit("Summarize the model, then look at the web app."))
    return provider, hooks


def test_every_request_digest_is_the_plain_digest_of_the_request_sent() -> None:
    for hooks in (RecordingHooks(), RedactingHooks()):
        provider, hooks = run_turn(hooks)
        recorded = [s.payload["request_digest"] for s in hooks.steps if s.kind is StepKind.MODEL_REQUEST]
        assert len(provider.requests) == 3
        assert recorded == [plain_digest(r) for r in provider.requests]
        assert len(set(recorded)) == 3


class ShorteningHooks(RecordingHooks):
    """Sends the second request without its first message (the conversation the runner
    hashed before no longer starts it), the others as built."""

    async def before_request(self, request: ChatRequest, iteration: int) -> Any:
        permit = await super().before_request(request, iteration)
        if self.requests != 2:
            return permit
        sent = ChatRequest(request.provider, request.model, request.system,
                           request.messages[1:], request.tools, request.max_output_tokens)
        return RequestPermit(handle=permit.handle, request=sent)


def test_a_request_that_does_not_extend_the_one_before_is_digested_whole() -> None:
    provider, hooks = run_turn(ShorteningHooks())
    recorded = [s.payload["request_digest"] for s in hooks.steps if s.kind is StepKind.MODEL_REQUEST]
    assert len(provider.requests[1].messages) == len(provider.requests[0].messages) + 1
    assert recorded == [plain_digest(r) for r in provider.requests]
