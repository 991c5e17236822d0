"""KeyStore: keyring storage, the is_secure probe, session fallback, env keys, no key leaks."""

from __future__ import annotations

import logging
import pickle
import types
from typing import Any

import pytest
from keyring.backend import KeyringBackend
from keyring.backends import fail, null
from keyring.backends.chainer import ChainerBackend

from stockade.secrets import (
    KeyAdmin,
    KeySource,
    KeyStore,
    SecretsError,
    SecretStr,
    is_secure_backend,
)
from stockade.secrets.keystore import SESSION_KEYS, SessionKeys, clean_key
from tests.conftest import LogGuard
from tests.helpers.memory_keyring import MemoryKeyring

KEY = "sk-ant-api03-Secret0123456789abcdefXYZ"
OTHER = "sk-proj-Another9876543210zyxw"


def _alt_file_backend() -> type[KeyringBackend]:
    """A backend class that claims to live in `keyrings.alt.file`, like the plaintext store."""

    def get_password(self: Any, service: str, username: str) -> str | None:
        return None

    def set_password(self: Any, service: str, username: str, password: str) -> None:
        raise AssertionError("an insecure backend must never receive a key")

    def body(namespace: dict[str, Any]) -> None:
        namespace.update(
            __module__="keyrings.alt.file",
            priority=1,
            get_password=get_password,
            set_password=set_password,
            delete_password=set_password,
        )

    return types.new_class("PlaintextKeyring", (KeyringBackend,), exec_body=body)


PlaintextLike = _alt_file_backend()


class FakeChain(ChainerBackend):
    """A chain with a fixed member list instead of the installed backends."""

    def __init__(self, members: list[KeyringBackend]) -> None:
        super().__init__()
        self._members = members

    @property  # type: ignore[override]
    def backends(self) -> list[KeyringBackend]:
        return self._members


class BrokenKeyring(KeyringBackend):
    """Fails every call, and its error text echoes the password like a careless backend might."""

    priority = 1  # type: ignore[assignment]

    def get_password(self, service: str, username: str) -> str | None:
        raise RuntimeError(f"dbus locked while reading {service}/{username}")

    def set_password(self, service: str, username: str, password: str) -> None:
        raise RuntimeError(f"dbus locked, could not store {password}")

    def delete_password(self, service: str, username: str) -> None:
        raise RuntimeError("dbus locked")


# --- keyring storage ---------------------------------------------------------------------------


def test_key_is_saved_in_the_keyring_under_service_stockade(memory_keyring: MemoryKeyring) -> None:
    store = KeyStore()
    assert store.set_key("anthropic", f"  {KEY}\n") is KeySource.KEYRING
    assert memory_keyring.store == {("stockade", "anthropic"): KEY}
    assert store.get_key("anthropic") == KEY
    assert store.has_key("anthropic")
    assert not store.has_key("openai")
    assert store.get_key("openai") is None


def test_deleting_a_key_removes_it_and_deleting_again_is_harmless(
    memory_keyring: MemoryKeyring,
) -> None:
    store = KeyStore()
    store.set_key("openai", KEY)
    store.delete_key("openai")
    assert memory_keyring.store == {}
    store.delete_key("openai")
    assert not store.has_key("openai")


def test_keys_for_each_provider_are_kept_apart() -> None:
    store = KeyStore()
    store.set_key("anthropic", KEY)
    store.set_key("local", OTHER)
    assert store.get_key("anthropic") == KEY
    assert store.get_key("local") == OTHER


def test_unknown_provider_is_refused_with_the_valid_ids() -> None:
    with pytest.raises(SecretsError, match="anthropic, openai, local"):
        KeyStore().set_key("gemini", KEY)


@pytest.mark.parametrize(
    "bad", ["", "   \n", "sk-has space", "sk-line\nbreak", "sk-ünicode", "x" * 5000]
)
def test_keys_that_cannot_be_real_are_refused_without_echoing_them(bad: str) -> None:
    with pytest.raises(SecretsError) as caught:
        KeyStore().set_key("anthropic", bad)
    if bad.strip():
        assert bad.strip() not in str(caught.value)


def test_clean_key_strips_surrounding_whitespace_only() -> None:
    assert clean_key(f"\t{KEY} \r\n") == KEY


def test_secure_keyring_status_names_the_backend() -> None:
    status = KeyStore().status()
    assert status.is_secure
    assert not status.session_only
    assert "memory_keyring.MemoryKeyring" in status.backend


