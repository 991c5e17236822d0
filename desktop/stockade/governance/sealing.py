"""AES-256-GCM sealing of parked-run snapshots, under a keyring key or a passphrase.

Envelope version 2: b"STKS" magic, version byte, algorithm byte (1 = AES-256-GCM), key byte
(0 = the snapshot key from the keyring or `STOCKADE_SNAPSHOT_KEY`; 1 = a key derived from a
passphrase with scrypt, followed by log2(N), r, p and a fresh 16-byte salt), the seal version
(4 bytes, big-endian; it grows by one each time the run is parked), a fresh 96-bit nonce, then
the ciphertext with its 16-byte tag. The associated data is the whole header plus the run id,
so a snapshot copied onto another run's row, or one whose seal version was rewritten, does not
open. Version 1 envelopes (no key byte, no seal version) still open, as seal version 0.

Where no secure keyring exists (a headless box, CI), parked runs are sealed under a passphrase
the user gives (or `STOCKADE_SNAPSHOT_PASSPHRASE`); the passphrase is never stored, only its
salt, inside the envelope. Keys for other purposes (the audit chain, decision MACs, change
summaries) are derived from the snapshot key with HKDF-SHA-256 under their own labels.
"""

from __future__ import annotations

import base64
import binascii
import os
import struct
from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from cryptography.hazmat.primitives.kdf.scrypt import Scrypt

SNAPSHOT_KEY_NAME = "snapshot-key"
SNAPSHOT_KEY_ENV = "STOCKADE_SNAPSHOT_KEY"
"""Headless machines without a secure keyring (CI, servers) may supply the snapshot key as
base64 of 32 random bytes in this variable, as they supply provider keys; it then wins over
the keyring and is never written anywhere by Stockade."""
PASSPHRASE_ENV = "STOCKADE_SNAPSHOT_PASSPHRASE"
"""Without a secure keyring or `STOCKADE_SNAPSHOT_KEY`, parked runs are sealed under a key
derived from this passphrase (or one the user types when asked)."""
MIN_PASSPHRASE_LENGTH = 8
_MAGIC = b"STKS"
_V1 = 1
_V2 = 2
_ALG_AES256GCM = 1
_KEY_SNAPSHOT = 0
_KEY_SCRYPT = 1
_NONCE_BYTES = 12
_KEY_BYTES = 32
_SALT_BYTES = 16
# scrypt cost: 64 MiB and about 0.2 s per derivation on an ordinary laptop; stored in each
# envelope, so it can be raised later without breaking older snapshots.
SCRYPT_LOG2_N = 16
SCRYPT_R = 8
SCRYPT_P = 1


class SecretStore(Protocol):
    """The part of `stockade.secrets.KeyStore` sealing needs."""

    def get_secret(self, name: str) -> str | None: ...

    def set_secret(self, name: str, value: str) -> object: ...


class SealError(Exception):
    """A snapshot could not be sealed or opened; the message says why and what to do."""


class SnapshotKeyMissing(SealError):
    pass


class SnapshotKeyUnreadable(SnapshotKeyMissing):
    """The keyring failed to answer (locked, broken): the key may exist, so none is made."""


class SnapshotTampered(SealError):
    pass


class PassphraseRequired(SealError):
    """No secure keyring holds the snapshot key: a passphrase is needed (ask, then retry)."""


class KeyMode(StrEnum):
    """Where this machine's snapshot keys come from."""

    ENVIRONMENT = "environment"
    KEYRING = "keyring"
    PASSPHRASE = "passphrase"


@dataclass(frozen=True, slots=True)
class ScryptParams:
    log2_n: int
    r: int
    p: int
    salt: bytes

    @classmethod
    def fresh(cls) -> ScryptParams:
        return cls(SCRYPT_LOG2_N, SCRYPT_R, SCRYPT_P, os.urandom(_SALT_BYTES))

    def derive(self, passphrase: str) -> bytes:
        return Scrypt(salt=self.salt, length=_KEY_BYTES, n=2 ** self.log2_n, r=self.r,
                      p=self.p).derive(passphrase.encode("utf-8"))


@dataclass(frozen=True, slots=True)
class EnvelopeInfo:
    """What a snapshot envelope's header says (read without any key)."""

    version: int
    seal_version: int
    scrypt: ScryptParams | None
    header_length: int


def derive_key(master: bytes, label: bytes) -> bytes:
    """A 32-byte key for one purpose, derived from `master` (HKDF-SHA-256, no salt)."""
    return HKDF(algorithm=hashes.SHA256(), length=_KEY_BYTES, salt=None,
                info=label).derive(master)


