"""Provider API keys and app secrets in the OS keyring, with a session-only fallback.

Where a key comes from, in order:

1. the environment (`ANTHROPIC_API_KEY`, `OPENAI_API_KEY`) when `use_env` is on (the default).
   An explicit per-run variable wins over a stored key, as with most command-line tools, so a
   headless or CI run uses exactly the key it was given; `provider_status` reports the source
   and whether a stored key is being shadowed;
2. the OS keyring (service `stockade`, username = provider id), but only a backend that
   `is_secure_backend` accepts;
3. the session store: keys entered while no secure keyring exists live in process memory only
   and are gone when the process ends. Stockade never writes a key to disk itself.

Keys are held in `SecretStr` while in memory and never appear in messages, exceptions,
`repr` or logs. Only provider factories call `KeyStore.get_key`; everything that manages keys
(settings dialog, `stockade keys`) goes through `KeyAdmin`, which cannot read a key back.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum

import keyring
from keyring.backend import KeyringBackend
from keyring.backends.chainer import ChainerBackend
from keyring.errors import PasswordDeleteError

from stockade.secrets.secret_str import SecretStr

log = logging.getLogger(__name__)

SERVICE = "stockade"
MAX_KEY_LENGTH = 4096


class KeyProvider(StrEnum):
    """Providers that take an API key (offline and replay need none)."""

    ANTHROPIC = "anthropic"
    OPENAI = "openai"
    LOCAL = "local"


ENV_VARS: Mapping[KeyProvider, str] = {
    KeyProvider.ANTHROPIC: "ANTHROPIC_API_KEY",
    KeyProvider.OPENAI: "OPENAI_API_KEY",
}


class KeySource(StrEnum):
    """Where the key a provider would use comes from."""

    ENV = "env"
    KEYRING = "keyring"
    SESSION = "session"
    NONE = "none"


class SecretsError(Exception):
    """A key could not be stored, read or removed; the text is authored and never holds a key."""


@dataclass(frozen=True, slots=True)
class KeyringStatus:
    """Whether keys persist securely, and what the user should be told about it."""

    is_secure: bool
    backend: str
    message: str
    session_only: bool


@dataclass(frozen=True, slots=True)
class ProviderKeyStatus:
    """What `keys status` and the settings dialog show for one provider (never the key)."""

    provider: KeyProvider
    has_key: bool
    source: KeySource
    stored: bool
    """A key is saved in the keyring or session store (it may be shadowed by the environment)."""
    env_var: str | None
    problem: str | None = None

    def to_json(self) -> dict[str, object]:
        return {
            "provider": self.provider.value,
            "has_key": self.has_key,
            "source": self.source.value,
            "stored": self.stored,
            "env_var": self.env_var,
            "problem": self.problem,
        }


# --- backend classification ----------------------------------------------------------------

_INSECURE_MODULES = ("keyring.backends.fail", "keyring.backends.null", "keyrings.alt")


def _is_insecure_class(cls: type) -> bool:
    for klass in cls.__mro__:
        module = getattr(klass, "__module__", "") or ""
        for prefix in _INSECURE_MODULES:
            if module == prefix or module.startswith(prefix + "."):
                return True
    return False


def _chain_members(backend: ChainerBackend) -> list[KeyringBackend]:
    try:
        return list(backend.backends)
    except Exception:  # a member that fails to construct makes the whole chain unusable
        return []


def is_secure_backend(backend: KeyringBackend) -> bool:
    """Whether keys written to `backend` are protected by the OS.

    The fail and null backends store nothing, and every `keyrings.alt` backend writes files
    (plaintext or with a key kept beside them), so they are insecure. A chain is secure when at
    least one member is; `KeyStore` then writes to that member directly so a chained plaintext
    store can never receive a key.
    """
    return _secure_target(backend) is not None


def _secure_target(backend: KeyringBackend) -> KeyringBackend | None:
    if isinstance(backend, ChainerBackend):
        for member in _chain_members(backend):  # already sorted by priority, highest first
            target = _secure_target(member)
            if target is not None:
                return target
        return None
    return None if _is_insecure_class(type(backend)) else backend


def describe_backend(backend: KeyringBackend) -> str:
    """A readable name for a backend, e.g. `keyring.backends.SecretService.Keyring`."""
    cls = type(backend)
    return f"{cls.__module__}.{cls.__qualname__}"


# --- session store -----------------------------------------------------------------------------


class SessionKeys:
    """Secrets kept in process memory only, used when no secure keyring exists."""

    def __init__(self) -> None:
        self._items: dict[str, SecretStr] = {}

    def get(self, name: str) -> SecretStr | None:
        return self._items.get(name)

    def set(self, name: str, value: SecretStr) -> None:
        self._items[name] = value

    def delete(self, name: str) -> None:
        self._items.pop(name, None)

    def clear(self) -> None:
        self._items.clear()

    def __contains__(self, name: object) -> bool:
        return name in self._items

    def __repr__(self) -> str:
        return f"SessionKeys(names={sorted(self._items)!r})"


SESSION_KEYS = SessionKeys()
"""The process-wide session store, so every `KeyStore` in one app run sees the same keys."""


# --- input checks ----------------------------------------------------------------------------

_SECRET_NAME = re.compile(r"^[a-z][a-z0-9-]{0,63}$")


def parse_provider(provider: str) -> KeyProvider:
    """The provider id as a `KeyProvider`; raises `SecretsError` naming the valid ids."""
    try:
        return KeyProvider(provider)
    except ValueError:
        valid = ", ".join(p.value for p in KeyProvider)
        raise SecretsError(f"Unknown provider {provider!r}; expected one of: {valid}.") from None


def clean_key(key: str) -> str:
    """The key without surrounding whitespace; refuses keys that cannot be a real API key."""
    cleaned = key.strip()
    if not cleaned:
        raise SecretsError("The key is empty.")
    if len(cleaned) > MAX_KEY_LENGTH:
        raise SecretsError(f"The key is longer than {MAX_KEY_LENGTH} characters.")
    # Keys travel in HTTP headers: printable ASCII without spaces is all a header can carry.
    if any(not ("!" <= c <= "~") for c in cleaned):
        raise SecretsError(
            "The key contains spaces, line breaks or characters that cannot be sent to a provider."
        )
    return cleaned


def _check_secret_name(name: str) -> str:
    if not _SECRET_NAME.match(name):
        raise SecretsError("A secret name must be lowercase letters, digits and dashes.")
    if name in {p.value for p in KeyProvider}:
        raise SecretsError("Provider keys are managed with the key functions, not as secrets.")
    return name


# --- the store -----------------------------------------------------------------------------------

_SECURE_MESSAGE = "Keys are kept in the system keyring ({backend})."
_INSECURE_MESSAGE = (
    "No secure system keyring was found, so keys you enter are kept in memory for this "
    "session only and are forgotten when Stockade closes. For headless runs, set "
    "ANTHROPIC_API_KEY or OPENAI_API_KEY instead. A turn you keep for later is encrypted "
    "under a passphrase you choose, and the audit trail is not keyed."
)


class KeyStore:
    """Reads and writes provider keys and app secrets; see the module docstring for the order."""

    def __init__(
        self,
        backend: KeyringBackend | None = None,
        *,
        session: SessionKeys | None = None,
        environ: Mapping[str, str] | None = None,
        use_env: bool = True,
    ) -> None:
        self._fixed_backend = backend
        self._session = session if session is not None else SESSION_KEYS
        self._environ = environ
        self._use_env = use_env

    def __repr__(self) -> str:
        return f"KeyStore(use_env={self._use_env})"

    # backend resolution

    def _backend(self) -> KeyringBackend | None:
        if self._fixed_backend is not None:
            return self._fixed_backend
        try:
            return keyring.get_keyring()
        except Exception as exc:
            log.warning("the system keyring could not be loaded (%s)", type(exc).__name__)
            return None

    def _target(self) -> KeyringBackend | None:
        backend = self._backend()
        return _secure_target(backend) if backend is not None else None

    def status(self) -> KeyringStatus:
        """Whether keys persist in a secure keyring or only for this session."""
        backend = self._backend()
        target = _secure_target(backend) if backend is not None else None
        if target is None:
            name = describe_backend(backend) if backend is not None else "none"
            return KeyringStatus(
                is_secure=False, backend=name, message=_INSECURE_MESSAGE, session_only=True
            )
        name = describe_backend(target)
        return KeyringStatus(
            is_secure=True,
            backend=name,
            message=_SECURE_MESSAGE.format(backend=name),
            session_only=False,
        )

    # raw storage shared by keys and secrets

    def _read(self, name: str) -> SecretStr | None:
        session_value = self._session.get(name)
        target = self._target()
        if target is None:
            return session_value
        try:
            value = target.get_password(SERVICE, name)
        except Exception as exc:
            log.warning("reading %r from the system keyring failed (%s)", name, type(exc).__name__)
            raise SecretsError(
                f"The system keyring could not be read for {name!r}. Unlock it and try again."
            ) from None
        if value:
            return SecretStr(value)
        return session_value

    def _write(self, name: str, value: SecretStr) -> KeySource:
        target = self._target()
        if target is None:
            self._session.set(name, value)
            return KeySource.SESSION
        try:
            target.set_password(SERVICE, name, value.reveal())
        except Exception as exc:
            log.warning("saving %r to the system keyring failed (%s)", name, type(exc).__name__)
            raise SecretsError(
                f"The system keyring refused to save {name!r}. Unlock it and try again."
            ) from None
        self._session.delete(name)  # a stale session copy must not outlive the saved one
        return KeySource.KEYRING

    def _delete(self, name: str) -> None:
        self._session.delete(name)
        target = self._target()
        if target is None:
            return
        try:
            target.delete_password(SERVICE, name)
        except PasswordDeleteError:
            return  # nothing stored: deleting is already done
        except Exception as exc:
            log.warning("removing %r from the system keyring failed (%s)", name, type(exc).__name__)
            raise SecretsError(
                f"The system keyring could not remove {name!r}. Unlock it and try again."
            ) from None

    def _env_key(self, provider: KeyProvider) -> str | None:
        if not self._use_env:
            return None
        var = ENV_VARS.get(provider)
        if var is None:
            return None
        environ = self._environ if self._environ is not None else os.environ
        value = environ.get(var, "").strip()
        return value or None

    # provider keys

    def set_key(self, provider: str, key: str) -> KeySource:
        """Save a key (keyring when secure, else this session); returns where it went."""
        which = parse_provider(provider)
        return self._write(which.value, SecretStr(clean_key(key)))

    def get_key(self, provider: str) -> str | None:
        """The key a provider should send, or None. Only provider factories call this.

        Raises `SecretsError` when the keyring fails and no environment key is available.
        """
        which = parse_provider(provider)
        env = self._env_key(which)
        if env is not None:
            return env
        stored = self._read(which.value)
        return stored.reveal() if stored else None

    def has_key(self, provider: str) -> bool:
        """Whether a key is available from any source; never raises for keyring faults."""
        return self.provider_status(provider).has_key

    def delete_key(self, provider: str) -> None:
        """Forget the stored key (keyring and session); an environment variable is untouched."""
        self._delete(parse_provider(provider).value)

    def provider_status(self, provider: str) -> ProviderKeyStatus:
        """Where this provider's key would come from; keyring faults become `problem` text."""
        which = parse_provider(provider)
        env_var = ENV_VARS.get(which)
        problem: str | None = None
        stored_source = KeySource.NONE
        try:
            target = self._target()
            if target is not None and target.get_password(SERVICE, which.value):
                stored_source = KeySource.KEYRING
            elif which.value in self._session:
                stored_source = KeySource.SESSION
        except Exception as exc:
            log.warning("checking the system keyring failed (%s)", type(exc).__name__)
            problem = "The system keyring could not be read. Unlock it and try again."
            if which.value in self._session:
                stored_source = KeySource.SESSION
        env_present = self._env_key(which) is not None
        source = KeySource.ENV if env_present else stored_source
        return ProviderKeyStatus(
            provider=which,
            has_key=source is not KeySource.NONE,
            source=source,
            stored=stored_source is not KeySource.NONE,
            env_var=env_var,
            problem=problem,
        )

    # app secrets (e.g. governance's snapshot-encryption key)

    def get_secret(self, name: str) -> str | None:
        """An app secret such as `snapshot-key`, or None; raises `SecretsError` on keyring faults."""
        stored = self._read(_check_secret_name(name))
        return stored.reveal() if stored else None

    def set_secret(self, name: str, value: str) -> KeySource:
        """Save an app secret (keyring when secure, else this session); returns where it went."""
        if not value:
            raise SecretsError("A secret cannot be empty.")
        return self._write(_check_secret_name(name), SecretStr(value))

    def delete_secret(self, name: str) -> None:
        """Forget an app secret."""
        self._delete(_check_secret_name(name))

    def admin(self) -> KeyAdmin:
        """The management view of this store: everything except reading a key back."""
        return KeyAdmin(self)


class KeyAdmin:
    """Set, check and delete keys without any way to read one back (UI and CLI use this)."""

    __slots__ = ("__store",)

    def __init__(self, store: KeyStore) -> None:
        self.__store = store

    def __repr__(self) -> str:
        return "KeyAdmin()"

    def set_key(self, provider: str, key: str) -> KeySource:
        return self.__store.set_key(provider, key)

    def has_key(self, provider: str) -> bool:
        return self.__store.has_key(provider)

    def delete_key(self, provider: str) -> None:
        self.__store.delete_key(provider)

    def provider_status(self, provider: str) -> ProviderKeyStatus:
        return self.__store.provider_status(provider)

    def status(self) -> KeyringStatus:
        return self.__store.status()
