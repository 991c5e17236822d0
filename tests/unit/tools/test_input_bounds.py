"""The bounds every tool call from a model keeps before a tool sees it (issue 14, item 6)."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from stockade.thf.canonical import digest
from stockade.tools.registry import default_registry
from stockade.tools.runtime import (
    MAX_INPUT_DEPTH,
    PreparedCall,
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


_KEYS = st.sampled_from(["a", "é", "__proto__", "\ud800", "x\udfffy"]) | st.text(max_size=8)
_ANY = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=20) | st.sampled_from(["\ud800", "é\udfff", "x" * 70_000, b"raw", 1j]),
    lambda inner: st.lists(inner, max_size=4) | st.tuples(inner)
    | st.dictionaries(_KEYS | st.integers(), inner, max_size=4),
    max_leaves=30,
)


@settings(max_examples=examples(300), deadline=None)
@given(_ANY)
def test_the_pathless_walk_clears_exactly_what_the_spelled_walk_accepts(value: Any) -> None:
    """`plainly_bounded` never clears an input the spelling walk refuses; with `screen_keys`
    it clears only input the `__proto__`/surrogate walk finds nothing in either; and
    `input_problem` answers exactly what the spelling walk answers."""
    from stockade.tools.runtime import _spelled_problem, plainly_bounded
    from stockade.tools.schema import forbidden_key_issues

    spelled = _spelled_problem(value)
    assert input_problem(value) == spelled
    if plainly_bounded(value):
        assert spelled is None
    if plainly_bounded(value, screen_keys=True):
        assert spelled is None and forbidden_key_issues(value) == []


def _level_walk(raw: Any, screen_keys: bool) -> bool:
    """`plainly_bounded` as first written: every value judged one level below its container."""
    import math

    from stockade.tools.runtime import MAX_INPUT_BYTES

    def surrogate(text: str) -> bool:
        return any("\ud800" <= ch <= "\udfff" for ch in text)

    level, depth, size = [raw], 1, 0
    while level:
        if depth > MAX_INPUT_DEPTH:
            return False
        below: list[Any] = []
        for value in level:
            kind = type(value)
            if kind is str:
                size += len(value)
                if screen_keys and surrogate(value):
                    return False
            elif kind is dict:
                size += 2
                for key, item in value.items():
                    if type(key) is not str:
                        return False
                    if screen_keys and (key == "__proto__" or surrogate(key)):
                        return False
                    size += len(key) + 4
                    below.append(item)
            elif kind is list:
                size += 2
                below.extend(value)
            elif value is None or kind is bool:
                size += 5
            elif kind is int:
                size += value.bit_length() // 3 + 1
            elif kind is float:
                if not math.isfinite(value):
                    return False
                size += 24
            else:
                return False
            if size > MAX_INPUT_BYTES:
                return False
        level = below
        depth += 1
    return True


def _wrapped(inner: Any, kinds: list[bool]) -> Any:
    for as_dict in kinds:
        inner = {"k": inner} if as_dict else [inner]
    return inner


# Nestings ending at, just above and just below the depth bound, with a dict (whose leaves the
# walk judges inline) at the last levels.
_DEEP = st.builds(
    _wrapped,
    st.sampled_from([{}, [], {"a": "b"}, {"a": True}, {"a": 1}, {"a": []}, "x", None]),
    st.integers(MAX_INPUT_DEPTH - 3, MAX_INPUT_DEPTH + 1).flatmap(
        lambda n: st.lists(st.booleans(), min_size=n, max_size=n)),
)


@settings(max_examples=examples(300), deadline=None)
@given(_ANY | _DEEP, st.booleans())
def test_the_inline_walk_answers_as_the_level_walk(value: Any, screen_keys: bool) -> None:
    """Judging a dict's text and booleans inline gives the level walk's answer exactly."""
    from stockade.tools.runtime import plainly_bounded

    assert plainly_bounded(value, screen_keys=screen_keys) == _level_walk(value, screen_keys)


def test_the_pathless_walk_clears_plain_input_and_refuses_deep_or_large_input() -> None:
    from stockade.tools.runtime import MAX_INPUT_BYTES, plainly_bounded

    plain = {"action": "add_element", "element": {"name": "Gateway", "tags": ["a", "é"],
                                                  "weight": 1.5, "n": 3, "ok": True, "x": None}}
    assert plainly_bounded(plain) and plainly_bounded(plain, screen_keys=True)
    assert plainly_bounded(_nested(MAX_INPUT_DEPTH))
    assert not plainly_bounded(_nested(MAX_INPUT_DEPTH + 1))
    assert not plainly_bounded({"a": "x" * MAX_INPUT_BYTES})
    assert plainly_bounded({"__proto__": 1}) and not plainly_bounded({"__proto__": 1}, screen_keys=True)
    assert not plainly_bounded({"a": "\ud800"}, screen_keys=True)


_TOOLS = default_registry().list()
_NEAR_VALID = st.fixed_dictionaries(
    {"action": st.sampled_from(["add_element", "update_threat", "delete_threat"]),
     "id": st.sampled_from(["comp-1", "threat-1", "", "\ud800", "x" * 300])},
    optional={"kind": st.sampled_from(["elements", "threats"]), "__proto__": st.just({}),
              "updates": st.dictionaries(st.sampled_from(["name", "severity", "__proto__"]),
                                         st.sampled_from(["low", "Gateway", None, 1.0, "é\udfff"]),
                                         max_size=2),
              "cascade": st.booleans() | st.floats(allow_nan=True)},
)


@settings(max_examples=examples(300), deadline=None)
@given(st.sampled_from(_TOOLS), _NEAR_VALID | _ANY)
def test_prepare_answers_what_the_bound_check_and_the_parse_answer(tool: Any, raw: Any) -> None:
    """`prepare`'s one-walk fast path gives the same issues, digest and summary as the bound
    check followed by the full parse (key walk included)."""
    prepared = tool.prepare(raw)
    problem = refusal_of(raw) or input_problem(raw)
    if problem is not None:
        assert isinstance(prepared, PrepareFailed) and prepared.issues == (problem,)
        return
    parsed = tool.parse(raw)
    if isinstance(parsed, list):
        assert isinstance(prepared, PrepareFailed) and prepared.issues == tuple(parsed)
        return
    assert not isinstance(prepared, PrepareFailed)
    assert prepared.input == parsed.canonical()
    assert prepared.input_digest == digest(parsed.canonical())
    # Built without the dataclass `__init__`: the same record the constructor makes.
    assert prepared == PreparedCall(
        tool_name=tool.name, summary=tool._summarize(parsed), input_digest=prepared.input_digest,
        input=prepared.input, run=prepared.run,
    )
