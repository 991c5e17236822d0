"""The audit viewer lists runs and their events and verifies the hash chain (offline turns)."""

from __future__ import annotations

import sqlite3
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from stockade.store.database import database_path
from stockade.ui.assistant.audit_viewer import AuditViewer
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


def _offline_turn(driver: WindowDriver, tmp_path: Path) -> str:
    """One offline review turn, approving every batch of proposals until it settles."""
    assert driver.open(copy_fixture(tmp_path, "v1.0-minimal.thf"))
    controller = assistant(driver)
    choose(controller, "offline", "stride-rules")
    before = len(driver.document.threats)
    send(driver, controller, "review this model")
    proposed = 0
    while True:
        driver.qtbot.waitUntil(
            lambda: controller.dialog is not None or not controller.pane.busy, timeout=10_000)
        if controller.dialog is None:
            break
        dialog = wait_dialog(driver, controller)
        assert all(row.view.tool_name == "add_threat" for row in dialog.rows.values())
        proposed += len(dialog.rows)
        dialog.approve_all_button.click()
        finish(dialog)
        driver.qtbot.waitUntil(lambda d=dialog: controller.dialog is not d, timeout=10_000)
    wait_settled(driver, controller)
    assert proposed > 0
    assert len(driver.document.threats) == before + proposed
    assert "Credits spent: 0" in controller.pane.usage_label.text()  # local rules cost nothing
    session = controller.turn
    assert session is not None
    return session.run_id


def _open_viewer(driver: WindowDriver) -> tuple[AuditViewer, object]:
    controller = assistant(driver)
    task = driver.window.spawn(controller.open_audit_viewer())
    driver.qtbot.waitUntil(
        lambda: driver.window.findChild(AuditViewer, "auditViewer") is not None, timeout=10_000)
    viewer = driver.window.findChild(AuditViewer, "auditViewer")
    assert viewer is not None
    return viewer, task


def test_an_offline_turn_appears_with_its_events_and_the_chain_verifies(
    driver: WindowDriver, tmp_path: Path
) -> None:
    run_id = _offline_turn(driver, tmp_path)
    viewer, task = _open_viewer(driver)
    driver.qtbot.waitUntil(lambda: viewer.runs_table.rowCount() == 1, timeout=10_000)
    item = viewer.runs_table.item(0, 0)
    assert item is not None and item.text() == run_id
    driver.qtbot.waitUntil(lambda: viewer.events_table.rowCount() > 0, timeout=10_000)
    kinds = [e.kind for e in viewer.events]
    assert kinds[0] == "run.started"
    assert "tool.approved" in kinds and "document.committed" in kinds
    assert kinds[-1] == "run.finished"
    viewer.events_table.selectRow(0)
    assert '"hash": "hmac-sha256:' in viewer.payload_view.toPlainText()  # a keyed chain

    # What each committed change did, opened from its sealed summary; who approved it.
    summaries = {e.kind: viewer.events_table.item(i, 3).text()
                 for i, e in enumerate(viewer.events)}
    assert summaries["document.committed"].startswith("Added threat ")
    assert summaries["tool.approved"].startswith("add_threat approved by user:")
    committed = next(i for i, e in enumerate(viewer.events) if e.kind == "document.committed")
    viewer.events_table.selectRow(committed)
    assert '"changes": [' in viewer.payload_view.toPlainText()
    # ... while the database itself holds no document text for it.
    raw = database_path().read_bytes()
    title = summaries["document.committed"].split("(", 1)[1].rstrip(")")
    assert title.encode() not in raw

    viewer.verify_button.click()
    driver.qtbot.waitUntil(lambda: "intact" in viewer.result_label.text(), timeout=10_000)
    assert f"{len(kinds)} events checked" in viewer.result_label.text()
    viewer.close_button.click()
    driver.qtbot.waitUntil(task.done, timeout=10_000)


def test_verify_names_the_first_event_that_was_changed(
    driver: WindowDriver, tmp_path: Path
) -> None:
    _offline_turn(driver, tmp_path)
    conn = sqlite3.connect(database_path())
    try:
        # Go around the append-only triggers the way an attacker with file access could.
        triggers = [r[0] for r in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'trigger'")]
        for name in triggers:
            conn.execute(f'DROP TRIGGER "{name}"')
        conn.execute("UPDATE event SET payload = '{}' WHERE seq = 3")
        conn.commit()
    finally:
        conn.close()
    viewer, task = _open_viewer(driver)
    driver.qtbot.waitUntil(lambda: viewer.runs_table.rowCount() == 1, timeout=10_000)
    viewer.verify_button.click()
    driver.qtbot.waitUntil(lambda: "BROKEN" in viewer.result_label.text(), timeout=10_000)
    assert "event 3" in viewer.result_label.text()
    # The broken event is selected and marked in its run's list.
    driver.qtbot.waitUntil(lambda: bool(viewer.events_table.selectionModel().selectedRows()),
                           timeout=10_000)
    [row] = viewer.events_table.selectionModel().selectedRows()
    assert viewer.events[row.row()].seq == 3
    assert viewer.events_table.item(row.row(), 0).background().color().name() == "#fecaca"
    viewer.reject()
    driver.qtbot.waitUntil(task.done, timeout=10_000)


def test_export_saves_a_trail_the_command_line_verifies(
    driver: WindowDriver, tmp_path: Path
) -> None:
    from tests.helpers.cli import invoke

    run_id = _offline_turn(driver, tmp_path)
    viewer, task = _open_viewer(driver)
    driver.qtbot.waitUntil(lambda: viewer.run_id == run_id and viewer.export_button.isEnabled(),
                           timeout=10_000)
    target = tmp_path / "trail.jsonl"
    driver.prompts.save_paths.append(str(target))
    viewer.export_button.click()
    driver.qtbot.waitUntil(lambda: "Exported" in viewer.result_label.text(), timeout=10_000)
    lines = target.read_text().splitlines()
    assert any('"changes":["Added threat' in line for line in lines)
    assert '"export":' in lines[-1]
    viewer.reject()
    driver.qtbot.waitUntil(task.done, timeout=10_000)
    # `stockade audit verify --export` (its own asyncio loop: on a thread beside Qt's).
    with ThreadPoolExecutor(1) as pool:
        checked = pool.submit(invoke, "audit", "verify", "--export", target, "--json").result()
    assert checked.returncode == 0, checked.stdout
    assert '"keyed": true' in checked.stdout


def test_the_viewer_says_so_when_there_is_no_audit_trail_yet(driver: WindowDriver) -> None:
    viewer, task = _open_viewer(driver)
    driver.qtbot.waitUntil(lambda: viewer.result_label.text() != "", timeout=10_000)
    assert viewer.result_label.text() == "No assistant runs yet."
    assert not database_path().exists()  # looking never creates the database
    viewer.reject()
    driver.qtbot.waitUntil(task.done, timeout=10_000)
