"""Strict tool-input validation: the `__proto__` walk, plain issues and advertised schemas."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from stockade.tools.read_tools import GetEntityInput
from stockade.tools.registry import ToolRegistry
from stockade.tools.schema import StrictInput, forbidden_key_issues, json_schema, parse_input
from tests.conftest import examples
from tests.unit.tools.conftest import issues_of, prepare_ok


def test_top_level_proto_key_is_the_only_issue(registry: ToolRegistry) -> None:
    # SEC-P-01: the schema is not consulted once the walk finds the key.
    raw = json.loads('{"kind":"elements","id":"x","__proto__":{"polluted":true}}')
    assert issues_of(registry, "get_entity", raw) == ('__proto__: "__proto__" is not an accepted key',)


def test_proto_key_does_not_pollute_anything(registry: ToolRegistry) -> None:
    # INJ-11
    raw = json.loads('{"kind":"elements","id":"x","__proto__":{"polluted":true}}')
    issues = issues_of(registry, "get_entity", raw)
    assert any("__proto__" in issue for issue in issues)
    assert not hasattr(object, "polluted")
    assert not hasattr(dict, "polluted")
    assert not hasattr(GetEntityInput, "polluted")


def test_nested_proto_key_is_reported_with_its_path(registry: ToolRegistry) -> None:
    # SEC-P-02
    raw = {"action": "update_trust_boundary", "id": "b", "updates": {"size": {"width": 1, "height": 2, "__proto__": {}}}}
    issues = issues_of(registry, "update_trust_boundary", raw)
    assert issues == ('updates.size.__proto__: "__proto__" is not an accepted key',)


def test_proto_key_inside_list_item_is_reported_with_index(registry: ToolRegistry) -> None:
    # SEC-P-03
    raw = {"action": "update_element", "id": "e", "updates": {"tags": [{"__proto__": 1}]}}
    issues = issues_of(registry, "update_element", raw)
    assert issues == ('updates.tags[0].__proto__: "__proto__" is not an accepted key',)


def test_twenty_thousand_deep_nesting_is_rejected_without_recursion(registry: ToolRegistry) -> None:
    # SEC-P-04
    deep: Any = "leaf"
    for _ in range(20_000):
        deep = [deep]
    issues = issues_of(registry, "update_element", {"action": "update_element", "id": "e", "updates": {"tags": deep}})
    assert issues
    nested_dicts: Any = {"__proto__": 1}
    for _ in range(20_000):
        nested_dicts = {"a": nested_dicts}
    found = forbidden_key_issues(nested_dicts)
    assert len(found) == 1 and found[0].endswith('a.__proto__: "__proto__" is not an accepted key')


@pytest.mark.parametrize("raw", ["text", ["kind", "elements"], None, 42, True])
def test_non_object_input_is_rejected(registry: ToolRegistry, raw: Any) -> None:
    # SEC-P-05
    issues = issues_of(registry, "get_entity", raw)
    assert issues and "JSON object" in issues[0]


def test_every_advertised_schema_is_closed_at_every_level(registry: ToolRegistry) -> None:
    # SEC-P-05: additionalProperties false on every object, no $schema, no $ref, no null branch.
    for tool in registry.list():
        schema = tool.input_schema()
        assert schema["type"] == "object"
        stack: list[Any] = [schema]
        while stack:
            node = stack.pop()
            if isinstance(node, dict):
                assert "$schema" not in node and "$ref" not in node and "$defs" not in node
                assert node.get("type") != "null" and "anyOf" not in node
                if node.get("type") == "object":
                    assert node["additionalProperties"] is False, tool.name
                stack.extend(node.values())
            elif isinstance(node, list):
                stack.extend(node)


def test_graph_schemas_require_action_and_payload(registry: ToolRegistry) -> None:
    for tool in registry.list()[4:]:
        schema = tool.input_schema()
        assert schema["properties"]["action"] == {"type": "string", "enum": [tool.name]}
        if tool.name.startswith("add_"):
            assert schema["required"] == ["action", tool.name[4:]]
        elif tool.name.startswith("update_"):
            assert schema["required"] == ["action", "id", "updates"]
        else:
            assert schema["required"] == ["action", "id"]


def test_read_schemas_require_only_what_the_spec_requires(registry: ToolRegistry) -> None:
    assert registry.get("get_entity").input_schema()["required"] == ["kind", "id"]  # type: ignore[union-attr]
    assert registry.get("search_entities").input_schema()["required"] == ["kind"]  # type: ignore[union-attr]
    for name in ("get_document_summary", "search_component_catalog"):
        assert "required" not in registry.get(name).input_schema()  # type: ignore[union-attr]


def test_field_descriptions_reach_the_schema(registry: ToolRegistry) -> None:
    position = registry.get("add_element").input_schema()["properties"]["element"]["properties"]["position"]  # type: ignore[union-attr]
    assert "right" in position["properties"]["x"]["description"]
    assert "down" in position["properties"]["y"]["description"]


def test_invented_key_is_named_in_the_issue(registry: ToolRegistry) -> None:
    # SEC-TR-02
    issues = issues_of(registry, "delete_element", {"action": "delete_element", "id": "web-app", "colour": "red"})
    assert issues == ('"colour" is not an accepted field',)
    nested = issues_of(registry, "add_element", {"action": "add_element", "element": {"type": "p", "name": "n", "colour": 1}})
    assert nested == ('element: "colour" is not an accepted field',)


def test_wrong_type_is_named_in_the_issue(registry: ToolRegistry) -> None:
    # SEC-TR-03
    issues = issues_of(registry, "delete_element", {"action": "delete_element", "id": 42})
    assert issues == ("id: must be text",)
    flags = issues_of(registry, "search_entities", {"kind": "data_flows", "authenticated": "yes"})
    assert flags == ("authenticated: must be true or false",)
    numbers = issues_of(registry, "search_entities", {"kind": "elements", "limit": 1.5})
    assert numbers == ("limit: must be a whole number",)


def test_missing_fields_and_bad_values_are_reported_each(registry: ToolRegistry) -> None:
    issues = issues_of(registry, "add_element", {"action": "add_element", "element": {"name": ""}})
    assert "element.type: is required" in issues
    assert "element.name: must not be empty" in issues


def test_wrong_action_literal_is_refused(registry: ToolRegistry) -> None:
    issues = issues_of(registry, "delete_element", {"action": "delete_threat", "id": "x"})
    assert issues[0].startswith("action: must be one of")
    assert issues_of(registry, "delete_element", {"id": "x"}) == ("action: is required",)


def test_explicit_null_is_refused_rather_than_treated_as_absent(registry: ToolRegistry) -> None:
    issues = issues_of(registry, "search_entities", {"kind": "elements", "text": None})
    assert issues == ("text: must not be null (leave an optional field out instead)",)


def test_booleans_are_not_numbers_and_strings_are_not_coerced(registry: ToolRegistry) -> None:
    assert issues_of(registry, "search_entities", {"kind": "elements", "offset": True}) == ("offset: must be a whole number",)
    assert issues_of(registry, "search_entities", {"kind": "elements", "offset": "3"}) == ("offset: must be a whole number",)


def test_string_caps_count_code_points(registry: ToolRegistry) -> None:
    prepare_ok(registry, "get_entity", {"kind": "elements", "id": "🔑" * 200})
    issues = issues_of(registry, "get_entity", {"kind": "elements", "id": "🔑" * 201})
    assert issues == ("id: must be at most 200 characters",)
    long_text = {"action": "update_element", "id": "e", "updates": {"description": "x" * 4001}}
    assert issues_of(registry, "update_element", long_text) == ("updates.description: must be at most 4000 characters",)


def test_page_limit_above_maximum_is_an_error_not_a_clamp(registry: ToolRegistry) -> None:
    assert issues_of(registry, "search_entities", {"kind": "elements", "limit": 51}) == ("limit: must be at most 50",)
    assert issues_of(registry, "search_entities", {"kind": "elements", "limit": 0}) == ("limit: must be at least 1",)


def test_unpaired_surrogate_is_refused_before_it_can_break_the_digest(registry: ToolRegistry) -> None:
    issues = issues_of(registry, "get_entity", {"kind": "elements", "id": "a\ud800"})
    assert issues == ("id: contains an unpaired surrogate, which is not valid text",)


def test_non_finite_numbers_are_refused(registry: ToolRegistry) -> None:
    raw = {"action": "add_element", "element": {"type": "p", "name": "n", "position": {"x": float("nan"), "y": 1}}}
    assert issues_of(registry, "add_element", raw) == ("element.position.x: must be a finite number",)


def test_parse_input_returns_typed_model() -> None:
    parsed = parse_input(GetEntityInput, {"kind": "threats", "id": "t1"})
    assert isinstance(parsed, GetEntityInput) and parsed.kind == "threats" and parsed.id == "t1"


def test_json_schema_of_a_read_input_is_plain() -> None:
    schema = json_schema(GetEntityInput)
    assert schema["properties"]["kind"]["enum"][0] == "elements"
    assert set(schema) == {"type", "properties", "required", "additionalProperties"}


_texts = st.sampled_from(["a", "é", "__proto__", "\ud800", "x\udfffy", "ok"]) | st.text(max_size=3)
_trees = st.recursive(
    st.none() | st.booleans() | st.integers() | _texts,
    lambda inner: st.lists(inner, max_size=3) | st.tuples(inner)
    | st.dictionaries(_texts, inner, max_size=3),
    max_leaves=12,
)


@given(_trees)
def test_the_pathless_first_walk_never_hides_an_issue(raw: object) -> None:
    from stockade.tools.schema import _path_issues

    assert forbidden_key_issues(raw) == _path_issues(raw)


_SAMPLE_INPUTS: dict[str, dict[str, Any]] = {
    "get_entity": {"kind": "elements", "id": "comp-1"},
    "search_entities": {"kind": "threats", "severity": "high", "offset": 2},
    "add_element": {"action": "add_element", "element": {
        "type": "process", "name": "Worker", "trust_zone": "internal",
        "description": "Consumes jobs.", "technologies": ["Python", "Redis"]}},
    "update_element": {"action": "update_element", "id": "comp-4",
                       "updates": {"name": "Gateway", "description": "Edge."}},
    "add_data_flow": {"action": "add_data_flow", "data_flow": {
        "from": "comp-5", "to": "comp-6", "protocol": "HTTPS", "data": ["tokens"],
        "authenticated": True}},
    "update_threat": {"action": "update_threat", "id": "threat-1",
                      "updates": {"severity": "low", "title": "Replay"}},
    "delete_data_flow": {"action": "delete_data_flow", "id": "flow-1", "cascade": True},
}


def _subsets(value: Any, keep: list[bool]) -> Any:
    """`value` with some optional-looking keys dropped (each dict key kept per `keep`)."""
    if isinstance(value, dict):
        out = {}
        for i, (key, item) in enumerate(value.items()):
            if key in ("action", "kind") or keep[i % len(keep)]:
                out[key] = _subsets(item, keep[1:] or keep)
        return out
    return value


@given(st.sampled_from(sorted(_SAMPLE_INPUTS)), st.lists(st.booleans(), min_size=1, max_size=8))
def test_dumps_are_model_dumps(tool_name: str, keep: list[bool]) -> None:
    """`canonical` and `given` call the serializer directly: the same dicts `model_dump` makes."""
    from stockade.tools.registry import default_registry
    from stockade.tools.schema import validate_input

    tool = default_registry().get(tool_name)
    assert tool is not None
    value = validate_input(tool.input_model, _subsets(_SAMPLE_INPUTS[tool_name], keep))  # type: ignore[attr-defined]
    if isinstance(value, list):
        return  # a required key was dropped
    assert value.canonical() == value.model_dump(mode="json", by_alias=True, exclude_none=True)
    assert value.given() == value.model_dump(mode="json", by_alias=True, exclude_unset=True)
    for field in value.__dict__.values():
        if hasattr(field, "given"):
            assert field.given() == field.model_dump(mode="json", by_alias=True, exclude_unset=True)


def _input_models() -> list[type[StrictInput]]:
    import stockade.tools.graph_tools
    import stockade.tools.read_tools  # noqa: F401  (their input models subclass StrictInput)

    found: list[type[StrictInput]] = []
    todo = list(StrictInput.__subclasses__())
    while todo:
        model = todo.pop()
        found.append(model)
        todo.extend(model.__subclasses__())
    return sorted(found, key=lambda m: m.__qualname__)


_CANDIDATES: list[Any] = [
    "low", "Spoofing", "mitigated", "x", ["a"], True, 1, 0.5, {"x": 1.0, "y": 2.0},
    {"width": 1.0, "height": 2.0}, {"status": "mitigated", "description": "d"},
    {"type": "process", "name": "n"}, {"from": "a", "to": "b"}, {"name": "n"},
    {"title": "t", "category": "Spoofing", "severity": "low", "description": "d"},
]


def _valid_values(model: type[StrictInput]) -> dict[str, tuple[str, Any]] | None:
    """A value each field of `model` accepts (field name -> wire name and value), or None when
    a required field accepts none of the candidates."""

    def refuses(raw: dict[str, Any], wire: str) -> bool:
        try:
            model.model_validate(raw)
        except ValidationError as exc:
            return any(e["loc"][:1] == (wire,) or not e["loc"] for e in exc.errors())
        return False

    values: dict[str, tuple[str, Any]] = {}
    fields = sorted(model.model_fields.items(), key=lambda item: not item[1].is_required())
    for name, info in fields:
        wire = info.alias or name
        base = {w: v for w, v in values.values()}
        literal = getattr(info.annotation, "__args__", ())
        pool = [literal[0]] if "Literal" in str(info.annotation) else _CANDIDATES
        for candidate in pool:
            if not refuses({**base, wire: candidate}, wire):
                values[name] = (wire, candidate)
                break
        else:
            if info.is_required():
                return None
    return values


_MODELS = [(m, v) for m in _input_models() if (v := _valid_values(m)) is not None]


@settings(max_examples=examples(300), deadline=None)
@given(st.sampled_from(_MODELS), st.data())
def test_given_names_are_the_keys_of_given(model_values: Any, data: Any) -> None:
    """`given_names()` (read from the fields set) lists exactly `given()`'s keys, in order,
    whatever order the input named them in."""
    model, values = model_values
    required = [n for n, info in model.model_fields.items() if info.is_required()]
    optional = [n for n in values if n not in required]
    chosen = required + data.draw(st.lists(st.sampled_from(optional), unique=True)
                                  if optional else st.just([]))
    order = data.draw(st.permutations(chosen))
    raw = {values[n][0]: values[n][1] for n in order}
    try:
        value = model.model_validate(raw)
    except ValidationError:
        return  # e.g. an update naming no field
    assert value.given_names() == list(value.given())
