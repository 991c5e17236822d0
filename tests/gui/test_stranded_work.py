"""Work a turn committed before it paused is never stranded: whatever replaces or closes the
window (opening another file and discarding, closing and discarding, Decide later), the parked
run resumes and completes with the approved work intact."""

from __future__ import annotations

import shutil
from pathlib import Path

from stockade.governance.services import open_governance
from stockade.store.runs import RunStatus
from stockade.ui.common.prompts import UnsavedChoice
from tests.conftest import THF_FIXTURES
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


def _approve_first_then_wait_on_second(driver: WindowDriver, server: FakeProviderServer,
                                       path: Path) -> str:
    """Iteration 1's call is approved and committed (in memory); iteration 2's call waits."""
    server.script([
        Reply.sse(anthropic_sse(tool_calls=[threat_update("toolu_a", "threat-1",
                                                          severity="low")])),
        Reply.sse(anthropic_sse(tool_calls=[threat_delete("toolu_b", "threat-3")])),
    ])
    assert driver.open(path)
    controller = assistant(driver)
    choose(controller)
    send(driver, controller, "lower threat-1, then remove threat-3")
    first = wait_dialog(driver, controller)
    approve(first, "toolu_a")
    finish(first)
    driver.qtbot.waitUntil(lambda: controller.dialog is not None and controller.dialog is not first
                           and controller.dialog.isVisible(), timeout=30_000)
    assert driver.window.open_document.is_dirty  # threat-1 is lowered in memory only
    turn = controller.turn
    assert turn is not None
    return turn.run_id


def _parked(run_id: str) -> bool:
    gov = open_governance()
    try:
        return gov.runs.get(run_id).status is RunStatus.PARKED
    finally:
        gov.close()


def _resume_in(window_driver: WindowDriver, server: FakeProviderServer, path: Path,
               run_id: str) -> None:
    """Reopen the file, approve the waiting delete, and check the whole turn's work landed."""
    server.script([Reply.sse(anthropic_sse(text="Both done."))])
    if window_driver.window.open_document.path != path:
        assert window_driver.open(path)
    controller = assistant(window_driver)
    window_driver.qtbot.waitUntil(lambda: controller.pane.parked_run_ids() == [run_id],
                                  timeout=10_000)
    controller.pane.reviewRequested.emit(run_id)
    review = wait_dialog(window_driver, controller)
    assert list(review.rows) == ["toolu_b"]
    approve(review, "toolu_b")
    finish(review)
    wait_settled(window_driver, controller)
    turn = controller.turn
    assert turn is not None and turn.state.outcome is not None
    assert turn.state.outcome.value == "completed"
    threats = {t.id: t for t in window_driver.document.threats}
    assert threats["threat-1"].severity.value == "low"  # the work from before the pause
    assert "threat-3" not in threats
    gov = open_governance()
    try:
        assert gov.runs.get(run_id).status is RunStatus.FINISHED
    finally:
        gov.close()


def test_opening_another_file_and_discarding_parks_the_run_with_its_work(
        driver: WindowDriver, server: FakeProviderServer, tmp_path: Path) -> None:
    path = copy_fixture(tmp_path)
    run_id = _approve_first_then_wait_on_second(driver, server, path)
    controller = assistant(driver)
    assert controller.dialog is not None
    controller.dialog.reject()  # dismissed: the turn keeps waiting in memory
    driver.qtbot.waitUntil(lambda: controller.pane.review_button.isVisible(), timeout=10_000)

    other = tmp_path / "other.thf"
    shutil.copy(THF_FIXTURES / "v1.0-minimal.thf", other)
    driver.prompts.unsaved_answers.append(UnsavedChoice.DISCARD)
    assert driver.open(other)
    driver.qtbot.waitUntil(lambda: _parked(run_id), timeout=10_000)
    assert controller.pane.turns == []  # the chat now shows the other file's context
    _resume_in(driver, server, path, run_id)


def test_closing_the_window_and_discarding_parks_the_run_with_its_work(
        driver: WindowDriver, server: FakeProviderServer, tmp_path: Path) -> None:
    from tests.gui.conftest import WindowDriver as Driver

    path = copy_fixture(tmp_path)
    run_id = _approve_first_then_wait_on_second(driver, server, path)
    controller = assistant(driver)
    assert controller.dialog is not None
    controller.dialog.reject()
    driver.prompts.unsaved_answers.append(UnsavedChoice.DISCARD)
    driver.window.close()
    # Closing with calls waiting asks first; Decide later keeps the turn and its work.
    driver.qtbot.waitUntil(lambda: controller.close_question is not None, timeout=10_000)
    controller.close_question.park_button.click()  # type: ignore[union-attr]
    driver.qtbot.waitUntil(lambda: not driver.window.isVisible(), timeout=10_000)
    assert _parked(run_id)

    second = Driver(driver.qtbot)
    try:
        _resume_in(second, server, path, run_id)
    finally:
        second.window._close_approved = True
        second.window.close()


def test_decide_later_then_continuing_in_the_same_window_undoes_the_turn_as_one_step(
        driver: WindowDriver, server: FakeProviderServer, tmp_path: Path) -> None:
    path = copy_fixture(tmp_path)
    run_id = _approve_first_then_wait_on_second(driver, server, path)
    controller = assistant(driver)
    assert controller.dialog is not None
    controller.dialog.later_button.click()
    driver.qtbot.waitUntil(lambda: _parked(run_id) and controller.turn is None, timeout=10_000)
    _resume_in(driver, server, path, run_id)
    # One undo of the turn reverts all of it, the pre-pause change included.
    driver.qtbot.waitUntil(lambda: controller.pane.undo_turn_button.isEnabled(), timeout=10_000)
    controller.pane.undo_turn_button.click()
    driver.qtbot.waitUntil(lambda: not controller.pane.undo_turn_button.isEnabled(),
                           timeout=10_000)
    threats = {t.id: t for t in driver.document.threats}
    assert threats["threat-1"].severity.value == "high" and "threat-3" in threats
