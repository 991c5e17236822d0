"""The runner's audit digests: each `model.request` step's `request_digest` is the plain
canonical digest of exactly the request sent, though the runner keeps each message's JSON
between requests instead of rebuilding it, and encodes a message whose tool inputs it found
plain without normalizing it first (spelled around each input's JSON, which the token estimate
then measures instead of dumping the input again)."""

from __future__ import annotations

import asyncio
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from stockade.loop.history import DocumentSession
from stockade.loop.hooks import RequestPermit, StepKind
from stockade.loop.runner import TurnRunner, _RequestDigests, _screened, _text_digest
from stockade.protocol.budget import estimate_tokens
from stockade.protocol.events import ToolCallComplete
from stockade.protocol.messages import (
    Message,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
    message_to_json,
)
from stockade.protocol.request import ChatRequest
from stockade.thf.canonical import canonical_json, digest
from stockade.tools.registry import default_registry
from stockade.tools.runtime import call_problem, plainly_bounded, refused_input
from tests.conftest import examples
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


class _Text(str):
    pass


class _Number(float):
    pass


_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(), st.text(max_size=6),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0.0, -0.0, 1.0, 2.5, 1e16, 2.0**53, 9.1e15, -3.0]),
    st.builds(_Text, st.text(max_size=4)), st.builds(_Number, st.floats(-5, 5)),
)
_keys = st.one_of(st.text(max_size=6), st.sampled_from(["a", "b", "1.0", "__proto__"]),
                  st.integers(-3, 12), st.booleans(), st.none())
_inputs = st.recursive(
    _scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.lists(inner, max_size=3).map(tuple),
        st.dictionaries(_keys, inner, max_size=4),
        st.dictionaries(st.text(max_size=4), inner, max_size=4),
    ),
    max_leaves=16,
)
_plain_inputs = st.recursive(  # exact JSON types and string keys: what `note_plain` receives
    st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=6),
              st.floats(allow_nan=False, allow_infinity=False),
              st.sampled_from([0.0, -0.0, 1.0, 2.5, 1e16, 2.0**53, 9.1e15, -3.0])),
    lambda inner: st.one_of(st.lists(inner, max_size=4),
                            st.dictionaries(st.text(max_size=4), inner, max_size=4)),
    max_leaves=12,
)
_strings = st.one_of(st.text(max_size=12), st.sampled_from(['v1.0 "q"', "é\\n", "1.05"]),
                     st.builds(_Text, st.text(max_size=4)))
_fields = st.one_of(_strings, _inputs)  # a field of the wrong type falls back too
_blocks = st.one_of(
    st.builds(TextBlock, _fields),
    st.builds(ToolCallBlock, _fields, _fields, st.one_of(_plain_inputs, _inputs)),
    st.builds(ToolResultBlock, _fields, _fields, st.one_of(st.booleans(), st.integers())),
)
_messages = st.builds(Message, st.sampled_from(["user", "assistant"]),
                      st.lists(_blocks, max_size=4).map(tuple))


# Values whose plain sorted encoding is not their canonical JSON (keys that are not strings).
_unsorted = st.sampled_from([{True: 1}, {10: "a", 9: "b"}, {None: 0}, {"k": {False: 2}}])
_plain_messages = st.builds(  # exact strings throughout (the inputs decide), or one bad field
    Message, st.one_of(st.sampled_from(["user", "assistant"]), _unsorted),
    st.lists(st.one_of(
        st.builds(TextBlock, st.text(max_size=8)),
        st.builds(ToolCallBlock, st.text(max_size=4), st.text(max_size=4), _plain_inputs),
        st.builds(ToolResultBlock, st.text(max_size=4), st.text(max_size=8), st.booleans()),
        st.builds(TextBlock, _unsorted),
        st.builds(ToolCallBlock, _unsorted, st.text(max_size=4), _plain_inputs),
        st.builds(ToolCallBlock, st.text(max_size=4), _unsorted, _plain_inputs),
        st.builds(ToolResultBlock, _unsorted, st.text(max_size=8), st.booleans()),
        st.builds(ToolResultBlock, st.text(max_size=4), _unsorted, st.booleans()),
        st.builds(ToolResultBlock, st.text(max_size=4), st.text(max_size=8), _unsorted),
    ), max_size=4).map(tuple),
)


def _encoded_or_error(digests: _RequestDigests, message: Message) -> str | type[BaseException]:
    try:
        return digests.message_json(message)
    except (TypeError, ValueError) as exc:
        return type(exc)


