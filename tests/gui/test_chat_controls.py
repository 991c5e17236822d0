"""Chat pane controls: review a waiting turn later, stop it, redo, follow-up turns, the picker."""

from __future__ import annotations

import json
from pathlib import Path

from stockade.settings import settings_path
from tests.gui.chat_helpers import (
    MODEL,
    approve,
    assistant,
    card_statuses,
    choose,
    copy_fixture,
    finish,
    send,
    threat_update,
    wait_dialog,
    wait_settled,
)
from tests.gui.conftest import WindowDriver
from tests.helpers.fake_provider import FakeProviderServer, Reply, anthropic_sse


def _one_edit() -> bytes:
    return anthropic_sse(tool_calls=[threat_update("toolu_1", "threat-1", severity="low")])


def test_a_closed_dialog_leaves_the_turn_waiting_and_review_reopens_it(
    driver: WindowDriver, server: FakeProviderServer, tmp_path: Path
) -> None:
    server.script([Reply.sse(_one_edit()), Reply.sse(anthropic_sse(text="Lowered it."))])
    assert driver.open(copy_fixture(tmp_path))
    controller = assistant(driver)
    choose(controller)
    send(driver, controller, "lower threat-1")
    wait_dialog(driver, controller).reject()
    driver.qtbot.waitUntil(controller.pane.review_button.isVisible, timeout=10_000)
    assert controller.pane.stop_button.isEnabled()
    assert not controller.pane.send_button.isEnabled()

    controller.pane.review_button.click()
    dialog = wait_dialog(driver, controller)
    approve(dialog, "toolu_1")
    finish(dialog)
    wait_settled(driver, controller)
    assert next(t for t in driver.document.threats if t.id == "threat-1").severity.value == "low"
    assert not controller.pane.review_button.isVisible()


def test_stop_while_a_turn_waits_without_its_dialog_cancels_it_quietly(
    driver: WindowDriver, server: FakeProviderServer, tmp_path: Path
) -> None:
    server.script([Reply.sse(_one_edit())])
    assert driver.open(copy_fixture(tmp_path))
    before = driver.document
    controller = assistant(driver)
    choose(controller)
    send(driver, controller, "lower threat-1")
    wait_dialog(driver, controller).reject()
    driver.qtbot.waitUntil(controller.pane.review_button.isVisible, timeout=10_000)
    controller.pane.stop_button.click()
    wait_settled(driver, controller)
    assert controller.turn is not None and controller.turn.finished
    assert card_statuses(controller) == {"toolu_1": "not_run"}  # nobody denied it
    assert "Stopped" in controller.pane.notice_label.text()
    assert not controller.pane.error_label.isVisible()
    assert driver.document is before


def test_redo_after_undoing_a_turn_shows_its_calls_done_again(
    driver: WindowDriver, server: FakeProviderServer, tmp_path: Path
) -> None:
    server.script([Reply.sse(_one_edit()), Reply.sse(anthropic_sse(text="Done."))])
    assert driver.open(copy_fixture(tmp_path))
    controller = assistant(driver)
    choose(controller)
    send(driver, controller, "lower threat-1")
    queue = wait_dialog(driver, controller)
    approve(queue, "toolu_1")
    finish(queue)
    wait_settled(driver, controller)
    edited = driver.document
    view = controller.pane.current_turn
    assert view is not None

    driver.window.undo_action.trigger()
    # The cards follow the history at once; the line under them once the undo is on record.
    driver.qtbot.waitUntil(lambda: card_statuses(controller)["toolu_1"] == "undone"
                           and view.outcome_label.text().startswith("These changes were undone"),
                           timeout=10_000)
    driver.window.redo_action.trigger()
    assert driver.document is edited
    assert card_statuses(controller)["toolu_1"] == "succeeded"
    assert controller.pane.undo_turn_button.isEnabled()
    # The transcript follows the history: it no longer says the changes were undone.
    assert view.outcome_label.text() == "These changes were redone."
    driver.window.undo_action.trigger()
    driver.qtbot.waitUntil(lambda: card_statuses(controller)["toolu_1"] == "undone"
                           and view.outcome_label.text().startswith("These changes were undone"),
                           timeout=10_000)


