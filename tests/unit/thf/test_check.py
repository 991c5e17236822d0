"""The quick validity check (`thf.check`): its field table is the models', and it never says
"valid" where `validate_document` refuses."""

from __future__ import annotations

import copy
import glob
import inspect
import types
from typing import Any, Union, get_args, get_origin

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import stockade.thf.model as model_module
from stockade.thf import ThfError, validate_document
from stockade.thf.check import (
    BOOL,
    DATE,
    ENUM,
    I64,
    NAME_ONLY_KEYS,
    NUMBER,
    RECORD,
    RECORD_LIST,
    RECORDS,
    STR,
    STR_LIST,
    U32,
    is_plainly_valid,
)
from stockade.thf.model import ThfModel, ThreatModel
from stockade.thf.reader import _parse, _text_of
from tests.conftest import examples
from tests.unit.thf.test_properties import documents

_ANNOTATED_KINDS = {
    model_module.Number: NUMBER,
    model_module.U32: U32,
    model_module.I64: I64,
    model_module.CalendarDate: DATE,
    model_module.SeverityField: ENUM,
    model_module.CategoryField: ENUM,
    model_module.StatusField: ENUM,
}


def _declared(cls: type[ThfModel], name: str) -> Any:
    for klass in cls.__mro__:
        hint = inspect.get_annotations(klass).get(name)
        if hint is not None:
            # The model module postpones annotations; evaluate them where they were written.
            return eval(hint, vars(model_module)) if isinstance(hint, str) else hint
    raise AssertionError(name)


def _describe(annotation: Any) -> tuple[str, bool, Any]:
    nullable = False
    if get_origin(annotation) in (Union, types.UnionType):
        (annotation,) = [a for a in get_args(annotation) if a is not type(None)]
        nullable = True
    if annotation in _ANNOTATED_KINDS:
        kind = _ANNOTATED_KINDS[annotation]
        detail = tuple(m.value for m in get_args(annotation)[0]) if kind == ENUM else None
        return kind, nullable, detail
    if annotation is str:
        return STR, nullable, None
    if annotation is bool:
        return BOOL, nullable, None
    if get_origin(annotation) is list:
        (item,) = get_args(annotation)
        if item is str:
            return STR_LIST, nullable, None
        return RECORD_LIST, nullable, item.__name__
    assert issubclass(annotation, ThfModel), annotation
    return RECORD, nullable, annotation.__name__


def _models(cls: type[ThfModel], seen: dict[str, type[ThfModel]]) -> dict[str, type[ThfModel]]:
    seen[cls.__name__] = cls
    for name in cls.model_fields:
        kind, _, detail = _describe(_declared(cls, name))
        if kind in (RECORD, RECORD_LIST) and detail not in seen:
            _models(getattr(model_module, detail), seen)
    return seen


def test_the_field_table_is_the_models_fields() -> None:
    models = _models(ThreatModel, {})
    assert set(RECORDS) == set(models)
    for name, cls in models.items():
        expected = {}
        for field_name, info in cls.model_fields.items():
            kind, nullable, detail = _describe(_declared(cls, field_name))
            expected[info.alias or field_name] = (kind, info.is_required(), nullable, detail)
        assert RECORDS[name] == expected, name
        aliased = {f for f, info in cls.model_fields.items() if info.alias and info.alias != f}
        assert NAME_ONLY_KEYS.get(name, frozenset()) == aliased, name
        assert not cls.__private_attributes__ and cls.model_config.get("extra") == "allow"


def _fixture_paths() -> list[str]:
    return sorted(glob.glob("tests/fixtures/thf/**/*.thf", recursive=True))


def test_every_fixture_gets_the_full_reads_verdict_or_unsure() -> None:
    plainly_valid = 0
    for path in _fixture_paths():
        try:
            with open(path, "rb") as handle:
                parsed = _parse(_text_of(handle.read()))
        except ThfError:
            continue
        try:
            validate_document(copy.deepcopy(parsed))
            valid = True
        except ThfError:
            valid = False
        quick = is_plainly_valid(parsed)
        assert not quick or valid, path
        # Only a legacy layout sidecar makes a valid fixture "unsure" (the full read merges it).
        assert quick or not valid or "legacy-sidecar" in path, path
        plainly_valid += quick
    assert plainly_valid >= 5


@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(documents())
def test_generated_valid_documents_are_plainly_valid(document: dict[str, Any]) -> None:
    validate_document(copy.deepcopy(document))
    assert is_plainly_valid(document)


_ODD_VALUES = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(allow_nan=True),
    st.text(max_size=5), st.sampled_from(["high", "High", "Spoofing", "mitigated", "2026-02-30",
                                          "2026-01-01", "2026-01-01T10:00:00", "a", "nowhere"]),
    st.lists(st.text(max_size=3), max_size=2), st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
    # Fresh containers each draw: a shared one set in two places, then edited through one,
    # could be put inside itself and make the document cyclic.
    st.just({"x": 1.0, "y": 2.0}).map(copy.deepcopy), st.just([1, "a"]).map(copy.deepcopy),
    st.just(float("inf")),
)


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix]
    if isinstance(value, dict):
        for key, item in value.items():
            found += _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += _paths(item, (*prefix, index))
    return found


@settings(max_examples=examples(200), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(documents(), st.data())
def test_a_damaged_document_is_never_plainly_valid_when_the_full_check_refuses_it(
    document: dict[str, Any], data: st.DataObject
) -> None:
    for _ in range(data.draw(st.integers(1, 3))):
        path = data.draw(st.sampled_from(_paths(document)[1:] or [()]))
        parent: Any = document
        for part in path[:-1]:
            parent = parent[part]
        action = data.draw(st.sampled_from(["set", "delete", "add"]))
        if not path:
            break
        if action == "set":
            parent[path[-1]] = data.draw(_ODD_VALUES)
        elif action == "delete":
            del parent[path[-1]]
        elif isinstance(parent, dict):
            parent[data.draw(st.sampled_from(["from_", "extra", "id", "layer", "flow", "parent", 7]))] = (
                data.draw(_ODD_VALUES)
            )
    try:
        validate_document(copy.deepcopy(document))
        valid = True
    except ThfError:
        valid = False
    if is_plainly_valid(document):
        assert valid
