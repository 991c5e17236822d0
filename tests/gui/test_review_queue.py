"""The review queue through the real window: multi-select decisions, destructive calls kept out
of bulk approvals, denial reasons reaching the model, edit before approve, real ids in the
previews, the keyboard, and "declined earlier" across turns."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from PySide6.QtCore import QEvent, Qt
from PySide6.QtGui import QKeyEvent
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication, QLabel, QPlainTextEdit, QWidget

from stockade.governance.services import open_governance
from stockade.loop.authorization import Violation
from stockade.thf.canonical import digest
from stockade.ui.assistant.edit_call_dialog import EditCallDialog
from stockade.ui.assistant.review_queue import ReviewEnd, ReviewQueue, label_is_plain
from tests.gui.chat_helpers import (
    approve,
    assistant,
    choose,
    copy_fixture,
    deny,
    finish,
    preview_of,
    send,
    threat_delete,
    threat_update,
    wait_dialog,
    wait_settled,
)
from tests.gui.conftest import WindowDriver
from tests.helpers.fake_provider import FakeProviderServer, Reply, anthropic_sse

HOSTILE = "<b>Bold</b> <a href='https://evil.example'>click</a> <img src='https://x/y.png'>"


def add_threat(call_id: str, title: str, *, severity: str = "high",
               element: str = "api-gateway", category: str = "Spoofing") -> tuple[str, str, Any]:
    return (call_id, "add_threat", {"action": "add_threat", "threat": {
        "title": title, "category": category, "severity": severity, "element": element,
        "description": f"{title}: described."}})


def tool_results(server: FakeProviderServer, request: int) -> dict[str, dict[str, Any]]:
    """The tool_result blocks of one recorded request body, by call id."""
    body = server.requests[request].body
    found: dict[str, dict[str, Any]] = {}
    for message in body["messages"]:
        if message["role"] != "user" or not isinstance(message["content"], list):
            continue
        for block in message["content"]:
            if block.get("type") == "tool_result":
                found[block["tool_use_id"]] = block
    return found


def result_text(block: dict[str, Any]) -> str:
    content = block["content"]
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content)


def start(driver: WindowDriver, server: FakeProviderServer, tmp_path: Path,
          calls: list[tuple[str, str, Any]], *follow: Reply) -> ReviewQueue:
    server.script([Reply.sse(anthropic_sse(tool_calls=calls)), *follow])
    assert driver.open(copy_fixture(tmp_path))
    controller = assistant(driver)
    choose(controller)
    send(driver, controller, "work on the threats")
    return wait_dialog(driver, controller)


def test_model_text_in_the_queue_is_plain_text_and_markup_shows_literally(
    driver: WindowDriver, server: FakeProviderServer, tmp_path: Path
) -> None:
    queue = start(driver, server, tmp_path, [add_threat("toolu_9", HOSTILE[:60])],
                  Reply.sse(anthropic_sse(text="ok")))
    assert queue.windowModality() is Qt.WindowModality.WindowModal
    labels = queue.findChildren(QLabel)
    assert labels and all(label_is_plain(label) for label in labels)
    assert all(e.isReadOnly() for e in queue.findChildren(QPlainTextEdit))
    row = queue.model.index(0, 2)
    assert "<b>Bold</b>" in queue.model.data(row)  # shown literally, as plain display text
    queue.select_calls(["toolu_9"])
    assert "<b>Bold</b>" in queue.detail_summary.text()
    assert '"action": "add_threat"' in queue.raw_edit.toPlainText()
    assert queue.preview_edit.toPlainText().startswith("Added threat 'threat-4'")
    deny(queue, "toolu_9")
    finish(queue)
    wait_settled(driver, assistant(driver))


def test_multi_select_approves_and_denies_and_the_reason_reaches_the_model(
    driver: WindowDriver, server: FakeProviderServer, tmp_path: Path
) -> None:
    queue = start(driver, server, tmp_path,
                  [add_threat("toolu_1", "Token replay at the gateway"),
                   add_threat("toolu_2", "Forged partner callbacks"),
                   add_threat("toolu_3", "Stale duplicate of threat-1")],
                  Reply.sse(anthropic_sse(text="Noted.")))
    controller = assistant(driver)
    assert approve(queue, "toolu_1", "toolu_2") == ["toolu_1", "toolu_2"]
    assert not queue.continue_button.isEnabled()
    queue.select_calls(["toolu_3"])
    queue.quick_buttons["Duplicate"].click()
    assert queue.rows["toolu_3"].decision_text == "Deny: Duplicate"
    assert queue.status_label.text() == "3 of 3 decided"
    finish(queue)
    wait_settled(driver, controller)

    titles = [t.title for t in driver.document.threats]
    assert "Token replay at the gateway" in titles and "Forged partner callbacks" in titles
    assert "Stale duplicate of threat-1" not in titles
    sent = tool_results(server, 1)
    assert result_text(sent["toolu_3"]) == ('Not run: the user declined this action. Their '
                                            'reason: "Duplicate"')
    assert sent["toolu_3"].get("is_error") is True
    assert not sent["toolu_1"].get("is_error")
    # The audit keeps only the reason's digest, with the actor.
    gov = open_governance()
    try:
        denied = [e.payload for e in gov.trajectory.events(controller.turn.run_id)  # type: ignore[union-attr]
                  if e.kind == "tool.denied"]
    finally:
        gov.close()
    assert [(p["call_id"], p["reason_digest"]) for p in denied] == [
        ("toolu_3", digest("Duplicate"))]
    assert denied[0]["actor"].startswith("user:")


def test_a_destructive_call_is_never_part_of_a_bulk_approval(
    driver: WindowDriver, server: FakeProviderServer, tmp_path: Path
) -> None:
    before = None
    queue = start(driver, server, tmp_path,
                  [threat_update("toolu_u", "threat-1", severity="low"),
                   threat_delete("toolu_d", "threat-3")],
                  Reply.sse(anthropic_sse(text="Done.")))
    before = driver.document
    assert queue.rows["toolu_d"].view.destructive
    queue.select_calls(["toolu_d"])
    assert queue.destructive_label.isVisible()
    assert "Removed threat 'threat-3'" in queue.preview_edit.toPlainText()

    assert approve(queue, "toolu_u", "toolu_d") == ["toolu_u"]  # selected together: left out
    assert queue.rows["toolu_d"].decision is None
    assert "destructive call left out" in queue.status_label.text()
    assert not queue.approve_all_button.isEnabled()  # only the delete is left, never in bulk
    assert [(s.kind, s.call_ids) for s in queue.steps] == [("approve_batch", ("toolu_u",))]
    assert approve(queue, "toolu_d") == ["toolu_d"]  # on its own it can be approved
    assert [(s.kind, s.call_ids) for s in queue.steps] == [("approve_batch", ("toolu_u",)),
                                                          ("approve", ("toolu_d",))]
    assert driver.document is before  # nothing runs while the queue is open
    finish(queue)
    wait_settled(driver, assistant(driver))
    assert "threat-3" not in {t.id for t in driver.document.threats}


def test_edit_before_approve_runs_exactly_the_edited_input(
    driver: WindowDriver, server: FakeProviderServer, tmp_path: Path
) -> None:
    original = add_threat("toolu_e", "Session fixation at the gateway", severity="critical")
    # After the edited call ran, the model sends the original input again under the same id.
    queue = start(driver, server, tmp_path, [original],
                  Reply.sse(anthropic_sse(tool_calls=[original])),
                  Reply.sse(anthropic_sse(text="Understood.")))
    controller = assistant(driver)
    opened: list[EditCallDialog] = []
    queue.editDialogOpened.connect(opened.append)
    queue.select_calls(["toolu_e"])
    QTest.keyClick(queue.table, Qt.Key.Key_E)
    driver.qtbot.waitUntil(lambda: bool(opened) and opened[0].isVisible(), timeout=10_000)
    edit = opened[0]
    # An input the tool refuses is explained and nothing changes.
    edit.tabs.setCurrentWidget(edit.json_edit)
    edit.json_edit.setPlainText(json.dumps({"action": "add_threat", "threat": {
        "title": "", "category": "Spoofing", "severity": "medium", "element": "api-gateway",
        "description": "x"}}))
    edit.ok_button.click()
    driver.qtbot.waitUntil(edit.error_label.isVisible, timeout=10_000)
    assert "title" in edit.error_label.text()
    assert controller.turn.state.call("toolu_e").edit is None  # type: ignore[union-attr]
    # The threat form: lower the severity and rename it.
    assert edit.form is not None
    edit.tabs.setCurrentWidget(edit.form)
    edit.severity_combo.setCurrentIndex(edit.severity_combo.findData("medium"))
    edit.title_edit.setText("Session fixation on login")
    edit.ok_button.click()  # accepted: the dialog closes and the queue shows the edit
    driver.qtbot.waitUntil(lambda: queue.rows["toolu_e"].view.edited != (), timeout=10_000)
    assert "edited by you" in queue.rows["toolu_e"].note
    assert queue.rows["toolu_e"].decision is None  # editing never approves
    assert "severity: medium" in preview_of(queue, "toolu_e")
    assert "Session fixation on login" in queue.raw_edit.toPlainText()

    approve(queue, "toolu_e")
    finish(queue)
    wait_settled(driver, controller)
    added = [t for t in driver.document.threats if t.title.startswith("Session fixation")]
    assert [(t.title, t.severity.value) for t in added] == [("Session fixation on login",
                                                             "medium")]
    # The model was told it ran with the user's changes.
    told = result_text(tool_results(server, 1)["toolu_e"])
    assert told.startswith("The user changed this call before approving it (")
    assert 'threat.severity: "critical" → "medium"' in told
    # The original input re-sent under the edited call's id was refused, not run.
    turn = controller.turn
    assert turn is not None
    assert any(v.violation is Violation.DUPLICATE_CALL_ID and v.call_id == "toolu_e"
               for v in turn.state.violations)
    gov = open_governance()
    try:
        events = gov.trajectory.events(turn.run_id)
    finally:
        gov.close()
    edited_digest = turn.state.call("toolu_e").input_digest  # type: ignore[union-attr]
    original_digest = digest(original[2])
    (edit_event,) = [e.payload for e in events if e.kind == "tool.edited"]
    assert edit_event["input_digest_before"] == original_digest
    assert edit_event["input_digest"] == edited_digest != original_digest
    assert edit_event["actor"].startswith("user:")
    started = [e.payload["input_digest"] for e in events if e.kind == "tool.started"]
    assert started == [edited_digest]  # exactly the edited input ran, once


def test_previews_show_the_ids_the_calls_will_really_get(
    driver: WindowDriver, server: FakeProviderServer, tmp_path: Path
) -> None:
    queue = start(driver, server, tmp_path,
                  [add_threat(f"toolu_{n}", f"Threat number {n}") for n in range(1, 4)],
                  Reply.sse(anthropic_sse(text="ok")))
    assert [preview_of(queue, f"toolu_{n}").splitlines()[0] for n in range(1, 4)] == [
        f"Added threat 'threat-{n}' (Threat number {n - 3})" for n in range(4, 7)]
    # Denying the first moves the ids of the ones after it, as they will really be given.
    deny(queue, "toolu_1")
    driver.run(queue.settled())
    assert preview_of(queue, "toolu_2").startswith("Added threat 'threat-4' (Threat number 2)")
    assert preview_of(queue, "toolu_3").startswith("Added threat 'threat-5' (Threat number 3)")
    approve(queue, "toolu_2", "toolu_3")
    finish(queue)
    wait_settled(driver, assistant(driver))
    assert {t.id: t.title for t in driver.document.threats}["threat-5"] == "Threat number 3"


def test_the_queue_is_driven_from_the_keyboard(
    driver: WindowDriver, server: FakeProviderServer, tmp_path: Path
) -> None:
    queue = start(driver, server, tmp_path,
                  [add_threat(f"toolu_{n}", f"Keyboard threat {n}") for n in range(1, 4)],
                  Reply.sse(anthropic_sse(text="ok")))
    table = queue.table
    table.setFocus()
    assert queue.current_id() == "toolu_1"
    QTest.keyClick(table, Qt.Key.Key_A)  # approve, and move on to the next undecided
    assert queue.current_id() == "toolu_2"
    QTest.keyClick(table, Qt.Key.Key_2)  # deny with the second quick reason
    assert queue.rows["toolu_2"].decision_text == "Deny: Duplicate"
    QTest.keyClick(table, Qt.Key.Key_Up)
    QTest.keyClick(table, Qt.Key.Key_U)  # changed my mind
    assert queue.rows["toolu_2"].decision is None
    QTest.keyClick(table, Qt.Key.Key_Return)  # not everything is decided yet: stays open
    assert queue.isVisible() and "still undecided" in queue.status_label.text()
    QTest.keyClick(table, Qt.Key.Key_Down, Qt.KeyboardModifier.ShiftModifier)
    assert queue.selected_ids() == ["toolu_2", "toolu_3"]
    QTest.keyClick(table, Qt.Key.Key_D)
    assert queue.undecided_ids() == []
    QTest.keyClick(table, Qt.Key.Key_Return)
    wait_settled(driver, assistant(driver))
    titles = {t.title for t in driver.document.threats}
    assert "Keyboard threat 1" in titles and not titles & {"Keyboard threat 2",
                                                         "Keyboard threat 3"}


def test_the_keys_still_decide_when_another_window_is_active(
    driver: WindowDriver, server: FakeProviderServer, tmp_path: Path
) -> None:
    # CI once activated a window behind the queue between two key presses: the keys fell
    # through to the list's type-ahead search and nothing was decided.
    queue = start(driver, server, tmp_path,
                  [add_threat(f"toolu_{n}", f"Focus threat {n}") for n in range(1, 3)],
                  Reply.sse(anthropic_sse(text="ok")))
    other = QWidget()
    other.show()
    other.activateWindow()
    QTest.qWaitForWindowActive(other)
    try:
        assert QApplication.activeWindow() is not queue
        queue.table.setFocus()
        QTest.keyClick(queue.table, Qt.Key.Key_A)
        QTest.keyClick(queue.table, Qt.Key.Key_2)
        assert queue.rows["toolu_1"].decision_text.startswith("Approve")
        assert queue.rows["toolu_2"].decision_text == "Deny: Duplicate"
        # Held down, A repeats: the repeats decide nothing more.
        QTest.keyClick(queue.table, Qt.Key.Key_Up)
        QTest.keyClick(queue.table, Qt.Key.Key_U)
        assert queue.current_id() == "toolu_1" and queue.rows["toolu_1"].decision is None
        repeat = QKeyEvent(QEvent.Type.KeyPress, Qt.Key.Key_A, Qt.KeyboardModifier.NoModifier,
                           "a", True)
        QApplication.sendEvent(queue.table, repeat)
        assert queue.rows["toolu_1"].decision is None
        QTest.keyClick(queue.table, Qt.Key.Key_A)
        assert queue.rows["toolu_1"].decision_text.startswith("Approve")
    finally:
        other.close()
        other.deleteLater()
    finish(queue)
    wait_settled(driver, assistant(driver))


def test_a_proposal_declined_in_an_earlier_turn_is_marked(
    driver: WindowDriver, server: FakeProviderServer, tmp_path: Path
) -> None:
    proposal = add_threat("toolu_1", "Forged partner callbacks", element="stripe-api")
    queue = start(driver, server, tmp_path, [proposal], Reply.sse(anthropic_sse(text="ok")))
    controller = assistant(driver)
    deny(queue, "toolu_1", reason="we verify webhook signatures")
    finish(queue)
    wait_settled(driver, controller)

    # The next turn proposes the same threat again (new id, title in other letter case).
    again = add_threat("toolu_7", "forged partner CALLBACKS!", element="stripe-api")
    server.script([Reply.sse(anthropic_sse(tool_calls=[again])),
                   Reply.sse(anthropic_sse(text="ok"))])
    send(driver, controller, "anything else?")
    queue = wait_dialog(driver, controller)
    row = queue.rows["toolu_7"]
    assert row.note == "declined earlier (we verify webhook signatures)"
    queue.select_calls(["toolu_7"])
    assert "You declined this proposal in an earlier turn (we verify webhook signatures)." in \
        queue.note_label.text()
    # The model was told, inside the untrusted-data block of the system prompt.
    system = server.requests[-1].body["system"]
    text = system if isinstance(system, str) else "".join(b["text"] for b in system)
    assert ("- add_threat on element stripe-api (Spoofing): Forged partner callbacks; the "
            "user's reason: we verify webhook signatures") in text
    block = text.rindex("<<<UNTRUSTED_DOCUMENT_DATA>>>")
    assert block < text.index("Declined earlier") < text.rindex("<<<END_UNTRUSTED_DOCUMENT_DATA>>>")
    deny(queue, "toolu_7")
    finish(queue)
    wait_settled(driver, controller)


def test_dismissing_the_queue_keeps_the_turn_waiting_with_decisions_made(
    driver: WindowDriver, server: FakeProviderServer, tmp_path: Path
) -> None:
    queue = start(driver, server, tmp_path,
                  [add_threat("toolu_1", "One"), add_threat("toolu_2", "Two")],
                  Reply.sse(anthropic_sse(text="ok")))
    controller = assistant(driver)
    approve(queue, "toolu_1")
    outcomes: list[Any] = []
    queue.finished.connect(lambda _r: outcomes.append(queue.steps))
    queue.reject()
    driver.qtbot.waitUntil(controller.pane.review_button.isVisible, timeout=10_000)
    assert controller.pane.pending_label.text() == "Waiting for your decision: 1 call"
    assert [c.id for c in controller.turn.pending()] == ["toolu_2"]  # type: ignore[union-attr]
    controller.pane.review_button.click()
    queue = wait_dialog(driver, controller)
    assert list(queue.rows) == ["toolu_2"]
    deny(queue, "toolu_2")
    finish(queue)
    wait_settled(driver, controller)
    assert ReviewEnd.DISMISSED.value == "dismissed"
