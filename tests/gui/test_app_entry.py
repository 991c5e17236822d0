"""The real `stockade` command in app mode, and the handling of unexpected exceptions."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from PySide6.QtCore import QObject, QUrl, Slot
from PySide6.QtGui import QDesktopServices, QImage

from stockade.ui.common import crash_handler
from stockade.ui.common.crash_dialog import CrashDialog
from tests.conftest import THF_FIXTURES, LogGuard
from tests.gui.conftest import WindowDriver

STOCKADE = Path(sys.executable).parent / "stockade"


def _run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env.pop("QT_QPA_PLATFORM", None)  # --screenshot must choose offscreen by itself
    return subprocess.run(
        [str(STOCKADE), *args], capture_output=True, text=True, timeout=120, env=env, check=False
    )


@pytest.mark.skipif(not STOCKADE.exists(), reason="the stockade console script is not installed")
def test_screenshot_of_the_diagram_tab_through_the_cli_writes_a_png(tmp_path: Path) -> None:
    out = tmp_path / "shots" / "diagram.png"
    result = _run_cli(str(THF_FIXTURES / "v1.0-canonical-full.thf"), "--screenshot", str(out), "--tab", "diagram")
    assert result.returncode == 0, result.stderr
    image = QImage(str(out))
    assert not image.isNull()
    assert (image.width(), image.height()) == (1280, 800)


@pytest.mark.skipif(not STOCKADE.exists(), reason="the stockade console script is not installed")
def test_screenshot_of_an_invalid_file_fails_in_plain_words(tmp_path: Path) -> None:
    out = tmp_path / "never.png"
    result = _run_cli(
        str(THF_FIXTURES / "invalid" / "duplicate-element-id.thf"), "--screenshot", str(out)
    )
    assert result.returncode == 1
    assert "Duplicate ID 'app' in section 'elements'" in result.stderr
    assert "Traceback" not in result.stderr
    assert not out.exists()


class _UrlRecorder(QObject):
    """Stands in for the desktop's file manager: records the URLs it is asked to open."""

    def __init__(self) -> None:
        super().__init__()
        self.urls: list[QUrl] = []

    @Slot(QUrl)
    def open(self, url: QUrl) -> None:
        self.urls.append(url)


def test_unexpected_exception_is_logged_and_the_crash_dialog_opens_the_log_folder(
    driver: WindowDriver, log_guard: LogGuard, stockade_home: Path
) -> None:
    log_guard.expect("unexpected RuntimeError")
    log_file = crash_handler.install_log_file()
    assert log_file.parent == stockade_home / "logs"
    try:
        dialog = _raise_in_a_task(driver)
    finally:
        crash_handler.remove_log_file()
    assert "RuntimeError: boom inside a slot" in log_file.read_text(encoding="utf-8")

    recorder = _UrlRecorder()
    QDesktopServices.setUrlHandler("file", recorder, "open")
    try:
        dialog.open_folder_button.click()
    finally:
        QDesktopServices.unsetUrlHandler("file")
    assert [url.toLocalFile() for url in recorder.urls] == [str(stockade_home / "logs")]
    driver.qtbot.waitUntil(lambda: not dialog.isVisible())


def test_a_second_failure_keeps_the_one_crash_dialog_already_up(
    driver: WindowDriver, log_guard: LogGuard
) -> None:
    log_guard.expect("unexpected RuntimeError")
    first = _raise_in_a_task(driver)
    second = _raise_in_a_task(driver)
    assert second is first
    assert len(driver.window.findChildren(CrashDialog)) == 1
    first.close()


def _raise_in_a_task(driver: WindowDriver) -> CrashDialog:

    async def broken() -> None:
        raise RuntimeError("boom inside a slot")

    task = driver.window.spawn(broken())
    driver.qtbot.waitUntil(task.done)
    dialogs: list[CrashDialog] = []

    def crash_dialog_shown() -> bool:
        dialogs[:] = [d for d in driver.window.findChildren(CrashDialog) if d.isVisible()]
        return bool(dialogs)

    driver.qtbot.waitUntil(crash_dialog_shown)
    dialog = dialogs[0]
    assert dialog.windowTitle() == "Unexpected problem"
    assert dialog.text() == crash_handler.UNEXPECTED_MESSAGE
    assert "\n" not in dialog.text() and "boom" not in dialog.text()
    assert "boom" not in dialog.informativeText() and "Traceback" not in dialog.informativeText()
    assert dialog.open_folder_button.text() == "Open log folder"
    return dialog
