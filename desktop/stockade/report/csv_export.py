"""CSV export: one row per threat, safe to open in a spreadsheet."""

from __future__ import annotations

import csv
import io

from stockade.report.summary import NameIndex, mitigation_status
from stockade.thf.model import ThreatModel

CSV_COLUMNS: tuple[str, ...] = (
    "id",
    "title",
    "category",
    "severity",
    "target_type",
    "target_id",
    "target_name",
    "mitigation_status",
    "mitigation_description",
    "description",
)

# Spreadsheets evaluate a cell starting with one of these as a formula (OWASP CSV injection);
# tab and carriage return are on the list because some programs strip them before parsing.
_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def safe_cell(text: str) -> str:
    """Neutralize a cell a spreadsheet would run as a formula by prefixing a single quote."""
    if text.startswith(_FORMULA_STARTS):
        return "'" + text
    return text


def threat_rows(model: ThreatModel) -> list[list[str]]:
    """The CSV rows (without header) in document order, cells already made safe."""
    names = NameIndex.of(model)
    rows: list[list[str]] = []
    for threat in model.threats:
        target = names.target(threat)
        row = [
            threat.id,
            threat.title,
            threat.category.value,
            threat.severity.value,
            target.kind.value if target.ids else "",
            "; ".join(target.ids),
            "; ".join(target.names),
            mitigation_status(threat),
            threat.mitigation.description if threat.mitigation is not None else "",
            threat.description,
        ]
        rows.append([safe_cell(cell) for cell in row])
    return rows


def render_csv(model: ThreatModel) -> str:
    """The whole CSV document: a header row, then one row per threat (RFC 4180, CRLF)."""
    buffer = io.StringIO(newline="")
    writer = csv.writer(buffer, quoting=csv.QUOTE_MINIMAL, lineterminator="\r\n")
    writer.writerow(CSV_COLUMNS)
    writer.writerows(threat_rows(model))
    return buffer.getvalue()
