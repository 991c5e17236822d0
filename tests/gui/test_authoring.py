"""Hand authoring: add, edit and delete every kind through the shared actions and history."""

from __future__ import annotations

from typing import Any, cast

from PySide6.QtCore import Qt
from PySide6.QtGui import QAction
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QCheckBox, QComboBox, QLineEdit, QPlainTextEdit, QPushButton, QWidget

from stockade.ui.common.prompts import UnappliedChoice, UnsavedChoice
from stockade.ui.document.new_entity_dialog import NewEntityDialog
from tests.conftest import THF_FIXTURES
from tests.gui.conftest import WindowDriver

FULL = THF_FIXTURES / "v1.0-canonical-full.thf"


def _action(driver: WindowDriver, name: str) -> QAction:
    action = driver.window.findChild(QAction, name)
    assert action is not None, name
    return action


def _set(widget: QWidget, value: Any) -> None:
    """Type into a form input the way a user would leave it."""
    if isinstance(widget, QPlainTextEdit):
        widget.setPlainText(str(value))
    elif isinstance(widget, QComboBox):
        index = widget.findData(value)
        if index >= 0:
            widget.setCurrentIndex(index)
        else:
            widget.setEditText(str(value))
    elif isinstance(widget, QCheckBox):
        widget.setChecked(bool(value))
    else:
        line = cast(QLineEdit, widget)
        line.setText(str(value))
        line.textEdited.emit(line.text())


def _open_dialog(driver: WindowDriver, trigger: Any) -> NewEntityDialog:
    trigger()
    found: list[NewEntityDialog] = []

    def shown() -> bool:
        dialogs = [d for d in driver.window.findChildren(NewEntityDialog) if d.isVisible()]
        found[:] = dialogs
        return bool(dialogs)

    driver.qtbot.waitUntil(shown)
    return found[0]


def _fill_and_ok(driver: WindowDriver, dialog: NewEntityDialog, values: dict[str, Any]) -> None:
    for key, value in values.items():
        _set(dialog.form.input_for(key), value)
    ok = dialog.findChild(QPushButton, "newEntityOk")
    assert ok is not None
    ok.click()


def _ids(driver: WindowDriver, section: str) -> list[str]:
    return [e.id for e in getattr(driver.document, section)]


def test_toolbar_adds_an_element_as_one_undo_step_and_selects_it(driver: WindowDriver) -> None:
    assert driver.open(FULL)
    original = driver.document
    dialog = _open_dialog(driver, _action(driver, "actionAdd_elements").trigger)
    _fill_and_ok(driver, dialog, {"name": "Fraud Scorer", "type": "process",
                                  "technologies": "python, onnx", "trust_zone": "internal"})
    driver.qtbot.waitUntil(lambda: not dialog.isVisible())
    added = next(e for e in driver.document.elements if e.id == "fraud-scorer")
    assert (added.name, added.technologies) == ("Fraud Scorer", ["python", "onnx"])
    driver.qtbot.waitUntil(lambda: driver.window.detail_pane.shown == ("elements", "fraud-scorer"))
    assert driver.window.tree_pane.selected_key == ("elements", "fraud-scorer")
    assert driver.window.diagram_view.entity_rect("elements", "fraud-scorer") is not None

    driver.window.undo_action.trigger()
    assert driver.document is original
    driver.window.redo_action.trigger()
    assert "fraud-scorer" in _ids(driver, "elements")


def test_a_refused_add_keeps_the_dialog_open_with_the_reason(driver: WindowDriver) -> None:
    assert driver.open(FULL)
    original = driver.document
    dialog = _open_dialog(driver, _action(driver, "actionAdd_data_flows").trigger)
    _fill_and_ok(driver, dialog, {"from": "web-app", "to": "ghost", "name": "Leak"})
    assert dialog.isVisible()
    assert dialog.error_label.isVisible() and "ghost" in dialog.error_label.text()
    assert driver.document is original
    _fill_and_ok(driver, dialog, {"to": "payment-db", "protocol": "SQL", "encrypted": True})
    driver.qtbot.waitUntil(lambda: not dialog.isVisible())
    flow = driver.document.data_flows[-1]
    assert (flow.from_, flow.to, flow.protocol, flow.extras) == (
        "web-app", "payment-db", "SQL", {"encrypted": True})
    assert flow.id == "flow-4"  # numbered as the assistant's adds number them


