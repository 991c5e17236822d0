"""AES-256-GCM sealing of parked-run snapshots under a key kept in the OS keyring.

Envelope (version 1): b"STKS" magic, version byte, algorithm byte (1 = AES-256-GCM), a fresh
96-bit nonce, then ciphertext with its 16-byte tag. The associated data binds the envelope
header and the run id, so a snapshot copied onto another run's row does not open.
"""

from __future__ import annotations

import base64
import binascii
import os
from typing import Protocol

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

SNAPSHOT_KEY_NAME = "snapshot-key"
SNAPSHOT_KEY_ENV = "STOCKADE_SNAPSHOT_KEY"
"""Headless machines without a secure keyring (CI, servers) may supply the snapshot key as
base64 of 32 random bytes in this variable, as they supply provider keys; it then wins over
the keyring and is never written anywhere by Stockade."""
_MAGIC = b"STKS"
_VERSION = 1
_ALG_AES256GCM = 1
_HEADER = _MAGIC + bytes([_VERSION, _ALG_AES256GCM])
_NONCE_BYTES = 12
_KEY_BYTES = 32


class SecretStore(Protocol):
    """The part of `stockade.secrets.KeyStore` sealing needs."""

    def get_secret(self, name: str) -> str | None: ...

    def set_secret(self, name: str, value: str) -> object: ...


class SealError(Exception):
    """A snapshot could not be sealed or opened; the message says why and what to do."""


class SnapshotKeyMissing(SealError):
    pass


class SnapshotTampered(SealError):
    pass


def _aad(run_id: str) -> bytes:
    return _HEADER + b"|run|" + run_id.encode("utf-8")


def seal(plaintext: bytes, key: bytes, run_id: str) -> bytes:
    """Encrypt with a fresh nonce; the result is self-describing (see module docstring)."""
    if len(key) != _KEY_BYTES:
        raise SealError("the snapshot key must be 32 bytes")
    nonce = os.urandom(_NONCE_BYTES)
    return _HEADER + nonce + AESGCM(key).encrypt(nonce, plaintext, _aad(run_id))


def unseal(envelope: bytes, key: bytes, run_id: str) -> bytes:
    """Decrypt and authenticate; any change to the bytes or a different run id is refused."""
    if len(envelope) < len(_HEADER) + _NONCE_BYTES + 16 or not envelope.startswith(_MAGIC):
        raise SnapshotTampered(f"the parked snapshot of run {run_id} is not a Stockade "
                               "snapshot envelope (damaged or altered); it cannot be resumed")
    version, alg = envelope[4], envelope[5]
    if version != _VERSION or alg != _ALG_AES256GCM:
        raise SnapshotTampered(f"the parked snapshot of run {run_id} uses envelope version "
                               f"{version}/algorithm {alg}, which this build cannot open")
    nonce = envelope[len(_HEADER):len(_HEADER) + _NONCE_BYTES]
    body = envelope[len(_HEADER) + _NONCE_BYTES:]
    try:
        return AESGCM(key).decrypt(nonce, body, _aad(run_id))
    except InvalidTag:
        raise SnapshotTampered(
            f"the parked snapshot of run {run_id} failed authentication: it was altered, "
            "belongs to another run, or was sealed under a different key; it cannot be resumed"
        ) from None


def _decode_key(text: str) -> bytes:
    try:
        key = base64.b64decode(text.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError, ValueError):
        raise SealError("the snapshot key (keyring or STOCKADE_SNAPSHOT_KEY) is not valid "
                        "base64") from None
    if len(key) != _KEY_BYTES:
        raise SealError("the snapshot key (keyring or STOCKADE_SNAPSHOT_KEY) must decode to "
                        "32 bytes")
    return key


class SnapshotKeys:
    """The snapshot key: created once (on first park) and kept in the keyring, never on disk."""

    def __init__(self, secrets: SecretStore) -> None:
        self._secrets = secrets

    def existing(self) -> bytes:
        """The key, or `SnapshotKeyMissing` when the keyring does not hold it."""
        from_env = os.environ.get(SNAPSHOT_KEY_ENV)
        if from_env:
            return _decode_key(from_env.strip())
        try:
            text = self._secrets.get_secret(SNAPSHOT_KEY_NAME)
        except Exception as exc:  # keyring backends raise their own types
            raise SnapshotKeyMissing(
                f"the keyring could not be read for the snapshot key ({type(exc).__name__})"
            ) from None
        if not text:
            raise SnapshotKeyMissing(
                "the snapshot key is not in the keyring (it was deleted, or this is another "
                "user or machine); parked runs cannot be opened without it"
            )
        return _decode_key(text)

    def _require_durable(self) -> None:
        if os.environ.get(SNAPSHOT_KEY_ENV):
            return  # the operator keeps the key; it outlives this process
        status = getattr(self._secrets, "status", None)
        if callable(status) and getattr(status(), "session_only", False):
            raise SealError(
                "no secure system keyring is available, so the key that encrypts parked runs "
                "would be lost when this process ends; the run cannot be parked"
            )

    def for_sealing(self) -> bytes:
        """The key, creating and storing one if the keyring has none yet.

        Refused when the store is session-only: a run parked under a key that dies with the
        process could never be resumed, which is worse than not parking it.
        """
        self._require_durable()
        try:
            return self.existing()
        except SnapshotKeyMissing:
            pass
        key = os.urandom(_KEY_BYTES)
        try:
            self._secrets.set_secret(SNAPSHOT_KEY_NAME, base64.b64encode(key).decode("ascii"))
        except Exception as exc:
            raise SealError(
                f"the snapshot key could not be stored in the keyring ({type(exc).__name__}); "
                "the run cannot be parked"
            ) from None
        # Read it back so a keyring that silently drops writes is caught before we rely on it.
        return self.existing()
