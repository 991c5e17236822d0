"""Where problems go: Qt's own warnings, unhandled asyncio task errors and native crashes all
reach the log folder."""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from PySide6.QtCore import qInstallMessageHandler, qWarning

from stockade import diagnostics
from stockade.ui.common import crash_handler
from stockade.ui.common.crash_dialog import CrashDialog
from tests.conftest import THF_FIXTURES, LogGuard
from tests.gui.app_process import (
    STOCKADE,
    app_env,
    needs_console_script,
    start_app,
    stop,
    wait_for_log,
)
from tests.gui.conftest import WindowDriver


@pytest.fixture
def qt_messages_to_log() -> Iterator[None]:
    previous = crash_handler.install_qt_message_handler()
    try:
        yield
    finally:
        qInstallMessageHandler(previous)  # type: ignore[arg-type]


def test_qt_warnings_are_written_to_the_log(
        qt_messages_to_log: None, log_guard: LogGuard) -> None:
    log_guard.expect("QPainter says hello")
    qWarning("QPainter says hello")
    qt_records = [r for r in log_guard.records if r.name == "stockade.qt"]
    assert [(r.levelno, r.getMessage()) for r in qt_records] == [
        (logging.WARNING, "QPainter says hello")]


def test_an_unhandled_task_error_is_logged_and_reaches_the_user(
        driver: WindowDriver, log_guard: LogGuard) -> None:
    log_guard.expect(r"unexpected ValueError \(Task exception was never retrieved\)")
    loop = asyncio.get_event_loop()
    previous = loop.get_exception_handler()
    crash_handler.install_asyncio_handler(loop)
    try:
        async def forgotten() -> None:
            raise ValueError("nobody awaited me")

        # A task nobody keeps or awaits: asyncio reports its error when it is collected.
        task = loop.create_task(forgotten())
        driver.qtbot.waitUntil(task.done)
        del task
        gc.collect()
        driver.qtbot.waitUntil(lambda: bool(driver.window.findChildren(CrashDialog)))
    finally:
        loop.set_exception_handler(previous)
    errors = [r for r in log_guard.records if r.levelno >= logging.ERROR]
    assert len(errors) == 1
    assert errors[0].exc_info is not None and errors[0].exc_info[0] is ValueError
    for dialog in driver.window.findChildren(CrashDialog):
        dialog.close()


@pytest.fixture
def runtime_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "runtime"
    folder.mkdir(mode=0o700)
    return folder


@needs_console_script
@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_a_segfault_leaves_a_native_trace_in_the_log_folder(
        stockade_home: Path, runtime_dir: Path) -> None:
    proc = start_app(str(THF_FIXTURES / "v1.0-canonical-full.thf"),
                     env=app_env(stockade_home, runtime_dir))
    try:
        wait_for_log("ready:", proc)
        os.kill(proc.pid, signal.SIGSEGV)
        proc.wait(30)
    finally:
        stop(proc)
    assert proc.returncode == -signal.SIGSEGV
    traces = diagnostics.native_crash_traces()
    assert len(traces) == 1
    trace = traces[0].read_text(encoding="utf-8")
    assert trace.startswith("Fatal Python error: Segmentation fault")
    assert "most recent call first" in trace
    assert f".{proc.pid}.log" in traces[0].name


@needs_console_script
def test_a_run_that_ends_normally_leaves_no_trace_file(
        stockade_home: Path, runtime_dir: Path, tmp_path: Path) -> None:
    shot = tmp_path / "shot.png"
    result = subprocess.run(
        [str(STOCKADE), str(THF_FIXTURES / "v1.0-canonical-full.thf"), "--screenshot",
         str(shot)], env=app_env(stockade_home, runtime_dir), capture_output=True, text=True,
        timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    assert shot.is_file()
    assert list((stockade_home / "logs").glob(f"{diagnostics.NATIVE_CRASH_PREFIX}*")) == []
    assert "started (pid" in diagnostics.log_file_path().read_text(encoding="utf-8")
