"""Assistant turns in the chat pane against the fake provider server (real SDK, real widgets)."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtWidgets import QLabel, QPushButton

from stockade.governance.services import open_governance
from stockade.store.runs import RunStatus
from tests.gui.chat_helpers import (
    API_KEY,
    approve,
    assistant,
    card_statuses,
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
from tests.helpers.fake_provider import (
    FakeProviderServer,
    Reply,
    anthropic_error_frame,
    anthropic_frames,
    anthropic_sse,
    sse_body,
)


def _three_changes() -> bytes:
    return anthropic_sse(
        text=["I will raise one threat, ", "rename another and remove a duplicate."],
        tool_calls=[
            threat_update("toolu_1", "threat-1", severity="critical"),
            threat_update("toolu_2", "threat-2", title="Renamed by the model"),
            threat_delete("toolu_3", "threat-3"),
        ],
    )


def _threat(driver: WindowDriver, threat_id: str) -> object | None:
    return next((t for t in driver.document.threats if t.id == threat_id), None)


def test_approve_one_deny_one_approve_the_delete_then_undo_the_whole_turn(
    driver: WindowDriver, server: FakeProviderServer, tmp_path: Path
) -> None:
    server.script([Reply.sse(_three_changes()), Reply.sse(anthropic_sse(text="All done."))])
    assert driver.open(copy_fixture(tmp_path))
    original = driver.document
    controller = assistant(driver)
    choose(controller)

    send(driver, controller, "tidy the threats")
    dialog = wait_dialog(driver, controller)
    assert list(dialog.rows) == ["toolu_1", "toolu_2", "toolu_3"]
    assert "Changed threat 'threat-1': severity" in preview_of(dialog, "toolu_1")
    assert "Removed threat 'threat-3'" in preview_of(dialog, "toolu_3")
    assert driver.document is original  # previews never commit
    assert card_statuses(controller) == {"toolu_1": "pending", "toolu_2": "pending",
                                         "toolu_3": "pending"}

    approve(dialog, "toolu_1")
    deny(dialog, "toolu_2")
    assert dialog.isVisible() and not dialog.continue_button.isEnabled()  # the delete waits
    approve(dialog, "toolu_3")
    finish(dialog)
    wait_settled(driver, controller)

    threat_1 = _threat(driver, "threat-1")
    assert threat_1 is not None and threat_1.severity.value == "critical"  # type: ignore[attr-defined]
    threat_2 = _threat(driver, "threat-2")
    assert threat_2 is not None and threat_2.title == "Man-in-the-middle on Stripe API calls"  # type: ignore[attr-defined]
    assert _threat(driver, "threat-3") is None
    assert card_statuses(controller) == {"toolu_1": "succeeded", "toolu_2": "denied",
                                         "toolu_3": "succeeded"}
    view = controller.pane.current_turn
    assert view is not None
    assert "All done." in view.answer.toPlainText()
    assert "Tokens:" in controller.pane.usage_label.text()
    assert "Credits spent:" in controller.pane.usage_label.text()
    assert not controller.pane.error_label.isVisible()
    # The tree saw the commit (one section count less).
    assert driver.window.open_document.is_dirty

    assert controller.pane.undo_turn_button.isEnabled()
    controller.pane.undo_turn_button.click()
    driver.qtbot.waitUntil(lambda: driver.document is original, timeout=10_000)
    assert card_statuses(controller)["toolu_1"] == "undone"
    assert card_statuses(controller)["toolu_2"] == "denied"
    assert not controller.pane.undo_turn_button.isEnabled()
    assert not driver.window.open_document.is_dirty
    # The second request carried the denial and both results back to the model.
    assert len(server.requests) == 2


def test_approve_all_non_destructive_takes_only_the_ids_shown_and_never_the_delete(
    driver: WindowDriver, server: FakeProviderServer, tmp_path: Path
) -> None:
    server.script([Reply.sse(_three_changes()), Reply.sse(anthropic_sse(text="Done."))])
    assert driver.open(copy_fixture(tmp_path))
    controller = assistant(driver)
    choose(controller)
    send(driver, controller, "tidy the threats")
    dialog = wait_dialog(driver, controller)

    dialog.approve_all_button.click()
    assert dialog.rows["toolu_1"].decision == "approve"
    assert dialog.rows["toolu_2"].decision == "approve"
    assert dialog.rows["toolu_3"].decision is None
    assert dialog.steps[0].call_ids == ("toolu_1", "toolu_2")
    assert not dialog.approve_all_button.isEnabled()
    deny(dialog, "toolu_3")
    finish(dialog)
    wait_settled(driver, controller)

    assert _threat(driver, "threat-3") is not None
    assert card_statuses(controller) == {"toolu_1": "succeeded", "toolu_2": "succeeded",
                                         "toolu_3": "denied"}


def test_edit_undo_reverts_the_whole_ai_turn_in_one_step(
    driver: WindowDriver, server: FakeProviderServer, tmp_path: Path
) -> None:
    server.script([Reply.sse(_three_changes()), Reply.sse(anthropic_sse(text="Done."))])
    assert driver.open(copy_fixture(tmp_path))
    original = driver.document
    controller = assistant(driver)
    choose(controller)
    send(driver, controller, "tidy the threats")
    wait_dialog(driver, controller).approve_all_button.click()
    dialog = controller.dialog
    assert dialog is not None
    approve(dialog, "toolu_3")
    finish(dialog)
    wait_settled(driver, controller)
    assert driver.document is not original

    driver.window.undo_action.trigger()
    driver.qtbot.waitUntil(lambda: driver.document is original, timeout=10_000)
    assert card_statuses(controller)["toolu_3"] == "undone"
    assert not controller.pane.undo_turn_button.isEnabled()
    session = controller.turn
    assert session is not None
    gov = open_governance()
    try:
        kinds = [e.kind for e in gov.trajectory.events(session.run_id)]
    finally:
        gov.close()
    assert "turn.undone" in kinds


def test_stop_mid_stream_keeps_the_partial_text_and_shows_no_error(
    driver: WindowDriver, server: FakeProviderServer, tmp_path: Path
) -> None:
    pieces = [f"Part {i} of a long answer. " for i in range(6)]
    # The text arrives, then the server keeps the response open (mid-message) until the
    # client hangs up: only Stop can end this turn.
    frames = anthropic_frames(text=pieces, terminal=False)[:-2]
    server.script([Reply.sse(sse_body(frames), stall=True)])
    assert driver.open(copy_fixture(tmp_path))
    original = driver.document
    controller = assistant(driver)
    choose(controller)
    send(driver, controller, "explain everything")
    view = controller.pane.current_turn
    assert view is not None
    driver.qtbot.waitUntil(lambda: "Part 5 " in view.answer.toPlainText(), timeout=10_000)

    controller.pane.stop_button.click()
    wait_settled(driver, controller)

    session = controller.turn
    assert session is not None and session.state.outcome is not None
    assert session.state.outcome.value == "cancelled"
    assert "Part 0 of a long answer. Part 1" in view.answer.toPlainText()
    driver.qtbot.waitUntil(lambda: server.hangups == 1, timeout=10_000)  # the connection closed
    assert not controller.pane.error_label.isVisible()
    assert controller.pane.notice_label.isVisible()
    assert "Stopped" in controller.pane.notice_label.text()
    assert driver.prompts.errors == []
    assert driver.document is original
    assert controller.pane.send_button.isEnabled()


def test_a_rejected_key_shows_one_authored_line_and_never_the_key(
    driver: WindowDriver, server: FakeProviderServer, tmp_path: Path
) -> None:
    server.script([Reply.status_reply(401, {"type": "error", "error": {
        "type": "authentication_error", "message": "invalid x-api-key"}}, echo_auth=True)])
    assert driver.open(copy_fixture(tmp_path))
    controller = assistant(driver)
    choose(controller)
    send(driver, controller, "hello")
    wait_settled(driver, controller)

    error = controller.pane.error_label
    assert error.isVisible()
    assert "\n" not in error.text()
    assert "401" in error.text() and "key" in error.text()
    assert "Traceback" not in error.text()
    assert API_KEY not in error.text()
    assert driver.prompts.errors == []


def test_a_stream_error_event_fails_the_turn_with_a_plain_message(
    driver: WindowDriver, server: FakeProviderServer, tmp_path: Path
) -> None:
    body = sse_body([anthropic_error_frame("overloaded_error", "Overloaded <b>now</b>")])
    server.script([Reply.sse(body)] * 4)
    assert driver.open(copy_fixture(tmp_path))
    controller = assistant(driver)
    choose(controller)
    send(driver, controller, "hello")
    wait_settled(driver, controller)
    error = controller.pane.error_label.text()
    assert controller.pane.error_label.isVisible() and error
    assert "<b>" not in error and "\n" not in error  # authored text, not the provider's
    assert not controller.pane.notice_label.isVisible()
    assert driver.prompts.errors == []


def test_decide_later_parks_the_run_and_a_new_window_resumes_it_after_approval(
    driver: WindowDriver, server: FakeProviderServer, tmp_path: Path
) -> None:
    from tests.gui.conftest import WindowDriver as Driver

    server.script([Reply.sse(_three_changes())])
    path = copy_fixture(tmp_path)
    assert driver.open(path)
    controller = assistant(driver)
    choose(controller)
    send(driver, controller, "tidy the threats")
    dialog = wait_dialog(driver, controller)
    dialog.later_button.click()
    driver.qtbot.waitUntil(lambda: controller.turn is None and not controller._looping,
                           timeout=10_000)
    driver.qtbot.waitUntil(lambda: len(controller.pane.parked_run_ids()) == 1, timeout=10_000)
    run_id = controller.pane.parked_run_ids()[0]
    gov = open_governance()
    try:
        assert gov.runs.get(run_id).status is RunStatus.PARKED
    finally:
        gov.close()
    driver.window._close_approved = True
    driver.window.close()

    second = Driver(driver.qtbot)
    try:
        server.script([Reply.sse(anthropic_sse(text="Applied what you approved."))])
        assert second.open(path)
        reopened = assistant(second)
        second.qtbot.waitUntil(lambda: reopened.pane.parked_run_ids() == [run_id], timeout=10_000)
        label = reopened.pane.parked_area.findChild(QLabel, "parkedRunLabel")
        assert label is not None and label.text() == "Waiting for your decision: 3 calls"
        button = reopened.pane.parked_area.findChild(QPushButton, "parkedRunReviewButton")
        assert button is not None
        button.click()
        review = wait_dialog(second, reopened)
        assert list(review.rows) == ["toolu_1", "toolu_2", "toolu_3"]
        approve(review, "toolu_1")
        deny(review, "toolu_2")
        approve(review, "toolu_3")
        finish(review)
        wait_settled(second, reopened)

        threat_1 = _threat(second, "threat-1")
        assert threat_1 is not None and threat_1.severity.value == "critical"  # type: ignore[attr-defined]
        assert _threat(second, "threat-3") is None
        assert "Applied what you approved." in reopened.pane.current_turn.answer.toPlainText()  # type: ignore[union-attr]
        second.qtbot.waitUntil(lambda: reopened.pane.parked_run_ids() == [], timeout=10_000)
        gov = open_governance()
        try:
            assert gov.runs.get(run_id).status is RunStatus.FINISHED
        finally:
            gov.close()
    finally:
        second.window._close_approved = True
        second.window.close()


def test_work_committed_before_decide_later_survives_closing_without_saving(
    driver: WindowDriver, server: FakeProviderServer, tmp_path: Path
) -> None:
    from tests.gui.conftest import WindowDriver as Driver

    server.script([
        Reply.sse(anthropic_sse(tool_calls=[threat_update("toolu_a", "threat-1",
                                                          severity="low")])),
        Reply.sse(anthropic_sse(tool_calls=[threat_delete("toolu_b", "threat-3")])),
    ])
    path = copy_fixture(tmp_path)
    assert driver.open(path)
    controller = assistant(driver)
    choose(controller)
    send(driver, controller, "lower threat-1 then remove threat-3")
    first = wait_dialog(driver, controller)
    approve(first, "toolu_a")
    finish(first)
    driver.qtbot.waitUntil(lambda: controller.dialog is not None and controller.dialog is not first
                           and controller.dialog.isVisible(), timeout=30_000)
    assert driver.window.open_document.is_dirty  # threat-1 was lowered, not saved
    controller.dialog.later_button.click()  # type: ignore[union-attr]
    driver.qtbot.waitUntil(lambda: len(controller.pane.parked_run_ids()) == 1, timeout=10_000)
    driver.window._close_approved = True  # "discard" the unsaved change
    driver.window.close()

    second = Driver(driver.qtbot)
    try:
        server.script([Reply.sse(anthropic_sse(text="Both done."))])
        assert second.open(path)
        reopened = assistant(second)
        assert next(t for t in second.document.threats if t.id == "threat-1").severity.value \
            == "high"  # the file never got the change
        second.qtbot.waitUntil(lambda: len(reopened.pane.parked_run_ids()) == 1, timeout=10_000)
        reopened.pane.reviewRequested.emit(reopened.pane.parked_run_ids()[0])
        review = wait_dialog(second, reopened)
        assert list(review.rows) == ["toolu_b"]
        approve(review, "toolu_b")
        finish(review)
        wait_settled(second, reopened)
        threats = {t.id: t for t in second.document.threats}
        assert threats["threat-1"].severity.value == "low"  # restored from the parked turn
        assert "threat-3" not in threats
        assert second.window.open_document.can_undo
    finally:
        second.window._close_approved = True
        second.window.close()
