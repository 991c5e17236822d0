"""SEC-TR-07: canonical JSON and the digest that approvals bind to."""

from __future__ import annotations

import hashlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stockade.thf.canonical import canonical_json, digest, json_ready_digest
from tests.conftest import examples


def test_key_order_does_not_matter() -> None:
    assert canonical_json({"b": 1, "a": 2}) == canonical_json({"a": 2, "b": 1}) == '{"a":2,"b":1}'


def test_nested_objects_are_sorted_and_arrays_keep_order() -> None:
    assert canonical_json({"z": {"b": 1, "a": 2}}) == '{"z":{"a":2,"b":1}}'
    assert canonical_json([{"b": 1, "a": 2}, "x"]) == '[{"a":2,"b":1},"x"]'


def test_number_and_string_differ() -> None:
    assert canonical_json({"a": 2, "b": 1}) != canonical_json({"a": 2, "b": "1"})
    assert digest({"a": 1}) != digest({"a": "1"})


def test_integral_floats_print_as_integers() -> None:
    assert canonical_json({"x": 1.0, "y": 1.5}) == '{"x":1,"y":1.5}'
    assert digest({"x": 1.0}) == digest({"x": 1})


def test_non_ascii_is_kept_raw() -> None:
    assert canonical_json({"k": "é🔑"}) == '{"k":"é🔑"}'


def test_non_finite_numbers_are_refused() -> None:
    with pytest.raises(ValueError):
        canonical_json({"x": float("inf")})


def test_digest_is_sha256_of_the_canonical_bytes() -> None:
    value = {"b": [1, 2], "a": "x"}
    expected = hashlib.sha256(canonical_json(value).encode("utf-8")).hexdigest()
    assert digest(value) == "sha256:" + expected


@given(st.dictionaries(st.text(max_size=5), st.integers() | st.text(max_size=5), max_size=6))
def test_digest_is_independent_of_insertion_order(value: dict[str, object]) -> None:
    assert digest(value) == digest(dict(reversed(list(value.items()))))


def _reference_normalize(value: object) -> object:
    """The plain recursive definition the fast normalizer must match exactly."""
    if isinstance(value, bool) or value is None or isinstance(value, (str, int)):
        return value
    if isinstance(value, float):
        return int(value) if value.is_integer() and abs(value) < 2**53 else value
    if isinstance(value, dict):
        return {str(k): _reference_normalize(v) for k, v in value.items()}
    assert isinstance(value, (list, tuple))
    return [_reference_normalize(v) for v in value]


_leaves = (
    st.none() | st.booleans() | st.integers() | st.text(max_size=4)
    | st.floats(allow_nan=False, allow_infinity=False)
)
_keys = st.text(max_size=3) | st.integers(-3, 3) | st.booleans()
_values = st.recursive(
    _leaves,
    lambda inner: st.lists(inner, max_size=4) | st.tuples(inner, inner)
    | st.dictionaries(_keys, inner, max_size=4),
    max_leaves=20,
)


@given(_values)
def test_canonical_json_matches_the_plain_recursive_definition(value: object) -> None:
    import json

    expected = json.dumps(
        _reference_normalize(value), sort_keys=True, separators=(",", ":"), ensure_ascii=False,
        allow_nan=False,
    )
    assert canonical_json(value) == expected


_json_leaves = (
    st.none() | st.booleans() | st.integers() | st.text(max_size=4)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.sampled_from([0.0, -0.0, 1.0, -3.0, 2.0**53, 2.0**53 - 1, 1e16, 1e15, 0.5, "1.0", "x.0y"])
)
_json_values = st.recursive(
    _json_leaves,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=3), inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=examples(1000), deadline=None)
@given(_json_values)
def test_json_ready_digest_is_the_digest(value: object) -> None:
    """The shortcut for pydantic's JSON-mode dumps gives `digest`'s bytes for every such value
    (integral floats, negative zero and `.0` inside strings included)."""
    assert json_ready_digest(value) == digest(value)


def test_json_ready_digest_fails_as_digest_does() -> None:
    for bad in ({"x": float("nan")}, {"x": object()}):
        with pytest.raises((ValueError, TypeError)) as expected:
            digest(bad)
        with pytest.raises(expected.type, match=str(expected.value)):
            json_ready_digest(bad)
