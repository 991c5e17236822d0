"""Opened by the desktop: a second launch hands its file to the running window; file-open
events open in the running window; the instance socket refuses anything but a launch request."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from PySide6.QtCore import QEvent
from PySide6.QtGui import QFileOpenEvent
from PySide6.QtWidgets import QApplication
from pytestqt.qtbot import QtBot

from stockade.settings import load_settings
from stockade.ui.app import DocumentRequests, FileOpenEvents
from stockade.ui.common import single_instance
from stockade.ui.common.single_instance import InstanceServer, LaunchRequest
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

FIRST = THF_FIXTURES / "v1.0-canonical-full.thf"
SAMPLES = Path(__file__).resolve().parents[2] / "resources" / "samples"
unix_only = pytest.mark.skipif(sys.platform == "win32", reason="the socket is a named pipe there")


@pytest.fixture
def runtime_dir() -> Iterator[Path]:
    # Short on purpose: a Unix socket path must fit in about 100 bytes.
    folder = Path(tempfile.mkdtemp(prefix="stk-"))
    folder.chmod(0o700)
    yield folder
    for child in folder.iterdir():
        child.unlink()
    folder.rmdir()


@pytest.fixture
def server(runtime_dir: Path, monkeypatch: pytest.MonkeyPatch,
           stockade_home: Path) -> Iterator[InstanceServer]:
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime_dir))
    name = single_instance.server_name(single_instance.instance_key(stockade_home))
    instance = InstanceServer(name, None)
    assert instance.listen()
    yield instance
    instance.close()
    instance.deleteLater()


def _exchange(path: str, payload: bytes, replies: list[bytes]) -> threading.Thread:
    """Send `payload` on the socket from another thread (the test thread runs Qt's events)."""

    def talk() -> None:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
            client.settimeout(10)
            client.connect(path)
            client.sendall(payload)
            data = b""
            while not data.endswith(b"\n"):
                chunk = client.recv(64)
                if not chunk:
                    break
                data += chunk
            replies.append(data)

    thread = threading.Thread(target=talk, daemon=True)
    thread.start()
    return thread


def _record(server: InstanceServer) -> tuple[list[str], list[bool]]:
    files: list[str] = []
    activations: list[bool] = []
    server.fileRequested.connect(files.append)
    server.activationRequested.connect(lambda: activations.append(True))
    return files, activations


@unix_only
def test_a_launch_request_is_answered_ok_and_asks_for_the_file(
        server: InstanceServer, qtbot: QtBot) -> None:
    files, activations = _record(server)
    replies: list[bytes] = []
    thread = _exchange(server.name, LaunchRequest(str(FIRST)).encode(), replies)
    qtbot.waitUntil(lambda: replies != [])
    thread.join(5)
    assert replies == [b"ok\n"]
    assert files == [str(FIRST)] and activations == [True]


@unix_only
def test_the_socket_is_private_to_the_user_and_gone_when_the_window_stops_listening(
        server: InstanceServer) -> None:
    socket_file = Path(server.name)
    assert socket_file.is_socket()
    assert socket_file.stat().st_mode & 0o077 == 0
    server.close()
    assert not socket_file.exists()


@unix_only
@pytest.mark.parametrize("payload", [
    b"open /etc/passwd please\n",
    json.dumps({"v": 1, "file": "relative/model.thf"}).encode() + b"\n",
    json.dumps({"v": 1, "file": "/tmp/a\x00b.thf"}).encode() + b"\n",
    json.dumps({"v": 2, "file": "/tmp/model.thf"}).encode() + b"\n",
    json.dumps({"v": 1, "file": ["/a.thf", "/b.thf"]}).encode() + b"\n",
    b"\xff\xfe not utf-8\n",
    b"[" * 100_000 + b"\n",
    b"x" * (single_instance.MAX_REQUEST_BYTES + 10),
], ids=["text", "relative", "nul", "version", "list", "bytes", "deep", "oversized"])
def test_anything_but_a_launch_request_is_refused_and_opens_nothing(
        server: InstanceServer, qtbot: QtBot, log_guard: LogGuard, payload: bytes) -> None:
    log_guard.expect("ignored a message on the instance socket")
    files, activations = _record(server)
    replies: list[bytes] = []
    thread = _exchange(server.name, payload, replies)
    qtbot.waitUntil(lambda: replies != [])
    thread.join(5)
    assert replies == [b"error\n"]
    assert files == [] and activations == []


@unix_only
def test_a_socket_left_by_a_crashed_run_is_taken_over(
        runtime_dir: Path, monkeypatch: pytest.MonkeyPatch, stockade_home: Path) -> None:
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime_dir))
    name = single_instance.server_name(single_instance.instance_key(stockade_home))
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(name)  # bound, never listening, file left behind: what a killed run leaves
    stale.close()
    assert Path(name).exists()
    assert single_instance.hand_off(name, str(FIRST)) is False
    instance = InstanceServer(name, None)
    try:
        assert instance.listen()
    finally:
        instance.close()


