"""Telling what a foreign file is from its content: TM7 XML, Threat Dragon, OTM or pytm JSON.

The file name is only a tie-breaker (a zip archive named `.tm7`); the content decides.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from stockade.importers.result import FORMAT_NAMES, ImportFailure, SourceFormat
from stockade.importers.source import parse_json, parse_yaml

_ZIP_MAGIC = b"PK\x03\x04"
_HEAD_BYTES = 8192
_OTM_YAML_KEY = re.compile(rb"^otmVersion\s*:", re.MULTILINE)
_TM7_ROOT = re.compile(rb"<(?:[A-Za-z_][\w.-]*:)?ThreatModel[\s>]")


@dataclass(frozen=True)
class Detection:
    """A recognised foreign file: its format, the version it states, and its parsed content.

    `data` is the parsed JSON or YAML (None for XML, which the TM7 importer parses itself);
    `problem` is set when the file is recognised but cannot be what it claims (a zip .tm7).
    """

    format: SourceFormat
    version: str | None = None
    data: Any = None
    problem: str | None = None


def _strip(raw: bytes) -> bytes:
    if raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    return raw.lstrip()


def detect(raw: bytes, name: str = "") -> Detection | None:
    """What foreign format `raw` holds, or None when it is none of them.

    JSON is parsed here (and handed on in `Detection.data`); a JSON file that cannot be
    parsed raises `ImportFailure` when its start already names a format, else gives None.
    """
    if raw.startswith(_ZIP_MAGIC):
        if name.lower().endswith(".tm7"):
            return Detection(
                SourceFormat.TM7,
                problem="it is a zip archive, not the XML file the Threat Modeling Tool saves",
            )
        return None
    body = _strip(raw)
    head = body[:_HEAD_BYTES]
    if head.startswith(b"<"):
        return Detection(SourceFormat.TM7) if _TM7_ROOT.search(head) else None
    if head.startswith(b"{"):
        guess = _guess_from_head(head)
        try:
            data = parse_json(raw, guess or SourceFormat.THREAT_DRAGON)
        except ImportFailure:
            if guess is not None:
                raise  # named after the format its start shows, with the parser's reason
            return None
        return _json_detection(data)
    if _OTM_YAML_KEY.search(head):
        return Detection(SourceFormat.OTM, data=parse_yaml(raw, SourceFormat.OTM))
    return None


def _guess_from_head(head: bytes) -> SourceFormat | None:
    """The format the first bytes of a JSON file suggest (used to name a parse failure)."""
    if b'"otmVersion"' in head:
        return SourceFormat.OTM
    if b'"detail"' in head or b'"summary"' in head:
        return SourceFormat.THREAT_DRAGON
    if b'"__class__"' in head or b'"flows"' in head:
        return SourceFormat.PYTM
    return None


def _json_detection(data: Any) -> Detection | None:
    if not isinstance(data, dict):
        return None
    version = data.get("otmVersion")
    if version is not None:
        return Detection(SourceFormat.OTM, version=str(version), data=data)
    if "detail" in data or "summary" in data:
        stated = data.get("version")
        return Detection(
            SourceFormat.THREAT_DRAGON,
            version=str(stated) if isinstance(stated, (str, int, float)) else None,
            data=data,
        )
    if ("elements" in data or "flows" in data) and (
        "boundaries" in data or "findings" in data or "actors" in data
    ):
        return Detection(SourceFormat.PYTM, data=data)
    return None


def foreign_file_hint(raw: bytes, name: str = "") -> tuple[SourceFormat, str] | None:
    """For a file that failed to open as `.thf`: what it looks like, and how to import it."""
    try:
        found = detect(raw, name)
    except ImportFailure:
        return None
    if found is None:
        return None
    what = FORMAT_NAMES[found.format]
    if found.format is SourceFormat.THREAT_DRAGON and found.version:
        what += f" (version {found.version})"
    elif found.format is SourceFormat.OTM and found.version:
        what = f"Open Threat Model (OTM {found.version})"
    article = "an" if what[0] in "AEIOU" else "a"
    return found.format, (
        f"This file is {article} {what} model, not a .thf threat model; import it with "
        "File → Import… or 'stockade import SOURCE -o OUT.thf'."
    )
