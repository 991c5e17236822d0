"""Provider keys and app secrets: OS keyring with a secure-backend probe and session fallback."""

from stockade.secrets.keystore import (
    ENV_VARS,
    SERVICE,
    KeyAdmin,
    KeyProvider,
    KeyringStatus,
    KeySource,
    KeyStore,
    ProviderKeyStatus,
    SecretsError,
    is_secure_backend,
)
from stockade.secrets.secret_str import SecretStr

__all__ = [
    "ENV_VARS",
    "SERVICE",
    "KeyAdmin",
    "KeyProvider",
    "KeySource",
    "KeyStore",
    "KeyringStatus",
    "ProviderKeyStatus",
    "SecretStr",
    "SecretsError",
    "is_secure_backend",
]
