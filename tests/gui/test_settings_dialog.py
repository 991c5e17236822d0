"""The settings dialog: keys go to the keyring (never to a file), settings to settings.json."""

from __future__ import annotations

import json
from pathlib import Path

from keyring.backends.fail import Keyring as FailKeyring
from PySide6.QtCore import Qt
from pytestqt.qtbot import QtBot

from stockade.secrets import SERVICE, KeyStore
from stockade.settings import load_settings, settings_path
from stockade.ui.assistant.settings_dialog import SettingsDialog
from tests.conftest import THF_FIXTURES
from tests.gui.chat_helpers import assistant
from tests.gui.conftest import WindowDriver
from tests.helpers.memory_keyring import MemoryKeyring

KEY = "sk-ant-api03-SettingsDialogKey-0123456789abcdef"


def _open(driver: WindowDriver) -> tuple[SettingsDialog, object]:
    controller = assistant(driver)
    task = driver.window.spawn(controller.open_settings())
    driver.qtbot.waitUntil(
        lambda: driver.window.findChild(SettingsDialog, "settingsDialog") is not None, timeout=10_000)
    dialog = driver.window.findChild(SettingsDialog, "settingsDialog")
    assert dialog is not None
    driver.qtbot.waitUntil(dialog.isVisible, timeout=10_000)
    driver.qtbot.waitUntil(lambda: dialog.key_status["anthropic"].text() != "", timeout=10_000)
    return dialog, task


def test_a_key_set_in_settings_lands_in_the_keyring_and_never_in_the_settings_file(
    driver: WindowDriver, memory_keyring: MemoryKeyring, stockade_home: Path
) -> None:
    dialog, task = _open(driver)
    assert dialog.key_status["anthropic"].text() == "No key stored"
    assert dialog.windowModality() is Qt.WindowModality.WindowModal

    dialog.key_edits["anthropic"].setText(KEY)
    dialog.key_set_buttons["anthropic"].click()
    driver.qtbot.waitUntil(
        lambda: dialog.key_status["anthropic"].text() == "Key stored in the keyring", timeout=10_000)
    assert memory_keyring.store[(SERVICE, "anthropic")] == KEY
    assert dialog.key_edits["anthropic"].text() == ""  # the key left the widget at once
    assert KEY not in dialog.key_status["anthropic"].text()

    dialog.turn_budget.setValue(1234)
    dialog.limit_spins["max_iterations"].setValue(5)
    dialog.save_button.click()
    driver.qtbot.waitUntil(task.done, timeout=10_000)
    assert task.result() is None

    saved = settings_path().read_text(encoding="utf-8")
    assert KEY not in saved
    assert json.loads(saved)["credits"]["per_turn"] == 1234
    for path in stockade_home.rglob("*"):
        if path.is_file():
            assert KEY.encode() not in path.read_bytes(), path
    assert load_settings().limits.max_iterations == 5
    assert assistant(driver).settings.credits.per_turn == 1234


def test_deleting_a_key_removes_it_from_the_keyring(
    driver: WindowDriver, memory_keyring: MemoryKeyring
) -> None:
    KeyStore().set_key("openai", "sk-proj-DeleteMe0123456789")
    dialog, _task = _open(driver)
    assert dialog.key_status["openai"].text() == "Key stored in the keyring"
    assert dialog.key_delete_buttons["openai"].isEnabled()
    dialog.key_delete_buttons["openai"].click()
    driver.qtbot.waitUntil(
        lambda: dialog.key_status["openai"].text() == "No key stored", timeout=10_000)
    assert (SERVICE, "openai") not in memory_keyring.store
    dialog.reject()


def test_an_invalid_local_url_is_refused_with_a_message_and_nothing_is_saved(
    driver: WindowDriver,
) -> None:
    dialog, task = _open(driver)
    dialog.base_url_edit.setText("ftp://user:pw@somewhere")
    dialog.save_button.click()
    driver.qtbot.waitUntil(dialog.error_label.isVisible, timeout=10_000)
    assert "endpoints.local" in dialog.error_label.text()
    assert "https://" in dialog.error_label.text()
    assert dialog.isVisible()
    assert not settings_path().exists()
    dialog.reject()
    driver.qtbot.waitUntil(task.done, timeout=10_000)


