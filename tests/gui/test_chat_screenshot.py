"""`--screenshot … --tab chat` shows an offline review turn stopped at its review queue, and
`--tab chat-edit` opens its first proposal in the edit dialog."""

from __future__ import annotations

from pathlib import Path

from stockade.ui.main_window import AppTab
from tests.gui.chat_helpers import assistant, copy_fixture
from tests.gui.conftest import WindowDriver


def test_the_chat_screenshot_shows_the_review_queue_inside_the_window(
    driver: WindowDriver, tmp_path: Path
) -> None:
    assert driver.open(copy_fixture(tmp_path))
    controller = assistant(driver)
    driver.window.show_tab(AppTab.CHAT)
    assert controller.dock.isVisible()

    driver.window.prepare_screenshot()

    dialog = controller.dialog
    assert dialog is not None and dialog.isVisible()
    assert not dialog.isWindow()  # a child of the window, so a grab of the window shows it
    assert dialog.parentWidget() is driver.window
    assert dialog.rows and all(r.view.tool_name == "add_threat" for r in dialog.rows.values())
    turn = controller.pane.current_turn
    assert turn is not None and set(turn.cards) == set(dialog.rows)
    assert controller.pane.pending_label.isVisible()
    image = driver.window.grab()
    assert not image.isNull()
    dialog.close()


def test_the_chat_edit_screenshot_opens_the_first_proposal_in_the_edit_dialog(
    driver: WindowDriver, tmp_path: Path
) -> None:
    from stockade.ui.assistant.edit_call_dialog import EditCallDialog

    assert driver.open(copy_fixture(tmp_path))
    controller = assistant(driver)
    driver.window.show_tab(AppTab.CHAT_EDIT)
    driver.window.prepare_screenshot()
    queue = controller.dialog
    assert queue is not None and queue.isVisible()
    [edit] = [d for d in driver.window.findChildren(EditCallDialog) if d.isVisible()]
    assert not edit.isWindow() and edit.parentWidget() is driver.window
    first = next(iter(queue.rows.values())).view
    assert edit.view == first and edit.form is not None
    assert edit.title_edit.text() == first.raw["threat"]["title"]
    edit.close()
    queue.close()


def test_other_tabs_take_their_screenshot_without_running_a_turn(
    driver: WindowDriver, tmp_path: Path
) -> None:
    assert driver.open(copy_fixture(tmp_path))
    controller = assistant(driver)
    driver.window.show_tab(AppTab.DIAGRAM)
    driver.window.prepare_screenshot()
    assert controller.dialog is None
    assert controller.pane.current_turn is None
