"""The one typed error a `.thf` read can fail with, and the error a save can fail with."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from enum import StrEnum
from typing import Any, NamedTuple

from stockade.thf.format import SUPPORTED_VERSIONS


class ThfErrorCode(StrEnum):
    """Why a document was refused, in the order the reader checks."""

    PARSE = "parse"
    MISSING_SECTION = "missing_section"
    INVALID_FIELD = "invalid_field"
    UNSUPPORTED_VERSION = "unsupported_version"
    DUPLICATE_ID = "duplicate_id"
    INVALID_REFERENCE = "invalid_reference"
    CIRCULAR_GROUP_NESTING = "circular_group_nesting"


_MAX_LISTED_IDS = 50


def render_id_list(ids: Iterable[str]) -> str:
    """Render ids the way the reference prints a string vector: `["a", "b"]`.

    The fixtures pin this form byte-for-byte, so quotes, backslashes and control
    characters are escaped like the reference does.
    """
    return "[" + ", ".join('"' + _escape(i) + '"' for i in ids) + "]"


def _escape(text: str) -> str:
    out: list[str] = []
    for ch in text:
        if ch == "\\":
            out.append("\\\\")
        elif ch == '"':
            out.append('\\"')
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\r":
            out.append("\\r")
        elif ch == "\t":
            out.append("\\t")
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\u{{{ord(ch):x}}}")
        else:
            out.append(ch)
    return "".join(out)


class ThfError(Exception):
    """A document that cannot be opened: a code, a plain message, and where the problem is.

    `str(err)` is the message. Messages never carry filesystem paths or parser internals.
    """

    def __init__(
        self,
        code: ThfErrorCode,
        message: str,
        *,
        section: str | None = None,
        id: str | None = None,
        field: str | None = None,
        reference: str | None = None,
        valid_ids: Iterable[str] = (),
        suggestion: str | None = None,
    ) -> None:
        super().__init__(message)
        self.code = ThfErrorCode(code)
        self.message = message
        self.section = section
        self.id = id
        self.field = field
        self.reference = reference
        self.valid_ids: tuple[str, ...] = tuple(valid_ids)
        self.suggestion = suggestion

    def __str__(self) -> str:
        return self.message

    def __repr__(self) -> str:
        return f"ThfError({self.code.value!r}, {self.message!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        # Keeps every field when the error crosses a process boundary (pickling).
        return (
            _rebuild_thf_error,
            (
                self.code.value,
                self.message,
                self.section,
                self.id,
                self.field,
                self.reference,
                self.valid_ids,
                self.suggestion,
            ),
        )

    @property
    def hint(self) -> str | None:
        """One extra sentence for people: the likely intended id of a broken reference.

        Kept out of `message`, whose text the fixtures pin byte-for-byte.
        """
        if self.suggestion is None:
            return None
        return f"Did you mean '{self.suggestion}'?"

    def to_json(self) -> dict[str, Any]:
        """The error as a JSON-ready dict (CLI `--json`, tool results)."""
        return {
            "code": self.code.value,
            "message": self.message,
            "section": self.section,
            "id": self.id,
            "field": self.field,
            "reference": self.reference,
            "suggestion": self.suggestion,
        }

    # The four content-determined messages below are pinned byte-for-byte by the fixtures.

    @classmethod
    def unsupported_version(cls, version: str) -> ThfError:
        return cls(
            ThfErrorCode.UNSUPPORTED_VERSION,
            f"Unsupported schema version '{version}'. Supported versions: "
            + render_id_list(SUPPORTED_VERSIONS),
            field="version",
            reference=version,
            valid_ids=SUPPORTED_VERSIONS,
        )

    @classmethod
    def duplicate_id(cls, id: str, section: str) -> ThfError:
        return cls(
            ThfErrorCode.DUPLICATE_ID,
            f"Duplicate ID '{id}' in section '{section}'",
            section=section,
            id=id,
        )

    @classmethod
    def invalid_reference(
        cls, field: str, reference: str, valid_ids: Iterable[str], *, section: str, id: str
    ) -> ThfError:
        valid = tuple(valid_ids)
        shown = render_id_list(valid[:_MAX_LISTED_IDS])
        if len(valid) > _MAX_LISTED_IDS:
            # A 50k-entity model would otherwise put every id into one message (and into the
            # AI's context); the full list stays in `valid_ids`.
            shown += f" (and {len(valid) - _MAX_LISTED_IDS} more)"
        return cls(
            ThfErrorCode.INVALID_REFERENCE,
            f"Invalid reference in '{field}': '{reference}' not found. Valid IDs: " + shown,
            section=section,
            id=id,
            field=field,
            reference=reference,
            valid_ids=valid,
            suggestion=closest_id(reference, valid),
        )

    @classmethod
    def circular_group_nesting(cls, id: str) -> ThfError:
        return cls(
            ThfErrorCode.CIRCULAR_GROUP_NESTING,
            f"Circular group nesting detected at group '{id}'",
            section="groups",
            id=id,
        )


def _rebuild_thf_error(
    code: str,
    message: str,
    section: str | None,
    id: str | None,
    field: str | None,
    reference: str | None,
    valid_ids: tuple[str, ...],
    suggestion: str | None = None,
) -> ThfError:
    return ThfError(
        ThfErrorCode(code),
        message,
        section=section,
        id=id,
        field=field,
        reference=reference,
        valid_ids=valid_ids,
        suggestion=suggestion,
    )


def closest_id(reference: str, valid_ids: Sequence[str]) -> str | None:
    """The valid id nearest to `reference` by edit distance, if it is near enough to be a typo.

    Near enough: at most a third of the reference's length (at least one, at most three edits)
    and fewer edits than it has characters. Ties go to the earlier id in document order.
    Candidates whose length alone rules them out are skipped, so a 50k-id list stays cheap.
    """
    limit = min(3, max(1, len(reference) // 3))
    if len(reference) <= limit:
        limit = len(reference) - 1
    if limit < 1:
        return None
    best: str | None = None
    best_distance = limit + 1
    folded = reference.casefold()
    for candidate in valid_ids:
        if abs(len(candidate) - len(reference)) >= best_distance:
            continue
        if candidate.casefold() == folded:
            # Only letter case differs: the most likely intent of all.
            return candidate
        distance = _bounded_distance(reference, candidate, best_distance - 1)
        if distance < best_distance:
            best, best_distance = candidate, distance
    return best


def _bounded_distance(a: str, b: str, limit: int) -> int:
    """Levenshtein distance of a and b, or `limit + 1` as soon as it must exceed `limit`."""
    previous = list(range(len(b) + 1))
    for i, char_a in enumerate(a, start=1):
        current = [i] + [0] * len(b)
        row_best = i
        for j, char_b in enumerate(b, start=1):
            cost = 0 if char_a == char_b else 1
            current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
            row_best = min(row_best, current[j])
        if row_best > limit:
            return limit + 1
        previous = current
    return previous[-1]


class CompatibilityCode(StrEnum):
    """What ThreatForge's desktop reader would refuse in a file Stockade reads."""

    SEVERITY_CASE = "severity_case"
    NULL_SECTION = "null_section"


class CompatibilityWarning(NamedTuple):
    """A file Stockade opens but ThreatForge's desktop app would refuse: where, and why."""

    code: CompatibilityCode
    message: str
    section: str | None = None
    id: str | None = None
    field: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "code": self.code.value,
            "message": self.message,
            "section": self.section,
            "id": self.id,
            "field": self.field,
        }


class SaveError(Exception):
    """A save that did not happen; the original file is untouched. `str(err)` is the message."""

    def __init__(self, message: str, *, reason: str = "io") -> None:
        super().__init__(message)
        self.message = message
        self.reason = reason

    def __str__(self) -> str:
        return self.message

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild_save_error, (self.message, self.reason))


def _rebuild_save_error(message: str, reason: str) -> SaveError:
    return SaveError(message, reason=reason)
