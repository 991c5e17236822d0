"""What an import produces: the model, the detected format, and every lossy choice as a warning."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from stockade.thf.model import ThreatModel


class SourceFormat(StrEnum):
    """The foreign formats Stockade reads (and the names `--format` takes)."""

    TM7 = "tm7"
    THREAT_DRAGON = "threat-dragon"
    OTM = "otm"
    PYTM = "pytm"


FORMAT_NAMES: dict[SourceFormat, str] = {
    SourceFormat.TM7: "Microsoft Threat Modeling Tool (TM7)",
    SourceFormat.THREAT_DRAGON: "OWASP Threat Dragon",
    SourceFormat.OTM: "Open Threat Model (OTM)",
    SourceFormat.PYTM: "pytm JSON",
}
"""How a format is named in messages."""


@dataclass(frozen=True)
class ImportWarning:
    """One lossy choice the importer made: a stable code, a plain sentence, the source item."""

    code: str
    message: str
    source_id: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"code": self.code, "message": self.message, "source_id": self.source_id}


class ImportFailure(Exception):
    """The source cannot be imported: one plain sentence naming the format and what is wrong.

    `str(err)` is the message; it never carries a filesystem path or parser internals.
    """

    def __init__(self, message: str, *, format: SourceFormat | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.format = format

    def __str__(self) -> str:
        return self.message


@dataclass(frozen=True)
class ImportResult:
    """A valid model built from a foreign file, with what was lost or guessed on the way."""

    model: ThreatModel
    format: SourceFormat
    version: str | None
    warnings: tuple[ImportWarning, ...]

    def counts(self) -> dict[str, int]:
        """The four counts the command line reports (and round trips keep)."""
        return model_counts(self.model)


def model_counts(model: ThreatModel) -> dict[str, int]:
    return {
        "elements": len(model.elements),
        "data_flows": len(model.data_flows),
        "trust_boundaries": len(model.trust_boundaries),
        "threats": len(model.threats),
    }
