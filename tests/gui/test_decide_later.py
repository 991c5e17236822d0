"""Decide later everywhere: closing with calls waiting always asks, nothing is dropped
silently, a machine without a secure keyring keeps a turn under a passphrase, and one Undo
after a resume in another window reverts the whole turn."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import keyring
import keyring.backends.null
import pytest

from stockade.governance.services import open_governance
from stockade.loop.state import CallStatus
from stockade.secrets.keystore import SESSION_KEYS
from stockade.store.runs import RunStatus
from stockade.ui.assistant.controller import AssistantController
from stockade.ui.assistant.waiting_calls_dialog import WaitingCallsDialog
from tests.gui.chat_helpers import (
    approve,
    assistant,
    choose,
    copy_fixture,
    finish,
    send,
    threat_delete,
    threat_update,
    wait_dialog,
    wait_settled,
)
from tests.gui.conftest import WindowDriver
from tests.helpers.fake_provider import FakeProviderServer, Reply, anthropic_sse


@pytest.fixture
def no_secure_keyring() -> Iterator[None]:
    """The README's headless setup: no Secret Service, so keys live for the session only."""
    keyring.set_keyring(keyring.backends.null.Keyring())
    try:
        yield
    finally:
        SESSION_KEYS.clear()


def _waiting_turn(driver: WindowDriver, server: FakeProviderServer, path: Path) -> str:
    server.script([Reply.sse(anthropic_sse(tool_calls=[
        threat_update("toolu_1", "threat-1", severity="low"),
        threat_delete("toolu_2", "threat-3")]))])
    assert driver.open(path)
    controller = assistant(driver)
    choose(controller)
    send(driver, controller, "tidy the threats")
    wait_dialog(driver, controller).reject()  # the turn keeps waiting in memory
    driver.qtbot.waitUntil(controller.pane.review_button.isVisible, timeout=10_000)
    assert controller.turn is not None
    return controller.turn.run_id


def _question(driver: WindowDriver, controller: AssistantController) -> WaitingCallsDialog:
    driver.qtbot.waitUntil(lambda: controller.close_question is not None
                           and controller.close_question.isVisible(), timeout=10_000)
    question = controller.close_question
    assert question is not None
    return question


def _events(run_id: str) -> list[tuple[str, dict[str, object]]]:
    gov = open_governance()
    try:
        return [(e.kind, e.payload) for e in gov.trajectory.events(run_id)]
    finally:
        gov.close()


def test_closing_with_calls_waiting_asks_and_deny_all_records_them_without_a_request(
    driver: WindowDriver, server: FakeProviderServer, tmp_path: Path
) -> None:
    run_id = _waiting_turn(driver, server, copy_fixture(tmp_path))
    controller = assistant(driver)
    driver.window.close()
    question = _question(driver, controller)
    assert "waiting for your decision on 2 proposed changes" in question.question_label.text()
    assert question.park_button.isVisible()
    question.deny_button.click()
    driver.qtbot.waitUntil(lambda: not driver.window.isVisible(), timeout=10_000)

    assert len(server.requests) == 1  # denying on the way out sends nothing more
    kinds = [k for k, _ in _events(run_id)]
    denied = [p for k, p in _events(run_id) if k == "tool.denied"]
    assert sorted(p["call_id"] for p in denied) == ["toolu_1", "toolu_2"]  # type: ignore[type-var]
    assert all(str(p["actor"]).startswith("user:") for p in denied)
    assert kinds[-1] == "run.finished"
    gov = open_governance()
    try:
        row = gov.runs.get(run_id)
    finally:
        gov.close()
    assert (row.status, row.outcome) == (RunStatus.FINISHED, "cancelled")


def test_cancel_keeps_the_window_and_the_turn_then_decide_later_parks_it(
    driver: WindowDriver, server: FakeProviderServer, tmp_path: Path
) -> None:
    run_id = _waiting_turn(driver, server, copy_fixture(tmp_path))
    controller = assistant(driver)
    driver.window.close()
    _question(driver, controller).cancel_button.click()
    driver.qtbot.waitUntil(lambda: controller.close_question is None, timeout=10_000)
    assert driver.window.isVisible()
    assert controller.turn is not None and controller.turn.waiting

    driver.window.close()
    _question(driver, controller).park_button.click()
    driver.qtbot.waitUntil(lambda: not driver.window.isVisible(), timeout=10_000)
    gov = open_governance()
    try:
        assert gov.runs.get(run_id).status is RunStatus.PARKED
        assert [p.call_id for p in gov.runs.pending_calls(run_id)] == ["toolu_1", "toolu_2"]
    finally:
        gov.close()


