"""One entry point for every import: detect (or take) the format, then run its importer."""

from __future__ import annotations

import datetime as _dt
import os
from pathlib import Path

from stockade.importers.detect import detect
from stockade.importers.result import FORMAT_NAMES, ImportFailure, ImportResult, SourceFormat
from stockade.importers.source import parse_json, parse_xml, parse_yaml, read_source


def import_file(
    path: str | os.PathLike[str],
    fmt: SourceFormat | None = None,
    *,
    today: _dt.date | None = None,
) -> ImportResult:
    """Import the file at `path`; `fmt` None means detect it. Raise `ImportFailure`."""
    return import_bytes(read_source(path), Path(path).name, fmt, today=today)


def import_bytes(
    raw: bytes,
    name: str = "",
    fmt: SourceFormat | None = None,
    *,
    today: _dt.date | None = None,
) -> ImportResult:
    """Import a source held in memory (`name` only helps detection). Raise `ImportFailure`."""
    try:
        found = detect(raw, name)
    except ImportFailure as err:
        if fmt is not None and err.format is not fmt:
            found = None  # the user named another format: its importer gives its own reason
        else:
            raise
    if fmt is None:
        if found is None:
            raise ImportFailure(
                "Stockade cannot tell what this file is: it is not a Microsoft Threat Modeling "
                "Tool (.tm7) file, an OWASP Threat Dragon model, an Open Threat Model (OTM) file "
                "or pytm --json output."
            )
        fmt = found.format
    if found is not None and found.format is fmt and found.problem is not None:
        raise ImportFailure(
            f"This {FORMAT_NAMES[fmt]} file cannot be imported: {found.problem}.", format=fmt
        )
    data = found.data if found is not None and found.format is fmt else None
    if fmt is SourceFormat.TM7:
        from stockade.importers.tm7 import import_tm7

        return import_tm7(parse_xml(raw, fmt), today=today)
    if fmt is SourceFormat.THREAT_DRAGON:
        from stockade.importers.threat_dragon import import_threat_dragon

        return import_threat_dragon(data if data is not None else parse_json(raw, fmt), today=today)
    if fmt is SourceFormat.OTM:
        from stockade.importers.otm import import_otm

        if data is None:
            data = parse_json(raw, fmt) if raw.lstrip()[:1] == b"{" else parse_yaml(raw, fmt)
        return import_otm(data, today=today)
    from stockade.importers.pytm import import_pytm

    return import_pytm(data if data is not None else parse_json(raw, fmt), today=today)
