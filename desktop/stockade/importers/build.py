"""Building a valid `.thf` model from foreign data: ids, clean text, mapped enums, warnings.

Every importer feeds one `ModelBuilder`; `finish()` validates the result with the `.thf`
validator (so an import can never produce a file Stockade would refuse) and lays out whatever
has no position.
"""

from __future__ import annotations

import datetime as _dt
import math
import re
import unicodedata
from collections.abc import Iterable
from typing import Any

from stockade.importers.result import (
    FORMAT_NAMES,
    ImportFailure,
    ImportResult,
    ImportWarning,
    SourceFormat,
)
from stockade.thf.errors import ThfError
from stockade.thf.ids import unique_slug
from stockade.thf.layout import layout_missing_positions
from stockade.thf.model import MitigationStatus, Severity, StrideCategory
from stockade.thf.validate import validate_document

ORIGIN_KEY = "origin"
"""The extra field on an imported entity that keeps what the source said and `.thf` cannot
(its id, type, and the fields a round trip needs). Unknown to ThreatForge, kept by Stockade."""

# Direction controls can make a name read differently from what it is (the "Trojan Source"
# trick); zero-width characters hide text. Neither belongs in a model name.
_INVISIBLE = frozenset(
    "\u200b\u200c\u200d\u200e\u200f\u061c\u202a\u202b\u202c\u202d\u202e"
    "\u2066\u2067\u2068\u2069\ufeff"
)
_SPACES = re.compile(r"[ \t\n]+")
MAX_NAME_CHARS = 200
"""Longer names are cut (with a warning): a diagram label cannot show more."""
MAX_ORIGIN_DEPTH = 16
"""Kept source fields nested deeper than this are dropped (with a warning)."""


def _strip_controls(text: str) -> tuple[str, int]:
    # Nearly all text is printable (no Cc/Cf/Cs characters, so none of the invisible ones):
    # checked in C, line by line, before any per-character work.
    if text.isprintable() or all(part.isprintable() for part in text.split("\n")):
        return text, 0
    removed = 0
    out: list[str] = []
    for ch in text.replace("\r\n", "\n").replace("\r", "\n"):
        if ch in _INVISIBLE or (
            ch not in "\n\t" and unicodedata.category(ch) in ("Cc", "Cs", "Cf")
        ):
            removed += 1
            continue
        out.append(ch)
    return "".join(out), removed


