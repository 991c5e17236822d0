"""Help → About Stockade and Help → Copy diagnostics, through the real menu actions."""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

import PySide6
import pytest
from PySide6.QtCore import Qt, qVersion
from PySide6.QtGui import QAction, QGuiApplication

from stockade import __version__
from stockade.diagnostics import log_file_path
from stockade.paths import resources_dir
from stockade.protocol.errors import REDACTED
from stockade.ui.common import crash_handler
from stockade.ui.common.about_dialog import AboutDialog
from stockade.ui.common.help_menu import COPIED_MESSAGE
from tests.gui.conftest import WindowDriver

LEAKED_KEY = "sk-ant-api03-" + "k3yMat3rial" * 5


def _action(driver: WindowDriver, name: str) -> QAction:
    action = driver.window.findChild(QAction, name)
    assert action is not None, name
    assert action in driver.window.help_menu.actions()
    return action


def _open_about(driver: WindowDriver) -> AboutDialog:
    _action(driver, "actionAbout").trigger()
    found: list[AboutDialog] = []

    def shown() -> bool:
        found[:] = [d for d in driver.window.findChildren(AboutDialog) if d.isVisible()]
        return bool(found)

    driver.qtbot.waitUntil(shown)
    return found[0]


def test_about_shows_build_qt_pyside_data_folder_and_store(
        driver: WindowDriver, stockade_home: Path) -> None:
    dialog = _open_about(driver)

    assert dialog.windowModality() == Qt.WindowModality.WindowModal
    assert f"Stockade {__version__}" in dialog.value("aboutTitle")
    assert dialog.value("aboutBuild") == "run from source (not a packaged build)"
    assert dialog.value("aboutQt").startswith(qVersion())
    assert dialog.value("aboutPySide") == PySide6.__version__
    assert dialog.value("aboutDataFolder") == str(stockade_home)
    assert dialog.value("aboutStore") == f"{stockade_home / 'stockade.db'} (SQLite)"
    assert dialog.value("aboutLogFolder") == str(stockade_home / "logs")
    dialog.reject()
    driver.qtbot.waitUntil(lambda: not dialog.isVisible())


def test_about_of_a_packaged_build_shows_its_stamp(
        driver: WindowDriver, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A packaged build's resources: the real ones plus the stamp packaging/build writes.
    resources = tmp_path / "resources"
    shutil.copytree(resources_dir(), resources)
    (resources / "BUILD_INFO").write_text(
        "version=0.1.0\nbuilt=2026-12-01T08:00:00Z\ncommit=0123456789ab+dirty\n"
        "platform=Linux-x86_64\npython=3.11.7\n", encoding="utf-8")
    monkeypatch.setenv("STOCKADE_RESOURCES", str(resources))

    dialog = _open_about(driver)

    assert dialog.value("aboutBuild") == (
        "built 2026-12-01T08:00:00Z, commit 0123456789ab+dirty, Linux-x86_64")
    dialog.reject()


def test_copy_diagnostics_puts_a_masked_report_with_the_log_tail_on_the_clipboard(
        driver: WindowDriver, stockade_home: Path) -> None:
    crash_handler.install_log_file()
    try:
        records = logging.getLogger("stockade.test")
        for index in range(250):
            records.info("diagnostics line %d", index)
        records.info("a provider said: invalid x-api-key: %s", LEAKED_KEY)
    finally:
        crash_handler.remove_log_file()
    assert LEAKED_KEY in log_file_path().read_text(encoding="utf-8")
    QGuiApplication.clipboard().clear()

    _action(driver, "actionCopyDiagnostics").trigger()
    driver.qtbot.waitUntil(lambda: QGuiApplication.clipboard().text() != "", timeout=10_000)

    report = QGuiApplication.clipboard().text()
    assert report.startswith("Stockade diagnostics, ")
    assert f"Qt: {qVersion()}" in report and f"PySide6: {PySide6.__version__}" in report
    assert f"data folder: {stockade_home}" in report
    assert "== settings" in report and '"provider": "offline"' in report
    log_part = report.split("== log: last 200 line(s), keys masked\n", 1)[1]
    lines = log_part.rstrip("\n").splitlines()
    assert len(lines) == 200
    assert lines[0].endswith("diagnostics line 51")
    assert lines[-1].endswith(f"invalid x-api-key: {REDACTED}")
    assert LEAKED_KEY not in report
    assert driver.window.statusBar().currentMessage() == COPIED_MESSAGE


def test_about_names_the_team_database_in_team_mode(
        driver: WindowDriver, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STOCKADE_DATABASE_URL", "postgresql://ana@127.0.0.1:1/stockade")
    dialog = _open_about(driver)
    assert dialog.value("aboutStore") == \
        "postgresql://ana@127.0.0.1:1/stockade (PostgreSQL, team mode)"
    dialog.reject()
    driver.qtbot.waitUntil(lambda: not dialog.isVisible())
