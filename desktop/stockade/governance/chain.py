"""The audit chain's key and anchors: HMAC-SHA-256 event MACs, the head kept outside the database.

An event's MAC is `hmac-sha256:<key id>:<hex>` over its canonical text (which embeds the MAC of
the event before it); trails written before keying hold plain `sha256:<hex>` hashes and verify
as legacy. The chain head (event count, newest sequence number and MAC, itself sealed under the
key) is written atomically to a file beside the database inside every writing transaction, so
deleting the newest events is visible; the first keyed event is also recorded once in the
keyring, so rewriting the whole trail into the unkeyed form is visible too. Everything the
chain needs from storage goes through `ChainAnchor` and `ChainMarker`, which a second store
(team mode) can implement over its own tables.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from stockade.thf.canonical import canonical_json

MAC_PREFIX = "hmac-sha256:"
HASH_PREFIX = "sha256:"
AUDIT_KEY_LABEL = b"stockade audit chain v1"
HEAD_FORMAT = "stockade.audit-head/1"
_KEY_ID_LABEL = b"stockade audit key id"
_HEAD_LABEL = "stockade audit head v1|"


class AnchorError(Exception):
    """The head kept outside the database could not be read or written."""


class ChainKey:
    """The audit key: computes and checks event MACs. Its id names it without revealing it.

    HMAC-SHA-256 (RFC 2104) from a context keyed once and copied per event: `audit verify`
    computes 100,000 MACs, and `hmac.digest` keys a new context on every call (about three
    times slower). The context is `cryptography`'s (already loaded for the snapshot key): one
    copy, one update and one finalize per MAC, where hashlib's two padded-key states take six
    calls and copy a hash context four times (a test pins the equality with `hmac`).
    """

    __slots__ = ("_hmac", "_key", "_prefix", "key_id")

    def __init__(self, key: bytes) -> None:
        if len(key) < 32:
            raise ValueError("an audit key must be at least 32 bytes")
        from cryptography.hazmat.primitives import hashes
        from cryptography.hazmat.primitives.hmac import HMAC

        self.key_id = hmac.digest(key, _KEY_ID_LABEL, "sha256").hex()[:12]
        self._hmac = HMAC(key, hashes.SHA256())
        self._key = bytes(key)
        self._prefix = f"{MAC_PREFIX}{self.key_id}:"

    def __repr__(self) -> str:
        return f"ChainKey(key_id={self.key_id!r})"

    def prepared(self) -> tuple[Callable[[], Any], str]:
        """(a factory of keyed contexts, the stored MAC's prefix) for a hot loop that inlines
        `mac`: `new()`, `update(text)`, `prefix + finalize().hex()`."""
        return self._hmac.copy, self._prefix

    def secret(self) -> bytes:
        """The key itself, for `audit verify`'s compiled check (`_chainscan.c`), which keys its
        own SHA-256 states once per walk."""
        return self._key

    def mac(self, text: str) -> str:
        context = self._hmac.copy()
        context.update(text.encode("utf-8"))
        return self._prefix + context.finalize().hex()

    def matches(self, text: str, stored: str) -> bool:
        return hmac.compare_digest(self.mac(text), stored)


def plain_hash(text: str) -> str:
    """The unkeyed form (legacy trails, and machines with no key at all)."""
    return HASH_PREFIX + hashlib.sha256(text.encode("utf-8")).hexdigest()


def key_id_of(stored: str) -> str | None:
    """The key id a stored MAC names, or None for an unkeyed hash."""
    if not stored.startswith(MAC_PREFIX):
        return None
    key_id, _, _rest = stored[len(MAC_PREFIX):].partition(":")
    return key_id


@dataclass(frozen=True, slots=True)
class ChainHead:
    """The newest event as the chain's anchor records it, sealed under the key (or hashed)."""

    count: int
    seq: int
    mac: str
    key_id: str | None
    seal: str

    @classmethod
    def of(cls, count: int, seq: int, mac: str, key: ChainKey | None) -> ChainHead:
        key_id = key.key_id if key is not None else None
        text = _head_text(count, seq, mac, key_id)
        return cls(count, seq, mac, key_id, key.mac(text) if key is not None else plain_hash(text))

    def authentic(self, key: ChainKey | None) -> bool:
        """Whether the seal checks: under `key` when keyed, as a plain hash otherwise."""
        text = _head_text(self.count, self.seq, self.mac, self.key_id)
        if self.key_id is None:
            return hmac.compare_digest(plain_hash(text), self.seal)
        return key is not None and key.key_id == self.key_id and key.matches(text, self.seal)

    def to_json(self) -> dict[str, Any]:
        return {"format": HEAD_FORMAT, "count": self.count, "seq": self.seq, "mac": self.mac,
                "key_id": self.key_id, "seal": self.seal}

    @classmethod
    def from_json(cls, data: Any) -> ChainHead:
        if not isinstance(data, dict) or data.get("format") != HEAD_FORMAT:
            raise AnchorError("the chain head is not a Stockade audit head")
        try:
            count, seq, mac, seal = data["count"], data["seq"], data["mac"], data["seal"]
            key_id = data.get("key_id")
        except KeyError as exc:
            raise AnchorError(f"the chain head lacks {exc.args[0]!r}") from None
        if not (isinstance(count, int) and isinstance(seq, int) and isinstance(mac, str)
                and isinstance(seal, str) and (key_id is None or isinstance(key_id, str))):
            raise AnchorError("the chain head has fields of the wrong type")
        return cls(count, seq, mac, key_id, seal)


def _head_text(count: int, seq: int, mac: str, key_id: str | None) -> str:
    return f"{_HEAD_LABEL}{count}|{seq}|{mac}|{key_id or ''}"


class ChainAnchor(Protocol):
    """Where the head is kept outside the trail's own storage."""

    def read(self) -> ChainHead | None: ...

    def read_raw(self) -> bytes | None: ...

    def write(self, head: ChainHead) -> None: ...

    def restore(self, raw: bytes | None) -> None: ...


class FileAnchor:
    """The head as a small JSON file beside the database, replaced atomically on every write.

    Written while the database's write lock is held (just before COMMIT), so two processes
    never write it out of order. Like the database (WAL, synchronous=NORMAL), it survives an
    application crash; only a power loss can leave it one transaction ahead, which `audit
    verify` would report as missing events.
    """

    def __init__(self, database_path: Path) -> None:
        self.path = database_path.with_name(database_path.name + ".audit-head")

    def read_raw(self) -> bytes | None:
        try:
            return self.path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise AnchorError(f"the audit chain head {self.path} cannot be read "
                              f"({exc.strerror or type(exc).__name__})") from None

    def read(self) -> ChainHead | None:
        raw = self.read_raw()
        if raw is None:
            return None
        try:
            data = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            raise AnchorError(f"the audit chain head {self.path} is not readable") from None
        return ChainHead.from_json(data)

    def write(self, head: ChainHead) -> None:
        self._replace(canonical_json(head.to_json()).encode("utf-8"))

    def restore(self, raw: bytes | None) -> None:
        if raw is None:
            with contextlib.suppress(FileNotFoundError):
                self.path.unlink()
            return
        self._replace(raw)

    def _replace(self, data: bytes) -> None:
        try:
            fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".audit-head-",
                                       suffix=".tmp")
            try:
                with os.fdopen(fd, "wb") as handle:
                    handle.write(data)
                os.replace(tmp, self.path)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
                raise
        except OSError as exc:
            raise AnchorError(f"the audit chain head {self.path} cannot be written "
                              f"({exc.strerror or type(exc).__name__})") from None


