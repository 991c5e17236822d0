"""The `.thf` document: typed models, read + validate, canonical write, ids and diff.

The names below are imported from their modules on first use, so that importing one part
(the reader, the errors) does not import every other (the document models build pydantic
validators when imported, and reading needs no writer): most of a command's start-up
otherwise. Submodules are also found as attributes, as when this file imported them all.
"""

from __future__ import annotations

import importlib
import importlib.util
from typing import TYPE_CHECKING, Any

# Imported now, not on first use: `diff` is also the name of its module, which the import
# system would otherwise leave as the package's `diff` once anything imports the module.
from stockade.thf.diff import EntityChange, FieldChange, describe, diff

if TYPE_CHECKING:
    from stockade.thf.errors import SaveError, ThfError, ThfErrorCode
    from stockade.thf.ids import (
        new_threat_id,
        next_flow_number,
        next_numbered_id,
        slug,
        unique_slug,
    )
    from stockade.thf.model import (
        ENTITY_TYPES,
        SECTION_NAMES,
        SUPPORTED_VERSIONS,
        DataFlow,
        Diagram,
        Element,
        FileSettings,
        Group,
        Layer,
        Metadata,
        Mitigation,
        MitigationStatus,
        Position,
        Relationship,
        Severity,
        Size,
        StrideCategory,
        Threat,
        ThreatModel,
        TrustBoundary,
        Viewport,
    )
    from stockade.thf.reader import MAX_FILE_BYTES, read_file, read_text
    from stockade.thf.sidecar import merge_sidecar_layouts
    from stockade.thf.validate import validate_document, validate_references
    from stockade.thf.writer import save, to_yaml, to_yaml_body

_EXPORTS: dict[str, str] = {
    "SaveError": "stockade.thf.errors",
    "ThfError": "stockade.thf.errors",
    "ThfErrorCode": "stockade.thf.errors",
    "new_threat_id": "stockade.thf.ids",
    "next_flow_number": "stockade.thf.ids",
    "next_numbered_id": "stockade.thf.ids",
    "slug": "stockade.thf.ids",
    "unique_slug": "stockade.thf.ids",
    "ENTITY_TYPES": "stockade.thf.model",
    "SECTION_NAMES": "stockade.thf.model",
    "SUPPORTED_VERSIONS": "stockade.thf.model",
    "DataFlow": "stockade.thf.model",
    "Diagram": "stockade.thf.model",
    "Element": "stockade.thf.model",
    "FileSettings": "stockade.thf.model",
    "Group": "stockade.thf.model",
    "Layer": "stockade.thf.model",
    "Metadata": "stockade.thf.model",
    "Mitigation": "stockade.thf.model",
    "MitigationStatus": "stockade.thf.model",
    "Position": "stockade.thf.model",
    "Relationship": "stockade.thf.model",
    "Severity": "stockade.thf.model",
    "Size": "stockade.thf.model",
    "StrideCategory": "stockade.thf.model",
    "Threat": "stockade.thf.model",
    "ThreatModel": "stockade.thf.model",
    "TrustBoundary": "stockade.thf.model",
    "Viewport": "stockade.thf.model",
    "MAX_FILE_BYTES": "stockade.thf.reader",
    "read_file": "stockade.thf.reader",
    "read_text": "stockade.thf.reader",
    "merge_sidecar_layouts": "stockade.thf.sidecar",
    "validate_document": "stockade.thf.validate",
    "validate_references": "stockade.thf.validate",
    "save": "stockade.thf.writer",
    "to_yaml": "stockade.thf.writer",
    "to_yaml_body": "stockade.thf.writer",
}


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        if importlib.util.find_spec(f"{__name__}.{name}") is None:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        return importlib.import_module(f"{__name__}.{name}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


__all__ = [
    "ENTITY_TYPES",
    "MAX_FILE_BYTES",
    "SECTION_NAMES",
    "SUPPORTED_VERSIONS",
    "DataFlow",
    "Diagram",
    "Element",
    "EntityChange",
    "FieldChange",
    "FileSettings",
    "Group",
    "Layer",
    "Metadata",
    "Mitigation",
    "MitigationStatus",
    "Position",
    "Relationship",
    "SaveError",
    "Severity",
    "Size",
    "StrideCategory",
    "ThfError",
    "ThfErrorCode",
    "Threat",
    "ThreatModel",
    "TrustBoundary",
    "Viewport",
    "describe",
    "diff",
    "merge_sidecar_layouts",
    "new_threat_id",
    "next_flow_number",
    "next_numbered_id",
    "read_file",
    "read_text",
    "save",
    "slug",
    "to_yaml",
    "to_yaml_body",
    "unique_slug",
    "validate_document",
    "validate_references",
]
