"""The bounds every tool call from a model keeps before a tool sees it (issue 14, item 6)."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from stockade.tools.registry import default_registry
from stockade.tools.runtime import (
    MAX_INPUT_DEPTH,
    PrepareFailed,
    call_problem,
    input_problem,
    refusal_of,
    refused_input,
)
from tests.conftest import examples

_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner,
                                                                max_size=4),
    max_leaves=30,
)


def _nested(depth: int) -> Any:
    value: Any = []
    for _ in range(depth - 1):
        value = [value]
    return value


def test_nesting_is_bounded_without_recursion() -> None:
    assert input_problem(_nested(MAX_INPUT_DEPTH)) is None
    assert "deeper than 64" in (input_problem(_nested(MAX_INPUT_DEPTH + 1)) or "")
    assert "deeper than 64" in (input_problem(_nested(200_000)) or "")  # no RecursionError


def test_non_finite_numbers_name_their_field() -> None:
    assert input_problem({"threat": {"score": float("inf")}}) == \
        "threat.score: must be a finite number"
    assert input_problem([1, float("nan")]) == "[1]: must be a finite number"


def test_ids_names_and_size_are_bounded() -> None:
    assert call_problem("x" * 129, "get_entity", {}) == "id: is longer than 128 characters"
    assert call_problem("c1", "n" * 129, {}) == "name: is longer than 128 characters"
    assert "larger than 64 KiB" in (call_problem("c1", "get_entity", {"q": "a" * 70_000}) or "")
    assert call_problem("c1", "get_entity", {"kind": "elements", "id": "web-app"}) is None


def test_a_refused_stand_in_is_answered_by_prepare_with_its_reason() -> None:
    tool = default_registry().get("get_entity")
    assert tool is not None
    stand_in = refused_input("id: is longer than 128 characters")
    assert refusal_of(stand_in) is not None and json.dumps(stand_in)
    result = tool.prepare(stand_in)
    assert isinstance(result, PrepareFailed) and "longer than 128" in result.issues[0]


@settings(max_examples=examples(300), deadline=None)
@given(_JSON)
def test_every_accepted_input_is_strict_json(value: Any) -> None:
    """Whatever a model sends, the check answers (never raises), and what it accepts can be
    written as strict JSON (no NaN, no infinity) for the next request."""
    problem = input_problem(value)
    if problem is None:
        json.dumps(value, allow_nan=False)