@dataclass(frozen=True, slots=True)
class KeyedSince:
    """The first keyed event of a trail, as recorded once in the keyring."""

    seq: int
    mac: str


class ChainMarker(Protocol):
    """A record, out of the database writer's reach, that the trail is keyed from an event on."""

    def read(self) -> KeyedSince | None: ...

    def write(self, since: KeyedSince) -> None: ...

    def clear(self) -> None: ...


class SecretStore(Protocol):
    def get_secret(self, name: str) -> str | None: ...

    def set_secret(self, name: str, value: str) -> object: ...


class KeyringMarker:
    """`KeyedSince` in the keyring under a name derived from the database's path."""

    def __init__(self, secrets: SecretStore, database_path: Path) -> None:
        self._secrets = secrets
        where = os.path.normcase(os.path.abspath(database_path)).encode("utf-8")
        self.name = "audit-anchor-" + hashlib.sha256(where).hexdigest()[:16]

    def read(self) -> KeyedSince | None:
        try:
            text = self._secrets.get_secret(self.name)
        except Exception:  # keyring backends raise their own types; unknown means "none"
            return None
        if not text:
            return None
        try:
            data = json.loads(text)
            return KeyedSince(int(data["seq"]), str(data["mac"]))
        except (ValueError, KeyError, TypeError):
            return None

    def write(self, since: KeyedSince) -> None:
        try:
            self._secrets.set_secret(self.name, json.dumps({"seq": since.seq, "mac": since.mac}))
        except Exception as exc:
            raise AnchorError(f"the keyring refused the audit anchor ({type(exc).__name__})"
                              ) from None

    def clear(self) -> None:
        delete = getattr(self._secrets, "delete_secret", None)
        if callable(delete):
            try:
                delete(self.name)
            except Exception:  # best effort: an undo after a failed first keyed append
                return


class MasterKeys(Protocol):
    """The snapshot keys the audit key is derived from (`governance.sealing.SnapshotKeys`)."""

    def existing_or_none(self) -> bytes | None: ...

    def for_writing_or_none(self) -> bytes | None: ...


class AuditKeys:
    """The audit key, derived from the snapshot key (one secret in the keyring, or
    `STOCKADE_SNAPSHOT_KEY`, keys both); None where neither exists (a session-only keyring)."""

    def __init__(self, master: MasterKeys) -> None:
        self._master = master

    def existing(self) -> ChainKey | None:
        """The key if this machine holds it (never creates one)."""
        return self._derive(self._master.existing_or_none())

    def for_append(self) -> ChainKey | None:
        """The key, creating the snapshot key in a durable keyring that lacks one."""
        return self._derive(self._master.for_writing_or_none())

    @staticmethod
    def _derive(master: bytes | None) -> ChainKey | None:
        from stockade.governance.sealing import derive_key

        return None if master is None else ChainKey(derive_key(master, AUDIT_KEY_LABEL))
