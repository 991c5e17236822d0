"""The approval dialog: plain text only, exact previews, captured batch ids, parking on close."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QPlainTextEdit

from stockade.assistant.review import CallPreview
from stockade.governance.services import open_governance
from stockade.store.runs import RunStatus
from stockade.ui.assistant.approval_dialog import (
    ApprovalDialog,
    ApprovalEnd,
    label_is_plain,
)
from tests.gui.chat_helpers import (
    assistant,
    choose,
    copy_fixture,
    send,
    threat_delete,
    use_fake_server,
    wait_dialog,
    wait_settled,
)
from tests.gui.conftest import WindowDriver
from tests.helpers.fake_provider import FakeProviderServer, Reply, anthropic_sse

HOSTILE = "<b>Bold</b> <a href='https://evil.example'>click</a> <img src='https://x/y.png'>"


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeProviderServer]:
    with FakeProviderServer() as fake:
        use_fake_server(monkeypatch, fake)
        yield fake


def _hostile_add() -> tuple[str, str, object]:
    return ("toolu_9", "add_threat", {"action": "add_threat", "threat": {
        "title": HOSTILE[:60], "category": "Spoofing", "severity": "high",
        "element": "api-gateway", "description": HOSTILE}})


def test_model_text_in_the_dialog_is_plain_text_and_markup_shows_literally(
    driver: WindowDriver, server: FakeProviderServer, tmp_path: Path
) -> None:
    server.script([Reply.sse(anthropic_sse(tool_calls=[_hostile_add()])),
                   Reply.sse(anthropic_sse(text="ok"))])
    assert driver.open(copy_fixture(tmp_path))
    controller = assistant(driver)
    choose(controller)
    send(driver, controller, "add a threat")
    dialog = wait_dialog(driver, controller)

    assert dialog.windowModality() is Qt.WindowModality.WindowModal
    labels = dialog.findChildren(QLabel)
    assert labels and all(label_is_plain(label) for label in labels)
    row = dialog.rows["toolu_9"]
    assert "<b>Bold</b>" in row.summary_label.text()
    editors = dialog.findChildren(QPlainTextEdit)
    assert editors and all(e.isReadOnly() for e in editors)
    assert "<b>Bold</b>" in row.raw_edit.toPlainText()
    assert '"action": "add_threat"' in row.raw_edit.toPlainText()  # pretty JSON
    preview = row.preview_edit.toPlainText()
    assert preview.startswith("Added threat ")
    assert "severity: high" in preview
    # The card in the chat pane is plain text too.
    card = controller.pane.current_turn.cards["toolu_9"]  # type: ignore[union-attr]
    assert card.summary_label.textFormat() is Qt.TextFormat.PlainText
    assert "<b>Bold</b>" in card.summary_label.text()
    dialog.rows["toolu_9"].deny_button.click()
    wait_settled(driver, controller)


def test_a_destructive_call_carries_a_warning_and_a_preview_that_changes_nothing_yet(
    driver: WindowDriver, server: FakeProviderServer, tmp_path: Path
) -> None:
    server.script([Reply.sse(anthropic_sse(tool_calls=[threat_delete("toolu_d", "threat-1")])),
                   Reply.sse(anthropic_sse(text="ok"))])
    assert driver.open(copy_fixture(tmp_path))
    before = driver.document
    controller = assistant(driver)
    choose(controller)
    send(driver, controller, "remove it")
    dialog = wait_dialog(driver, controller)
    row = dialog.rows["toolu_d"]
    assert row.findChild(QLabel, "approvalDestructiveWarning") is not None
    assert "Removed threat 'threat-1' (SQL injection on payment queries)" in \
        row.preview_edit.toPlainText()
    assert not dialog.approve_all_button.isEnabled()  # destructive calls never go in bulk
    assert driver.document is before
    row.deny_button.click()
    wait_settled(driver, controller)
    assert driver.document is before


def test_approve_all_captures_the_ids_at_click_time(driver: WindowDriver) -> None:
    views = [CallPreview(f"c{i}", "update_threat", f"Update threat t{i}", destructive=i == 2,
                         input_digest="sha256:" + "0" * 64, raw_input="{}",
                         changes=("Changed threat",)) for i in range(3)]
    dialog = ApprovalDialog(views, driver.window)
    task = driver.window.spawn(dialog.ask())
    driver.qtbot.waitUntil(dialog.isVisible, timeout=10_000)
    batches: list[list[str]] = []
    dialog.batchApproved.connect(batches.append)
    dialog.rows["c0"].deny_button.click()
    dialog.approve_all_button.click()
    assert batches == [["c1"]]
    assert dialog.isVisible()
    dialog.later_button.click()
    driver.qtbot.waitUntil(task.done, timeout=10_000)
    outcome = task.result()
    assert outcome.end is ApprovalEnd.DEFERRED
    assert [(s.kind, s.call_ids) for s in outcome.steps] == [("deny", ("c0",)),
                                                            ("approve_batch", ("c1",))]


def test_closing_the_window_parks_a_turn_awaiting_approval(
    driver: WindowDriver, server: FakeProviderServer, tmp_path: Path
) -> None:
    server.script([Reply.sse(anthropic_sse(tool_calls=[threat_delete("toolu_d", "threat-1")]))])
    path = copy_fixture(tmp_path)
    assert driver.open(path)
    controller = assistant(driver)
    choose(controller)
    send(driver, controller, "remove it")
    dialog = wait_dialog(driver, controller)
    dialog.reject()  # the user closes the dialog: the turn keeps waiting in memory
    driver.qtbot.waitUntil(lambda: controller.pane.review_button.isVisible(), timeout=10_000)
    assert controller.pane.pending_label.text() == "Waiting for your decision: 1 call"
    session = controller.turn
    assert session is not None
    run_id = session.run_id

    driver.window.close()

    gov = open_governance()
    try:
        assert gov.runs.get(run_id).status is RunStatus.PARKED
        runs = gov.runs.list_runs(status=RunStatus.PARKED, document_path=str(path.resolve()))
        assert [r.run_id for r in runs] == [run_id]
        assert [p.call_id for p in gov.runs.pending_calls(run_id)] == ["toolu_d"]
    finally:
        gov.close()


def test_stop_while_the_dialog_is_open_closes_it_and_cancels_the_turn(
    driver: WindowDriver, server: FakeProviderServer, tmp_path: Path
) -> None:
    server.script([Reply.sse(anthropic_sse(text="Let me delete this.",
                                           tool_calls=[threat_delete("toolu_d", "threat-1")]))])
    assert driver.open(copy_fixture(tmp_path))
    before = driver.document
    controller = assistant(driver)
    choose(controller)
    send(driver, controller, "remove it")
    wait_dialog(driver, controller)
    controller.pane.stop_button.click()
    wait_settled(driver, controller)
    assert controller.dialog is None
    assert controller.turn is not None
    assert controller.turn.state.outcome is not None
    assert controller.turn.state.outcome.value == "cancelled"
    assert controller.pane.current_turn.cards["toolu_d"].status == "denied"  # type: ignore[union-attr]
    assert "Let me delete this." in controller.pane.current_turn.answer.toPlainText()  # type: ignore[union-attr]
    assert not controller.pane.error_label.isVisible()
    assert driver.document is before
