"""The id and reference columns that validating a document computed, kept per section list.

`validate_references` reads every section's ids and reference fields into lists (one
C-level pass each) to check them. A document just read or just committed is about to be
read by the assistant's tools, whose first lookups would otherwise make those same passes
again over the entities; so the columns are kept here, keyed by the section list they were
read from, for `stockade.tools.document_index` to start from.

A section list is never mutated (every edit makes a new list), so its columns stay true as
long as it lives. An entry holds its list, so the id it is filed under cannot be reused by
another list while the entry exists; a hit is also checked with `is` and the length. At most
`KEPT_SECTIONS` lists are kept (the current document's and the previous one's).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

from stockade.thf.format import SECTION_NAMES

KEPT_SECTIONS = 2 * len(SECTION_NAMES)

SectionColumns = dict[str, list[Any]]
"""One section's `id` column and its reference columns, by position (attribute names)."""

_lock = threading.Lock()
_kept: OrderedDict[int, tuple[Sequence[Any], int, SectionColumns]] = OrderedDict()


def remember(section: Sequence[Any], columns: SectionColumns) -> None:
    """Keep `columns`, computed from `section` as it is now, for later `columns_of` calls."""
    key = id(section)
    with _lock:
        _kept[key] = (section, len(section), columns)
        _kept.move_to_end(key)
        while len(_kept) > KEPT_SECTIONS:
            _kept.popitem(last=False)


def columns_of(section: Sequence[Any]) -> SectionColumns | None:
    """The columns kept for exactly this list, or None. The lists must not be changed."""
    with _lock:
        entry = _kept.get(id(section))
    if entry is None or entry[0] is not section or entry[1] != len(section):
        return None
    return entry[2]


def forget_all() -> None:
    """Drop every kept column (tests, and memory pressure)."""
    with _lock:
        _kept.clear()
