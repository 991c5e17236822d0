"""`TurnStep`'s own constructor (the slots' setters instead of the frozen dataclass's
`object.__setattr__`) and the runner's `new_step` (its mutable twin, made a `TurnStep`) build
the same frozen record the dataclass definition describes."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stockade.loop.hooks import StepKind, TurnStep, new_step
from stockade.protocol.frozen import mutable_twin


@dataclasses.dataclass(frozen=True, slots=True)
class _DefinedStep:
    """The plain definition: the dataclass's generated `__init__`."""

    kind: StepKind
    payload: dict[str, Any] = dataclasses.field(default_factory=dict)
    confidential: tuple[str, ...] = ()


def _fields(step: Any) -> tuple[Any, ...]:
    return tuple(getattr(step, f.name) for f in dataclasses.fields(step))


@given(st.sampled_from(StepKind),
       st.dictionaries(st.text(max_size=5), st.one_of(st.integers(), st.text(max_size=5))),
       st.lists(st.text(max_size=5), max_size=3).map(tuple))
def test_a_step_holds_what_it_was_given_as_the_dataclass_would(
    kind: StepKind, payload: dict[str, Any], lines: tuple[str, ...]
) -> None:
    for args in ((kind,), (kind, payload), (kind, payload, lines)):
        step, defined = TurnStep(*args), _DefinedStep(*args)
        assert _fields(step) == _fields(defined)
        assert repr(step) == repr(defined).replace("_DefinedStep", "TurnStep")
        assert step == TurnStep(*args)
    keyword = TurnStep(kind=kind, confidential=lines, payload=payload)
    assert keyword == TurnStep(kind, payload, lines)
    assert keyword.payload is payload


def test_each_step_without_a_payload_gets_its_own_and_fields_stay_read_only() -> None:
    first, second = TurnStep(StepKind.TURN_SETTLED), TurnStep(StepKind.TURN_SETTLED)
    assert first.payload == {} and first.payload is not second.payload
    assert [f.name for f in dataclasses.fields(TurnStep)] == ["kind", "payload", "confidential"]
    with pytest.raises(dataclasses.FrozenInstanceError):
        first.kind = StepKind.TOOL_RESULT  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        del first.payload  # type: ignore[misc]
    assert dataclasses.replace(first, kind=StepKind.TOOL_RESULT).kind is StepKind.TOOL_RESULT


@given(st.sampled_from(StepKind),
       st.dictionaries(st.text(max_size=5), st.one_of(st.integers(), st.text(max_size=5))),
       st.lists(st.text(max_size=5), max_size=3).map(tuple))
def test_the_runners_steps_are_the_constructors(
    kind: StepKind, payload: dict[str, Any], lines: tuple[str, ...]
) -> None:
    for args in ((kind, payload), (kind, payload, lines)):
        made, built = new_step(*args), TurnStep(*args)
        assert type(made) is TurnStep
        assert _fields(made) == _fields(built) and made == built and repr(made) == repr(built)
        assert made.payload is payload
    made = new_step(kind, payload)
    with pytest.raises(dataclasses.FrozenInstanceError):
        made.kind = StepKind.TOOL_RESULT  # type: ignore[misc]


def test_only_slotted_records_get_a_twin() -> None:
    class WithDict:
        pass

    @dataclasses.dataclass(frozen=True, slots=True)
    class Base:
        a: int

    @dataclasses.dataclass(frozen=True, slots=True)
    class Derived(Base):
        b: int

    for cls in (WithDict, Derived, int):
        with pytest.raises(TypeError):
            mutable_twin(cls)
    twin = mutable_twin(Base)
    made = twin()
    made.a = 1
    made.__class__ = Base
    assert made == Base(1) and type(made) is Base
