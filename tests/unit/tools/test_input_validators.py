"""The tool inputs' enum validators look members up in a table: the same answers and errors as
calling the enums (hypothesis against the plain definitions)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stockade.thf.model import MitigationStatus, Severity, StrideCategory
from stockade.tools.actions import _enum_exact, _severity
from stockade.tools.read_tools import _severity_filter
from tests.conftest import examples


class _Text(str):
    """A str subclass: the lookup must treat it as the enum call does."""


def _plain_severity(value: Any) -> Any:
    if isinstance(value, str) and not isinstance(value, Severity):
        try:
            return Severity(value.lower())
        except ValueError:
            raise ValueError("must be critical, high, medium, low, or info") from None
    return value


def _plain_enum_exact(enum: Any, value: Any) -> Any:
    if isinstance(value, str) and not isinstance(value, enum):
        try:
            return enum(value)
        except ValueError:
            choices = ", ".join(f'"{m.value}"' for m in enum)
            raise ValueError(f"must be one of {choices}") from None
    return value


def _plain_severity_filter(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return Severity(value.lower()).value
        except ValueError:
            raise ValueError("must be critical, high, medium, low, or info") from None
    return value


_NAMES = [m.value for e in (Severity, StrideCategory, MitigationStatus) for m in e]
_VALUES = (
    st.sampled_from(_NAMES).flatmap(lambda n: st.sampled_from([n, n.upper(), n.title(), n + " "]))
    | st.text(max_size=12)
    | st.sampled_from([*Severity, *StrideCategory, *MitigationStatus])
    | st.none() | st.integers() | st.lists(st.text(max_size=3), max_size=2)
)
_ANY = _VALUES | _VALUES.filter(lambda v: type(v) is str).map(_Text)


def _outcome(convert: Any, value: Any) -> tuple[str, Any]:
    try:
        result = convert(value)
    except ValueError as exc:
        return ("error", str(exc))
    return ("ok", (type(result), result))


@settings(max_examples=examples(500), deadline=None)
@given(_ANY)
def test_the_table_lookups_answer_as_the_enum_calls(value: Any) -> None:
    assert _outcome(_severity, value) == _outcome(_plain_severity, value)
    assert _outcome(_severity_filter, value) == _outcome(_plain_severity_filter, value)
    for enum in (StrideCategory, MitigationStatus):
        convert = _enum_exact(enum)
        assert _outcome(convert, value) == _outcome(lambda v, e=enum: _plain_enum_exact(e, v), value)


@pytest.mark.parametrize("value", ["High", "CRITICAL", "low", "medium ", "", "Spoofing"])
def test_known_cases(value: str) -> None:
    assert _outcome(_severity, value) == _outcome(_plain_severity, value)
    assert _outcome(_enum_exact(StrideCategory), value) == _outcome(
        lambda v: _plain_enum_exact(StrideCategory, v), value)


@settings(max_examples=examples(500), deadline=None)
@given(st.text(max_size=100) | st.text(alphabet=st.characters(max_codepoint=127), max_size=100)
       | st.text(max_size=12).map(_Text))
def test_summary_values_are_sanitized_text(text: str) -> None:
    """The summaries' printable-ASCII shortcut returns what `sanitize` returns."""
    from stockade.tools.graph_tools import SUMMARY_FIELD_MAX, _t
    from stockade.tools.read_tools import ECHO_MAX_CODE_POINTS, _summary_id
    from stockade.tools.untrusted import sanitize

    assert _t(text) == sanitize(text, SUMMARY_FIELD_MAX)[0]
    assert _summary_id(text) == sanitize(text, ECHO_MAX_CODE_POINTS)[0]