def test_keys_differ_per_data_folder_and_paths_stay_short(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = single_instance.instance_key(tmp_path / "a")
    assert first == single_instance.instance_key(tmp_path / "a")
    assert first != single_instance.instance_key(tmp_path / "b")
    deep = tmp_path / ("d" * 120)
    deep.mkdir()
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(deep))
    assert single_instance.server_name(first) == first  # too long for a socket path: Qt's temp


def test_a_file_open_event_opens_the_file_in_the_running_window(
        driver: WindowDriver, qapp: QApplication) -> None:
    requests = DocumentRequests(driver.window)
    events = FileOpenEvents(qapp)
    events.fileRequested.connect(requests.request)
    qapp.installEventFilter(events)
    try:
        second = SAMPLES / "healthcare-system.thf"
        assert QApplication.sendEvent(qapp, QFileOpenEvent(str(second)))
        driver.qtbot.waitUntil(lambda: driver.window.open_document.path == second)
        # Other events pass through the filter untouched.
        assert not events.eventFilter(qapp, QEvent(QEvent.Type.User))
    finally:
        qapp.removeEventFilter(events)
        events.deleteLater()


@needs_console_script
@unix_only
def test_a_second_launch_hands_its_file_to_the_running_window(
        stockade_home: Path, runtime_dir: Path, tmp_path: Path) -> None:
    env = app_env(stockade_home, runtime_dir)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    second = elsewhere / "second.thf"
    second.write_bytes((SAMPLES / "iot-smart-building.thf").read_bytes())
    first = start_app(str(FIRST), env=env)
    try:
        wait_for_log("ready:", first)

        started = time.monotonic()
        handed = subprocess.run([str(STOCKADE), "second.thf"], cwd=elsewhere, env=env,
                                capture_output=True, text=True, timeout=60, check=False)
        assert handed.returncode == 0, handed.stderr
        assert "opened in the Stockade window already running" in handed.stderr
        assert time.monotonic() - started < 30
        # The running window opened it (relative to the second launch's folder): it is now
        # the most recent file.
        deadline = time.monotonic() + 30
        while load_settings().recent_files[:1] != [str(second)]:
            assert time.monotonic() < deadline, load_settings().recent_files
            time.sleep(0.1)

        bare = subprocess.run([str(STOCKADE)], env=env, capture_output=True, text=True,
                              timeout=60, check=False)
        assert bare.returncode == 0, bare.stderr
        assert "brought forward" in bare.stderr
        assert first.poll() is None
    finally:
        stop(first)


@needs_console_script
@unix_only
def test_with_no_window_running_a_launch_opens_its_own_even_over_a_stale_socket(
        stockade_home: Path, runtime_dir: Path) -> None:
    env = app_env(stockade_home, runtime_dir)
    crashed = start_app(str(FIRST), env=env)
    try:
        wait_for_log("ready:", crashed)
        os.kill(crashed.pid, signal.SIGKILL)  # no cleanup: the socket file stays
        crashed.wait(30)
    finally:
        stop(crashed)
    assert list(runtime_dir.glob("stockade-*.sock"))

    fresh = start_app(str(FIRST), env=env)
    try:
        wait_for_log("ready:", fresh, count=2)
        assert fresh.poll() is None
    finally:
        stop(fresh)