def _canonical_or_error(message: Message) -> str | type[BaseException]:
    try:
        return canonical_json(message_to_json(message))
    except (TypeError, ValueError) as exc:
        return type(exc)


@settings(deadline=None, max_examples=300)
@given(st.one_of(_messages, _plain_messages), st.booleans())
def test_a_message_encodes_to_its_canonical_json_whether_or_not_its_inputs_were_screened(
    message: Message, screened: bool
) -> None:
    digests = _RequestDigests()
    if screened:  # as `_screened` notes them: only inputs `plainly_bounded` clears
        for block in message.content:
            if isinstance(block, ToolCallBlock) and plainly_bounded(block.input):
                digests.note_plain(block.input)
    assert _encoded_or_error(digests, message) == _canonical_or_error(message)


def _estimate_or_error(message: Message, digests: _RequestDigests | None) -> Any:
    try:
        return estimate_tokens(message, None if digests is None else digests.plain_json)
    except (AttributeError, TypeError, ValueError, RecursionError) as exc:  # a wrong field
        return type(exc)


@settings(deadline=None, max_examples=300)
@given(st.one_of(_messages, _plain_messages), st.booleans(), st.booleans())
def test_a_messages_token_estimate_is_the_same_from_its_screened_inputs_kept_json(
    message: Message, screened: bool, digested_first: bool
) -> None:
    digests = _RequestDigests()
    if screened:
        for block in message.content:
            if isinstance(block, ToolCallBlock) and plainly_bounded(block.input):
                digests.note_plain(block.input)
    if digested_first:
        _encoded_or_error(digests, message)
    assert _estimate_or_error(message, digests) == _estimate_or_error(message, None)


_ids = st.one_of(st.text(max_size=6), st.sampled_from(["c" * 128, "c" * 129, "é" * 129]),
                 st.builds(_Text, st.text(max_size=4)), st.integers())


@settings(deadline=None)
@given(_ids, _ids, _inputs)
def test_screening_a_call_is_call_problem_and_says_whether_its_input_is_plain(
    call_id: Any, name: Any, raw: Any
) -> None:
    event = ToolCallComplete(id=call_id, name=name, input=raw)
    screened, plain = _screened(event)
    problem = call_problem(call_id, name, raw)
    if problem is None:
        assert screened is event
    else:
        assert (screened.id, screened.name, screened.input) == (
            call_id, name, refused_input(problem))
    assert plain == (problem is None and plainly_bounded(raw))


@given(st.one_of(st.text(), st.text(alphabet=st.characters(categories=["Cs", "Cc", "Lo", "So"])),
                 st.sampled_from(['"quoted" \\ \n\t\x00\x1f\x7f é 🔑', "\u2028\u2029", "lone \ud800"]),
                 st.builds(_Text, st.text(max_size=6))))
def test_a_result_digest_is_the_canonical_digest_of_its_text(text: str) -> None:
    try:
        expected: str | type[BaseException] = digest(text)
    except UnicodeEncodeError as exc:  # a lone surrogate has no UTF-8 form
        expected = type(exc)
    try:
        got: str | type[BaseException] = _text_digest(text)
    except UnicodeEncodeError as exc:
        got = type(exc)
    assert got == expected


_LIMITS = st.sampled_from([4096, 4096, 1, True, 1.0, 0, False, 2**70, -3, "4096", None])


@settings(max_examples=examples(200), deadline=None)
@given(st.lists(st.tuples(_LIMITS, st.integers(0, 3)), min_size=1, max_size=8))
def test_each_request_digest_is_the_plain_digest_whatever_limits_follow_each_other(
    sent: list[tuple[Any, int]]
) -> None:
    """The head printed for one request's `max_output_tokens` is kept for the next one only
    when both are equal exact ints (`True == 1` and `1.0 == 1` print otherwise)."""
    digests = _RequestDigests()
    messages: tuple[Message, ...] = (Message("user", (TextBlock("go"),)),)
    for limit, grow in sent:
        for i in range(grow):
            messages = (*messages, Message("assistant", (TextBlock(f"part {i}"),)))
        request = ChatRequest("scripted", "m", "s", messages, (), limit)
        try:
            expected = plain_digest(request)
        except (TypeError, ValueError) as exc:  # what canonical JSON refuses, refused alike
            try:
                digests.of(request)
            except type(exc):
                continue
            raise AssertionError("a request canonical JSON refuses was digested") from None
        assert digests.of(request) == expected
