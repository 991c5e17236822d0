"""Context budgeting in whole tool-call groups (spec 5.6, SEC-P-08/09)."""

from __future__ import annotations

import json
import math
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stockade.protocol.budget import (
    budget_messages,
    cap_message_history,
    estimate_tokens,
    turn_groups,
)
from stockade.protocol.errors import ErrorCode, ProtocolException, utf16_len
from stockade.protocol.messages import Message, ToolCallBlock, ToolResultBlock
from stockade.protocol.pairing import PairingViolationKind, check_tool_pairing
from tests.unit.protocol.builders import assistant, calls, results, user


def test_tokens_are_utf16_units_over_four_rounded_up_plus_overhead() -> None:
    assert estimate_tokens(user("")) == 4
    assert estimate_tokens(user("abcd")) == 5
    assert estimate_tokens(user("abcde")) == 6
    assert estimate_tokens(user("🔑🔑")) == 5  # two astral characters are four UTF-16 units


def test_tool_calls_count_name_and_compact_json_input() -> None:
    message = Message(
        role="assistant", content=(ToolCallBlock(id="1", name="ab", input={"k": "v"}),)
    )
    # "ab" + '{"k":"v"}' = 2 + 9 = 11 chars -> 3 tokens + 4
    assert estimate_tokens(message) == 7


def test_unserializable_tool_input_counts_as_zero() -> None:
    message = Message(role="assistant", content=(ToolCallBlock(id="1", name="abcd", input={1j}),))
    assert estimate_tokens(message) == 5


def test_tool_results_count_their_content() -> None:
    message = Message(role="user", content=(ToolResultBlock(tool_call_id="1", content="x" * 8),))
    assert estimate_tokens(message) == 6


def test_groups_close_only_when_every_call_is_answered() -> None:
    history = [
        user("q"),
        calls("a", "b"),
        results("a"),
        results("b"),
        assistant("done"),
        user("next"),
    ]
    groups = turn_groups(history)
    assert [len(g) for g in groups] == [1, 3, 1, 1]


def test_a_trailing_group_with_unanswered_calls_stays_one_group() -> None:
    groups = turn_groups([user("q"), calls("a"), user("unrelated")])
    assert [len(g) for g in groups] == [1, 2]


def test_empty_history_budgets_to_empty() -> None:
    assert budget_messages([], max_input_tokens=10, reserve_output_tokens=0) == ()


def test_everything_is_kept_when_it_fits() -> None:
    history = (user("q"), calls("a"), results("a"), assistant("done"))
    assert budget_messages(history, max_input_tokens=10_000, reserve_output_tokens=100) == history


def test_budget_never_splits_a_tool_group() -> None:
    big_input = {"description": "x" * 400}
    history = [
        user("hello"),
        calls("call-A", input=big_input),
        results("call-A"),
        assistant("All set."),
    ]
    kept = budget_messages(history, max_input_tokens=30, reserve_output_tokens=0)
    assert kept == (assistant("All set."),)
    assert check_tool_pairing(kept) == []
    naive = history[-2:]
    assert [v.kind for v in check_tool_pairing(naive)] == [PairingViolationKind.ORPHAN_TOOL_RESULT]


def test_older_groups_are_dropped_not_skipped() -> None:
    history = [user("x" * 40), user("y" * 400), user("z" * 4)]
    kept = budget_messages(history, max_input_tokens=20, reserve_output_tokens=0)
    assert kept == (user("z" * 4),)


def test_reserve_and_overhead_shrink_the_window() -> None:
    history = [user("a" * 40), user("b" * 40)]  # 14 tokens each
    assert len(budget_messages(history, max_input_tokens=28, reserve_output_tokens=0)) == 2
    assert len(budget_messages(history, max_input_tokens=28, reserve_output_tokens=1)) == 1
    assert (
        len(
            budget_messages(
                history, max_input_tokens=28, reserve_output_tokens=0, overhead_tokens=1
            )
        )
        == 1
    )


def test_newest_group_alone_too_big_is_a_context_overflow() -> None:
    with pytest.raises(ProtocolException) as caught:
        budget_messages([user("hi"), user("x" * 400)], max_input_tokens=50, reserve_output_tokens=0)
    assert caught.value.error.code is ErrorCode.CONTEXT_OVERFLOW
    assert "context window" in caught.value.error.message


