"""`prepare`'s digest from one `to_json` call (the sorted validator's values) against the plain
definition: the model's own validator, `canonical()` and `thf.canonical.digest`."""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ValidationError

from stockade.thf.canonical import canonical_json, digest
from stockade.thf.model import Severity
from stockade.tools.actions import NewElement
from stockade.tools.registry import DefinedTool, default_registry
from stockade.tools.runtime import PrepareFailed, input_problem, refusal_of
from stockade.tools.schema import sorted_json_plan
from tests.conftest import examples

_TOOLS: list[DefinedTool[Any]] = list(default_registry().list())  # type: ignore[arg-type]

_TEXT = st.text(max_size=12) | st.sampled_from(
    ["x", "High", "LOW", "Spoofing", "mitigated", "é", "\x00\n\t\"\\", "\u2028<>", "\ud800",
     "x" * 201, ""])
_FLOATS = st.floats(allow_nan=False, allow_infinity=False) | st.sampled_from(
    [1.0, 0.5, 1e-7, 1e-5, 1e16, 1e22, 2.0**53, -0.0, 3.0, 0.25])
_INTS = st.integers(-5, 300) | st.sampled_from([2**32, 2**53 - 1, 2**53, 10**30, -(2**60)])
_ODD = st.none() | st.booleans() | _INTS | _FLOATS | _TEXT | st.lists(_TEXT, max_size=2) | (
    st.sampled_from([("a",), b"a", {"a"}, 1j, OrderedDict(type="process", name="n"),
                     NewElement(type="process", name="n"), Severity.HIGH,
                     {"type": "process", "name": "n", "__proto__": {}}]))
# Lists of long text: inputs near and past the walk's size bound.
_LONG = st.integers(0, 100).map(lambda n: ["y" * 200] * n)


