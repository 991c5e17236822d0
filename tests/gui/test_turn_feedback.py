"""Feedback from the first keystroke, honest words when a turn stops, and the offline engine
through the window: at most 12 ranked proposals, and none of the denied ones the next turn."""

from __future__ import annotations

import shutil
from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtTest import QTest

from stockade.catalog.stride import analyze
from stockade.thf.reader import read_file
from tests.gui.chat_helpers import (
    approve,
    assistant,
    card_statuses,
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
from tests.unit.catalog.samples import SAMPLES


def test_the_prompt_stays_visible_from_the_click_and_each_phase_shows_as_it_happens(
    driver: WindowDriver, server: FakeProviderServer, tmp_path: Path
) -> None:
    server.script([
        Reply.sse(anthropic_sse(text="Lowering it.",
                                tool_calls=[threat_update("toolu_1", "threat-1", severity="low")]),
                  splits=(60, 200), delay_s=0.05),
        Reply.sse(anthropic_sse(text="Done."), splits=(40,), delay_s=0.05),
    ])
    assert driver.open(copy_fixture(tmp_path))
    controller = assistant(driver)
    choose(controller)
    shown: list[str] = []
    controller.turnPhaseShown.connect(shown.append)
    controller.pane.prompt_edit.setPlainText("lower threat-1")
    controller.pane.send_button.click()
    # Before the event loop has run anything: the prompt is on screen and the pane says so.
    view = controller.pane.current_turn
    assert view is not None and view.prompt_label.text() == "lower threat-1"
    assert view.outcome_label.text() == "Preparing the provider…"
    assert controller.pane.prompt_edit.toPlainText() == ""
    assert controller.pane.stop_button.isEnabled()

    queue = wait_dialog(driver, controller)
    assert view.outcome_label.text() == "Waiting for you to decide."
    approve(queue, "toolu_1")
    finish(queue)
    wait_settled(driver, controller)
    assert shown == [
        "Preparing the provider…", "Asking the model…", "The model is answering…",
        "Waiting for you to decide.", "Running the approved tools…", "Asking the model…",
        "The model is answering…",
    ]
    assert not view.outcome_label.isVisible()  # settled: the answer speaks for itself


def test_a_turn_stopped_after_committing_says_what_it_kept_and_what_did_not_run(
    driver: WindowDriver, server: FakeProviderServer, tmp_path: Path
) -> None:
    server.script([
        Reply.sse(anthropic_sse(tool_calls=[threat_update("toolu_a", "threat-1",
                                                          severity="low")])),
        Reply.sse(anthropic_sse(tool_calls=[threat_delete("toolu_b", "threat-3")])),
    ])
    assert driver.open(copy_fixture(tmp_path))
    controller = assistant(driver)
    choose(controller)
    send(driver, controller, "lower threat-1 then remove threat-3")
    first = wait_dialog(driver, controller)
    approve(first, "toolu_a")
    finish(first)
    driver.qtbot.waitUntil(lambda: controller.dialog is not None and controller.dialog is not first
                           and controller.dialog.isVisible(), timeout=30_000)
    controller.pane.stop_button.click()
    wait_settled(driver, controller)
    assert controller.pane.notice_label.text() == (
        "Stopped. The 1 change already made is kept; Undo turn reverts it. 1 call did not run. "
        "What the assistant wrote so far is kept.")
    assert card_statuses(controller) == {"toolu_a": "succeeded", "toolu_b": "not_run"}
    assert controller.pane.current_turn.cards["toolu_b"].status_label.text() == "Not run"  # type: ignore[union-attr]
    assert {t.id: t.severity.value for t in driver.document.threats}["threat-1"] == "low"
    assert controller.pane.undo_turn_button.isEnabled()


def test_the_offline_engine_proposes_12_ranked_threats_and_never_the_denied_ones_again(
    driver: WindowDriver, tmp_path: Path
) -> None:
    path = tmp_path / "shop.thf"
    shutil.copy(SAMPLES / "ecommerce-platform.thf", path)
    ranked = analyze(read_file(path))
    assert driver.open(path)
    controller = assistant(driver)
    choose(controller, "offline", "stride-rules")
    send(driver, controller, "Review this model and propose the threats it is still missing.")
    queue = wait_dialog(driver, controller)
    first = [(r.view.target, r.view.severity) for r in queue.rows.values()]
    assert len(first) == 12
    assert [t for t, _ in first] == [p.target for p in ranked[:12]]
    assert len({s for _, s in first}) > 1  # not a flat "high"
    answer = controller.pane.current_turn.answer.toPlainText()  # type: ignore[union-attr]
    assert f"{len(ranked)} candidate threats" in answer and f"{len(ranked) - 12} more" in answer
    # Deny everything from the keyboard: select all, then D.
    queue.table.setFocus()
    QTest.keyClick(queue.table, Qt.Key.Key_A, Qt.KeyboardModifier.ControlModifier)
    assert len(queue.selected_ids()) == 12
    queue.reason_edit.setText("not for this release")
    QTest.keyClick(queue.table, Qt.Key.Key_D)
    QTest.keyClick(queue.table, Qt.Key.Key_Return)
    wait_settled(driver, controller)
    denied = {(p.target, p.category.value) for p in ranked[:12]}
    assert len(driver.document.threats) == 5  # nothing was added

    send(driver, controller, "Propose more threats.")
    queue = wait_dialog(driver, controller)
    second = {(r.view.target, r.view.raw["threat"]["category"]) for r in queue.rows.values()}
    assert len(second) == 12
    assert not second & denied
    assert all(r.view.declined_earlier is None for r in queue.rows.values())
    answer = controller.pane.current_turn.answer.toPlainText()  # type: ignore[union-attr]
    assert "12 proposals you declined earlier are left out" in answer
    queue.later_button.click()
    driver.qtbot.waitUntil(lambda: controller.turn is None or not controller.turn.waiting,
                           timeout=10_000)


def test_a_prompt_that_asks_for_no_changes_gets_no_queue(
    driver: WindowDriver, tmp_path: Path
) -> None:
    path = tmp_path / "shop.thf"
    shutil.copy(SAMPLES / "ecommerce-platform.thf", path)
    assert driver.open(path)
    controller = assistant(driver)
    choose(controller, "offline", "stride-rules")
    send(driver, controller, "Do not change anything; what is missing around the Session Cache?")
    wait_settled(driver, controller)
    assert controller.dialog is None and controller.turn is not None
    assert controller.turn.state.calls == ()
    answer = controller.pane.current_turn.answer.toPlainText()  # type: ignore[union-attr]
    assert "proposing nothing" in answer and "Session Cache" in answer
