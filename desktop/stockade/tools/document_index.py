"""Per-section lookup tables for the read tools, built once per section list and cached.

A `ThreatModel` is frozen and every edit makes a new one with `model_copy(update=...)`: the
sections it changes are new lists, and the sections it leaves alone are the very same list
objects as before (lists are never mutated in place). So anything derived from one section
list stays true for as long as that list lives, and an edit to threats leaves the tables of
the other seven sections valid for the next document.

A `SectionIndex` holds, for one section list: columns (one field of every entity, by
position), id → position, reverse-reference maps (value of a reference field → ascending
positions of the entities holding it), and the `text` filter's lower-cased haystacks. Each
table is built when a read needs it, so a call pays only for what it reads:

- The first lookup of an id, or of the entities holding a reference, in a section is one
  C-level pass, nothing kept, over the id or reference column that validating the document
  read (`stockade.thf.columns`): a `str.find` over its joined text for a document just read
  (and the sections later commits left alone), a scan of the column for a section a commit
  changed, else a scan of the entities themselves. So a document just opened, or a section
  just edited, answers its first read without building anything.
- From the second lookup on, that field's table is built (id → position, or the reverse
  map), and every later lookup costs only its matches.

The cache is a small LRU keyed by the list's identity. An entry holds its list, so the id it
is filed under cannot be reused by another list while the entry exists, and every hit is
also checked with `is` and the list's length (which catches a list mutated in place against
the model's rules). The bound keeps at most `CACHED_SECTIONS` sections alive.
"""

from __future__ import annotations

import threading
from bisect import bisect_left, bisect_right
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from functools import partial
from itertools import accumulate, compress, count, islice, repeat
from operator import add, attrgetter, contains, eq, is_, is_not, itemgetter
from typing import Any

from pydantic import BaseModel

from stockade.protocol.secret_scan import hint_starts, may_be_redacted, redacted
from stockade.thf.columns import KeptColumns, kept_columns
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

_DERIVED_FIELDS: dict[str, tuple[str, ...]] = {"threats": ("flow", "element")}
"""Other fields `get_entity` looks entities up by (a flow's or an element's threats)."""

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


# The same texts for a whole section, read through each record's `__dict__` (a pydantic
# model's attribute reads go through its `__getattr__` hook, about twice as slow) and joined
# without a Python call per field; `tests/unit/tools/test_document_index.py` checks them
# against `raw_haystack`.
_RECORD_DICT = BaseModel.__dict__["__dict__"].__get__
_is_not_none = partial(is_not, None)
_TEXT_KEYS: dict[str, tuple[str, ...]] = {
    "elements": ("id", "name", "type", "subtype", "trust_zone", "description",
                 "technologies", "tags", "stores"),
    "data_flows": ("id", "name", "protocol", "from_", "to", "data"),
    "threats": ("id", "title", "category", "severity", "description", "mitigation"),
}


def section_texts(kind: str, section: Sequence[Any]) -> list[str]:
    """`raw_haystack(kind, e)` for every entity of a section, by position."""
    keys = _TEXT_KEYS.get(kind)
    if keys is None:
        return [raw_haystack(kind, entity) for entity in section]
    rows = map(itemgetter(*keys), map(_RECORD_DICT, section))
    join = "\n".join
    out: list[str] = []
    append = out.append
    if kind == "elements":
        for *head, technologies, tags, stores in rows:
            parts = list(filter(_is_not_none, head))
            if technologies:
                parts += technologies
            if tags:
                parts += tags
            if stores:
                parts += stores
            append(join(parts))
    elif kind == "data_flows":
        for *head, data in rows:
            append(join([*head, *data]))
    else:
        for *head, mitigation in rows:
            parts = list(filter(_is_not_none, head))
            if mitigation is not None:
                parts.append(mitigation.description)
            append(join(parts))
    return out


_LIST_FIELDS = frozenset({"contains"})
"""Reference fields that hold a list of ids (a member test) rather than one id."""

_DENSE_AFTER = 64