# --- is_secure probe -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "backend",
    [fail.Keyring(), null.Keyring(), PlaintextLike()],
    ids=["fail", "null", "keyrings.alt.file"],
)
def test_fail_null_and_file_backends_are_insecure(backend: KeyringBackend) -> None:
    assert not is_secure_backend(backend)


def test_a_subclass_of_an_alt_backend_is_still_insecure() -> None:
    class Derived(PlaintextLike):  # type: ignore[misc, valid-type]
        pass

    Derived.__module__ = "somewhere.else"
    assert not is_secure_backend(Derived())


def test_a_chain_of_only_insecure_backends_is_insecure() -> None:
    assert not is_secure_backend(FakeChain([fail.Keyring(), PlaintextLike()]))
    assert not is_secure_backend(FakeChain([]))


def test_a_chain_with_a_secure_member_writes_to_that_member_only() -> None:
    secure = MemoryKeyring()
    chain = FakeChain([PlaintextLike(), secure])
    assert is_secure_backend(chain)
    store = KeyStore(chain)
    assert store.set_key("openai", KEY) is KeySource.KEYRING
    assert secure.store == {("stockade", "openai"): KEY}
    assert store.status().backend.endswith("MemoryKeyring")


def test_test_doubles_count_as_secure() -> None:
    from tests.helpers.file_keyring import FileKeyring

    assert is_secure_backend(MemoryKeyring())
    assert is_secure_backend(FileKeyring())


# --- session-only fallback -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "backend", [fail.Keyring(), null.Keyring(), PlaintextLike()], ids=["fail", "null", "alt"]
)
def test_without_a_secure_keyring_keys_live_in_the_session_only(backend: KeyringBackend) -> None:
    store = KeyStore(backend)
    status = store.status()
    assert not status.is_secure
    assert status.session_only
    assert "session only" in status.message
    assert store.set_key("anthropic", KEY) is KeySource.SESSION
    assert store.get_key("anthropic") == KEY
    assert store.provider_status("anthropic").source is KeySource.SESSION
    store.delete_key("anthropic")
    assert store.get_key("anthropic") is None


def test_session_keys_are_shared_by_every_store_in_the_process() -> None:
    KeyStore(fail.Keyring()).set_key("openai", KEY)
    assert KeyStore(null.Keyring()).get_key("openai") == KEY
    assert "openai" in SESSION_KEYS


def test_saving_to_a_secure_keyring_drops_an_older_session_copy(
    memory_keyring: MemoryKeyring,
) -> None:
    KeyStore(fail.Keyring()).set_key("anthropic", OTHER)
    store = KeyStore()
    store.set_key("anthropic", KEY)
    assert "anthropic" not in SESSION_KEYS
    assert store.get_key("anthropic") == KEY


def test_an_injected_session_store_is_used_instead_of_the_process_one() -> None:
    session = SessionKeys()
    KeyStore(fail.Keyring(), session=session).set_key("local", KEY)
    assert "local" in session
    assert "local" not in SESSION_KEYS


# --- keyring failures ------------------------------------------------------------------------------


def test_keyring_failures_become_plain_secrets_errors_without_key_text(
    log_guard: LogGuard, caplog: pytest.LogCaptureFixture
) -> None:
    log_guard.expect(r"system keyring failed \(RuntimeError\)")
    store = KeyStore(BrokenKeyring())
    with caplog.at_level(logging.DEBUG), pytest.raises(SecretsError) as caught:
        store.set_key("anthropic", KEY)
    error = caught.value
    assert KEY not in str(error)
    assert KEY not in repr(error)
    assert "dbus" not in str(error)
    assert error.__cause__ is None
    assert error.__suppress_context__
    assert KEY not in caplog.text
    with pytest.raises(SecretsError, match="could not be read"):
        store.get_key("anthropic")
    with pytest.raises(SecretsError, match="could not remove"):
        store.delete_key("anthropic")


def test_status_reports_a_keyring_fault_instead_of_raising(log_guard: LogGuard) -> None:
    log_guard.expect(r"checking the system keyring failed")
    status = KeyStore(BrokenKeyring()).provider_status("openai")
    assert not status.has_key
    assert status.problem is not None
    assert "could not be read" in status.problem


def test_an_environment_key_still_works_when_the_keyring_is_broken(log_guard: LogGuard) -> None:
    store = KeyStore(BrokenKeyring(), environ={"ANTHROPIC_API_KEY": KEY})
    assert store.get_key("anthropic") == KEY


# --- environment keys --------------------------------------------------------------------------------


def test_an_environment_key_is_used_when_nothing_is_stored() -> None:
    store = KeyStore(environ={"OPENAI_API_KEY": f" {KEY} "})
    assert store.get_key("openai") == KEY
    status = store.provider_status("openai")
    assert status.source is KeySource.ENV
    assert status.has_key
    assert not status.stored
    assert status.env_var == "OPENAI_API_KEY"


