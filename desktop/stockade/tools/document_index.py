"""Per-section lookup tables for the read tools, built once per section list and cached.

A `ThreatModel` is frozen and every edit makes a new one with `model_copy(update=...)`: the
sections it changes are new lists, and the sections it leaves alone are the very same list
objects as before (lists are never mutated in place). So anything derived from one section
list stays true for as long as that list lives, and an edit to threats leaves the tables of
the other seven sections valid for the next document.

A `SectionIndex` holds, for one section list: columns (one field of every entity, by
position), id → position, and the `text` filter's lower-cased haystacks. Each table is built
the first time a read needs it, so a call pays only for what it reads. Columns are filled by
C-level `map` calls and searched with C-level `compress`, so a search over 75,000 values
stays near a millisecond and the index adds no per-entity containers for the garbage
collector to walk.

The cache is a small LRU keyed by the list's identity. An entry holds its list, so the id it
is filed under cannot be reused by another list while the entry exists, and every hit is
also checked with `is` and the list's length (which catches a list mutated in place against
the model's rules). The bound keeps at most `CACHED_SECTIONS` sections alive.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from itertools import compress, count, repeat
from operator import attrgetter, contains, eq, or_
from typing import Any

from stockade.protocol.secret_scan import redacted
from stockade.thf.model import SECTION_NAMES, ThreatModel

CACHED_SECTIONS = 4 * len(SECTION_NAMES)
"""Section tables kept: every section of the current document and of a few recent ones."""

_REFERENCE_FIELDS: dict[str, tuple[str, ...]] = {
    "elements": ("layer", "group"),
    "data_flows": ("from_", "to"),
    "relationships": ("from_", "to"),
    "trust_boundaries": ("contains",),
    "threats": ("element", "flow"),
    "groups": ("parent",),
}
"""Fields the `references` filter compares with its id (`contains` is a member test)."""

_TEXT_FIELDS: dict[str, Callable[[Any], tuple[Any, ...]]] = {
    "elements": attrgetter("id", "name", "type", "subtype", "trust_zone", "description"),
    "data_flows": attrgetter("id", "name", "protocol", "from_", "to"),
    "trust_boundaries": attrgetter("id", "name"),
    "threats": attrgetter("id", "title", "category", "severity", "description"),
    "layers": attrgetter("id", "name", "description"),
    "groups": attrgetter("id", "name", "type", "description"),
    "relationships": attrgetter("id", "type", "name", "description"),
    "diagrams": attrgetter("id", "name", "kind", "description"),
}
"""Fields the `text` filter reads, in haystack order (list fields follow, see `haystack`)."""

_ELEMENT_LISTS = attrgetter("technologies", "tags", "stores")
_ID = attrgetter("id")


def haystack(kind: str, entity: Any) -> str:
    """The lower-cased text the `text` filter searches, one field per line."""
    return raw_haystack(kind, entity).lower()


def raw_haystack(kind: str, entity: Any) -> str:
    """The text the `text` filter searches, one field per line, as written."""
    parts = [p for p in _TEXT_FIELDS[kind](entity) if p is not None]
    if kind == "elements":
        for values in _ELEMENT_LISTS(entity):
            if values:
                parts += values
    elif kind == "data_flows":
        parts += entity.data
    elif kind == "threats" and entity.mitigation is not None:
        parts.append(entity.mitigation.description)
    return "\n".join(parts)


class SectionIndex:
    """Lookup tables for one section list of one kind, each built on first use."""

    __slots__ = ("_columns", "_haystacks", "_positions", "_shown", "kind", "length", "section")

    def __init__(self, kind: str, section: Sequence[Any]) -> None:
        self.kind = kind
        self.section = section
        self.length = len(section)
        self._columns: dict[str, list[Any]] = {}
        self._positions: dict[str, int] | None = None
        self._haystacks: list[str] | None = None
        self._shown: dict[int, str] = {}

    def column(self, field: str) -> list[Any]:
        """`field` of every entity, by position."""
        found = self._columns.get(field)
        if found is None:
            found = list(map(attrgetter(field), self.section))
            self._columns[field] = found
        return found

    def position(self, entity_id: str) -> int:
        """Position of the first entity whose id is exactly `entity_id`, else -1."""
        positions = self._positions
        if positions is None:
            ids = self.column("id")
            positions = dict(zip(ids, range(len(ids)), strict=True))
            if len(positions) != len(ids):
                # Duplicate ids (an invalid document can reach a read): the first one wins.
                positions = {}
                for i, id_at in enumerate(ids):
                    positions.setdefault(id_at, i)
            self._positions = positions
        return positions.get(entity_id, -1)

    def ids_where(self, field: str, value: str) -> list[str]:
        """Ids of the entities whose `field` equals `value`, in document order."""
        # Ids are read from the few matches only, so no id column is built for this.
        return list(map(_ID, compress(self.section, map(eq, repeat(value), self.column(field)))))

    def ids_containing(self, field: str, value: str) -> list[str]:
        """Ids of the entities whose list `field` holds `value`, in document order."""
        matches = map(contains, self.column(field), repeat(value))
        return list(map(_ID, compress(self.section, matches)))

    def referrers(self, ref: str) -> list[int]:
        """Ascending positions of the entities that refer to `ref`, each once.

        What "refers" means per kind is the `references` filter's: endpoints for flows and
        relationships, layer or group for elements, members for boundaries, targets for
        threats, the parent for groups; layers and diagrams refer to nothing.
        """
        tests: list[Iterator[bool]] = []
        for field in _REFERENCE_FIELDS.get(self.kind, ()):
            if field == "contains":
                tests.append(map(contains, self.column(field), repeat(ref)))
            else:
                tests.append(map(eq, repeat(ref), self.column(field)))
        if not tests:
            return []
        return list(compress(count(), tests[0] if len(tests) == 1 else map(or_, *tests)))

    def haystacks(self) -> list[str]:
        """The `text` filter's haystack of every entity, by position."""
        if self._haystacks is None:
            kind = self.kind
            self._haystacks = [haystack(kind, entity) for entity in self.section]
        return self._haystacks

    def shown_haystack(self, position: int) -> str:
        """The haystack at `position` as the model is shown it: secret-shaped strings replaced
        (before lower-casing, since the patterns are case-sensitive). Made on demand, for the
        entities a raw haystack already matched, and kept."""
        shown = self._shown.get(position)
        if shown is None:
            shown = redacted(raw_haystack(self.kind, self.section[position])).lower()
            self._shown[position] = shown
        return shown


