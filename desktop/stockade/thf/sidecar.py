"""Legacy layout sidecars: fill positions, sizes and viewports from `.threatforge/layouts/*.json`.

Old documents kept layout in a JSON file named by `diagrams[].layout_file`. On open, each
diagram with a `layout_file` and no `viewport` has its sidecar merged in; anything unreadable
is skipped, because layout is cosmetic and must never stop a model from opening.

Hardening over the reference: the sidecar path must stay inside the model's folder. An
absolute path, a `..` part, or a symlink that leads elsewhere is refused (skipped), so a
document cannot make Stockade read arbitrary files.
"""

from __future__ import annotations

import json
import logging
import math
import os
from dataclasses import dataclass
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any

from stockade.thf.model import Element, Position, Size, ThreatModel, TrustBoundary, Viewport

_log = logging.getLogger(__name__)

MAX_SIDECAR_BYTES = 8 * 1024 * 1024


@dataclass(frozen=True)
class _Node:
    x: float
    y: float
    width: float | None
    height: float | None


@dataclass(frozen=True)
class _Layout:
    viewport: Viewport
    nodes: dict[str, _Node]


def merge_sidecar_layouts(model: ThreatModel, model_path: str | os.PathLike[str]) -> ThreatModel:
    """Return `model` with layout from its legacy sidecars merged in (never clears `layout_file`)."""
    folder = Path(model_path).parent
    elements = list(model.elements)
    boundaries = list(model.trust_boundaries)
    diagrams = list(model.diagrams)
    changed = False
    for index, diagram in enumerate(diagrams):
        if diagram.layout_file is None or diagram.viewport is not None:
            continue
        layout = _load_layout(folder, diagram.layout_file)
        if layout is None:
            continue
        changed = True
        elements = [_place_element(e, layout.nodes) for e in elements]
        boundaries = [_place_boundary(b, layout.nodes) for b in boundaries]
        diagrams[index] = diagram.model_copy(update={"viewport": layout.viewport})
    if not changed:
        return model
    return model.model_copy(
        update={"elements": elements, "trust_boundaries": boundaries, "diagrams": diagrams}
    )


def _place_element(element: Element, nodes: dict[str, _Node]) -> Element:
    node = nodes.get(element.id)
    if node is None or element.position is not None:
        return element
    return element.model_copy(update={"position": Position(x=node.x, y=node.y)})


def _place_boundary(boundary: TrustBoundary, nodes: dict[str, _Node]) -> TrustBoundary:
    node = nodes.get(boundary.id)
    if node is None:
        return boundary
    update: dict[str, Any] = {}
    if boundary.position is None:
        update["position"] = Position(x=node.x, y=node.y)
    if boundary.size is None and node.width is not None and node.height is not None:
        update["size"] = Size(width=node.width, height=node.height)
    return boundary.model_copy(update=update) if update else boundary


def _load_layout(folder: Path, layout_file: str) -> _Layout | None:
    path = _contained_path(folder, layout_file)
    if path is None:
        _log.debug("sidecar layout path refused: it leaves the model's folder")
        return None
    try:
        with path.open("rb") as handle:
            raw = handle.read(MAX_SIDECAR_BYTES + 1)
        if len(raw) > MAX_SIDECAR_BYTES:
            return None
        data = json.loads(raw.decode("utf-8"))
        return _layout_from_json(data)
    except (OSError, UnicodeDecodeError, ValueError, RecursionError):
        _log.debug("sidecar layout skipped: unreadable or not a layout")
        return None


def _contained_path(folder: Path, layout_file: str) -> Path | None:
    for flavour in (PurePosixPath(layout_file), PureWindowsPath(layout_file)):
        if flavour.is_absolute() or flavour.drive or flavour.root or ".." in flavour.parts:
            return None
    if "\x00" in layout_file or not layout_file.strip():
        return None
    candidate = folder / layout_file
    try:
        resolved = candidate.resolve(strict=True)
        base = folder.resolve(strict=True)
    except (OSError, RuntimeError):
        return None
    if not resolved.is_relative_to(base) or not resolved.is_file():
        return None
    return resolved


def _layout_from_json(data: Any) -> _Layout | None:
    if not isinstance(data, dict) or not isinstance(data.get("diagram_id"), str):
        return None
    viewport = data.get("viewport")
    if not isinstance(viewport, dict):
        return None
    vx, vy, zoom = (_number(viewport.get(k)) for k in ("x", "y", "zoom"))
    if vx is None or vy is None or zoom is None:
        return None
    raw_nodes = data.get("nodes", [])
    if not isinstance(raw_nodes, list):
        return None
    nodes: dict[str, _Node] = {}
    for raw in raw_nodes:
        if not isinstance(raw, dict) or not isinstance(raw.get("id"), str):
            return None
        x, y = _number(raw.get("x")), _number(raw.get("y"))
        if x is None or y is None:
            return None
        width = _number(raw.get("width"))
        height = _number(raw.get("height"))
        nodes[raw["id"]] = _Node(x=x, y=y, width=width, height=height)
    return _Layout(viewport=Viewport(x=vx, y=vy, zoom=zoom), nodes=nodes)


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    number = float(value)
    return number if math.isfinite(number) else None
