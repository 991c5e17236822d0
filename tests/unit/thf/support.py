"""Shared helpers for the `.thf` document tests: fixture paths and small model builders."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from stockade.thf import ThreatModel, validate_document
from tests.conftest import THF_FIXTURES

CANONICAL_FIXTURES = (
    "v1.0-canonical-full.thf",
    "architecture-canonical-full.thf",
    "architecture-only.thf",
)
VALID_FIXTURES = (
    *CANONICAL_FIXTURES,
    "v1.0-minimal.thf",
    "v1.0-unknown-fields.thf",
    "v1.0-browser-roundtrip.thf",
    "legacy-sidecar/model.thf",
    "e2e/large-model.thf",
)


def fixture_path(name: str) -> Path:
    return THF_FIXTURES / name


def fixture_bytes(name: str) -> bytes:
    return fixture_path(name).read_bytes()


def body_of(text: str) -> str:
    """The file without its leading `#` comment lines (the header is not part of the format)."""
    lines = text.split("\n")
    start = 0
    while start < len(lines) and lines[start].startswith("#"):
        start += 1
    return "\n".join(lines[start:])


def minimal_data(**sections: Any) -> dict[str, Any]:
    """Untyped document data with valid metadata plus the given sections."""
    data: dict[str, Any] = {
        "version": "1.0",
        "metadata": {
            "title": "T",
            "author": "A",
            "created": "2026-01-01",
            "modified": "2026-01-02",
        },
    }
    data.update(sections)
    return data


def model_of(**sections: Any) -> ThreatModel:
    return validate_document(minimal_data(**sections))


def element(id: str, **fields: Any) -> dict[str, Any]:
    return {"id": id, "type": "process", "name": id.title(), **fields}


def flow(id: str, source: str, target: str, **fields: Any) -> dict[str, Any]:
    return {"id": id, "from": source, "to": target, **fields}