def test_tree_context_menu_adds_a_threat_on_the_element(driver: WindowDriver) -> None:
    assert driver.open(FULL)
    tree = driver.window.tree_pane
    menu = tree.build_context_menu(("elements", "payment-db"))
    assert menu is not None
    add = next(a for a in menu.actions() if a.objectName() == "ctxAddThreat")
    dialog = _open_dialog(driver, add.trigger)
    element_input = cast(QLineEdit, dialog.form.input_for("element"))
    assert element_input.text() == "payment-db"
    _fill_and_ok(driver, dialog, {"title": "Backup theft", "category": "Information Disclosure",
                                  "severity": "high", "description": "Backups are unencrypted."})
    driver.qtbot.waitUntil(lambda: not dialog.isVisible())
    threat = driver.document.threats[-1]
    assert (threat.id, threat.element, threat.severity.value) == ("threat-4", "payment-db", "high")


def test_edit_menu_adds_layers_and_nested_groups(driver: WindowDriver) -> None:
    assert driver.open(FULL)
    dialog = _open_dialog(driver, _action(driver, "actionAdd_layers").trigger)
    _fill_and_ok(driver, dialog, {"name": "Edge", "description": "Internet-facing"})
    driver.qtbot.waitUntil(lambda: not dialog.isVisible())
    dialog = _open_dialog(driver, _action(driver, "actionAdd_groups").trigger)
    _fill_and_ok(driver, dialog, {"name": "Core"})
    driver.qtbot.waitUntil(lambda: not dialog.isVisible())
    dialog = _open_dialog(driver, _action(driver, "actionAdd_groups").trigger)
    _fill_and_ok(driver, dialog, {"name": "Payments", "parent": "core", "type": "cluster"})
    driver.qtbot.waitUntil(lambda: not dialog.isVisible())
    assert _ids(driver, "layers") == ["edge"]
    assert [(g.id, g.parent) for g in driver.document.groups] == [("core", None), ("payments", "core")]


def test_cancelling_the_add_dialog_changes_nothing(driver: WindowDriver) -> None:
    assert driver.open(FULL)
    original = driver.document
    dialog = _open_dialog(driver, _action(driver, "actionAdd_trust_boundaries").trigger)
    cancel = dialog.findChild(QPushButton, "newEntityCancel")
    assert cancel is not None
    cancel.click()
    driver.qtbot.waitUntil(lambda: not dialog.isVisible())
    assert driver.document is original and not driver.window.undo_action.isEnabled()


def _select(driver: WindowDriver, section: str, entity_id: str) -> None:
    tree = driver.window.tree_pane
    tree.view.setCurrentIndex(tree.model.index_for_entity(section, entity_id))
    assert driver.window.detail_pane.shown == (section, entity_id)


def test_delete_key_removes_an_unreferenced_threat_and_undo_restores_it(driver: WindowDriver) -> None:
    assert driver.open(FULL)
    original = driver.document
    _select(driver, "threats", "threat-3")
    driver.window.tree_pane.view.setFocus()
    QTest.keyClick(driver.window.tree_pane.view, Qt.Key.Key_Delete)
    driver.qtbot.waitUntil(lambda: "threat-3" not in _ids(driver, "threats"))
    assert driver.prompts.cascade_questions == []
    assert driver.window.undo_action.text().startswith("&Undo: Deleted threat threat-3")
    driver.window.undo_action.trigger()
    assert driver.document is original


def test_deleting_a_referenced_element_asks_and_lists_what_goes_with_it(driver: WindowDriver) -> None:
    assert driver.open(FULL)
    original = driver.document
    authoring = driver.window.authoring
    driver.prompts.cascade_answers = [False]
    assert not driver.run(authoring.delete("elements", "payment-db"))
    question, removals = driver.prompts.cascade_questions[0]
    assert "payment-db" in question
    assert removals == ["data flow flow-2", "threat threat-1"]
    assert driver.document is original

    driver.prompts.cascade_answers = [True]
    assert driver.run(authoring.delete("elements", "payment-db"))
    assert "payment-db" not in _ids(driver, "elements")
    assert "flow-2" not in _ids(driver, "data_flows")
    assert "threat-1" not in _ids(driver, "threats")
    boundary = next(b for b in driver.document.trust_boundaries if b.id == "boundary-1")
    assert "payment-db" not in boundary.contains
    driver.window.undo_action.trigger()  # the whole cascade is one step
    assert driver.document is original


