"""A TEST-ONLY keyring backend that shares secrets between processes through one JSON file.

End-to-end tests run several `stockade` processes in a row (`keys set`, then `assist`, then
`runs resume` ...) and need them to see the same keyring without touching the real OS
keyring. Point each child process at this backend and at a file inside the test's tmp dir:

    env = {
        **os.environ,
        "PYTHONPATH": str(REPO_ROOT),          # so `tests.helpers.file_keyring` imports
        "PYTHON_KEYRING_BACKEND": "tests.helpers.file_keyring.FileKeyring",
        "STOCKADE_TEST_KEYRING": str(tmp_path / "keyring.json"),
    }
    subprocess.run([stockade_exe, "keys", "set", "anthropic"], input="sk-test\\n", env=env, ...)

`keyring` reads `PYTHON_KEYRING_BACKEND` itself, so the application needs no test hook.
The parent test can inspect the file with `read_keyring_file(path)`. Stockade's `is_secure`
probe accepts this backend (it is not a `keyrings.alt` store), so keys set through it persist
like they would in a real keyring. Never use it outside tests: it stores secrets in plaintext.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from keyring.backend import KeyringBackend
from keyring.errors import InitError, PasswordDeleteError

ENV_VAR = "STOCKADE_TEST_KEYRING"


def _entry(service: str, username: str) -> str:
    return f"{service}\x1f{username}"


def read_keyring_file(path: Path) -> dict[tuple[str, str], str]:
    """The file's contents as {(service, username): password}; empty when it does not exist."""
    if not path.exists():
        return {}
    raw = json.loads(path.read_text(encoding="utf-8"))
    out: dict[tuple[str, str], str] = {}
    for key, value in raw.items():
        service, _, username = key.partition("\x1f")
        out[(service, username)] = value
    return out


class FileKeyring(KeyringBackend):
    """Keeps passwords in the JSON file named by `$STOCKADE_TEST_KEYRING`."""

    priority = 1  # type: ignore[assignment]

    def _path(self) -> Path:
        name = os.environ.get(ENV_VAR)
        if not name:
            raise InitError(
                f"{ENV_VAR} is not set; the test file keyring has nowhere to store data"
            )
        return Path(name)

    def _load(self) -> dict[str, str]:
        path = self._path()
        if not path.exists():
            return {}
        data = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(data, dict):
            raise InitError("the test keyring file does not hold a JSON object")
        return {str(k): str(v) for k, v in data.items()}

    def _save(self, data: dict[str, str]) -> None:
        path = self._path()
        path.parent.mkdir(parents=True, exist_ok=True)
        # Atomic replace so a process reading concurrently never sees half a file.
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".keyring-", suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(data, handle, sort_keys=True)
        os.replace(tmp, path)

    def get_password(self, service: str, username: str) -> str | None:
        return self._load().get(_entry(service, username))

    def set_password(self, service: str, username: str, password: str) -> None:
        data = self._load()
        data[_entry(service, username)] = password
        self._save(data)

    def delete_password(self, service: str, username: str) -> None:
        data = self._load()
        if data.pop(_entry(service, username), None) is None:
            raise PasswordDeleteError("no such password")
        self._save(data)