def test_a_gateway_endpoint_is_saved_and_plain_http_to_another_machine_is_refused(
    driver: WindowDriver,
) -> None:
    dialog, task = _open(driver)
    dialog.endpoint_edits["openai"].setText("http://gateway.corp.example/v1")
    dialog.save_button.click()
    driver.qtbot.waitUntil(dialog.error_label.isVisible, timeout=10_000)
    assert "endpoints.openai" in dialog.error_label.text()
    assert "unencrypted" in dialog.error_label.text()
    assert not settings_path().exists()
    dialog.endpoint_edits["openai"].setText("https://gateway.corp.example/v1/")
    dialog.save_button.click()
    driver.qtbot.waitUntil(task.done, timeout=10_000)
    saved = load_settings()
    assert saved.endpoints.openai == "https://gateway.corp.example/v1"
    assert saved.endpoints.anthropic is None


def test_an_insecure_keyring_is_announced_in_the_chat_pane_and_the_dialog(
    qtbot: object, memory_keyring: MemoryKeyring
) -> None:
    import keyring

    from tests.gui.conftest import WindowDriver as Driver

    keyring.set_keyring(FailKeyring())
    drv = Driver(qtbot)  # type: ignore[arg-type]
    try:
        controller = assistant(drv)
        assert controller.pane.keyring_notice.isVisible()
        assert "session only" in controller.pane.keyring_notice.text()
        dialog, _task = _open(drv)
        assert "session only" in dialog.keyring_label.text()
        dialog.key_edits["anthropic"].setText(KEY)
        dialog.key_set_buttons["anthropic"].click()
        drv.qtbot.waitUntil(
            lambda: dialog.key_status["anthropic"].text() == "Key kept for this session only",
            timeout=10_000)
        dialog.key_delete_buttons["anthropic"].click()
        drv.qtbot.waitUntil(
            lambda: dialog.key_status["anthropic"].text() == "No key stored", timeout=10_000)
        dialog.reject()
    finally:
        drv.window._close_approved = True
        drv.window.close()


def test_the_dialog_shows_credit_spend_so_far(driver: WindowDriver) -> None:
    dialog, _task = _open(driver)
    driver.qtbot.waitUntil(
        lambda: dialog.spend_label.text().startswith("Spent so far: 0 credits today"),
        timeout=10_000)
    dialog.reject()


def test_provider_and_model_come_from_the_model_list_and_are_saved(driver: WindowDriver) -> None:
    dialog, task = _open(driver)
    dialog.provider_combo.setCurrentIndex(dialog.provider_combo.findData("openai"))
    assert not dialog.model_combo.isEditable()
    dialog.model_combo.setCurrentIndex(dialog.model_combo.findData("gpt-5.6-luna"))
    dialog.provider_combo.setCurrentIndex(dialog.provider_combo.findData("local"))
    assert dialog.model_combo.isEditable()
    dialog.model_combo.setEditText("llama3.3")
    dialog.guard_combo.setCurrentIndex(dialog.guard_combo.findData("block"))
    dialog.day_budget.setValue(dialog.day_budget.minimum())  # "No limit"
    dialog.save_button.click()
    driver.qtbot.waitUntil(task.done, timeout=10_000)
    saved = load_settings()
    assert saved.provider == "local"
    assert saved.models["openai"] == "gpt-5.6-luna"
    assert saved.models["local"] == "llama3.3"
    assert saved.guard_policy.value == "block"
    assert saved.credits.per_day is None
    assert assistant(driver).pane.selection() == ("local", "llama3.3")


def test_a_corrupt_settings_file_is_reported_in_the_chat_pane_when_the_window_opens(
    qtbot: QtBot, stockade_home: Path
) -> None:
    settings_path().parent.mkdir(parents=True, exist_ok=True)
    settings_path().write_text("{this is not json", encoding="utf-8")
    drv = WindowDriver(qtbot)  # after the file is damaged: the window reads it on start
    try:
        controller = assistant(drv)
        notice = controller.pane.notice_label
        assert notice.isVisible()
        assert "settings file could not be used" in notice.text()
        assert list(stockade_home.glob("settings.json.broken-*"))
    finally:
        drv.window._close_approved = True
        drv.window.close()


def test_a_model_choice_saved_after_opening_a_file_keeps_the_file_in_open_recent(
    driver: WindowDriver, tmp_path: Path
) -> None:
    controller = assistant(driver)
    path = tmp_path / "model.thf"
    path.write_bytes((THF_FIXTURES / "v1.0-minimal.thf").read_bytes())
    assert driver.open(path)
    assert load_settings().recent_files == [str(path.resolve())]

    controller.pane.modelChosen.emit("openai", "gpt-5.1")
    driver.qtbot.waitUntil(lambda: load_settings().provider == "openai", timeout=10_000)
    assert load_settings().recent_files == [str(path.resolve())]
