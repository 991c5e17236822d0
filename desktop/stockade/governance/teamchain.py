"""Where each store keeps its audit chain's head and keyed-since marker.

The SQLite store keeps the head in a file beside the database and the marker in the keyring
(`governance.chain`), out of the database writer's reach. A team store is shared by many
machines, so a file on one of them could not anchor it: the team's head and marker live in
the team database (`chain_anchor`, `chain_marker`), per team under row-level security, the
head written in the same transaction as the events it names (under the team's lock) and the
marker inserted once. Members hold no UPDATE or DELETE on events and no UPDATE on the marker,
so neither can be wound back by a member; the administrator still can, which is what the
keyed MACs (under the team's key, which the database never sees) are for.
"""

from __future__ import annotations

import json

from stockade.governance.chain import (
    AnchorError,
    ChainAnchor,
    ChainHead,
    ChainMarker,
    FileAnchor,
    KeyedSince,
    KeyringMarker,
    SecretStore,
)
from stockade.store import Database, Store
from stockade.store.postgres import chain as chain_sql
from stockade.thf.canonical import canonical_json


class TeamAnchor:
    """`ChainAnchor` over the team's `chain_anchor` row."""

    def __init__(self, db: Store) -> None:
        self._db = db

    def read_raw(self) -> bytes | None:
        text = chain_sql.read_head(self._db.read())
        return None if text is None else text.encode("utf-8")

    def read(self) -> ChainHead | None:
        raw = self.read_raw()
        if raw is None:
            return None
        try:
            data = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            raise AnchorError("the team's audit chain head is not readable") from None
        return ChainHead.from_json(data)

    def write(self, head: ChainHead) -> None:
        if not self._db.in_write_transaction():
            # After a rollback: the database already put the head row back with the events.
            return
        chain_sql.write_head(self._db.read(), canonical_json(head.to_json()))

    def restore(self, raw: bytes | None) -> None:
        """Nothing to do: the head row rolls back with the transaction that wrote it."""


class TeamMarker:
    """`ChainMarker` over the team's `chain_marker` row (written once, never changed)."""

    def __init__(self, db: Store) -> None:
        self._db = db

    def read(self) -> KeyedSince | None:
        row = chain_sql.read_marker(self._db.read())
        return None if row is None else KeyedSince(row[0], row[1])

    def write(self, since: KeyedSince) -> None:
        chain_sql.write_marker(self._db.read(), since.seq, since.mac)

    def clear(self) -> None:
        """Nothing to do: the marker rolls back with the transaction that wrote it."""


def anchor_for(db: Store) -> ChainAnchor:
    """The chain head's keeper for `db`: a file beside the SQLite file, or the team's row."""
    if isinstance(db, Database):
        return FileAnchor(db.path)
    return TeamAnchor(db)


def marker_for(db: Store, secrets: SecretStore | None) -> ChainMarker | None:
    """The keyed-since marker for `db`: in the keyring (SQLite), or the team's row."""
    if isinstance(db, Database):
        return KeyringMarker(secrets, db.path) if secrets is not None else None
    return TeamMarker(db)
