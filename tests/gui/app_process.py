"""The real `stockade` app as a separate process (offscreen), and waiting on what it logs."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from stockade import diagnostics

STOCKADE = Path(sys.executable).parent / "stockade"
READY_TIMEOUT_S = 60
needs_console_script = pytest.mark.skipif(
    not STOCKADE.exists(), reason="the stockade console script is not installed")


def app_env(home: Path, runtime: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("STOCKADE_")}
    env.update({
        "STOCKADE_HOME": str(home),
        "QT_QPA_PLATFORM": "offscreen",
        "XDG_RUNTIME_DIR": str(runtime),
        # The app probes the keyring at start; the null backend keeps the real one untouched.
        "PYTHON_KEYRING_BACKEND": "keyring.backends.null.Keyring",
    })
    return env


def start_app(*args: str, env: dict[str, str], cwd: Path | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen([str(STOCKADE), *args], env=env, cwd=cwd, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def stop(proc: subprocess.Popen[str]) -> None:
    if proc.poll() is None:
        proc.kill()
    proc.communicate(timeout=30)


def log_text() -> str:
    path = diagnostics.log_file_path()
    return path.read_text(encoding="utf-8") if path.is_file() else ""


def wait_for_log(pattern: str, proc: subprocess.Popen[str], *, count: int = 1,
                 timeout_s: float = READY_TIMEOUT_S) -> str:
    """Poll the app's log until `pattern` appears `count` times; fail if the app exits first."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        text = log_text()
        if text.count(pattern) >= count:
            return text
        if proc.poll() is not None:
            _out, err = proc.communicate()
            pytest.fail(f"the app exited ({proc.returncode}) before logging {pattern!r}: {err}")
        time.sleep(0.1)
    pytest.fail(f"the app did not log {pattern!r} within {timeout_s} s; its log:\n{log_text()}")