_lock = threading.Lock()
_cache: OrderedDict[tuple[str, int], SectionIndex] = OrderedDict()


def section_index(document: ThreatModel, kind: str) -> SectionIndex:
    """The tables of `document`'s `kind` section: cached for this exact list, else new."""
    section: Sequence[Any] = getattr(document, kind)
    key = (kind, id(section))
    with _lock:
        entry = _cache.get(key)
        if entry is not None and entry.section is section and entry.length == len(section):
            _cache.move_to_end(key)
            return entry
        entry = SectionIndex(kind, section)
        _cache[key] = entry
        _cache.move_to_end(key)
        while len(_cache) > CACHED_SECTIONS:
            _cache.popitem(last=False)
        return entry


def cached_section_count() -> int:
    """How many section tables the cache holds (for tests and diagnostics)."""
    with _lock:
        return len(_cache)


def clear_cache() -> None:
    """Forget every cached table."""
    with _lock:
        _cache.clear()


def build_full_index(document: ThreatModel) -> list[SectionIndex]:
    """Fresh tables for every section with every table built (not cached): the whole cost."""
    built = []
    for kind in SECTION_NAMES:
        index = SectionIndex(kind, getattr(document, kind))
        index.position("")
        index.haystacks()
        index.referrers("")
        built.append(index)
    return built
