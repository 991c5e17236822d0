"""Document digests: what the audit trail, parked runs and write-back compare documents by."""

from __future__ import annotations

import os

from stockade.thf.canonical import digest
from stockade.thf.model import ThreatModel


def document_digest(document: ThreatModel) -> str:
    """The `sha256:` digest of a whole document's canonical JSON (formatting-independent)."""
    return digest(document.model_dump(mode="json", by_alias=True, exclude_none=True))


def file_digest(path: str | os.PathLike[str]) -> str:
    """The document digest of the `.thf` file at `path` as it is now.

    Raises `ThfError` when the file cannot be read or is not a valid model.
    """
    from stockade.thf.reader import read_file

    return document_digest(read_file(path))