def test_a_follow_up_turn_sends_the_earlier_conversation(
    driver: WindowDriver, server: FakeProviderServer, tmp_path: Path
) -> None:
    server.script([Reply.sse(anthropic_sse(text="First answer.")),
                   Reply.sse(anthropic_sse(text="Second answer."))])
    assert driver.open(copy_fixture(tmp_path))
    controller = assistant(driver)
    choose(controller)
    send(driver, controller, "first question")
    wait_settled(driver, controller)
    first_session = controller.turn
    send(driver, controller, "second question")
    assert controller.turn is not first_session
    wait_settled(driver, controller)

    sent = json.dumps(server.requests[1].body["messages"])
    assert "first question" in sent and "First answer." in sent and "second question" in sent
    assert len(controller.pane.turns) == 2
    assert "Second answer." in controller.pane.turns[1].answer.toPlainText()
    assert "Second answer." not in controller.pane.turns[0].answer.toPlainText()


def test_the_provider_and_model_picked_in_the_pane_are_saved_for_next_time(
    driver: WindowDriver,
) -> None:
    controller = assistant(driver)
    pane = controller.pane
    pane.provider_combo.setCurrentIndex(pane.provider_combo.findData("anthropic"))
    index = pane.model_combo.findData(MODEL)
    pane.model_combo.setCurrentIndex(index)
    pane.model_combo.activated.emit(index)
    driver.qtbot.waitUntil(settings_path().exists, timeout=10_000)
    saved = json.loads(settings_path().read_text(encoding="utf-8"))
    assert saved["provider"] == "anthropic"
    assert saved["models"]["anthropic"] == MODEL

    pane.provider_combo.setCurrentIndex(pane.provider_combo.findData("local"))
    assert pane.model_combo.isEditable()
    pane.model_combo.setEditText("qwen3-coder")
    driver.qtbot.waitUntil(
        lambda: json.loads(settings_path().read_text(encoding="utf-8"))["models"]["local"]
        == "qwen3-coder", timeout=10_000)
    assert pane.selection() == ("local", "qwen3-coder")


def test_sending_without_a_document_says_so_in_one_line(driver: WindowDriver) -> None:
    controller = assistant(driver)
    controller.pane.prompt_edit.setPlainText("hello")
    controller.pane.send_button.click()
    driver.qtbot.waitUntil(controller.pane.error_label.isVisible, timeout=10_000)
    assert controller.pane.error_label.text() == "Open or create a threat model first."
    assert controller.turn is None


def test_a_damaged_database_error_wraps_so_its_advice_is_readable_in_a_narrow_pane(
    driver: WindowDriver, tmp_path: Path
) -> None:
    from stockade.store.database import database_path

    database_path().parent.mkdir(parents=True, exist_ok=True)
    database_path().write_bytes(b"this is not a database file" * 64)
    controller = assistant(driver)
    assert driver.open(copy_fixture(tmp_path))
    label = controller.pane.error_label
    driver.qtbot.waitUntil(label.isVisible, timeout=10_000)
    assert "Move it aside" in label.text()
    # Unwrapped, the label would ask for the whole sentence's width and be cut at the edge.
    assert label.minimumSizeHint().width() < controller.pane.minimumWidth()
    assert label.heightForWidth(controller.pane.minimumWidth()) > label.fontMetrics().height()


def test_choosing_a_provider_selects_its_model_from_settings_not_the_first_listed(
        driver: WindowDriver) -> None:
    controller = assistant(driver)
    pane = controller.pane
    pane.provider_combo.setCurrentIndex(pane.provider_combo.findData("anthropic"))
    # The model list names Opus first; the default (and the user's choice) is Sonnet.
    assert pane.selection() == ("anthropic", "claude-sonnet-5")
    pane.model_combo.setCurrentIndex(pane.model_combo.findData("claude-haiku-4-5-20251001"))
    pane.model_combo.activated.emit(pane.model_combo.currentIndex())
    pane.provider_combo.setCurrentIndex(pane.provider_combo.findData("openai"))
    assert pane.selection() == ("openai", "gpt-5.6-sol")
    pane.provider_combo.setCurrentIndex(pane.provider_combo.findData("anthropic"))
    assert pane.selection() == ("anthropic", "claude-haiku-4-5-20251001")  # remembered