class ModelBuilder:
    """Collects entities and warnings for one import; ids are unique across all sections."""

    def __init__(self, fmt: SourceFormat, *, today: _dt.date | None = None) -> None:
        self.format = fmt
        self.today = today or _dt.date.today()
        self.warnings: list[ImportWarning] = []
        self._taken: set[str] = set()
        self._removed_invisible = 0
        self.elements: list[dict[str, Any]] = []
        self.flows: list[dict[str, Any]] = []
        self.boundaries: list[dict[str, Any]] = []
        self.threats: list[dict[str, Any]] = []
        self.diagrams: list[dict[str, Any]] = []
        self.metadata: dict[str, Any] = {}

    # -- warnings and text ------------------------------------------------------------------

    def warn(self, code: str, message: str, source_id: object = None) -> None:
        shown = None if source_id is None else self.text(source_id, limit=120)
        self.warnings.append(ImportWarning(code, message, shown or None))

    def text(self, value: object, *, limit: int | None = None) -> str:
        """Source text made safe to keep: controls and invisible characters removed."""
        if value is None:
            return ""
        if not isinstance(value, str):
            value = (
                str(value)
                if isinstance(value, (int, float)) and not isinstance(value, bool)
                else ""
            )
        cleaned, removed = _strip_controls(value)
        self._removed_invisible += removed
        if limit is not None and len(cleaned) > limit:
            cleaned = cleaned[: limit - 1] + "…"
        return cleaned

    def name(self, value: object, fallback: str, source_id: object = None) -> str:
        """A one-line name: cleaned, whitespace collapsed, bounded; `fallback` when empty."""
        cleaned = _SPACES.sub(" ", self.text(value)).strip()
        if len(cleaned) > MAX_NAME_CHARS:
            self.warn(
                "name_shortened",
                f"A name of {len(cleaned)} characters was cut to {MAX_NAME_CHARS}.",
                source_id,
            )
            cleaned = cleaned[: MAX_NAME_CHARS - 1] + "…"
        return cleaned or fallback

    def strings(self, values: object) -> list[str]:
        """A list of non-empty one-line strings from a source list (anything else is ignored)."""
        if not isinstance(values, list):
            return []
        out = []
        for value in values:
            cleaned = _SPACES.sub(" ", self.text(value)).strip()
            if cleaned:
                out.append(cleaned)
        return out

    def new_id(self, name: str, fallback: str) -> str:
        new = unique_slug(name or fallback, self._taken)
        if len(new) > 64:
            new = unique_slug(new[:64].rstrip("-") or fallback, self._taken)
        self._taken.add(new)
        return new

    def origin(self, source_id: object = None, **fields: Any) -> dict[str, Any]:
        """The `origin` record: the source id and any fields worth keeping, made plain data."""
        record: dict[str, Any] = {"format": self.format.value}
        if source_id is not None and source_id != "":
            record["id"] = self.text(source_id) if not isinstance(source_id, str) else source_id
        for key, value in fields.items():
            plain = self.plain(value)
            if plain is not None and plain != "" and plain != [] and plain != {}:
                record[key] = plain
        return record

    def plain(self, value: Any, depth: int = 0) -> Any:
        """JSON-like data safe to keep in a `.thf` extra field (finite numbers, text, bounded depth)."""
        if depth > MAX_ORIGIN_DEPTH:
            self.warn("origin_too_deep", "A kept source field was nested too deeply and dropped.")
            return None
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, bool) or value is None:
            return value
        if isinstance(value, int):
            return value if abs(value) < 2**63 else str(value)
        if isinstance(value, float):
            return value if math.isfinite(value) else None
        if isinstance(value, list):
            return [self.plain(v, depth + 1) for v in value]
        if isinstance(value, dict):
            return {str(k): self.plain(v, depth + 1) for k, v in value.items()}
        return self.text(str(value))

    # -- mapped enums ---------------------------------------------------------------------

    def category(self, *candidates: object, source_id: object = None) -> StrideCategory:
        """The STRIDE category the first mappable candidate names; a warning when guessed."""
        texts = [c for c in candidates if isinstance(c, str) and c.strip()]
        for text in texts:
            exact = _STRIDE_BY_NAME.get(_key(text))
            if exact is not None:
                return exact
        for text in texts:
            mapped = _mapped_category(text)
            if mapped is not None:
                self.warn(
                    "category_mapped",
                    f"Threat type '{self.text(text, limit=60)}' is not a STRIDE category; it was "
                    f"imported as {mapped.value} and kept under origin.",
                    source_id,
                )
                return mapped
        shown = f"'{self.text(texts[0], limit=60)}'" if texts else "none"
        self.warn(
            "category_defaulted",
            f"Threat type {shown} maps to no STRIDE category; it was imported as "
            f"{DEFAULT_CATEGORY.value} and kept under origin.",
            source_id,
        )
        return DEFAULT_CATEGORY

    def severity(self, value: object, source_id: object = None) -> Severity:
        if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
            return _severity_from_score(float(value))
        key = _key(value) if isinstance(value, str) else ""
        mapped = _SEVERITY_WORDS.get(key)
        if mapped is not None:
            return mapped
        shown = f"'{self.text(value, limit=40)}'" if key else "no severity"
        self.warn(
            "severity_defaulted",
            f"A threat with {shown} was imported as {DEFAULT_SEVERITY.value}.",
            source_id,
        )
        return DEFAULT_SEVERITY

    def status(self, value: object, source_id: object = None) -> MitigationStatus:
        key = _key(value) if isinstance(value, str) else ""
        mapped = _STATUS_WORDS.get(key)
        if mapped is not None:
            if key in _LOSSY_STATUSES:
                self.warn(
                    "status_mapped",
                    f"Threat state '{self.text(value, limit=40)}' was imported as {mapped.value}.",
                    source_id,
                )
            return mapped
        if key:
            self.warn(
                "status_defaulted",
                f"Threat state '{self.text(value, limit=40)}' is unknown; it was imported as "
                "not_started.",
                source_id,
            )
        return MitigationStatus.NOT_STARTED

    # -- the result -----------------------------------------------------------------------

    def finish(self, version: str | None) -> ImportResult:
        if self._removed_invisible:
            self.warn(
                "text_cleaned",
                f"{self._removed_invisible} control or invisible direction-changing "
                "characters were removed from names and descriptions.",
            )
        metadata = {
            "title": "Imported threat model",
            "author": "",
            "created": self.today.isoformat(),
            "modified": self.today.isoformat(),
            "description": "",
            **self.metadata,
        }
        data = {
            "version": "1.0",
            "metadata": metadata,
            "elements": self.elements,
            "data_flows": self.flows,
            "trust_boundaries": self.boundaries,
            "threats": self.threats,
            "diagrams": self.diagrams or [{"id": "main-dfd", "name": "Level 0 DFD"}],
        }
        try:
            model = validate_document(data)
        except ThfError as err:
            # A bug in an importer, never the user's fault: still one plain line, no traceback.
            raise ImportFailure(
                f"This {FORMAT_NAMES[self.format]} file could not be turned into a valid "
                f"threat model ({err.code.value}: {err.message}).",
                format=self.format,
            ) from None
        if any(e.position is None for e in model.elements) or any(
            b.position is None for b in model.trust_boundaries
        ):
            unplaced = sum(e.position is None for e in model.elements)
            if unplaced:
                self.warn(
                    "layout_added",
                    f"{unplaced} elements had no position in the source; they were laid out "
                    "automatically.",
                )
            model = layout_missing_positions(model)
        return ImportResult(
            model=model, format=self.format, version=version, warnings=tuple(self.warnings)
        )