def test_deleting_a_layer_in_use_takes_its_elements_off_it_after_asking(driver: WindowDriver) -> None:
    assert driver.open(FULL)
    dialog = _open_dialog(driver, _action(driver, "actionAdd_layers").trigger)
    _fill_and_ok(driver, dialog, {"name": "Edge"})
    driver.qtbot.waitUntil(lambda: not dialog.isVisible())
    _select(driver, "elements", "web-app")
    _set(driver.window.detail_pane.input("layer"), "edge")
    assert driver.window.detail_pane.apply_changes()
    with_layer = driver.document
    driver.prompts.cascade_answers = [True]
    assert driver.run(driver.window.authoring.delete("layers", "edge"))
    assert driver.prompts.cascade_questions[0][1] == ["layer of element web-app"]
    assert driver.document.layers == []
    assert next(e for e in driver.document.elements if e.id == "web-app").layer is None
    driver.window.undo_action.trigger()
    assert driver.document is with_layer


def test_context_menu_delete_of_a_trust_boundary_keeps_its_members(driver: WindowDriver) -> None:
    assert driver.open(FULL)
    menu = driver.window.tree_pane.build_context_menu(("trust_boundaries", "boundary-2"))
    assert menu is not None
    delete = next(a for a in menu.actions() if a.objectName() == "ctxDelete")
    delete.trigger()
    driver.qtbot.waitUntil(lambda: "boundary-2" not in _ids(driver, "trust_boundaries"))
    assert "stripe-api" in _ids(driver, "elements")


def test_detail_pane_edits_flow_fields_and_refuses_a_bad_endpoint_at_the_field(
    driver: WindowDriver,
) -> None:
    assert driver.open(FULL)
    _select(driver, "data_flows", "flow-3")
    detail = driver.window.detail_pane
    _set(detail.input("to"), "nowhere")
    _set(detail.input("protocol"), "gRPC")
    assert not detail.apply_changes()
    assert detail.form is not None
    errors = detail.form.shown_errors()
    assert list(errors) == ["to"] and "nowhere" in errors["to"]
    _set(detail.input("to"), "payment-db")
    _set(detail.input("authenticated"), False)
    _set(detail.input("encrypted"), True)
    _set(detail.input("data"), "card, token")
    assert detail.apply_changes()
    flow = next(f for f in driver.document.data_flows if f.id == "flow-3")
    assert (flow.to, flow.protocol, flow.authenticated, flow.data, flow.extras) == (
        "payment-db", "gRPC", False, ["card", "token"], {"encrypted": True})
    assert detail.form.shown_errors() == {}


def test_detail_pane_edits_element_boundary_and_threat_fields(driver: WindowDriver) -> None:
    assert driver.open(FULL)
    original = driver.document
    detail = driver.window.detail_pane
    _select(driver, "elements", "stripe-api")
    for key, value in (("type", "api_gateway"), ("subtype", "aws_api_gateway"),
                       ("technologies", "rest, json"), ("trust_zone", "internet"),
                       ("description", "Card processor")):
        _set(detail.input(key), value)
    assert detail.apply_changes()
    element = next(e for e in driver.document.elements if e.id == "stripe-api")
    assert (element.type, element.subtype, element.technologies, element.trust_zone) == (
        "api_gateway", "aws_api_gateway", ["rest", "json"], "internet")

    _select(driver, "trust_boundaries", "boundary-2")
    _set(detail.input("contains"), "stripe-api, web-app")
    assert detail.apply_changes()
    assert driver.document.trust_boundaries[1].contains == ["stripe-api", "web-app"]

    _select(driver, "threats", "threat-3")
    _set(detail.input("category"), "Spoofing")
    _set(detail.input("element"), "")
    _set(detail.input("flow"), "flow-1")
    assert detail.apply_changes()
    threat = next(t for t in driver.document.threats if t.id == "threat-3")
    assert (threat.category.value, threat.element, threat.flow) == ("Spoofing", None, "flow-1")

    for _ in range(3):
        driver.window.undo_action.trigger()
    assert driver.document is original


