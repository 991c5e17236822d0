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
