"""The id and reference columns that validating a document computed, kept per section list.

`validate_references` reads every section's ids and reference fields into lists (one
C-level pass each) to check them. A document just read or just committed is about to be
read by the assistant's tools, whose first lookups would otherwise make those same passes
again over the entities; so the columns are kept here, keyed by the section list they were
read from, for `stockade.tools.document_index` to start from.

A document just read also keeps each column of single ids joined into one string, "\\x00"
before, between and after its values (None as ""), so a first lookup is a C-level `str.find`
over contiguous text from hit to hit rather than a comparison per value: the values of a
freshly read document lie scattered over its heap, and touching each one costs far more than
its compare. Joining touches each value once more, 1-2% of the read; a commit does not
join the sections it changed (it would pay that on every edit), and the sections it left
alone, the same lists as before, carry their joined texts over to the new document. `positions` answers only when that is exactly what a
scan of the column would answer, and None (scan instead) otherwise. A document read by the
compiled reader also keeps the search text of its large sections (`thf.capture`), which
the read tools' first text search would otherwise build from the entities.

A section list is never mutated (every edit makes a new list), so its columns stay true as
long as it lives. Nothing here keeps a document alive: an entry holds a weak reference to
the document it was validated with and counts only while that document lives and still
holds the list (so the list's id cannot have been reused), with the list's length checked
too. Entries of freed documents are dropped at the next `remember`; at most `KEPT_SECTIONS`
are kept (the current document's and the previous one's).
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

from stockade.thf.format import SECTION_NAMES

KEPT_SECTIONS = 2 * len(SECTION_NAMES)

SectionColumns = dict[str, list[Any]]
"""One section's `id` column and its reference columns, by position (attribute names)."""

SEPARATOR = "\x00"

_AS_TEXT = {None: ""}.get
"""None as "" (an optional reference left out), any other value as itself."""


def _joined(column: list[Any]) -> str | None:
    """"\\x00" + the values joined by "\\x00" + "\\x00", None as ""; None when a value is
    neither str nor None (or the column is empty)."""
    if not column:
        return None
    try:
        return SEPARATOR + SEPARATOR.join(column) + SEPARATOR
    except TypeError:
        pass
    try:
        # An optional reference column: None among the ids. A list value (a boundary's
        # members) is unhashable and stops this at the first one.
        return SEPARATOR + SEPARATOR.join(map(_AS_TEXT, column, column)) + SEPARATOR
    except TypeError:
        return None


class KeptColumns:
    """One section list's columns, the joined text of each column of single ids, and the
    search text the compiled reader collected for it (`thf.capture`), if any."""

    __slots__ = ("_clean", "_joined", "columns", "search_text")

    def __init__(
        self, columns: SectionColumns, join: bool, joined: dict[str, str | None] | None = None
    ) -> None:
        self.columns = columns
        known = joined or {}
        self._joined = {
            field: known[field] if field in known else _joined(column)
            for field, column in columns.items()
        } if join else {}
        # Whether no value of a joined column holds the separator itself (absent: not checked).
        self._clean: dict[str, bool] = {}
        self.search_text: tuple[str, list[int]] | None = None

    @property
    def joined(self) -> bool:
        """Whether the columns were joined (kept for a document just read)."""
        return bool(self._joined)

    def positions(self, field: str, value: Any, first: bool = False) -> list[int] | None:
        """Ascending positions where `field`'s column holds exactly `value` (only the first
        when `first`): what scanning the column with `list.index` from hit to hit answers.
        None when the joined text cannot say (no joined text, a value or `value` holding the
        separator, an empty or non-str `value`): scan the column instead."""
        joined = self._joined.get(field)
        if joined is None or type(value) is not str or not value or SEPARATOR in value:
            return None
        clean = self._clean.get(field)
        if clean is False:
            return None
        # A value between two separators is the needle's text only where the value is
        # `value` (no value holds a separator, None is "" and `value` is not). The position
        # of a hit is the number of separators before it, counted on from the previous hit.
        needle = SEPARATOR + value + SEPARATOR
        find = joined.find
        count = joined.count
        step = len(needle) - 1  # the closing separator opens the next value
        found: list[int] = []
        position = 0
        counted = 0
        at = find(needle)
        while at >= 0:
            position += count(SEPARATOR, counted, at)
            counted = at
            found.append(position)
            if first:
                break
            at = find(needle, at + step)
        if clean is None:
            # n values and no separator inside any of them: exactly n + 1 separators, those
            # counted up to the last hit and the rest. Checked once, at the column's first
            # lookup, so a read pays only for the join.
            clean = position + count(SEPARATOR, counted) == len(self.columns[field]) + 1
            self._clean[field] = clean
            if not clean:
                return None
        return found


_lock = threading.Lock()
_kept: OrderedDict[int, tuple[weakref.ref[Any], str, int, KeptColumns]] = OrderedDict()


def _live(entry: tuple[weakref.ref[Any], str, int, KeptColumns], entities: Sequence[Any]) -> bool:
    owner, section, length, _ = entry
    document = owner()
    return document is not None and getattr(document, section) is entities and length == len(entities)


def remember(
    document: Any,
    section: str,
    columns: SectionColumns,
    join: bool = False,
    joined: dict[str, str | None] | None = None,
) -> None:
    """Keep `columns`, computed from `document`'s `section` list as it is now, joined too when
    `join` (or when they were for an earlier document holding the same list); `joined` gives
    joined texts already made (the compiled reader's, `thf.capture`)."""
    entities = getattr(document, section)
    key = id(entities)
    with _lock:
        earlier = _kept.get(key)
        kept = earlier[3] if earlier is not None and _live(earlier, entities) else None
    if kept is None or (join and not kept.joined):
        kept = KeptColumns(columns, join, joined)  # outside the lock: joining is a pass
    with _lock:
        for stale in [k for k, entry in _kept.items() if entry[0]() is None]:
            del _kept[stale]
        _kept[key] = (weakref.ref(document), section, len(entities), kept)
        _kept.move_to_end(key)
        while len(_kept) > KEPT_SECTIONS:
            _kept.popitem(last=False)


def remember_search_texts(document: Any, texts: dict[str, tuple[str, list[int]]]) -> None:
    """Keep the search texts the reader collected for `document`'s sections, with the
    columns its validation kept (a section without kept columns, or whose record count
    differs, keeps none)."""
    for section, (text, lengths) in texts.items():
        entities = getattr(document, section, None)
        if entities is None:
            continue
        kept = kept_columns(entities)
        if kept is not None and len(lengths) == len(entities):
            kept.search_text = (text, lengths)


def kept_columns(entities: Sequence[Any]) -> KeptColumns | None:
    """What is kept for exactly this section list, or None. Its columns must not be changed."""
    with _lock:
        entry = _kept.get(id(entities))
    if entry is None or not _live(entry, entities):
        return None
    return entry[3]


def forget_all() -> None:
    """Drop every kept column (tests, and memory pressure)."""
    with _lock:
        _kept.clear()