def test_leaving_unapplied_edits_asks_apply_discard_or_cancel(driver: WindowDriver) -> None:
    assert driver.open(FULL)
    detail = driver.window.detail_pane
    tree = driver.window.tree_pane
    _select(driver, "elements", "web-app")
    _set(detail.input("name"), "Storefront")

    driver.prompts.unapplied_answers = [UnappliedChoice.CANCEL]
    tree.view.setCurrentIndex(tree.model.index_for_entity("elements", "stripe-api"))
    driver.qtbot.waitUntil(lambda: len(driver.prompts.unapplied_questions) == 1)
    driver.qtbot.waitUntil(lambda: tree.selected_key == ("elements", "web-app"))
    assert detail.shown == ("elements", "web-app")
    assert cast(QLineEdit, detail.input("name")).text() == "Storefront"

    driver.prompts.unapplied_answers = [UnappliedChoice.DISCARD]
    tree.view.setCurrentIndex(tree.model.index_for_entity("elements", "stripe-api"))
    driver.qtbot.waitUntil(lambda: detail.shown == ("elements", "stripe-api"))
    assert next(e for e in driver.document.elements if e.id == "web-app").name == "Web Application"

    _set(detail.input("name"), "Stripe")
    driver.prompts.unapplied_answers = [UnappliedChoice.APPLY]
    tree.view.setCurrentIndex(tree.model.index_for_entity("elements", "payment-db"))
    driver.qtbot.waitUntil(lambda: detail.shown == ("elements", "payment-db"))
    assert next(e for e in driver.document.elements if e.id == "stripe-api").name == "Stripe"
    assert len(driver.prompts.unapplied_questions) == 3


def test_internal_fields_are_hidden_until_asked_for(driver: WindowDriver) -> None:
    assert driver.open(FULL)
    _select(driver, "elements", "payment-db")
    detail = driver.window.detail_pane

    def names() -> list[str]:
        return [detail.fields.topLevelItem(i).text(0) for i in range(detail.fields.topLevelItemCount())]

    assert "encryption" in names()
    assert not any(n.startswith(("position", "fill_color", "font_size")) for n in names())
    detail.internal_check.setChecked(True)
    assert "position.x" in names() and "fill_color" in names()


_NEW: dict[str, dict[str, Any]] = {
    "elements": {"name": "Audit Log", "type": "data_store"},
    "data_flows": {"from": "web-app", "to": "stripe-api", "name": "Refund"},
    "trust_boundaries": {"name": "PCI zone", "contains": "payment-db"},
    "threats": {"title": "Log tampering", "category": "Tampering", "severity": "low",
                "description": "Logs can be edited."},
    "layers": {"name": "Data"},
    "groups": {"name": "Billing"},
}


def test_every_kind_is_added_undone_and_redone(driver: WindowDriver) -> None:
    assert driver.open(FULL)
    for section, values in _NEW.items():
        before = driver.document
        dialog = _open_dialog(driver, _action(driver, f"actionAdd_{section}").trigger)
        _fill_and_ok(driver, dialog, values)
        driver.qtbot.waitUntil(lambda d=dialog: not d.isVisible())  # type: ignore[misc]
        after = driver.document
        assert len(getattr(after, section)) == len(getattr(before, section)) + 1, section
        driver.window.undo_action.trigger()
        assert driver.document is before, section
        driver.window.redo_action.trigger()
        assert driver.document is after, section


def test_the_delete_key_in_a_text_field_edits_text_not_the_model(driver: WindowDriver) -> None:
    assert driver.open(FULL)
    original = driver.document
    _select(driver, "elements", "web-app")
    name = cast(QLineEdit, driver.window.detail_pane.input("name"))
    driver.window.activateWindow()
    name.setFocus()
    driver.qtbot.waitUntil(name.hasFocus)
    name.setCursorPosition(0)
    QTest.keyClick(name, Qt.Key.Key_Delete)
    assert name.text() == "eb Application"
    assert driver.document is original


def test_closing_with_unapplied_edits_asks_about_them_first(driver: WindowDriver) -> None:
    assert driver.open(FULL)
    _select(driver, "elements", "web-app")
    _set(driver.window.detail_pane.input("name"), "Storefront")
    driver.prompts.unapplied_answers = [UnappliedChoice.CANCEL]
    assert not driver.run(driver.window.commands.settle_unsaved_changes())
    assert driver.prompts.unapplied_questions == ["“web-app”"]
    assert driver.prompts.unsaved_questions == []  # Cancel stops before the save question
    driver.prompts.unapplied_answers = [UnappliedChoice.APPLY]
    driver.prompts.unsaved_answers = [UnsavedChoice.DISCARD]
    assert driver.run(driver.window.commands.settle_unsaved_changes())
    assert next(e for e in driver.document.elements if e.id == "web-app").name == "Storefront"
    assert driver.prompts.unsaved_questions == ["v1.0-canonical-full.thf"]