def test_an_environment_key_wins_over_a_stored_key_and_status_says_so() -> None:
    store = KeyStore(environ={"ANTHROPIC_API_KEY": OTHER})
    store.set_key("anthropic", KEY)
    assert store.get_key("anthropic") == OTHER
    status = store.provider_status("anthropic")
    assert status.source is KeySource.ENV
    assert status.stored


def test_environment_keys_are_ignored_when_disabled() -> None:
    store = KeyStore(environ={"ANTHROPIC_API_KEY": OTHER}, use_env=False)
    assert store.get_key("anthropic") is None
    assert store.provider_status("anthropic").source is KeySource.NONE


def test_the_real_process_environment_is_read_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    assert KeyStore().get_key("anthropic") == KEY
    assert KeyStore().get_key("local") is None  # local has no standard variable


def test_blank_environment_variables_count_as_absent() -> None:
    assert KeyStore(environ={"OPENAI_API_KEY": "  "}).get_key("openai") is None


# --- app secrets ----------------------------------------------------------------------------------


def test_app_secrets_share_the_keyring_under_their_own_name(memory_keyring: MemoryKeyring) -> None:
    store = KeyStore()
    assert store.set_secret("snapshot-key", "c2VjcmV0LWJ5dGVz") is KeySource.KEYRING
    assert memory_keyring.store[("stockade", "snapshot-key")] == "c2VjcmV0LWJ5dGVz"
    assert store.get_secret("snapshot-key") == "c2VjcmV0LWJ5dGVz"
    store.delete_secret("snapshot-key")
    assert store.get_secret("snapshot-key") is None


def test_app_secrets_fall_back_to_the_session_without_a_secure_keyring() -> None:
    store = KeyStore(null.Keyring())
    assert store.set_secret("snapshot-key", "abc") is KeySource.SESSION
    assert store.get_secret("snapshot-key") == "abc"


@pytest.mark.parametrize("name", ["anthropic", "openai", "Snapshot", "../x", ""])
def test_secret_names_cannot_reach_provider_keys_or_be_malformed(name: str) -> None:
    with pytest.raises(SecretsError):
        KeyStore().get_secret(name)


def test_an_empty_secret_is_refused() -> None:
    with pytest.raises(SecretsError):
        KeyStore().set_secret("snapshot-key", "")


# --- no key leaks (SEC-T-19 and friends) ------------------------------------------------------------


def test_the_admin_view_has_no_way_to_read_a_key_back() -> None:
    admin = KeyStore().admin()
    assert isinstance(admin, KeyAdmin)
    for name in ("get_key", "get_secret", "_store", "store", "__dict__"):
        assert not hasattr(admin, name)
    admin.set_key("openai", KEY)
    assert admin.has_key("openai")
    assert admin.provider_status("openai").source is KeySource.KEYRING
    assert admin.status().is_secure
    admin.delete_key("openai")
    assert not admin.has_key("openai")


def test_no_repr_or_status_shows_a_key() -> None:
    store = KeyStore(fail.Keyring())
    store.set_key("anthropic", KEY)
    status = store.provider_status("anthropic")
    texts = [
        repr(store),
        repr(store.admin()),
        repr(SESSION_KEYS),
        repr(status),
        str(status.to_json()),
        repr(store.status()),
        repr(SESSION_KEYS.get("anthropic")),
    ]
    for text in texts:
        assert KEY not in text
        assert "Secret0123" not in text


def test_key_operations_log_nothing_that_contains_a_key(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.DEBUG):
        store = KeyStore()
        store.set_key("anthropic", KEY)
        store.get_key("anthropic")
        store.provider_status("anthropic")
        store.delete_key("anthropic")
        KeyStore(fail.Keyring()).set_key("openai", KEY)
    assert KEY not in caplog.text
    for record in caplog.records:
        assert KEY not in repr(record.args)


def test_secret_str_hides_its_value_everywhere_but_reveal() -> None:
    secret = SecretStr(KEY)
    assert secret.reveal() == KEY
    for text in (
        repr(secret),
        str(secret),
        f"{secret}",
        f"{secret!r}",
        format(secret, ""),
        repr([secret]),
    ):
        assert KEY not in text
    assert secret == SecretStr(KEY)
    assert secret != SecretStr(OTHER)
    assert bool(secret)
    with pytest.raises(TypeError):
        hash(secret)
    with pytest.raises(TypeError):
        pickle.dumps(secret)
