"""Document digests: what the audit trail, parked runs and write-back compare documents by."""

from __future__ import annotations

import hashlib
import os
import weakref
from typing import TYPE_CHECKING, Any

from stockade.thf.canonical import canonical_json
from stockade.thf.format import SECTION_NAMES

if TYPE_CHECKING:
    from stockade.thf.model import ThfModel, ThreatModel

_DUMP_OPTIONS: dict[str, Any] = {"mode": "json", "by_alias": True, "exclude_none": True}


def document_digest(document: ThreatModel) -> str:
    """The `sha256:` digest of a whole document's canonical JSON (formatting-independent).

    The same bytes as `digest(document.model_dump(mode="json", by_alias=True,
    exclude_none=True))`, assembled from each entity's canonical JSON: compact JSON with sorted
    keys nests without context, so a section is `[` + its entities' texts joined by `,` + `]`.
    An entity's text is kept while the entity lives (entities are frozen, and an edit makes new
    ones only for what it changes), so digesting each commit's document costs the changed
    entities plus hashing, not the whole document again.
    """
    top = document.model_dump(exclude=set(SECTION_NAMES), **_DUMP_OPTIONS)
    keys = sorted([*top, *SECTION_NAMES])
    hasher = hashlib.sha256()
    update = hasher.update
    update(b"{")
    for position, key in enumerate(keys):
        if position:
            update(b",")
        update(canonical_json(key).encode("utf-8"))
        update(b":")
        if key in top:
            update(canonical_json(top[key]).encode("utf-8"))
        else:
            update(b"[")
            update(b",".join(map(_entity_canonical, getattr(document, key))))
            update(b"]")
    update(b"}")
    _prune(sum(len(getattr(document, section)) for section in SECTION_NAMES))
    return "sha256:" + hasher.hexdigest()


_canonical: dict[int, tuple[weakref.ref[Any], bytes]] = {}
"""Entity id -> (a weak reference to it, its canonical text). An entry whose entity died is
never used again (the reference is checked), and pruned once dead entries could outnumber
the live ones; no weakref callback runs, so nothing changes the table behind a lookup."""


def _entity_canonical(entity: ThfModel) -> bytes:
    """The UTF-8 canonical JSON of one entity's dump, kept while the entity lives."""
    key = id(entity)
    kept = _canonical.get(key)
    if kept is not None and kept[0]() is entity:
        return kept[1]
    text = canonical_json(entity.model_dump(**_DUMP_OPTIONS)).encode("utf-8")
    _canonical[key] = (weakref.ref(entity), text)
    return text


def _prune(live: int) -> None:
    global _canonical
    if len(_canonical) > 2 * live + 1024:
        _canonical = {key: kept for key, kept in list(_canonical.items()) if kept[0]() is not None}


def cached_entity_count() -> int:
    """How many entities' canonical texts are kept (tests and diagnostics)."""
    return len(_canonical)


def file_digest(path: str | os.PathLike[str]) -> str:
    """The document digest of the `.thf` file at `path` as it is now.

    Raises `ThfError` when the file cannot be read or is not a valid model.
    """
    from stockade.thf.reader import read_file

    return document_digest(read_file(path))

