"""The transaction and per-turn undo over the shared edit history (SEC-TX-01..09)."""

from __future__ import annotations

import asyncio

import pytest

from stockade.loop.history import DocumentSession, EditHistory, EntryFate
from stockade.loop.transaction import (
    Committed,
    RefusalReason,
    Refused,
    TurnUndoLedger,
    Unchanged,
    UndoAvailability,
    commit_tool_outcome,
    turn_undo_availability,
    undo_turn,
)
from stockade.thf.canonical import canonical_json
from stockade.thf.model import DataFlow, Element, ThreatModel
from stockade.tools.registry import default_registry
from stockade.tools.runtime import PreparedCall, ToolContext, ToolEffect, ToolFailed, ToolOk
from tests.unit.loop.fakes import base_model


def with_element(model: ThreatModel, element_id: str) -> ThreatModel:
    element = Element(id=element_id, type="process", name=element_id.upper())
    return model.model_copy(update={"elements": [*model.elements, element]})


def canon(model: ThreatModel) -> str:
    return canonical_json(model.model_dump(mode="json", by_alias=True, exclude_none=True))


def commit(session: DocumentSession, outcome: object, ledger: TurnUndoLedger, *, expected: ThreatModel | None = None,
           effect: ToolEffect = ToolEffect.MUTATE) -> object:
    return commit_tool_outcome(
        outcome,  # type: ignore[arg-type]
        expected=expected if expected is not None else session.document,
        effect=effect,
        session=session,
        ledger=ledger,
    )


def test_tx01_tool_error_is_refused_and_changes_nothing() -> None:
    session = DocumentSession(base_model())
    live = session.document
    result = commit(session, ToolFailed("no such element"), TurnUndoLedger())
    assert result == Refused(RefusalReason.TOOL_ERROR, "no such element")
    assert session.document is live and session.history.past == []


def test_tx02_read_tool_returning_a_document_is_refused() -> None:
    session = DocumentSession(base_model())
    live = session.document
    result = commit(session, ToolOk("r", with_element(live, "x")), TurnUndoLedger(), effect=ToolEffect.READ)
    assert isinstance(result, Refused) and result.reason is RefusalReason.READ_TOOL_MUTATED
    assert session.document is live


def test_tx03_document_changed_under_the_call_is_refused_and_the_user_edit_stays() -> None:
    session = DocumentSession(base_model())
    read_by_call = session.document
    users = with_element(read_by_call, "user-edit")
    session.apply_edit(users, "Add element")
    result = commit(session, ToolOk("added", with_element(read_by_call, "a")), TurnUndoLedger(), expected=read_by_call)
    assert isinstance(result, Refused) and result.reason is RefusalReason.DOCUMENT_CHANGED
    assert session.document is users


def test_tx03b_an_equal_but_different_object_still_counts_as_changed() -> None:
    session = DocumentSession(base_model())
    copy = session.document.model_copy()
    result = commit(session, ToolOk("added", with_element(copy, "a")), TurnUndoLedger(), expected=copy)
    assert isinstance(result, Refused) and result.reason is RefusalReason.DOCUMENT_CHANGED


def test_tx04_invalid_document_is_refused_with_the_validators_message() -> None:
    session = DocumentSession(base_model())
    live = session.document
    ghost_flow = DataFlow.model_validate({"id": "f1", "from": "ghost", "to": "web-app"})
    broken = live.model_copy(update={"data_flows": [ghost_flow]})
    result = commit(session, ToolOk("added", broken), TurnUndoLedger())
    assert isinstance(result, Refused) and result.reason is RefusalReason.INVALID_DOCUMENT
    assert "ghost" in result.message
    assert session.document is live and session.history.past == []


def test_tx05_valid_commit_swaps_the_document_and_pushes_the_pre_turn_snapshot() -> None:
    session = DocumentSession(base_model())
    before = session.document
    after = with_element(before, "a")
    result = commit(session, ToolOk("added a", after), TurnUndoLedger())
    assert result == Committed(after, before, "added a")
    assert session.document is after
    assert [e.document for e in session.history.past] == [before]


def test_tx06_three_commits_in_one_turn_add_one_history_entry() -> None:
    session = DocumentSession(base_model())
    ledger = TurnUndoLedger()
    for element_id in ("a", "b", "c"):
        commit(session, ToolOk("added", with_element(session.document, element_id)), ledger)
    assert len(session.history.past) == 1
    assert [e.id for e in session.document.elements] == ["web-app", "a", "b", "c"]