def _header(seal_version: int, scrypt: ScryptParams | None) -> bytes:
    if not 0 <= seal_version < 2 ** 32:
        raise SealError("the seal version is out of range")
    head = _MAGIC + bytes([_V2, _ALG_AES256GCM])
    if scrypt is None:
        return head + bytes([_KEY_SNAPSHOT]) + struct.pack(">I", seal_version)
    return (head + bytes([_KEY_SCRYPT]) + struct.pack(">I", seal_version)
            + bytes([scrypt.log2_n, scrypt.r, scrypt.p]) + scrypt.salt)


def _aad(header: bytes, run_id: str) -> bytes:
    return header + b"|run|" + run_id.encode("utf-8")


def seal(plaintext: bytes, key: bytes, run_id: str, *, seal_version: int = 0,
         scrypt: ScryptParams | None = None) -> bytes:
    """Encrypt with a fresh nonce; the result is self-describing (see module docstring).

    `scrypt` names the passphrase derivation `key` came from (it goes into the header).
    """
    if len(key) != _KEY_BYTES:
        raise SealError("the snapshot key must be 32 bytes")
    header = _header(seal_version, scrypt)
    nonce = os.urandom(_NONCE_BYTES)
    return header + nonce + AESGCM(key).encrypt(nonce, plaintext, _aad(header, run_id))


def _damaged(run_id: str) -> SnapshotTampered:
    return SnapshotTampered(f"the parked snapshot of run {run_id} is not a Stockade snapshot "
                            "envelope (damaged or altered); it cannot be resumed")


def envelope_info(envelope: bytes, run_id: str) -> EnvelopeInfo:
    """Read the header; refuses anything that is not an envelope this build can open."""
    if len(envelope) < 6 or not envelope.startswith(_MAGIC):
        raise _damaged(run_id)
    version, alg = envelope[4], envelope[5]
    if version not in (_V1, _V2) or alg != _ALG_AES256GCM:
        raise SnapshotTampered(f"the parked snapshot of run {run_id} uses envelope version "
                               f"{version}/algorithm {alg}, which this build cannot open")
    if version == _V1:
        info = EnvelopeInfo(_V1, 0, None, 6)
    else:
        if len(envelope) < 11:
            raise _damaged(run_id)
        kind = envelope[6]
        (seal_version,) = struct.unpack(">I", envelope[7:11])
        if kind == _KEY_SNAPSHOT:
            info = EnvelopeInfo(_V2, seal_version, None, 11)
        elif kind == _KEY_SCRYPT:
            end = 14 + _SALT_BYTES
            if len(envelope) < end:
                raise _damaged(run_id)
            log2_n, r, p = envelope[11], envelope[12], envelope[13]
            if not (10 <= log2_n <= 22 and 1 <= r <= 32 and 1 <= p <= 16):
                raise _damaged(run_id)  # out-of-range costs are never ours: refuse, not run
            info = EnvelopeInfo(_V2, seal_version,
                                ScryptParams(log2_n, r, p, envelope[14:end]), end)
        else:
            raise _damaged(run_id)
    if len(envelope) < info.header_length + _NONCE_BYTES + 16:
        raise _damaged(run_id)
    return info


def unseal(envelope: bytes, key: bytes, run_id: str) -> bytes:
    """Decrypt and authenticate; any change to the bytes or a different run id is refused."""
    info = envelope_info(envelope, run_id)
    header = envelope[:info.header_length]
    nonce = envelope[info.header_length:info.header_length + _NONCE_BYTES]
    body = envelope[info.header_length + _NONCE_BYTES:]
    # Version 1 bound only magic, version and algorithm, which are the header's first bytes.
    aad = _aad(header, run_id)
    try:
        return AESGCM(key).decrypt(nonce, body, aad)
    except InvalidTag:
        why = ("the passphrase is wrong, or it was altered or belongs to another run"
               if info.scrypt is not None else
               "it was altered, belongs to another run, or was sealed under a different key")
        raise SnapshotTampered(
            f"the parked snapshot of run {run_id} failed authentication: {why}; it cannot be "
            "resumed") from None


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


def check_passphrase(passphrase: str) -> str:
    """A passphrase fit to seal under (it is never stored, so it cannot be recovered)."""
    if len(passphrase) < MIN_PASSPHRASE_LENGTH:
        raise SealError(f"the passphrase must be at least {MIN_PASSPHRASE_LENGTH} characters")
    return passphrase


