"""Without a secure keyring, Decide later seals the waiting turn under a passphrase the user
types (twice), and a parked run asks for it when it is opened (issue 12, item 7).

The keyring is keyring's own `fail` backend, which Stockade treats as session-only — the
headless default on CI. The offline rules engine proposes the changes, so no network is used.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import keyring
import pytest
from keyring.backends.fail import Keyring as FailKeyring

from stockade.governance.services import open_governance
from stockade.secrets.keystore import SESSION_KEYS
from stockade.store.database import database_path
from stockade.store.runs import RunStatus
from stockade.ui.assistant.passphrase_dialog import PassphraseDialog
from tests.gui.chat_helpers import (
    assistant,
    choose,
    copy_fixture,
    finish,
    send,
    wait_dialog,
    wait_settled,
)
from tests.gui.conftest import WindowDriver
from tests.helpers.cli import invoke

PASSPHRASE = "correct horse battery staple"


@pytest.fixture(autouse=True)
def no_secure_keyring() -> Iterator[None]:
    previous = keyring.get_keyring()
    keyring.set_keyring(FailKeyring())
    try:
        yield
    finally:
        keyring.set_keyring(previous)
        SESSION_KEYS.clear()


def _status(run_id: str) -> RunStatus:
    gov = open_governance()
    try:
        return gov.runs.get(run_id).status
    finally:
        gov.close()


def _wait_passphrase(driver: WindowDriver) -> PassphraseDialog:
    def opened() -> PassphraseDialog | None:
        dialog = driver.window.findChild(PassphraseDialog, "passphraseDialog")
        return dialog if dialog is not None and dialog.isVisible() else None

    driver.qtbot.waitUntil(lambda: opened() is not None, timeout=30_000)
    dialog = opened()
    assert dialog is not None
    return dialog


def _sealed_with_a_passphrase(run_id: str) -> bool:
    conn = sqlite3.connect(database_path())
    try:
        (blob,) = conn.execute("SELECT snapshot FROM run WHERE run_id = ?", (run_id,)).fetchone()
    finally:
        conn.close()
    return bytes(blob[:4]) == b"STKS" and blob[6] == 1  # envelope v2, key from scrypt


def _approve_everything(driver: WindowDriver) -> None:
    """Approve every change the review (and the resumed turn after it) asks about."""
    controller = assistant(driver)
    wait_dialog(driver, controller)
    while True:
        driver.qtbot.waitUntil(
            lambda: controller.dialog is not None or not controller.pane.busy, timeout=30_000)
        if controller.dialog is None:
            return
        dialog = wait_dialog(driver, controller)
        dialog.approve_all_button.click()
        finish(dialog)
        driver.qtbot.waitUntil(lambda d=dialog: controller.dialog is not d, timeout=30_000)


def test_decide_later_seals_the_turn_under_a_typed_passphrase_and_it_continues(
    driver: WindowDriver, tmp_path: Path
) -> None:
    path = copy_fixture(tmp_path, "v1.0-minimal.thf")
    assert driver.open(path)
    controller = assistant(driver)
    choose(controller, "offline", "stride-rules")
    threats_before = len(driver.document.threats)
    send(driver, controller, "review this model")
    dialog = wait_dialog(driver, controller)
    run_id = controller.turn.run_id if controller.turn is not None else ""
    dialog.later_button.click()

    asked = _wait_passphrase(driver)
    assert asked.confirm_edit.isVisible()  # a new passphrase is typed twice
    asked.passphrase_edit.setText("short")
    asked.confirm_edit.setText("short")
    asked.ok_button.click()
    assert "at least 8" in asked.error_label.text() and asked.isVisible()
    asked.passphrase_edit.setText(PASSPHRASE)
    asked.confirm_edit.setText(PASSPHRASE + "!")
    asked.ok_button.click()
    assert "differ" in asked.error_label.text() and asked.isVisible()
    asked.confirm_edit.setText(PASSPHRASE)
    asked.ok_button.click()

    driver.qtbot.waitUntil(lambda: controller.turn is None, timeout=30_000)
    assert _status(run_id) is RunStatus.PARKED and _sealed_with_a_passphrase(run_id)
    assert "snapshot-key" not in SESSION_KEYS  # no key was made that would die with the app
    stored = b"".join(p.read_bytes() for p in database_path().parent.rglob("*") if p.is_file())
    assert PASSPHRASE.encode() not in stored  # the passphrase is never written anywhere

    # This window opened the run once already: its key is remembered, no second prompt.
    driver.qtbot.waitUntil(lambda: controller.pane.parked_run_ids() == [run_id],
                           timeout=10_000)
    controller.pane.reviewRequested.emit(run_id)
    _approve_everything(driver)
    wait_settled(driver, controller)
    assert len(driver.document.threats) > threats_before
    assert _status(run_id) is RunStatus.FINISHED


def test_a_run_parked_elsewhere_asks_for_its_passphrase_when_opened(
    driver: WindowDriver, tmp_path: Path
) -> None:
    path = copy_fixture(tmp_path, "v1.0-minimal.thf")
    # A headless run parked it, with the passphrase in the environment (`--approve read`
    # leaves every proposed change waiting). The CLI runs its own asyncio loop: on a thread.
    with ThreadPoolExecutor(1) as pool:
        parked = pool.submit(invoke, "assist", path, "--prompt", "review", "--provider",
                             "offline", "--json",
                             env={"STOCKADE_SNAPSHOT_PASSPHRASE": PASSPHRASE}).result()
    assert parked.returncode == 3, parked.stderr
    assert driver.open(path)
    controller = assistant(driver)
    driver.qtbot.waitUntil(lambda: len(controller.pane.parked_run_ids()) == 1, timeout=10_000)
    [run_id] = controller.pane.parked_run_ids()
    assert _sealed_with_a_passphrase(run_id)

    controller.pane.reviewRequested.emit(run_id)
    asked = _wait_passphrase(driver)
    assert not asked.confirm_edit.isVisible()  # opening asks once
    asked.passphrase_edit.setText("not the passphrase")
    asked.ok_button.click()
    driver.qtbot.waitUntil(lambda: "passphrase is wrong" in controller.pane.error_label.text(),
                           timeout=30_000)
    assert _status(run_id) is RunStatus.PARKED

    threats_before = len(driver.document.threats)
    controller.pane.reviewRequested.emit(run_id)
    asked = _wait_passphrase(driver)
    asked.passphrase_edit.setText(PASSPHRASE)
    asked.ok_button.click()
    _approve_everything(driver)
    wait_settled(driver, controller)
    assert len(driver.document.threats) > threats_before
    assert _status(run_id) is RunStatus.FINISHED
