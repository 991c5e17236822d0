"""The reducer's frameless constructors build exactly what the dataclass constructors build."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from stockade.loop.authorization import Authorized, Grant, GrantScope, _authorized, _grant
from stockade.loop.commands import CallSettled, StartCall, call_settled, start_call
from stockade.loop.state import (
    new_message,
    new_text_block,
    new_tool_call_block,
    new_tool_result_block,
)
from stockade.protocol.messages import Message, TextBlock, ToolCallBlock, ToolResultBlock
from stockade.tools.runtime import PreparedCall, new_prepared_call
from tests.conftest import examples

_TEXT = st.text(max_size=12)
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | _TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_TEXT, inner, max_size=3),
    max_leaves=8,
)


def _same(made: Any, built: Any) -> None:
    assert type(made) is type(built)
    assert made == built and hash(made) == hash(built) and repr(made) == repr(built)


@settings(max_examples=examples(200), deadline=None)
@given(_TEXT, _TEXT, _TEXT, st.booleans())
def test_blocks_and_messages_are_the_dataclasses(text: str, call_id: str, name: str,
                                                 is_error: bool) -> None:
    _same(new_text_block(text), TextBlock(text))
    _same(new_tool_result_block(call_id, text, is_error), ToolResultBlock(call_id, text, is_error))
    blocks = (TextBlock(text), ToolResultBlock(call_id, text, is_error))
    _same(new_message("user", blocks), Message("user", blocks))


@settings(max_examples=examples(200), deadline=None)
@given(_TEXT, _TEXT, _JSON)
def test_a_tool_call_block_is_the_dataclass(call_id: str, name: str, raw: Any) -> None:
    made, built = new_tool_call_block(call_id, name, raw), ToolCallBlock(call_id, name, raw)
    assert type(made) is ToolCallBlock and made == built and repr(made) == repr(built)
    assert made.input is raw


@settings(max_examples=examples(200), deadline=None)
@given(_TEXT, _TEXT, _TEXT, st.sampled_from(list(GrantScope)), st.integers(0, 9))
def test_grants_and_authorizations_are_the_dataclasses(
    call_id: str, tool: str, digest: str, scope: GrantScope, iteration: int
) -> None:
    grant = _grant(call_id, tool, digest, scope, iteration)
    _same(grant, Grant(call_id, tool, digest, scope, iteration))
    _same(_authorized(grant), Authorized(grant))


@settings(max_examples=examples(200), deadline=None)
@given(_TEXT, _TEXT, _TEXT, _JSON)
def test_a_prepared_call_is_the_dataclass(tool: str, summary: str, digest: str, raw: Any) -> None:
    async def run(ctx: Any) -> Any:
        return None

    def dump(value: Any, **options: Any) -> Any:
        # `prepare` hands over the validated value and its serializer's `to_python`.
        assert options == {"mode": "json", "by_alias": True, "exclude_none": True}
        return value

    made = new_prepared_call(tool, summary, digest, raw, dump, run)
    built = PreparedCall(tool_name=tool, summary=summary, input_digest=digest, input=raw, run=run)
    assert type(made) is PreparedCall and made == built and repr(made) == repr(built)
    assert made.input is raw


@settings(max_examples=examples(200), deadline=None)
@given(_TEXT, _TEXT, st.booleans())
def test_the_runners_commands_are_the_dataclasses(call_id: str, result: str, ok: bool) -> None:
    from stockade.tools.runtime import ToolFailed, ToolOk

    _same(start_call(call_id), StartCall(call_id))
    outcome = ToolOk(result) if ok else ToolFailed(result)
    _same(call_settled(call_id, outcome), CallSettled(call_id, outcome))
    assert call_settled(call_id, outcome).outcome is outcome
