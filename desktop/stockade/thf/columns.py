"""The id and reference columns that validating a document computed, kept per section list.

`validate_references` reads every section's ids and reference fields into lists (one
C-level pass each) to check them. A document just read or just committed is about to be
read by the assistant's tools, whose first lookups would otherwise make those same passes
again over the entities; so the columns are kept here, keyed by the section list they were
read from, for `stockade.tools.document_index` to start from.

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

_lock = threading.Lock()
_kept: OrderedDict[int, tuple[weakref.ref[Any], str, int, SectionColumns]] = OrderedDict()


def remember(document: Any, section: str, columns: SectionColumns) -> None:
    """Keep `columns`, computed from `document`'s `section` list as it is now."""
    entities = getattr(document, section)
    key = id(entities)
    with _lock:
        for stale in [k for k, entry in _kept.items() if entry[0]() is None]:
            del _kept[stale]
        _kept[key] = (weakref.ref(document), section, len(entities), columns)
        _kept.move_to_end(key)
        while len(_kept) > KEPT_SECTIONS:
            _kept.popitem(last=False)


def columns_of(entities: Sequence[Any]) -> SectionColumns | None:
    """The columns kept for exactly this section list, or None. They must not be changed."""
    with _lock:
        entry = _kept.get(id(entities))
    if entry is None:
        return None
    owner, section, length, columns = entry
    document = owner()
    if document is None or getattr(document, section) is not entities or length != len(entities):
        return None
    return columns


def forget_all() -> None:
    """Drop every kept column (tests, and memory pressure)."""
    with _lock:
        _kept.clear()
