"""Snapshot sealing: AES-256-GCM with the run id as associated data and a keyring-held key."""

from __future__ import annotations

import os

import pytest

from stockade.governance.sealing import (
    SNAPSHOT_KEY_NAME,
    SnapshotKeyMissing,
    SnapshotKeys,
    SnapshotTampered,
    seal,
    unseal,
)
from tests.unit.governance.conftest import DictSecrets

KEY = os.urandom(32)


def test_sealed_snapshot_opens_with_the_same_key_and_run() -> None:
    envelope = seal(b'{"messages": []}', KEY, "run-1")
    assert unseal(envelope, KEY, "run-1") == b'{"messages": []}'
    assert b"messages" not in envelope


def test_each_seal_uses_a_fresh_nonce() -> None:
    assert seal(b"same", KEY, "r") != seal(b"same", KEY, "r")


def test_a_flipped_byte_is_refused() -> None:
    envelope = bytearray(seal(b"secret state", KEY, "run-1"))
    envelope[-5] ^= 0x01
    with pytest.raises(SnapshotTampered, match="altered"):
        unseal(bytes(envelope), KEY, "run-1")


def test_a_snapshot_moved_to_another_run_is_refused() -> None:
    with pytest.raises(SnapshotTampered):
        unseal(seal(b"state", KEY, "run-1"), KEY, "run-2")


def test_a_different_key_is_refused() -> None:
    with pytest.raises(SnapshotTampered):
        unseal(seal(b"state", KEY, "run-1"), os.urandom(32), "run-1")


def test_an_unknown_envelope_version_is_refused() -> None:
    envelope = bytearray(seal(b"state", KEY, "run-1"))
    envelope[4] = 9
    with pytest.raises(SnapshotTampered, match="version"):
        unseal(bytes(envelope), KEY, "run-1")


def test_garbage_is_refused() -> None:
    with pytest.raises(SnapshotTampered):
        unseal(b"not an envelope", KEY, "run-1")


def test_the_key_is_created_once_and_kept_in_the_keyring(secrets: DictSecrets) -> None:
    keys = SnapshotKeys(secrets)
    first = keys.for_sealing()
    assert len(first) == 32 and SNAPSHOT_KEY_NAME in secrets.items
    assert keys.for_sealing() == first == keys.existing()


def test_a_missing_key_is_reported_not_recreated_when_opening(secrets: DictSecrets) -> None:
    with pytest.raises(SnapshotKeyMissing, match="not in the keyring"):
        SnapshotKeys(secrets).existing()
    assert secrets.items == {}


def test_the_real_keystore_holds_the_key() -> None:
    from stockade.secrets import KeyStore

    store = KeyStore(use_env=False)
    key = SnapshotKeys(store).for_sealing()
    assert SnapshotKeys(KeyStore(use_env=False)).existing() == key


def test_a_session_only_keyring_asks_for_a_passphrase_instead_of_a_key() -> None:
    from keyring.backends.fail import Keyring as FailKeyring

    from stockade.governance.sealing import PassphraseRequired
    from stockade.secrets import KeyStore

    store = KeyStore(FailKeyring(), use_env=False)
    with pytest.raises(PassphraseRequired, match="passphrase"):
        SnapshotKeys(store).for_sealing()


def test_a_headless_machine_may_supply_the_snapshot_key_in_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import base64

    from keyring.backends.fail import Keyring as FailKeyring

    from stockade.governance.sealing import SNAPSHOT_KEY_ENV
    from stockade.secrets import KeyStore

    monkeypatch.setenv(SNAPSHOT_KEY_ENV, base64.b64encode(KEY).decode("ascii"))
    store = KeyStore(FailKeyring(), use_env=False)
    assert SnapshotKeys(store).for_sealing() == KEY
    assert SnapshotKeys(store).existing() == KEY


def test_a_malformed_environment_snapshot_key_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    from stockade.governance.sealing import SNAPSHOT_KEY_ENV, SealError

    monkeypatch.setenv(SNAPSHOT_KEY_ENV, "not-base64!")
    with pytest.raises(SealError, match="STOCKADE_SNAPSHOT_KEY"):
        SnapshotKeys(DictSecrets()).existing()


def test_the_seal_version_is_bound_into_the_associated_data() -> None:
    from stockade.governance.sealing import envelope_info

    envelope = bytearray(seal(b"state", KEY, "run-1", seal_version=3))
    assert envelope_info(bytes(envelope), "run-1").seal_version == 3
    envelope[10] = 1  # claim an older (or newer) version
    with pytest.raises(SnapshotTampered, match="failed authentication"):
        unseal(bytes(envelope), KEY, "run-1")


def test_a_version_1_envelope_from_an_earlier_build_still_opens() -> None:
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    from stockade.governance.sealing import envelope_info

    header = b"STKS" + bytes([1, 1])
    nonce = os.urandom(12)
    v1 = header + nonce + AESGCM(KEY).encrypt(nonce, b"old state", header + b"|run|run-1")
    assert unseal(v1, KEY, "run-1") == b"old state"
    assert envelope_info(v1, "run-1").seal_version == 0


def test_a_passphrase_seal_opens_only_with_that_passphrase() -> None:
    from stockade.governance.sealing import ScryptParams, envelope_info

    params = ScryptParams(14, 8, 1, os.urandom(16))  # cheaper than the default, same code
    envelope = seal(b"parked", params.derive("correct horse"), "run-1", seal_version=1,
                    scrypt=params)
    info = envelope_info(envelope, "run-1")
    assert info.scrypt == params and info.seal_version == 1
    assert unseal(envelope, info.scrypt.derive("correct horse"), "run-1") == b"parked"
    with pytest.raises(SnapshotTampered, match="passphrase is wrong"):
        unseal(envelope, info.scrypt.derive("correct horsf"), "run-1")


def test_out_of_range_scrypt_costs_in_a_header_are_refused_before_deriving() -> None:
    from stockade.governance.sealing import ScryptParams, envelope_info

    params = ScryptParams(14, 8, 1, os.urandom(16))
    envelope = bytearray(seal(b"x", params.derive("pw-123456"), "r", scrypt=params))
    envelope[11] = 40  # 2**40: a hostile header must not make us allocate terabytes
    with pytest.raises(SnapshotTampered, match="damaged or altered"):
        envelope_info(bytes(envelope), "r")


def test_derived_keys_differ_per_purpose_and_are_stable() -> None:
    from stockade.governance.sealing import derive_key

    assert derive_key(KEY, b"a") == derive_key(KEY, b"a") != derive_key(KEY, b"b")
    assert derive_key(KEY, b"a") != KEY and len(derive_key(KEY, b"a")) == 32


def test_a_locked_keyring_never_gets_a_second_snapshot_key() -> None:
    from stockade.governance.sealing import SnapshotKeyUnreadable

    class Locked(DictSecrets):
        def get_secret(self, name: str) -> str | None:
            raise RuntimeError("locked")

    store = Locked()
    with pytest.raises(SnapshotKeyUnreadable):
        SnapshotKeys(store).for_sealing()
    assert store.items == {}
