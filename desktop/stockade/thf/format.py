"""Facts of the `.thf` format that need no document model: versions, sections, dates.

Kept apart from `model` (which builds pydantic validators when imported) so that the error
types, the quick validity check and the command line's start-up can use them without
importing pydantic.
"""

from __future__ import annotations

import datetime as _dt
import re
from typing import Any

SUPPORTED_VERSIONS: tuple[str, ...] = ("1.0",)

SECTION_NAMES: tuple[str, ...] = (
    "layers",
    "groups",
    "elements",
    "data_flows",
    "relationships",
    "trust_boundaries",
    "threats",
    "diagrams",
)
"""Every list-valued section, in canonical write order."""

_DATE_RE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


def calendar_date(value: Any) -> Any:
    """A `YYYY-MM-DD` date as text; raises ValueError with the reason for anything else.

    A value of another type is returned unchanged (the model's strict text check reports it).
    """
    # YAML 1.1 loaders hand back `datetime.date` for bare dates; a datetime means the
    # file carries a time of day, which the format forbids.
    if isinstance(value, _dt.datetime):
        raise ValueError("must be a calendar date in YYYY-MM-DD form, not a date with a time of day")
    if isinstance(value, _dt.date):
        return value.isoformat()
    if isinstance(value, str):
        if not _DATE_RE.match(value):
            raise ValueError("must be a calendar date in YYYY-MM-DD form")
        try:
            _dt.date.fromisoformat(value)
        except ValueError:
            raise ValueError("must be a real calendar date in YYYY-MM-DD form") from None
        return value
    return value