def _value(schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    """Mostly what `schema` accepts, sometimes what it refuses."""
    kind = schema.get("type")
    if "enum" in schema:
        good: st.SearchStrategy[Any] = st.sampled_from(schema["enum"])
        if kind == "string":
            good = good | good.map(str.upper) | good.map(str.title)
    elif kind == "object":
        good = _object(schema)
    elif kind == "array":
        good = st.lists(_value(schema.get("items", {})),
                        max_size=min(schema.get("maxItems", 3), 3)) | _LONG
    elif kind == "string":
        good = _TEXT
    elif kind == "integer":
        low, high = schema.get("minimum", -(2**70)), schema.get("maximum", 2**70)
        good = st.integers(low, min(high, low + 400)) | st.sampled_from(
            [v for v in (low, high, 2**53, 10**30) if low <= v <= high])
    elif kind == "number":
        good = _FLOATS | st.integers(-3, 3)
    elif kind == "boolean":
        good = st.booleans()
    else:
        good = _ODD
    return st.one_of(good, good, good, _ODD)


def _object(schema: dict[str, Any]) -> st.SearchStrategy[dict[str, Any]]:
    properties = schema.get("properties", {})
    required = set(schema.get("required", ()))
    return st.fixed_dictionaries(
        {k: _value(v) for k, v in properties.items() if k in required},
        optional={**{k: _value(v) for k, v in properties.items() if k not in required},
                  "invented": _ODD},
    )


_INPUTS = st.sampled_from(_TOOLS).flatmap(
    lambda tool: st.tuples(st.just(tool), _object(tool.input_schema()) | _ODD))


def _same_value(a: Any, b: Any) -> None:
    assert type(a) is type(b) and a == b
    if isinstance(a, BaseModel):
        assert a.__pydantic_fields_set__ == b.__pydantic_fields_set__
        for name in type(a).model_fields:
            _same_value(getattr(a, name), getattr(b, name))


def test_every_tool_input_has_a_sorted_plan() -> None:
    for tool in _TOOLS:
        assert sorted_json_plan(tool.input_model) is not None, tool.name


@settings(max_examples=examples(1500), deadline=None)
@given(_INPUTS)
def test_the_sorted_validator_is_the_models_validator_in_sorted_order(tool_raw: Any) -> None:
    """It accepts exactly what the model's own validator accepts, making equal values (same
    classes, fields and fields set); `canonical_text` gives the canonical JSON of the plain
    dump, and gives it for every flat value that `to_json` prints canonically."""
    tool, raw = tool_raw
    model = tool.input_model
    plan = sorted_json_plan(model)
    assert plan is not None
    try:
        own = model.__pydantic_validator__.validate_python(raw)
    except ValidationError:
        with pytest.raises(ValidationError):
            plan.validate(raw)
        return
    value = plan.validate(raw)
    _same_value(value, own)
    checked = plan.canonical_text(raw)
    if checked is not None:
        _same_value(checked[0], own)
        assert checked[1] == canonical_json(own.canonical()).encode("utf-8")
    if all(isinstance(v, (str, bool, int, list)) for v in own.canonical().values()):
        text = model.__pydantic_serializer__.to_json(value, by_alias=True, exclude_none=True)
        assert (checked is not None) == (text == canonical_json(own.canonical()).encode())


def _plain_prepare(tool: DefinedTool[Any], raw: Any) -> Any:
    """What `prepare` answers, by the plain definition."""
    problem = refusal_of(raw) or input_problem(raw)
    if problem is not None:
        return ("issues", (problem,))
    parsed = tool.parse(raw)
    if isinstance(parsed, list):
        return ("issues", tuple(parsed))
    try:
        made = digest(parsed.canonical())
    except Exception as exc:
        return ("raises", type(exc))
    return ("call", tool._summarize(parsed), made, parsed.canonical())


@settings(max_examples=examples(1500), deadline=None)
@given(_INPUTS)
def test_prepare_answers_as_the_plain_definition(tool_raw: Any) -> None:
    """The bound walk first, then the model's own validator, `canonical()` and `digest`: the
    same issues, summary, digest and input (or the same failure), though an input whose
    canonical text comes out of the sorted plan is never walked."""
    tool, raw = tool_raw
    expected = _plain_prepare(tool, raw)
    try:
        prepared = tool.prepare(raw)
    except Exception as exc:
        assert expected == ("raises", type(exc))
        return
    if isinstance(prepared, PrepareFailed):
        assert expected == ("issues", prepared.issues)
        return
    assert expected == ("call", prepared.summary, prepared.input_digest, prepared.input)
    # The input is dumped when first read, then kept.
    assert prepared.input is prepared.input


def test_floats_and_long_ints_are_digested_the_plain_way() -> None:
    """Values pydantic prints otherwise than canonical JSON: integral floats, exponents, ints
    past 2**53 and past Python's digit limit for printing (which fails as it always did)."""
    tools = {t.name: t for t in _TOOLS}
    element = {"action": "update_element", "id": "a", "updates": {"position": {"x": 1.0, "y": 1e-5}}}
    prepared = tools["update_element"].prepare(element)
    assert not isinstance(prepared, PrepareFailed)
    assert prepared.input_digest == digest(element)
    assert '"x":1,"y":1e-05' in canonical_json(prepared.input)
    for offset in (2**53, 10**30):
        search = {"kind": "threats", "offset": offset}
        found = tools["search_entities"].prepare(search)
        assert not isinstance(found, PrepareFailed)
        assert found.input == search and found.input_digest == digest(search)
    with pytest.raises(ValueError):
        tools["search_entities"].prepare({"kind": "threats", "offset": 10**5000})


def test_large_inputs_are_walked_and_refused_as_before() -> None:
    """Every text field at its cap passes the validator and fills more than the walk allows."""
    tools = {t.name: t for t in _TOOLS}
    long = ["y" * 200] * 100
    updates: dict[str, Any] = {"technologies": long, "stores": long, "tags": long,
                               "description": "d" * 4000}
    for name in ("name", "type", "trust_zone", "subtype", "icon", "encryption", "layer",
                 "group", "fill_color", "stroke_color", "font_weight"):
        updates[name] = "z" * 200
    refused = tools["update_element"].prepare({"action": "update_element", "id": "a",
                                               "updates": updates})
    assert refused == PrepareFailed(issues=("input: is larger than 64 KiB",))
    kept = tools["update_element"].prepare({"action": "update_element", "id": "a",
                                            "updates": {"technologies": long, "stores": long}})
    assert not isinstance(kept, PrepareFailed)
    assert kept.input_digest == digest(kept.input)


def test_a_model_instance_in_the_input_is_refused_as_before() -> None:
    tool = {t.name: t for t in _TOOLS}["add_element"]
    refused = tool.prepare({"action": "add_element", "element": NewElement(type="p", name="n")})
    assert refused == PrepareFailed(issues=("element: holds a value JSON cannot carry",))


_EDITS: list[tuple[str, dict[str, Any]]] = [
    ("add_element", {"action": "add_element", "element": {
        "type": "process", "name": "Worker", "trust_zone": "internal", "description": "Jobs.",
        "technologies": ["Python"], "position": {"x": 1.0, "y": 2.5}}}),
    ("update_element", {"action": "update_element", "id": "a", "updates": {
        "tags": ["t"], "name": "A2", "icon": "i", "stores": ["s"], "layer": ""}}),
    ("add_data_flow", {"action": "add_data_flow", "data_flow": {
        "to": "b", "from": "a", "protocol": "HTTPS", "encrypted": True, "data": ["d"],
        "authenticated": True, "name": "n"}}),
    ("update_data_flow", {"action": "update_data_flow", "id": "flow-1", "updates": {
        "encrypted": False, "protocol": "gRPC", "target_handle": "h", "name": "n2"}}),
    ("add_threat", {"action": "add_threat", "threat": {
        "title": "Replay", "category": "Spoofing", "element": "a", "severity": "HIGH",
        "description": "d", "mitigation": {"status": "mitigated", "description": "m"}}}),
    ("update_threat", {"action": "update_threat", "id": "threat-1", "updates": {
        "severity": "low", "title": "T2", "mitigation": {"description": "m", "status": "accepted"}}}),
    ("add_trust_boundary", {"action": "add_trust_boundary", "trust_boundary": {
        "name": "DMZ", "contains": ["a"], "size": {"width": 10.0, "height": 5.0}}}),
    ("delete_data_flow", {"action": "delete_data_flow", "id": "flow-1", "cascade": True}),
]


@pytest.mark.parametrize(("name", "raw"), _EDITS)
def test_edits_from_sorted_values_write_the_same_documents(name: str, raw: dict[str, Any]) -> None:
    """A value the sorted validator made (instance dicts in wire-name order) edits a document
    exactly as the model's own value does, down to the order of every written key."""
    import json

    from stockade.tools.graph_tools import _BY_NAME
    from tests.unit.tools.conftest import el, make_doc

    document = make_doc(
        elements=[el("a", custom={"k": 1}), el("b")],
        data_flows=[{"id": "flow-1", "from": "a", "to": "b", "flow_number": 1, "custom": 2}],
        threats=[{"id": "threat-1", "title": "T", "category": "Spoofing", "element": "a",
                  "severity": "high", "description": "d"}],
    )
    _, _, model, _, apply = _BY_NAME[name]
    plan = sorted_json_plan(model)
    assert plan is not None
    sorted_value, own = plan.validate(raw), model.model_validate(raw)
    assert sorted_value == own
    done, expected = apply(document, sorted_value), apply(document, own)
    assert type(done) is type(expected)
    if getattr(expected, "document", None) is None:
        assert done == expected
        return
    assert done.result == expected.result
    assert json.dumps(done.document.model_dump(mode="json", by_alias=True)) == json.dumps(
        expected.document.model_dump(mode="json", by_alias=True))
