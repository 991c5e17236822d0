"""A text delta appended in place makes a `_Streamed` state that shares its predecessor's
fields; it is the state the plain definition describes (the draft's text extended), and every
later input and `evolve` treats it exactly as that plain state, whichever state of a branching
history it is reduced from (hypothesis)."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from stockade.loop.commands import Cancel, ChargeCredits, StopTurn, Submit
from stockade.loop.limits import TurnLimits
from stockade.loop.reducer import reduce_turn
from stockade.loop.serialize import turn_to_json
from stockade.loop.state import (
    AssistantDraft,
    TextRun,
    ToolSet,
    TurnPhase,
    TurnState,
    _Streamed,
)
from stockade.protocol.errors import ErrorCode, ProtocolError
from stockade.protocol.events import (
    MessageStart,
    MessageStop,
    StopReason,
    StreamError,
    TextDelta,
    ToolCallComplete,
    ToolCallInputDelta,
    ToolCallStart,
    Usage,
)
from stockade.tools.registry import default_registry
from tests.conftest import examples

_TOOLS = ToolSet.from_registry(default_registry())
_TEXT = st.text(alphabet="ab \u00e9\U0001f600", min_size=1, max_size=3)
_ERROR = ProtocolError(ErrorCode.MALFORMED_STREAM, "bad frame")
_NEXT: list[Any] = [
    # Every kind of input a streaming state can be given, and `evolve` (by field name).
    TextDelta("z"), TextDelta(""), ToolCallStart("c1", "get_entity"),
    ToolCallStart("c2", "nope"), ToolCallComplete("c1", "get_entity", {"kind": "elements", "id": "a"}),
    ToolCallComplete("c2", "delete_threat", {"id": "t"}), ToolCallComplete("c3", "nope", {}),
    ToolCallInputDelta("c1", "{"), Usage(3, 4), MessageStart("m"),
    MessageStop(StopReason.END_TURN), MessageStop(StopReason.TOOL_USE),
    StreamError(_ERROR), StreamError(ProtocolError(ErrorCode.TRANSPORT, "gone")),
    ChargeCredits(2), Cancel(), StopTurn("stopped"),
    "iteration", "notice", "stream_notices",
]
_STREAM_EVENTS = st.sampled_from([ToolCallStart("c4", "get_entity"), ToolCallStart("c5", "nope"),
                                  ToolCallComplete("c4", "get_entity", {"kind": "threats", "id": "t"}),
                                  ToolCallInputDelta("c4", "x"), StreamError(_ERROR),
                                  ChargeCredits(1), Usage(1, 1)])


def _plain(state: TurnState) -> TurnState:
    """`state` built again through the public constructor, its text in one new chunk."""
    draft = state.draft
    if draft is not None:
        text = draft.text
        draft = AssistantDraft(draft.blocks, None if text is None else TextRun(text.text()),
                               draft.open_call_ids)
    fields = {name: getattr(state, name) for name in (
        "phase", "iteration", "budget", "limits", "tool_set", "history", "calls", "grants",
        "used_grants", "denials", "violations", "stream_notices", "outcome", "reason",
        "notice", "error", "seen_call_ids")}
    return TurnState(draft=draft, **fields)


def _plain_reduce(state: TurnState, item: Any) -> TurnState:
    """The reducer with a streaming text delta by its plain definition: the draft's text
    extended by the delta's text (an empty one changes nothing)."""
    if type(item) is TextDelta and state.phase is TurnPhase.STREAMING:
        draft = state.draft
        assert draft is not None
        if not item.text:
            return state
        text = TextRun(item.text) if draft.text is None else draft.text.extend(item.text)
        return state.evolve(draft=AssistantDraft(draft.blocks, text, draft.open_call_ids))
    return reduce_turn(state, item)


def _observed(state: TurnState) -> tuple[Any, ...]:
    draft = state.draft
    return (
        turn_to_json(state),
        state.messages,
        draft,
        None if draft is None or draft.text is None else draft.text.text(),
        state.violations,
        state.seen_call_ids,
        state.iteration_calls(),
        state.call_index(),
    )


def _same(made: TurnState, plain: TurnState) -> None:
    assert made == plain
    assert plain == made
    assert _observed(made) == _observed(plain)


def _step(state: TurnState, step: Any) -> tuple[TurnState, TurnState]:
    """`step` (an input, or a field name for `evolve`) from `state` and from its plain twin."""
    plain = _plain(state)
    _same(state, plain)
    if isinstance(step, str):
        value = {"iteration": 7, "notice": "n", "stream_notices": ()}[step]
        return state.evolve(**{step: value}), plain.evolve(**{step: value})
    return reduce_turn(state, step), _plain_reduce(plain, step)


@settings(max_examples=examples(400), deadline=None)
@given(
    st.lists(_TEXT, min_size=2, max_size=10),
    st.lists(st.tuples(st.integers(0, 12), st.integers(1, 12)), max_size=3),
    st.lists(st.tuples(st.integers(0, 12), _STREAM_EVENTS), max_size=3),
    st.lists(st.sampled_from(_NEXT), min_size=1, max_size=4),
)
def test_streamed_states_are_their_plain_states(
    chunks: list[str], older: list[tuple[int, int]], events: list[tuple[int, Any]],
    then: list[Any],
) -> None:
    """A reply streamed delta by delta (some deltas reduced from an older state, which copies
    its text first; other stream events between them), then any input or `evolve`: each
    answer equals the plain reducer's from the plain twin of the state it came from, and no
    state already made changes afterwards."""
    start = reduce_turn(TurnState(), Submit("go", (), _TOOLS, TurnLimits(), 0))
    made: list[TurnState] = [reduce_turn(start, MessageStart("m"))]
    back = dict(older)
    inserted = dict(events)
    for i, chunk in enumerate(chunks):
        if i in inserted:
            after, expected = _step(made[-1], inserted[i])
            _same(after, expected)
            made.append(after)
        state = made[-1 - min(back.get(i, 0), len(made) - 1)]
        after, expected = _step(state, TextDelta(chunk))
        _same(after, expected)
        made.append(after)
    seen = [_observed(s) for s in made]
    for step in then:
        after, expected = _step(made[-1], step)
        _same(after, expected)
        made.append(after)
        seen.append(_observed(after))
    # Every state still reads as it did when it was made (shared dicts and chunk lists
    # notwithstanding).
    assert [_observed(s) for s in made] == seen


@settings(max_examples=examples(200), deadline=None)
@given(st.lists(_TEXT, min_size=2, max_size=30))
def test_a_reply_is_streamed_through_shared_states(chunks: list[str]) -> None:
    """The shortcut is taken: deltas after the first non-empty one make `_Streamed` states,
    and the reply's text is every delta's text in order."""
    state = reduce_turn(TurnState(), Submit("go", (), _TOOLS, TurnLimits(), 0))
    state = reduce_turn(state, MessageStart("m"))
    texts: list[str] = []
    for chunk in chunks:
        before = state
        state = reduce_turn(state, TextDelta(chunk))
        if chunk and texts:
            assert type(state) is _Streamed
            assert state.__dict__ is before.__dict__
        if chunk:
            texts.append(chunk)
    draft = state.draft
    assert draft is not None
    assert (draft.text.text() if draft.text is not None else "") == "".join(texts)
    done = reduce_turn(state, MessageStop(StopReason.END_TURN))
    assert done.outcome == "completed"
    if texts:
        assert done.history[-1].content[0].text == "".join(texts)  # type: ignore[union-attr]
