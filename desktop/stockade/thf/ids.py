"""Id generation for new entities: slugs, numbered ids, threat ids and flow numbers."""

from __future__ import annotations

import re
import uuid
from collections.abc import Collection, Iterable, Sequence

from stockade.thf.model import DataFlow

_FALLBACK_SLUG = "item"
_TRAILING_NUMBER = re.compile(r"-(\d+)$")


def slug(name: str) -> str:
    """Lowercase kebab-case: every non-alphanumeric run becomes one `-`, ends trimmed.

    `"  Stripe  API  "` → `stripe-api`. Letters outside ASCII are kept, like the reference.
    """
    chars = [ch if ch.isalnum() else "-" for ch in name.lower()]
    return "-".join(part for part in "".join(chars).split("-") if part)


def unique_slug(name: str, taken: Collection[str]) -> str:
    """A slug of `name` not in `taken`: the slug itself, else `<slug>-2`, `<slug>-3`, …"""
    base = slug(name) or _FALLBACK_SLUG
    if base not in taken:
        return base
    n = 2
    while f"{base}-{n}" in taken:
        n += 1
    return f"{base}-{n}"


def next_numbered_id(prefix: str, taken: Iterable[str]) -> str:
    """`<prefix>-<n>` with n one above the highest trailing number among `<prefix>-…` ids.

    Seeding from the maximum (not the count) keeps ids stable after deletions, as the
    canvas counters of the reference do.
    """
    prefix = prefix.rstrip("-")
    start = prefix + "-"
    taken_set = set(taken)
    highest = 0
    for existing in taken_set:
        if existing.startswith(start):
            match = _TRAILING_NUMBER.search(existing)
            if match:
                highest = max(highest, int(match.group(1)))
    n = highest + 1
    while f"{start}{n}" in taken_set:
        n += 1
    return f"{start}{n}"


def new_threat_id(taken: Collection[str]) -> str:
    """`threat-` + 8 random hex digits, never one of `taken`."""
    while True:
        candidate = "threat-" + uuid.uuid4().hex[:8]
        if candidate not in taken:
            return candidate


def next_flow_number(flows: Sequence[DataFlow]) -> int:
    """One above the highest `flow_number` in use (flows without one count as 0)."""
    return max((f.flow_number or 0 for f in flows), default=0) + 1