_haystacks_containing: Callable[[str, list[int], str], list[int]] | None
try:
    from stockade.protocol._hints import haystacks_containing as _haystacks_containing
except ImportError:  # a build made without a C compiler
    _haystacks_containing = None
"""Matches a text search finds one `find` at a time before it checks whether most entities match."""

SCANS_BEFORE_TABLE = 1
"""Lookups of one field a section answers by scanning before it builds that field's table."""


def _positions_of(column: list[Any], value: Any) -> list[int]:
    """Ascending positions where `column` holds `value`: `list.index` scans in C from one hit
    to the next, so Python runs once per hit (faster than a compress/map pass)."""
    found: list[int] = []
    index = column.index
    at = -1
    try:
        while True:
            at = index(value, at + 1)
            found.append(at)
    except ValueError:
        return found


class SectionIndex:
    """Lookup tables for one section list of one kind, each built when reads need it."""

    __slots__ = ("_columns", "_hints", "_kept", "_may_redact", "_plain", "_positions", "_reverse",
                 "_scans", "_shown", "_text", "_text_starts", "kind", "length", "section")

    def __init__(self, kind: str, section: Sequence[Any]) -> None:
        self.kind = kind
        self.section = section
        self.length = len(section)
        # Columns the document's validation already read (`thf.columns`): a first lookup is a
        # `find` over one's joined text, or a scan of the list, instead of a pass over the
        # entities.
        self._kept: KeptColumns | None = kept_columns(section)
        self._columns: dict[str, list[Any]] = {} if self._kept is None else dict(self._kept.columns)
        self._positions: dict[str, int] | None = None
        self._reverse: dict[str, dict[Any, int | list[int]]] = {}
        self._scans: dict[str, int] = {}
        self._text: str | None = None
        self._text_starts: list[int] = []
        # Whether nothing in the whole search text could be redacted (None: not decided), and
        # that verdict per haystack, for the haystacks matches needed it for.
        self._plain: bool | None = None
        self._hints: list[int] | None = None
        self._may_redact: dict[int, bool] = {}
        self._shown: dict[int, str] = {}

    def column(self, field: str) -> list[Any]:
        """`field` of every entity, by position."""
        found = self._columns.get(field)
        if found is None:
            found = list(map(attrgetter(field), self.section))
            self._columns[field] = found
        return found

    def _scan_first(self, field: str) -> bool:
        """Whether this lookup of `field` should scan (and not build its table yet)."""
        done = self._scans.get(field, 0)
        if done >= SCANS_BEFORE_TABLE:
            return False
        self._scans[field] = done + 1
        return True

    def position(self, entity_id: str) -> int:
        """Position of the first entity whose id is exactly `entity_id`, else -1."""
        positions = self._positions
        if positions is None:
            if self._scan_first("id"):
                kept = self._kept
                found = None if kept is None else kept.positions("id", entity_id, first=True)
                if found is not None:
                    return found[0] if found else -1
                known = self._columns.get("id")
                if known is not None:
                    try:
                        return known.index(entity_id)
                    except ValueError:
                        return -1
                hits = compress(count(), map(eq, repeat(entity_id), map(_ID, self.section)))
                return next(hits, -1)
            ids = self.column("id")
            positions = dict(zip(ids, range(len(ids)), strict=True))
            if len(positions) != len(ids):
                # Duplicate ids (an invalid document can reach a read): the first one wins.
                positions = {}
                for i, id_at in enumerate(ids):
                    positions.setdefault(id_at, i)
            self._positions = positions
        return positions.get(entity_id, -1)

    def holding(self, field: str, value: str) -> list[int]:
        """Ascending positions of the entities whose `field` is `value` (for a list field:
        holds `value`), each once."""
        table = self._reverse.get(field)
        if table is None:
            if self._scan_first(field):
                kept = self._kept
                if kept is not None and field not in _LIST_FIELDS:
                    joined = kept.positions(field, value)
                    if joined is not None:
                        return joined
                known = self._columns.get(field)
                if known is not None and field not in _LIST_FIELDS:
                    return _positions_of(known, value)
                values = map(attrgetter(field), self.section) if known is None else iter(known)
                if field in _LIST_FIELDS:
                    return list(compress(count(), map(contains, values, repeat(value))))
                return list(compress(count(), map(eq, repeat(value), values)))
            table = self._reverse_table(field)
        found = table.get(value)
        if found is None:
            return []
        return [found] if isinstance(found, int) else list(found)

    def _reverse_table(self, field: str) -> dict[Any, int | list[int]]:
        # A value held once (most ids) maps to its position, a plain int; only values held
        # more than once get a list. Ints are not tracked by the cyclic collector, so a table
        # of 25,000 values adds few objects for it to walk, and builds faster.
        table: dict[Any, int | list[int]] = {}
        get = table.get
        column = self.column(field)
        if field in _LIST_FIELDS:
            for i, values in enumerate(column):
                for value in values:
                    at = get(value)
                    if at is None:
                        table[value] = i
                    elif isinstance(at, int):
                        if at != i:  # a value listed twice in one entity counts once
                            table[value] = [at, i]
                    elif at[-1] != i:
                        at.append(i)
        else:
            for i, value in enumerate(column):
                if value is not None:
                    at = get(value)
                    if at is None:
                        table[value] = i
                    elif isinstance(at, int):
                        table[value] = [at, i]
                    else:
                        at.append(i)
        self._reverse[field] = table
        return table

    def being(self, field: str, member: Any, among: Sequence[int] | None = None) -> list[int]:
        """Ascending positions (of all, or of the ascending `among`) whose `field` is `member`
        itself: for an enum field, whose value is `member`'s (members are singletons).

        Over the whole section this is one C-level pass over the field's column (built on the
        first such filter and kept, as every column is); over a few candidates it reads them."""
        if among is None:
            return list(compress(count(), map(is_, self.column(field), repeat(member))))
        column = self._columns.get(field)
        if column is None:
            section = self.section
            return [i for i in among if getattr(section[i], field) is member]
        return [i for i in among if column[i] is member]

    def ids_holding(self, field: str, value: str) -> list[str]:
        """Ids of the entities whose `field` is (or, for a list field, holds) `value`, in
        document order."""
        section = self.section
        return [section[i].id for i in self.holding(field, value)]

    def referrers(self, ref: str) -> list[int]:
        """Ascending positions of the entities that refer to `ref`, each once.

        What "refers" means per kind is the `references` filter's: endpoints for flows and
        relationships, layer or group for elements, members for boundaries, targets for
        threats, the parent for groups; layers and diagrams refer to nothing.
        """
        fields = _REFERENCE_FIELDS.get(self.kind, ())
        if not fields:
            return []
        if len(fields) == 1:
            return self.holding(fields[0], ref)
        found: set[int] = set()
        for field in fields:
            found.update(self.holding(field, ref))
        return sorted(found)

    def search_text(self) -> tuple[str, list[int]]:
        """Every entity's `text` haystack (its text fields, one per line, lower-cased) in one
        string, each followed by "\x00" but the last; and where each begins, then the end + 1.

        Built on the section's first text search: one pass over the records, one C-level join
        and one lower-casing of the whole, instead of a string per entity. "\x00" is neither
        cased nor case-ignorable, so lower-casing the whole gives each haystack exactly as
        lower-casing it alone would (a final sigma stays final)."""
        text = self._text
        if text is None:
            read = self._kept.search_text if self._kept is not None else None
            if read is not None:
                # The compiled reader collected it while reading (`thf.capture`).
                joined, read_lengths = read
                text = joined.lower()
                lengths: Iterable[int] = read_lengths
                if len(text) != len(joined):
                    starts = map(add, accumulate(read_lengths, initial=0), count())
                    lengths = [len(joined[start:start + length].lower())
                               for start, length in zip(starts, read_lengths, strict=False)]
            else:
                texts = section_texts(self.kind, self.section)
                joined = "\x00".join(texts)
                text = joined.lower()
                # Lower-casing lengthens a few letters (İ becomes i and a combining dot);
                # only then are the haystacks' own lower-cased lengths needed.
                lengths = (map(len, texts) if len(text) == len(joined)
                           else map(len, map(str.lower, texts)))
            # Each haystack begins one separator later than the lengths before it add up to.
            self._text_starts = list(map(add, accumulate(lengths, initial=0), count()))
            self._text = text
        return text, self._text_starts

    def text_matches(self, needle: str, among: Sequence[int] | None = None) -> list[int]:
        """Ascending positions (of all, or of the ascending `among`) whose haystack contains
        the lower-cased `needle`, both as written and as the model is shown it."""
        text, starts = self.search_text()
        found: list[int]
        if among is not None:
            found = [i for i in among if needle in text[starts[i]:starts[i + 1] - 1]]
        elif "\x00" in needle:
            # It could match across two haystacks of the joined text: test each on its own.
            haystacks = map(text.__getitem__, map(slice, starts, map(add, starts[1:], repeat(-1))))
            found = list(compress(count(), map(contains, haystacks, repeat(needle))))
        else:
            found = self._find(text, starts, needle)
        return self._as_shown(found, needle)

    @staticmethod
    def _find(text: str, starts: list[int], needle: str) -> list[int]:
        if _haystacks_containing is not None:
            # One compiled pass (memmem), resumed at the next haystack after each match.
            return _haystacks_containing(text, starts, needle)
        # Without the separator a match lies inside one haystack, so one C-level `find` runs
        # from each hit to the start of the next entity: Python runs once per matching entity,
        # not once per entity. When most entities match, the rest are tested one by one in C.
        found: list[int] = []
        append = found.append
        find = text.find
        entities = len(starts) - 1
        at = find(needle) if entities else -1
        while at >= 0:
            position = bisect_right(starts, at, 0, entities) - 1
            append(position)
            if len(found) >= _DENSE_AFTER and len(found) * 4 > position:
                rest = range(position + 1, entities)
                ends = map(add, islice(starts, position + 2, None), repeat(-1))
                haystacks = map(text.__getitem__, map(slice, islice(starts, position + 1, None), ends))
                found += compress(rest, map(contains, haystacks, repeat(needle)))
                break
            at = find(needle, starts[position + 1])
        return found

    def _as_shown(self, found: list[int], needle: str) -> list[int]:
        # Match what the model is shown: a secret in the document is `[redacted-secret]` in
        # every result, so a guess at it must not be confirmed by a match count either. Text
        # that nothing could redact is shown as it is, so only the haystacks that might hold a
        # secret are redacted and searched again: usually none, decided by one test over the
        # matched haystacks, or for many matches over the whole section once.
        # With many matches the whole section is scanned once: where every hint begins, in one
        # compiled pass (`hint_starts`), which then answers for each haystack too.
        if not found:
            return found
        text, starts = self.search_text()
        if self._plain is None and len(found) * 8 >= self.length:
            self._hints = hint_starts(text)
            self._plain = not (may_be_redacted(text) if self._hints is None else self._hints)
        if self._plain:
            return found
        hints = self._hints
        if hints is None and self._plain is None and not may_be_redacted(
                "\x00".join([text[starts[i]:starts[i + 1] - 1] for i in found])):
            return found
        verdicts = self._may_redact
        shown = self.shown_haystack
        kept = []
        for i in found:
            verdict = verdicts.get(i)
            if verdict is None:
                if hints is None:
                    verdict = may_be_redacted(text[starts[i]:starts[i + 1] - 1])
                else:
                    at = bisect_left(hints, starts[i])
                    verdict = at < len(hints) and hints[at] < starts[i + 1] - 1
                verdicts[i] = verdict
            if not verdict or needle in shown(i):
                kept.append(i)
        return kept

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
        index.column("id")
        index.position("")
        index.search_text()
        for field in _REFERENCE_FIELDS.get(kind, ()):
            index._reverse_table(field)
        for field in _DERIVED_FIELDS.get(kind, ()):
            index._reverse_table(field)
        built.append(index)
    return built