class SnapshotKeys:
    """The snapshot key: created once (on first use) and kept in the keyring, never on disk;
    or, without a secure keyring, keys derived from a passphrase (kept in memory only, by
    salt, once a snapshot opened with them)."""

    def __init__(self, secrets: SecretStore) -> None:
        self._secrets = secrets
        self._derived: dict[bytes, bytes] = {}

    @property
    def secrets(self) -> SecretStore:
        return self._secrets

    def mode(self) -> KeyMode:
        if os.environ.get(SNAPSHOT_KEY_ENV):
            return KeyMode.ENVIRONMENT
        status = getattr(self._secrets, "status", None)
        if callable(status) and getattr(status(), "session_only", False):
            return KeyMode.PASSPHRASE
        return KeyMode.KEYRING

    def existing(self) -> bytes:
        """The key, or `SnapshotKeyMissing` when the keyring does not hold it."""
        from_env = os.environ.get(SNAPSHOT_KEY_ENV)
        if from_env:
            return _decode_key(from_env.strip())
        try:
            text = self._secrets.get_secret(SNAPSHOT_KEY_NAME)
        except Exception as exc:  # keyring backends raise their own types
            raise SnapshotKeyUnreadable(
                f"the keyring could not be read for the snapshot key ({type(exc).__name__})"
            ) from None
        if not text:
            raise SnapshotKeyMissing(
                "the snapshot key is not in the keyring (it was deleted, or this is another "
                "user or machine); parked runs cannot be opened without it"
            )
        return _decode_key(text)

    def existing_or_none(self) -> bytes | None:
        """The key when this machine has one (environment or keyring), else None."""
        if self.mode() is KeyMode.PASSPHRASE:
            return None
        try:
            return self.existing()
        except SnapshotKeyMissing:
            return None

    def _require_durable(self) -> None:
        if self.mode() is KeyMode.PASSPHRASE:
            raise PassphraseRequired(
                "no secure system keyring is available, so parked runs are sealed under a "
                "passphrase: give one (or set STOCKADE_SNAPSHOT_PASSPHRASE)"
            )

    def for_sealing(self) -> bytes:
        """The key, creating and storing one if the keyring has none yet.

        Refused (`PassphraseRequired`) when the store is session-only: a run parked under a
        key that dies with the process could never be resumed, which is worse than not
        parking it; such a machine seals under a passphrase instead.
        """
        self._require_durable()
        try:
            return self.existing()
        except SnapshotKeyUnreadable:
            raise  # a locked keyring may hold a key: making another would orphan its runs
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

    def for_writing_or_none(self) -> bytes | None:
        """The key, created when a durable keyring lacks one; None where only a passphrase
        could make one (nothing durable would hold it)."""
        if self.mode() is KeyMode.PASSPHRASE:
            return None
        try:
            return self.for_sealing()
        except SealError:
            return None

    # -- passphrase keys ---------------------------------------------------------------------

    def passphrase(self, given: str | None) -> str | None:
        """The passphrase to use: the one given, else `STOCKADE_SNAPSHOT_PASSPHRASE`."""
        if given:
            return given
        return os.environ.get(PASSPHRASE_ENV) or None

    def new_passphrase_key(self, given: str | None) -> tuple[bytes, ScryptParams]:
        """A fresh salt and the key it derives from the passphrase (for one new seal)."""
        passphrase = self.passphrase(given)
        if passphrase is None:
            self._require_durable()
            raise PassphraseRequired("a passphrase is needed to seal the parked run")
        params = ScryptParams.fresh()
        key = params.derive(check_passphrase(passphrase))
        self._derived[params.salt] = key
        return key, params

    def opening_key(self, info: EnvelopeInfo, given: str | None) -> bytes:
        """The key for an envelope: the snapshot key, or the passphrase key for its salt."""
        if info.scrypt is None:
            return self.existing()
        cached = self._derived.get(info.scrypt.salt)
        if cached is not None and not given:
            return cached
        passphrase = self.passphrase(given)
        if passphrase is None:
            raise PassphraseRequired("this parked run is sealed under a passphrase: give it "
                                     "(or set STOCKADE_SNAPSHOT_PASSPHRASE) to open it")
        return info.scrypt.derive(passphrase)

    def remember(self, info: EnvelopeInfo, key: bytes) -> None:
        """Keep a passphrase key in memory once it opened its snapshot (no second prompt)."""
        if info.scrypt is not None:
            self._derived[info.scrypt.salt] = key
