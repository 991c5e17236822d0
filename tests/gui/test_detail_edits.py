"""Hand edits in the detail pane go through the shared actions and the shared undo history."""

from __future__ import annotations

from typing import cast

from PySide6.QtWidgets import QComboBox, QLineEdit, QPlainTextEdit

from stockade.thf.model import MitigationStatus, Severity, Threat
from stockade.tools import actions
from tests.conftest import THF_FIXTURES
from tests.gui.conftest import WindowDriver


def _threat(driver: WindowDriver, threat_id: str) -> Threat:
    return next(t for t in driver.document.threats if t.id == threat_id)


def _combo(driver: WindowDriver, key: str) -> QComboBox:
    return cast(QComboBox, driver.window.detail_pane.input(key))


def _line(driver: WindowDriver, key: str) -> QLineEdit:
    return cast(QLineEdit, driver.window.detail_pane.input(key))


def _text(driver: WindowDriver, key: str) -> QPlainTextEdit:
    return cast(QPlainTextEdit, driver.window.detail_pane.input(key))


def _select_in_tree(driver: WindowDriver, section: str, entity_id: str) -> None:
    pane = driver.window.tree_pane
    index = pane.model.index_for_entity(section, entity_id)
    pane.view.setCurrentIndex(index)  # a user click: emits entitySelected
    assert driver.window.detail_pane.shown == (section, entity_id)


def test_status_edit_changes_the_document_and_undo_restores_it_and_redo_reapplies(
    driver: WindowDriver,
) -> None:
    assert driver.open(THF_FIXTURES / "v1.0-canonical-full.thf")
    original = driver.document
    _select_in_tree(driver, "threats", "threat-2")
    detail = driver.window.detail_pane
    assert _combo(driver, "mitigation_status").currentData() == MitigationStatus.IN_PROGRESS.value

    _combo(driver, "mitigation_status").setCurrentIndex(_combo(driver, "mitigation_status").findData("mitigated"))
    assert detail.apply_button.isEnabled()
    detail.apply_button.click()

    edited = driver.document
    assert edited is not original
    threat = _threat(driver, "threat-2")
    assert threat.mitigation is not None and threat.mitigation.status is MitigationStatus.MITIGATED
    assert driver.window.open_document.is_dirty
    assert driver.window.windowTitle().startswith("v1.0-canonical-full.thf* ")
    assert driver.window.undo_action.isEnabled()

    driver.window.undo_action.trigger()
    assert driver.document is original
    assert not driver.window.open_document.is_dirty
    assert _combo(driver, "mitigation_status").currentData() == "in_progress"
    assert driver.window.redo_action.isEnabled()

    driver.window.redo_action.trigger()
    assert driver.document is edited
    assert _combo(driver, "mitigation_status").currentData() == "mitigated"


def test_severity_and_mitigation_text_are_one_undo_step(driver: WindowDriver) -> None:
    assert driver.open(THF_FIXTURES / "v1.0-canonical-full.thf")
    original = driver.document
    _select_in_tree(driver, "threats", "threat-3")  # no mitigation yet
    detail = driver.window.detail_pane
    _combo(driver, "severity").setCurrentIndex(_combo(driver, "severity").findData("medium"))
    _combo(driver, "mitigation_status").setCurrentIndex(_combo(driver, "mitigation_status").findData("in_progress"))
    _text(driver, "mitigation_text").setPlainText("Require a second factor for the console.")
    assert detail.apply_changes()

    threat = _threat(driver, "threat-3")
    assert threat.severity is Severity.MEDIUM
    assert threat.mitigation is not None
    assert threat.mitigation.description == "Require a second factor for the console."
    driver.window.open_document.undo()
    assert driver.document is original


