"""`stockade keys` end to end: real CLI processes sharing the test file keyring."""

from __future__ import annotations

import json
import os
import pty
import select
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest

from tests.helpers.file_keyring import read_keyring_file

REPO_ROOT = Path(__file__).resolve().parents[2]
KEY = "sk-ant-api03-E2eSecret0123456789abcdef"
OTHER = "sk-proj-E2eOther9876543210fedcba"


def _command() -> list[str]:
    script = Path(sys.executable).parent / "stockade"
    return [str(script)] if script.is_file() else [sys.executable, "-m", "stockade.cli.main"]


@pytest.fixture
def keyring_file(tmp_path: Path) -> Path:
    return tmp_path / "keyring.json"


def _env(keyring_file: Path, **extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        PYTHONPATH=str(REPO_ROOT),
        PYTHON_KEYRING_BACKEND="tests.helpers.file_keyring.FileKeyring",
        STOCKADE_TEST_KEYRING=str(keyring_file),
        PYTHONIOENCODING="utf-8",
    )
    env.update(extra)
    return env


def keys(
    keyring_file: Path, *args: str, stdin: str = "", **env: str
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*_command(), "keys", *args],
        input=stdin,
        env=_env(keyring_file, **env),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def assert_no_key(result: subprocess.CompletedProcess[str], *secrets: str) -> None:
    for secret in secrets or (KEY, OTHER):
        assert secret not in result.stdout
        assert secret not in result.stderr


def test_a_piped_key_is_saved_and_seen_by_later_processes(keyring_file: Path) -> None:
    saved = keys(keyring_file, "set", "anthropic", stdin=f"{KEY}\nignored second line\n")
    assert saved.returncode == 0, saved.stderr
    assert "Saved the anthropic key in the system keyring" in saved.stdout
    assert_no_key(saved)
    assert read_keyring_file(keyring_file) == {("stockade", "anthropic"): KEY}

    status = keys(keyring_file, "status", "--json")
    assert status.returncode == 0
    report = json.loads(status.stdout)
    assert report["keyring"]["is_secure"] is True
    by_provider = {p["provider"]: p for p in report["providers"]}
    assert by_provider["anthropic"]["has_key"] is True
    assert by_provider["anthropic"]["source"] == "keyring"
    assert by_provider["openai"]["has_key"] is False
    assert set(by_provider) == {"anthropic", "openai", "local"}
    assert_no_key(status)


def test_status_for_one_provider_exits_1_when_it_has_no_key(keyring_file: Path) -> None:
    missing = keys(keyring_file, "status", "openai")
    assert missing.returncode == 1
    assert "openai: no key" in missing.stdout
    keys(keyring_file, "set", "openai", stdin=OTHER)
    present = keys(keyring_file, "status", "openai")
    assert present.returncode == 0
    assert "openai: key saved in the system keyring" in present.stdout
    assert_no_key(present)


def test_delete_removes_the_key_and_a_second_delete_says_there_was_none(keyring_file: Path) -> None:
    keys(keyring_file, "set", "local", stdin=KEY)
    first = keys(keyring_file, "delete", "local")
    assert first.returncode == 0
    assert "Removed the saved local key." in first.stdout
    assert read_keyring_file(keyring_file) == {}
    second = keys(keyring_file, "delete", "local", "--json")
    assert second.returncode == 0
    assert json.loads(second.stdout)["deleted"] is False


def test_a_key_on_the_command_line_is_refused_without_being_echoed(keyring_file: Path) -> None:
    for args in (("set", "anthropic", KEY), ("set", "anthropic", "--key", KEY), ("set", KEY)):
        result = keys(keyring_file, *args)
        assert result.returncode == 2, args
        assert_no_key(result)
    assert read_keyring_file(keyring_file) == {}


def test_unknown_provider_is_a_usage_error(keyring_file: Path) -> None:
    result = keys(keyring_file, "status", "gemini")
    assert result.returncode == 2
    assert "unknown provider 'gemini'" in result.stderr
    assert "anthropic, openai, local" in result.stderr


@pytest.mark.parametrize("stdin", ["", "\n", "   \n", "sk-with space\n"])
def test_empty_or_impossible_keys_are_refused(keyring_file: Path, stdin: str) -> None:
    result = keys(keyring_file, "set", "openai", stdin=stdin)
    assert result.returncode == 2
    assert "keys set:" in result.stderr
    assert read_keyring_file(keyring_file) == {}


def test_environment_key_is_reported_as_the_source_and_wins(keyring_file: Path) -> None:
    keys(keyring_file, "set", "openai", stdin=KEY)
    result = keys(keyring_file, "status", "openai", "--json", OPENAI_API_KEY=OTHER)
    assert result.returncode == 0
    entry = json.loads(result.stdout)["providers"][0]
    assert entry["source"] == "env"
    assert entry["stored"] is True
    assert_no_key(result)


def test_without_a_secure_keyring_set_refuses_and_points_to_the_env_var(keyring_file: Path) -> None:
    result = keys(
        keyring_file,
        "set",
        "anthropic",
        "--json",
        stdin=KEY,
        PYTHON_KEYRING_BACKEND="keyring.backends.null.Keyring",
    )
    assert result.returncode == 1
    report = json.loads(result.stdout)
    assert report["saved"] is False
    assert report["keyring"]["is_secure"] is False
    assert "ANTHROPIC_API_KEY" in report["error"]
    assert_no_key(result)
    assert not keyring_file.exists()


def test_the_terminal_prompt_hides_the_key(keyring_file: Path) -> None:
    primary, secondary = pty.openpty()
    process = subprocess.Popen(
        [*_command(), "keys", "set", "anthropic"],
        stdin=secondary,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=_env(keyring_file),
        start_new_session=True,  # no controlling terminal: getpass must use the pty on stdin
    )
    os.close(secondary)
    # Type only once the prompt has switched echo off, as a person would after seeing it.
    deadline = time.monotonic() + 30
    while termios.tcgetattr(primary)[3] & termios.ECHO and time.monotonic() < deadline:
        time.sleep(0.02)
    seen = b""
    os.write(primary, f"{KEY}\n".encode())
    out, err = process.communicate(timeout=30)
    while True:
        ready, _, _ = select.select([primary], [], [], 0.2)
        if not ready:
            break
        try:
            chunk = os.read(primary, 1024)
        except OSError:
            break
        if not chunk:
            break
        seen += chunk
    os.close(primary)
    assert process.returncode == 0, err.decode()
    transcript = seen.decode(errors="replace") + out.decode() + err.decode()
    assert "input is hidden" in transcript
    assert KEY not in transcript
    assert read_keyring_file(keyring_file) == {("stockade", "anthropic"): KEY}


def test_a_failing_keyring_is_reported_plainly_with_exit_1(keyring_file: Path) -> None:
    env = _env(keyring_file)
    del env["STOCKADE_TEST_KEYRING"]  # the file keyring now fails every call
    result = subprocess.run(
        [*_command(), "keys", "set", "openai"],
        input=f"{KEY}\n",
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 1
    assert "refused to save 'openai'" in result.stderr
    assert "Traceback" not in result.stderr
    assert_no_key(result)
    status = subprocess.run(
        [*_command(), "keys", "status", "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert status.returncode == 1
    problems = [p["problem"] for p in json.loads(status.stdout)["providers"]]
    assert all(problem and "could not be read" in problem for problem in problems)
