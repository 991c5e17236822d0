"""Governance I/O never runs on the Qt thread: a database locked by another process (a
`stockade runs resume` in a terminal) delays the turn, never the window."""

from __future__ import annotations

import itertools
import sqlite3
import time
from pathlib import Path

from PySide6.QtCore import QTimer

from stockade.store import open_database
from tests.gui.chat_helpers import assistant, choose, copy_fixture, wait_dialog
from tests.gui.conftest import WindowDriver

HOLD_S = 1.5


def test_a_locked_database_does_not_freeze_the_window_during_a_turn(
        driver: WindowDriver, tmp_path: Path, stockade_home: Path) -> None:
    open_database().close()  # the database exists, as after any earlier turn
    assert driver.open(copy_fixture(tmp_path))
    controller = assistant(driver)
    choose(controller, "offline", "stride-rules")

    ticks: list[float] = []
    timer = QTimer(driver.window)
    timer.setInterval(20)
    timer.timeout.connect(lambda: ticks.append(time.monotonic()))
    timer.start()

    other = sqlite3.connect(stockade_home / "stockade.db", isolation_level=None)
    other.execute("BEGIN IMMEDIATE")  # what another process's write transaction holds
    locked_at = time.monotonic()
    try:
        controller.pane.prompt_edit.setPlainText("review the model")
        controller.pane.send_button.click()
        driver.qtbot.wait(int(HOLD_S * 1000))
        assert controller.dialog is None  # the turn is waiting for the lock...
    finally:
        other.execute("ROLLBACK")
        other.close()
    dialog = wait_dialog(driver, controller)  # ...and carries on once it is free
    timer.stop()
    held = [t for t in ticks if locked_at <= t <= locked_at + HOLD_S]
    gaps = [b - a for a, b in itertools.pairwise(held)]
    assert len(held) > 20 and max(gaps) < 0.25, max(gaps)
    dialog.later_button.click()