def _key(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", " ", text.lower()).strip()


_STRIDE_BY_NAME: dict[str, StrideCategory] = {_key(c.value): c for c in StrideCategory}
_STRIDE_BY_NAME.update(
    {
        "elevation of privileges": StrideCategory.ELEVATION_OF_PRIVILEGE,
        "elevation privilege": StrideCategory.ELEVATION_OF_PRIVILEGE,
        "dos": StrideCategory.DENIAL_OF_SERVICE,
        "denial of services": StrideCategory.DENIAL_OF_SERVICE,
        "info disclosure": StrideCategory.INFORMATION_DISCLOSURE,
        "s": StrideCategory.SPOOFING,
        "t": StrideCategory.TAMPERING,
        "r": StrideCategory.REPUDIATION,
        "i": StrideCategory.INFORMATION_DISCLOSURE,
        "d": StrideCategory.DENIAL_OF_SERVICE,
        "e": StrideCategory.ELEVATION_OF_PRIVILEGE,
    }
)

DEFAULT_CATEGORY = StrideCategory.TAMPERING
"""Category of a threat whose type names nothing STRIDE-like (documented in docs/formats.md)."""
DEFAULT_SEVERITY = Severity.MEDIUM

# Other methodologies' threat types, by the STRIDE category that covers the same harm.
# Keyword matches run in this order, so the more specific words come first.
_KEYWORDS: tuple[tuple[tuple[str, ...], StrideCategory], ...] = (
    (("non repudiation", "nonrepudiation"), StrideCategory.REPUDIATION),
    (("spoof", "impersonat", "authenticat", "identity", "phishing"), StrideCategory.SPOOFING),
    (
        ("tamper", "integrity", "injection", "immutab", "forgery", "manipulat"),
        StrideCategory.TAMPERING,
    ),
    (("repudiat", "audit", "logging", "accountab"), StrideCategory.REPUDIATION),
    (
        (
            "disclos",
            "confidential",
            "leak",
            "privacy",
            "linkab",
            "identifiab",
            "detectab",
            "unaware",
            "exposure",
            "sensitive",
            "crypto",
            "encrypt",
        ),
        StrideCategory.INFORMATION_DISCLOSURE,
    ),
    (
        ("denial", "availab", "exhaust", "flood", "ephemeral", "resource"),
        StrideCategory.DENIAL_OF_SERVICE,
    ),
    (
        ("elevat", "privilege", "authoriz", "access control", "escalat", "abuse", "distributed"),
        StrideCategory.ELEVATION_OF_PRIVILEGE,
    ),
    (("non compliance", "compliance"), StrideCategory.REPUDIATION),
)


def _mapped_category(text: str) -> StrideCategory | None:
    key = _key(text)
    for words, category in _KEYWORDS:
        if any(word in key for word in words):
            return category
    return None


_SEVERITY_WORDS: dict[str, Severity] = {
    "critical": Severity.CRITICAL,
    "very high": Severity.CRITICAL,
    "urgent": Severity.CRITICAL,
    "high": Severity.HIGH,
    "medium": Severity.MEDIUM,
    "moderate": Severity.MEDIUM,
    "med": Severity.MEDIUM,
    "low": Severity.LOW,
    "very low": Severity.INFO,
    "info": Severity.INFO,
    "informational": Severity.INFO,
    "information": Severity.INFO,
    "note": Severity.INFO,
    "none": Severity.INFO,
}


def _severity_from_score(score: float) -> Severity:
    """A 0-100 risk score (OTM impact) as a severity; 0-10 scores are scaled up first."""
    if 0 <= score <= 10:
        score *= 10
    if score >= 90:
        return Severity.CRITICAL
    if score >= 70:
        return Severity.HIGH
    if score >= 40:
        return Severity.MEDIUM
    if score >= 10:
        return Severity.LOW
    return Severity.INFO


_STATUS_WORDS: dict[str, MitigationStatus] = {
    "open": MitigationStatus.NOT_STARTED,
    "not started": MitigationStatus.NOT_STARTED,
    "notstarted": MitigationStatus.NOT_STARTED,
    "autogenerated": MitigationStatus.NOT_STARTED,
    "exposed": MitigationStatus.NOT_STARTED,
    "required": MitigationStatus.NOT_STARTED,
    "recommended": MitigationStatus.NOT_STARTED,
    "needs investigation": MitigationStatus.NOT_STARTED,
    "needsinvestigation": MitigationStatus.NOT_STARTED,
    "in progress": MitigationStatus.IN_PROGRESS,
    "inprogress": MitigationStatus.IN_PROGRESS,
    "partially mitigated": MitigationStatus.IN_PROGRESS,
    "mitigated": MitigationStatus.MITIGATED,
    "implemented": MitigationStatus.MITIGATED,
    "closed": MitigationStatus.MITIGATED,
    "fixed": MitigationStatus.MITIGATED,
    "accepted": MitigationStatus.ACCEPTED,
    "transferred": MitigationStatus.TRANSFERRED,
    "not applicable": MitigationStatus.ACCEPTED,
    "notapplicable": MitigationStatus.ACCEPTED,
    "n a": MitigationStatus.ACCEPTED,
    "not exposed": MitigationStatus.ACCEPTED,
    "avoided": MitigationStatus.ACCEPTED,
}
_LOSSY_STATUSES = frozenset({"not applicable", "notapplicable", "n a", "not exposed", "avoided"})


def centre_inside(
    box: tuple[float, float, float, float], x: float, y: float, w: float, h: float
) -> bool:
    """Is the centre of rectangle (x, y, w, h) inside `box` (left, top, width, height)?"""
    cx, cy = x + w / 2, y + h / 2
    left, top, width, height = box
    return left <= cx <= left + width and top <= cy <= top + height


def lookup_key(value: object) -> str:
    """A source id or name as a lookup key: missing (None) and "" are the same key."""
    return "" if value is None else str(value)


def number(value: object) -> float | None:
    """A finite number from source data (numeric strings included), else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        result = float(value)
    elif isinstance(value, str):
        try:
            result = float(value.strip())
        except ValueError:
            return None
    else:
        return None
    return result if math.isfinite(result) else None


def first(items: Iterable[Any]) -> Any:
    return next(iter(items), None)


def side_of_line(
    points: list[tuple[float, float]], boxes: dict[str, tuple[float, float, float, float]]
) -> list[str]:
    """Which elements a line boundary fences off: those on its side with fewer elements.

    The polyline (extended past both ends along its end segments) splits the plane; each
    element's centre is put on the side given by the segment nearest to it. The smaller side
    is what the line usually encloses (a DMZ drawn as a curve around two servers). Ties go to
    the left of the drawn direction. An empty side yields no members.
    """
    if len(points) < 2:
        return []
    left: list[str] = []
    right: list[str] = []
    for element_id, (x, y, w, h) in boxes.items():
        cx, cy = x + w / 2, y + h / 2
        best_distance = math.inf
        best_cross = 0.0
        for index in range(len(points) - 1):
            (ax, ay), (bx, by) = points[index], points[index + 1]
            dx, dy = bx - ax, by - ay
            length = dx * dx + dy * dy
            t = ((cx - ax) * dx + (cy - ay) * dy) / length if length else 0.0
            if index > 0:
                t = max(t, 0.0)
            if index < len(points) - 2:
                t = min(t, 1.0)
            px, py = ax + t * dx, ay + t * dy
            distance = math.hypot(cx - px, cy - py)
            if distance < best_distance:
                best_distance = distance
                best_cross = dx * (cy - ay) - dy * (cx - ax)
        (left if best_cross < 0 else right).append(element_id)
    smaller = left if len(left) <= len(right) else right
    return smaller if smaller else []
