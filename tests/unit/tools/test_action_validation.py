"""When graph actions run the whole-document reference check, and when their own checks suffice."""

from __future__ import annotations

import gc
import weakref

import pytest

from stockade.thf import validate
from stockade.thf.model import DataFlow, ThreatModel
from stockade.tools import actions
from tests.unit.tools.conftest import el, make_doc


@pytest.fixture
def checks(monkeypatch: pytest.MonkeyPatch) -> list[ThreatModel]:
    """Every document the actions hand to `validate_references`, in order."""
    seen: list[ThreatModel] = []

    def counting(document: ThreatModel) -> None:
        seen.append(document)
        validate.validate_references(document)

    monkeypatch.setattr(actions, "validate_references", counting)
    return seen


def added(document: ThreatModel, name: str) -> ThreatModel:
    outcome = actions.add_element(document, actions.NewElement(type="process", name=name))
    assert isinstance(outcome, actions.ActionResult), outcome
    return outcome.document


def test_an_edit_of_a_document_not_known_valid_checks_the_whole_result(
    checks: list[ThreatModel], shop: ThreatModel
) -> None:
    result = added(shop, "Cache")
    assert checks == [result]


def test_an_edit_of_an_action_result_relies_on_the_actions_own_checks(
    checks: list[ThreatModel], shop: ThreatModel
) -> None:
    first = added(shop, "Cache")
    second = added(first, "Queue")
    third = actions.add_data_flow(second, actions.NewDataFlow.model_validate({"from": "cache", "to": "queue"}))
    assert isinstance(third, actions.ActionResult)
    assert checks == [first]
    validate.validate_references(third.document)


def test_an_action_result_still_refuses_what_its_own_checks_refuse(
    checks: list[ThreatModel], shop: ThreatModel
) -> None:
    known = added(shop, "Cache")
    refused = actions.add_data_flow(known, actions.NewDataFlow.model_validate({"from": "cache", "to": "ghost"}))
    assert isinstance(refused, actions.ActionError)
    assert '"ghost"' in refused.message


def test_a_result_broken_in_place_afterwards_is_checked_again_and_refused(
    checks: list[ThreatModel]
) -> None:
    known = added(make_doc(elements=[el("a")]), "B")
    # Against the model's rules (sections are never mutated), which is what the check is for.
    known.data_flows.append(DataFlow.model_validate({"id": "f", "from": "a", "to": "ghost"}))
    outcome = actions.add_element(known, actions.NewElement(type="process", name="C"))
    assert isinstance(outcome, actions.ActionError)
    assert outcome.message.startswith("The change was not applied because it would break the document")
    assert len(checks) == 2


def test_knowing_a_document_is_valid_never_keeps_it_alive(shop: ThreatModel) -> None:
    result = added(shop, "Cache")
    alive = weakref.ref(result)
    del result
    gc.collect()
    assert alive() is None
