"""A keyring backend that keeps secrets in process memory, so tests never touch the OS keyring."""

from __future__ import annotations

from keyring.backend import KeyringBackend


class MemoryKeyring(KeyringBackend):
    """In-memory backend; `priority` is high so nothing else is chosen while it is installed."""

    priority = 100  # type: ignore[assignment]

    def __init__(self) -> None:
        super().__init__()
        self.store: dict[tuple[str, str], str] = {}

    def get_password(self, service: str, username: str) -> str | None:
        return self.store.get((service, username))

    def set_password(self, service: str, username: str, password: str) -> None:
        self.store[(service, username)] = password

    def delete_password(self, service: str, username: str) -> None:
        from keyring.errors import PasswordDeleteError

        try:
            del self.store[(service, username)]
        except KeyError:
            raise PasswordDeleteError("no such password") from None