def test_history_cap_keeps_whole_groups() -> None:
    history = [user("q"), calls("a"), results("a"), assistant("done")]
    assert cap_message_history(history, 2) == (assistant("done"),)
    assert cap_message_history(history, 4) == tuple(history)


def test_history_cap_keeps_the_newest_group_whole_even_if_it_exceeds_the_cap() -> None:
    history = [user("q"), calls("a", "b"), results("a"), results("b")]
    assert cap_message_history(history, 2) == tuple(history[1:])


_message = st.one_of(
    st.builds(user, st.text(max_size=40)),
    st.builds(assistant, st.text(max_size=40)),
)


@st.composite
def _histories(draw: st.DrawFn) -> list[Message]:
    history: list[Message] = []
    for index in range(draw(st.integers(min_value=0, max_value=8))):
        if draw(st.booleans()):
            history.append(draw(_message))
        else:
            ids = [f"c{index}-{k}" for k in range(draw(st.integers(1, 3)))]
            history.append(calls(*ids, input={"t": draw(st.text(max_size=30))}))
            history.append(results(*ids, content=draw(st.text(max_size=30))))
    return history


@settings(deadline=None)  # a loaded CI machine must not turn slowness into failure
@given(_histories(), st.integers(min_value=1, max_value=200))
def test_budgeted_history_is_a_paired_tail_within_the_window(
    history: list[Message], window: int
) -> None:
    try:
        kept = budget_messages(history, max_input_tokens=window, reserve_output_tokens=0)
    except ProtocolException:
        assert history
        return
    assert kept == tuple(history[len(history) - len(kept) :])
    assert sum(estimate_tokens(m) for m in kept) <= window
    assert check_tool_pairing(kept) == []


def test_a_callers_estimator_is_the_one_that_decides_what_fits() -> None:
    history = [user("a" * 40), calls("c1"), results("c1"), user("b" * 40)]
    asked: list[Message] = []

    def memo(message: Message) -> int:
        asked.append(message)
        return estimate_tokens(message)

    for window in (20, 40, 10_000):
        assert budget_messages(
            history, max_input_tokens=window, reserve_output_tokens=0, estimate=memo
        ) == budget_messages(history, max_input_tokens=window, reserve_output_tokens=0)
    assert asked and all(any(m is h for h in history) for m in asked)
    # An estimator that calls every message free keeps everything, whatever the window.
    free = budget_messages(history, max_input_tokens=1, reserve_output_tokens=0, estimate=lambda m: 0)
    assert free == tuple(history)


def _compact_json_chars(value: object) -> int:
    """The plain definition of a tool input's size: its compact JSON through `json.dumps`."""
    try:
        return utf16_len(json.dumps(value, ensure_ascii=False, separators=(",", ":")))
    except (TypeError, ValueError):
        return 0


class _Text(str):
    pass


_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(), st.text(),
    st.builds(_Text, st.text(max_size=5)),
)
_inputs = st.recursive(
    _scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.lists(inner, max_size=3).map(tuple),
        st.dictionaries(st.one_of(st.text(max_size=6), st.integers(), st.booleans(), st.none(),
                                  st.floats(allow_nan=False)), inner, max_size=4),
        st.frozensets(st.integers(), max_size=2),  # JSON cannot hold a set
    ),
    max_leaves=20,
)


@settings(deadline=None)
@given(st.text(max_size=8), _inputs)
def test_a_tool_call_counts_its_name_and_the_compact_json_of_its_input(
    name: str, value: object
) -> None:
    message = Message(role="assistant", content=(ToolCallBlock(id="1", name=name, input=value),))
    chars = utf16_len(name) + _compact_json_chars(value)
    assert estimate_tokens(message) == math.ceil(chars / 4) + 4


def test_a_cyclic_input_counts_as_zero_and_nesting_past_the_limit_raises_as_json_does() -> None:
    cyclic: list[object] = []
    cyclic.append(cyclic)
    assert estimate_tokens(Message(role="assistant", content=(
        ToolCallBlock(id="1", name="abcd", input={"a": cyclic}),))) == 5
    deep: list[object] = []
    for _ in range(sys.getrecursionlimit() + 10):
        deep = [deep]
    with pytest.raises(RecursionError):
        json.dumps(deep, ensure_ascii=False, separators=(",", ":"))
    with pytest.raises(RecursionError):
        estimate_tokens(Message(role="assistant", content=(
            ToolCallBlock(id="1", name="abcd", input=deep),)))