def test_renaming_an_element_updates_tree_and_keeps_the_selection(driver: WindowDriver) -> None:
    assert driver.open(THF_FIXTURES / "v1.0-canonical-full.thf")
    _select_in_tree(driver, "elements", "web-app")
    detail = driver.window.detail_pane
    _line(driver, "name").setText("Customer Portal")
    _text(driver, "description").setPlainText("Serves the storefront.")
    assert detail.apply_changes()

    element = next(e for e in driver.document.elements if e.id == "web-app")
    assert (element.name, element.description) == ("Customer Portal", "Serves the storefront.")
    model = driver.window.tree_pane.model
    index = model.index_for_entity("elements", "web-app")
    assert model.data(index) == "Customer Portal"
    assert driver.window.tree_pane.selected_key == ("elements", "web-app")
    assert driver.window.tree_pane.view.currentIndex() == index


def test_invalid_edit_shows_the_action_error_and_changes_nothing(driver: WindowDriver) -> None:
    assert driver.open(THF_FIXTURES / "v1.0-canonical-full.thf")
    original = driver.document
    _select_in_tree(driver, "threats", "threat-1")
    detail = driver.window.detail_pane
    _line(driver, "title").setText("")  # a threat title is required
    assert not detail.apply_changes()

    assert driver.document is original
    assert not driver.window.open_document.is_dirty
    assert detail.error_label.isVisible()
    assert detail.form is not None
    errors = detail.form.shown_errors()
    assert list(errors) == ["title"] and "title" in errors["title"]
    assert not driver.window.undo_action.isEnabled()


def test_mitigation_text_without_a_status_is_refused(driver: WindowDriver) -> None:
    assert driver.open(THF_FIXTURES / "v1.0-canonical-full.thf")
    _select_in_tree(driver, "threats", "threat-3")
    detail = driver.window.detail_pane
    _text(driver, "mitigation_text").setPlainText("Something")
    assert not detail.apply_changes()
    assert detail.form is not None
    assert "status" in detail.form.shown_errors()["mitigation_status"]


def test_detail_lists_every_field_including_unknown_ones(driver: WindowDriver) -> None:
    assert driver.open(THF_FIXTURES / "v1.0-unknown-fields.thf")
    element = driver.document.elements[0]
    assert element.extras, "fixture carries an unknown element field"
    _select_in_tree(driver, "elements", element.id)
    fields = driver.window.detail_pane.fields
    names = [fields.topLevelItem(i).text(0) for i in range(fields.topLevelItemCount())]
    assert "id" in names and "name" in names
    assert any(n.startswith("unknown_future_note") and "unknown field" in n for n in names)


def test_undoing_an_edit_of_a_filtered_view_keeps_the_filter(driver: WindowDriver) -> None:
    assert driver.open(THF_FIXTURES / "v1.0-canonical-full.thf")
    pane = driver.window.tree_pane
    pane.severity_combo.setCurrentIndex(pane.severity_combo.findData(Severity.CRITICAL))
    assert pane.model.section_count("threats") == (1, 3)
    _select_in_tree(driver, "threats", "threat-3")
    detail = driver.window.detail_pane
    _combo(driver, "severity").setCurrentIndex(_combo(driver, "severity").findData("low"))
    assert detail.apply_changes()
    assert pane.model.section_count("threats") == (0, 3)
    driver.window.open_document.undo()
    assert pane.model.section_count("threats") == (1, 3)


def test_tree_follows_adds_and_their_undo(driver: WindowDriver) -> None:
    assert driver.open(THF_FIXTURES / "v1.0-canonical-full.thf")
    model = driver.window.tree_pane.model
    added = actions.add_threat(
        driver.document,
        actions.NewThreat(
            title="Replay of payment requests",
            category="Repudiation",
            severity="medium",
            element="payment-db",
            description="Requests can be replayed.",
        ),
    )
    assert isinstance(added, actions.ActionResult) and added.new_id is not None
    driver.window.open_document.apply_edit(added.document, added.result)
    assert model.section_count("threats") == (4, 4)
    parent = model.index_for_entity("elements", "payment-db")
    while model.canFetchMore(parent):
        model.fetchMore(parent)
    under = [model.key_for_index(model.index(r, 0, parent)) for r in range(model.rowCount(parent))]
    assert ("threats", added.new_id) in under
    assert driver.window.undo_action.text().startswith("&Undo: Added threat")

    driver.window.undo_action.trigger()
    assert model.section_count("threats") == (3, 3)
    assert not model.index_for_entity("threats", added.new_id).isValid()
