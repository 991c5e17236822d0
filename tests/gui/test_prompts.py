"""The real dialogs open with open(), never exec(): the event loop keeps running while they wait."""

from __future__ import annotations

from typing import Any

from PySide6.QtWidgets import QApplication, QFileDialog, QMessageBox, QWidget
from pytestqt.qtbot import QtBot

from stockade.ui.common.prompts import Prompts, UnsavedChoice
from tests.conftest import THF_FIXTURES
from tests.gui.conftest import WindowDriver


def _find(cls: type, name: str) -> Any:
    for widget in QApplication.topLevelWidgets():
        if isinstance(widget, cls) and widget.objectName() == name and widget.isVisible():
            return widget
    return None


def _file_dialog(parent: QWidget, name: str) -> QFileDialog | None:
    # A platform (native) file dialog has no visible Qt widget; the QFileDialog object exists.
    dialogs = [d for d in parent.findChildren(QFileDialog) if d.objectName() == name]
    return dialogs[-1] if dialogs else None


def test_unsaved_changes_question_answers_with_the_clicked_button(
    driver: WindowDriver, qtbot: QtBot
) -> None:
    prompts = Prompts(driver.window)
    task = driver.window.spawn(prompts.ask_unsaved_changes("model.thf"))
    qtbot.waitUntil(lambda: _find(QMessageBox, "unsavedChangesBox") is not None, timeout=10_000)
    box = _find(QMessageBox, "unsavedChangesBox")
    assert "model.thf" in box.text()
    assert not task.done()  # waiting, and the loop still runs
    box.button(QMessageBox.StandardButton.Discard).click()
    qtbot.waitUntil(task.done, timeout=10_000)
    assert task.result() is UnsavedChoice.DISCARD


def test_closing_the_question_without_a_choice_cancels(driver: WindowDriver, qtbot: QtBot) -> None:
    prompts = Prompts(driver.window)
    task = driver.window.spawn(prompts.ask_unsaved_changes("model.thf"))
    qtbot.waitUntil(lambda: _find(QMessageBox, "unsavedChangesBox") is not None, timeout=10_000)
    _find(QMessageBox, "unsavedChangesBox").button(QMessageBox.StandardButton.Cancel).click()
    qtbot.waitUntil(task.done, timeout=10_000)
    assert task.result() is UnsavedChoice.CANCEL


def test_open_dialog_waits_without_blocking_and_cancel_gives_none(
    driver: WindowDriver, qtbot: QtBot
) -> None:
    prompts = Prompts(driver.window)
    task = driver.window.spawn(prompts.choose_open_path(str(THF_FIXTURES)))
    qtbot.waitUntil(lambda: _file_dialog(driver.window, "openFileDialog") is not None, timeout=10_000)
    dialog = _file_dialog(driver.window, "openFileDialog")
    assert dialog is not None
    qtbot.wait(50)
    assert not task.done()
    dialog.reject()
    qtbot.waitUntil(task.done, timeout=10_000)
    assert task.result() is None


def test_error_message_does_not_block(driver: WindowDriver, qtbot: QtBot) -> None:
    Prompts(driver.window).show_error("Could not open x.thf", "It is not readable.")
    qtbot.waitUntil(lambda: _find(QMessageBox, "errorMessageBox") is not None, timeout=10_000)
    box = _find(QMessageBox, "errorMessageBox")
    assert box.text() == "It is not readable."
    box.accept()
