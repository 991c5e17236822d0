"""The real `stockade` command in app mode, and the handling of unexpected exceptions."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from PySide6.QtGui import QImage

from stockade.ui.common import crash_handler
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


def test_unexpected_exception_is_logged_with_traceback_and_shown_in_one_line(
    driver: WindowDriver, log_guard: LogGuard, stockade_home: Path
) -> None:
    log_guard.expect("unexpected RuntimeError")
    log_file = crash_handler.install_log_file()
    assert log_file.parent == stockade_home / "logs"
    try:
        _raise_in_a_task(driver)
    finally:
        crash_handler.remove_log_file()
    assert "RuntimeError: boom inside a slot" in log_file.read_text(encoding="utf-8")


def _raise_in_a_task(driver: WindowDriver) -> None:

    async def broken() -> None:
        raise RuntimeError("boom inside a slot")

    task = driver.window.spawn(broken())
    driver.qtbot.waitUntil(task.done)
    driver.qtbot.waitUntil(lambda: driver.prompts.errors != [])
    title, message = driver.prompts.errors[-1]
    assert message == crash_handler.UNEXPECTED_MESSAGE
    assert title == "Unexpected problem"
    assert "\n" not in message and "boom" not in message