def test_tx07_undo_after_three_commits_restores_the_pre_turn_document() -> None:
    session = DocumentSession(base_model())
    pre_turn = session.document
    ledger = TurnUndoLedger()
    for element_id in ("a", "b", "c"):
        commit(session, ToolOk("added", with_element(session.document, element_id)), ledger)
    assert turn_undo_availability(ledger, session) is UndoAvailability.UNDOABLE
    assert undo_turn(ledger, session)
    assert canon(session.document) == canon(pre_turn)
    assert turn_undo_availability(ledger, session) is UndoAvailability.ALREADY_UNDONE
    assert not undo_turn(ledger, session)


def test_tx08_turn_buried_by_later_edits_is_superseded() -> None:
    session = DocumentSession(base_model(), max_depth=20)
    ledger = TurnUndoLedger()
    commit(session, ToolOk("added", with_element(session.document, "a")), ledger)
    for n in range(20):
        session.apply_edit(with_element(session.document, f"u{n}"), "manual")
    assert turn_undo_availability(ledger, session) is UndoAvailability.SUPERSEDED
    current = session.document
    assert not undo_turn(ledger, session)
    assert session.document is current


def test_one_manual_edit_on_top_supersedes_the_turn() -> None:
    session = DocumentSession(base_model())
    ledger = TurnUndoLedger()
    commit(session, ToolOk("added", with_element(session.document, "a")), ledger)
    session.apply_edit(with_element(session.document, "m"), "manual")
    assert turn_undo_availability(ledger, session) is UndoAvailability.SUPERSEDED
    session.undo()  # the manual edit is undone: the turn is the newest again
    assert turn_undo_availability(ledger, session) is UndoAvailability.UNDOABLE


def test_manual_undo_of_the_turn_entry_reports_already_undone_and_redo_restores_it() -> None:
    session = DocumentSession(base_model())
    ledger = TurnUndoLedger()
    commit(session, ToolOk("added", with_element(session.document, "a")), ledger)
    after = session.document
    assert session.undo()
    assert turn_undo_availability(ledger, session) is UndoAvailability.ALREADY_UNDONE
    assert session.redo() and session.document is after
    assert turn_undo_availability(ledger, session) is UndoAvailability.UNDOABLE


def test_edit_between_two_commits_of_a_turn_is_kept_separately_undoable() -> None:
    session = DocumentSession(base_model())
    ledger = TurnUndoLedger()
    commit(session, ToolOk("added", with_element(session.document, "a")), ledger)
    session.apply_edit(with_element(session.document, "manual"), "manual")
    commit(session, ToolOk("added", with_element(session.document, "b")), ledger)
    assert len(session.history.past) == 3
    assert turn_undo_availability(ledger, session) is UndoAvailability.SUPERSEDED


def test_turn_with_no_commit_leaves_history_untouched() -> None:
    session = DocumentSession(base_model())
    ledger = TurnUndoLedger()
    assert commit(session, ToolOk("nothing"), ledger) == Unchanged("nothing")
    assert session.history.past == []
    assert turn_undo_availability(ledger, session) is UndoAvailability.ALREADY_UNDONE


@pytest.mark.parametrize(
    ("tool", "raw"),
    [
        ("get_document_summary", {}),
        ("get_entity", {"kind": "elements", "id": "web-app"}),
        ("search_entities", {"kind": "elements"}),
        ("search_component_catalog", {}),
    ],
)
def test_tx09_every_read_tool_commits_as_unchanged(tool: str, raw: dict[str, object]) -> None:
    session = DocumentSession(base_model())
    live = session.document
    text = canon(live)
    prepared = default_registry().get(tool).prepare(raw)  # type: ignore[union-attr]
    assert isinstance(prepared, PreparedCall)
    outcome = asyncio.run(prepared.run(ToolContext(document=live)))
    assert isinstance(outcome, ToolOk) and outcome.document is None
    result = commit(session, outcome, TurnUndoLedger(), effect=ToolEffect.READ)
    assert isinstance(result, Unchanged)
    assert session.document is live and canon(live) == text and session.history.past == []
    control = commit(session, ToolOk("x", with_element(live, "z")), TurnUndoLedger(), effect=ToolEffect.READ)
    assert isinstance(control, Refused)


def test_history_trims_to_its_depth_and_reports_fates() -> None:
    history = EditHistory(max_depth=2)
    model = base_model()
    first = history.push(model, "one")
    second = history.push(model, "two")
    third = history.push(model, "three")
    assert history.fate(first.serial) is EntryFate.TRIMMED
    assert history.fate(second.serial) is EntryFate.BURIED
    assert history.fate(third.serial) is EntryFate.NEWEST
    assert history.undo_label() == "three"
    history.undo(model)
    assert history.fate(third.serial) is EntryFate.UNDONE and history.redo_label() == "three"
    history.push(model, "four")  # clears the redo stack
    assert history.fate(third.serial) is EntryFate.UNDONE and not history.can_redo


def test_history_depth_must_be_positive() -> None:
    with pytest.raises(ValueError, match="positive"):
        EditHistory(0)