@pytest.mark.usefixtures("no_secure_keyring")
def test_without_a_secure_keyring_decide_later_asks_for_a_passphrase_and_closing_offers_the_rest(
    driver: WindowDriver, tmp_path: Path
) -> None:
    from stockade.ui.assistant.passphrase_dialog import PassphraseDialog

    def passphrase_dialog() -> PassphraseDialog:
        def shown() -> PassphraseDialog | None:
            found = driver.window.findChild(PassphraseDialog, "passphraseDialog")
            return found if found is not None and found.isVisible() else None

        driver.qtbot.waitUntil(lambda: shown() is not None, timeout=10_000)
        found = shown()
        assert found is not None
        return found

    assert driver.open(copy_fixture(tmp_path))
    controller = assistant(driver)
    choose(controller, "offline", "stride-rules")
    send(driver, controller, "review this model")
    queue = wait_dialog(driver, controller)
    waiting = len(queue.rows)
    assert waiting > 0
    queue.later_button.click()
    # No keyring to hold a key: the turn is sealed under a passphrase, asked for here.
    asked = passphrase_dialog()
    assert "no secure keyring" in asked.findChild(type(asked.error_label),
                                                  "passphraseIntro").text()
    asked.reject()  # not now
    driver.qtbot.waitUntil(lambda: "still waiting" in controller.pane.notice_label.text(),
                           timeout=10_000)
    turn = controller.turn
    assert turn is not None and turn.waiting and len(turn.pending()) == waiting
    assert controller.pane.review_button.isVisible()

    # Closing asks; Decide later asks for the passphrase again, and without one the question
    # comes back with its other choices.
    driver.window.close()
    first = _question(driver, controller)
    first.park_button.click()
    passphrase_dialog().reject()
    driver.qtbot.waitUntil(lambda: controller.close_question is not None
                           and controller.close_question is not first
                           and controller.close_question.isVisible(), timeout=10_000)
    second = controller.close_question
    assert second is not None
    second.deny_button.click()
    driver.qtbot.waitUntil(lambda: not driver.window.isVisible(), timeout=10_000)
    assert {c.status for c in turn.state.calls} == {CallStatus.DENIED}


def test_one_undo_after_resuming_in_another_window_reverts_the_whole_turn(
    driver: WindowDriver, server: FakeProviderServer, tmp_path: Path
) -> None:
    from tests.gui.conftest import WindowDriver as Driver

    path = copy_fixture(tmp_path)
    saved = path.read_bytes()
    server.script([
        Reply.sse(anthropic_sse(tool_calls=[threat_update("toolu_a", "threat-1",
                                                          severity="low")])),
        Reply.sse(anthropic_sse(tool_calls=[threat_delete("toolu_b", "threat-3")])),
    ])
    assert driver.open(path)
    original = driver.document
    controller = assistant(driver)
    choose(controller)
    send(driver, controller, "lower threat-1 then remove threat-3")
    first = wait_dialog(driver, controller)
    approve(first, "toolu_a")
    finish(first)
    driver.qtbot.waitUntil(lambda: controller.dialog is not None and controller.dialog is not first
                           and controller.dialog.isVisible(), timeout=30_000)
    controller.dialog.later_button.click()  # type: ignore[union-attr]
    driver.qtbot.waitUntil(lambda: len(controller.pane.parked_run_ids()) == 1, timeout=10_000)
    driver.window._close_approved = True  # discard the unsaved, pre-pause change
    driver.window.close()

    second = Driver(driver.qtbot)
    try:
        server.script([Reply.sse(anthropic_sse(text="Both done."))])
        assert second.open(path)
        reopened = assistant(second)
        second.qtbot.waitUntil(lambda: len(reopened.pane.parked_run_ids()) == 1, timeout=10_000)
        reopened.pane.reviewRequested.emit(reopened.pane.parked_run_ids()[0])
        review = wait_dialog(second, reopened)
        approve(review, "toolu_b")
        finish(review)
        wait_settled(second, reopened)
        threats = {t.id: t for t in second.document.threats}
        assert threats["threat-1"].severity.value == "low" and "threat-3" not in threats
        second.qtbot.waitUntil(reopened.pane.undo_turn_button.isEnabled, timeout=10_000)
        reopened.pane.undo_turn_button.click()
        second.qtbot.waitUntil(lambda: not reopened.pane.undo_turn_button.isEnabled(),
                               timeout=10_000)
        # One undo: the pre-pause change and the resumed one are both gone.
        assert second.document.model_dump() == original.model_dump()
        assert not second.window.open_document.is_dirty
        assert path.read_bytes() == saved
    finally:
        second.window._close_approved = True
        second.window.close()
