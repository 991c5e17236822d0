"""The data-flow diagram as standalone SVG (HTML report, `stockade diagram`, File → Export diagram).

Elements and boundaries without a stored position are placed by the layered layout in
`thf.layout` (through `place_unpositioned`, which the app's diagram uses too), so every element
and flow is drawn. A legend explains the shapes and the
threat-badge colours; badges sit on elements and on flows.
"""

from __future__ import annotations

import functools
import html
import json
import math
import re
from dataclasses import dataclass

from stockade.paths import resources_dir
from stockade.thf.layout import layout_missing_positions
from stockade.thf.model import (
    DataFlow,
    Element,
    MitigationStatus,
    Severity,
    Threat,
    ThreatModel,
)

NODE_WIDTH = 160.0
NODE_HEIGHT = 60.0
"""Node size used to draw elements; the stored position is the node's top-left corner."""
DEFAULT_BOUNDARY_SIZE = (400.0, 300.0)
"""Boundaries saved without a size (and with no members) are drawn at this size."""
BOUNDARY_PADDING = 30.0
DIAGRAM_PADDING = 40.0
LEGEND_HEIGHT = 64.0

BADGE_COLORS: dict[Severity | None, str] = {
    Severity.CRITICAL: "#b91c1c",
    Severity.HIGH: "#c2410c",
    Severity.MEDIUM: "#a16207",
    Severity.LOW: "#1d4ed8",
    Severity.INFO: "#4b5563",
    None: "#047857",
}
"""Badge fill by the worst severity still open; None: every threat mitigated or handled."""

OPEN_STATUSES: tuple[MitigationStatus | None, ...] = (
    None, MitigationStatus.NOT_STARTED, MitigationStatus.IN_PROGRESS,
)
_SEVERITY_RANK = {s: i for i, s in enumerate(Severity)}

# Colours from the document end up in SVG attributes: only plain hex or named colours pass.
_COLOR_RE = re.compile(r"^(#[0-9a-fA-F]{3,8}|[a-zA-Z]{3,20})$")


@dataclass(frozen=True)
class ThreatBadge:
    """How many threats target an element or flow, coloured by the worst one still open."""

    count: int
    worst_open: Severity | None


def threat_badges(model: ThreatModel) -> tuple[dict[str, ThreatBadge], dict[str, ThreatBadge]]:
    """(badges by element id, badges by flow id)."""
    found: tuple[dict[str, list[Threat]], dict[str, list[Threat]]] = ({}, {})
    for threat in model.threats:
        if threat.element is not None:
            found[0].setdefault(threat.element, []).append(threat)
        if threat.flow is not None:
            found[1].setdefault(threat.flow, []).append(threat)
    return _badges_of(found[0]), _badges_of(found[1])


def _badges_of(groups: dict[str, list[Threat]]) -> dict[str, ThreatBadge]:
    out: dict[str, ThreatBadge] = {}
    for key, threats in groups.items():
        open_ones = [
            t.severity for t in threats
            if (t.mitigation.status if t.mitigation is not None else None) in OPEN_STATUSES
        ]
        worst = min(open_ones, key=_SEVERITY_RANK.__getitem__) if open_ones else None
        out[key] = ThreatBadge(len(threats), worst)
    return out


def place_unpositioned(model: ThreatModel) -> ThreatModel:
    """The model with a position for every element and trust boundary: the one call site of
    the automatic layered layout (`thf.layout`) for the SVG, the PNG and the app's diagram.

    Positioned items keep their place; hand-added and imported ones without a position are
    laid out in layers along the data flows, below everything else.
    """
    return layout_missing_positions(model)


def boundary_box(model: ThreatModel, boundary_index: int) -> tuple[float, float, float, float]:
    """(x, y, width, height) of a boundary: stored, else around its members, else a default."""
    boundary = model.trust_boundaries[boundary_index]
    if boundary.position is not None and boundary.size is not None:
        return (boundary.position.x, boundary.position.y, boundary.size.width, boundary.size.height)
    positions = {e.id: e.position for e in model.elements if e.position is not None}
    members = [positions[m] for m in boundary.contains if m in positions]
    if members:
        x0 = min(p.x for p in members) - BOUNDARY_PADDING
        y0 = min(p.y for p in members) - BOUNDARY_PADDING - 18.0
        x1 = max(p.x for p in members) + NODE_WIDTH + BOUNDARY_PADDING
        y1 = max(p.y for p in members) + NODE_HEIGHT + BOUNDARY_PADDING
        box = (x0, y0, x1 - x0, y1 - y0)
    else:
        box = (0.0, 0.0, *DEFAULT_BOUNDARY_SIZE)
    if boundary.position is not None:
        box = (boundary.position.x, boundary.position.y, box[2], box[3])
    return box


@functools.lru_cache(maxsize=1)
def _catalog_types() -> dict[str, tuple[str, str]]:
    """Element type (and alias) → (display label, STRIDE role) from the bundled catalog."""
    try:
        data = json.loads((resources_dir() / "catalog.json").read_text(encoding="utf-8"))
        out: dict[str, tuple[str, str]] = {}
        for entry in data["entries"]:
            info = (str(entry["label"]), str(entry.get("stride_role", "service")))
            out[str(entry["id"])] = info
            for alias in entry.get("aliases", []):
                out.setdefault(str(alias), info)
        return out
    except (OSError, ValueError, KeyError, TypeError):
        # Without the catalog the diagram still renders, with raw type names.
        return {}


def type_label(element_type: str) -> str:
    """A readable name for an element type; unknown types show as written."""
    info = _catalog_types().get(element_type)
    return info[0] if info else element_type


def element_role(element_type: str) -> str:
    """actor, service, store or none (a free-text annotation)."""
    info = _catalog_types().get(element_type)
    if info:
        return info[1]
    return "none" if element_type == "text" else "service"


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: max(limit - 1, 0)] + "…"


def _num(value: float) -> str:
    return f"{value:.1f}"


def _color(value: str | None, fallback: str) -> str:
    return value if value and _COLOR_RE.match(value) else fallback


def _opacity(value: float | None, fallback: float) -> str:
    if value is None or math.isnan(value):
        return _num(fallback)
    return f"{min(max(value, 0.0), 1.0):.2f}"


def _edge_point(cx: float, cy: float, tx: float, ty: float) -> tuple[float, float]:
    """Where the line from a node's centre towards (tx, ty) leaves the node's rectangle."""
    dx, dy = tx - cx, ty - cy
    if dx == 0 and dy == 0:
        return cx, cy
    scale = min(
        (NODE_WIDTH / 2) / abs(dx) if dx else math.inf,
        (NODE_HEIGHT / 2) / abs(dy) if dy else math.inf,
    )
    return cx + dx * scale, cy + dy * scale


def render_diagram_svg(model: ThreatModel) -> str | None:
    """An SVG data-flow diagram with a legend; None when there is nothing to draw."""
    if not model.elements and not model.trust_boundaries:
        return None
    model = place_unpositioned(model)
    boxes: list[tuple[float, float, float, float]] = []
    for element in model.elements:
        assert element.position is not None
        boxes.append((element.position.x, element.position.y, NODE_WIDTH, NODE_HEIGHT))
    boundary_boxes = [boundary_box(model, i) for i in range(len(model.trust_boundaries))]
    boxes.extend(boundary_boxes)
    min_x = min(b[0] for b in boxes) - DIAGRAM_PADDING
    min_y = min(b[1] for b in boxes) - DIAGRAM_PADDING - LEGEND_HEIGHT
    width = max(max(b[0] + b[2] for b in boxes) + DIAGRAM_PADDING - min_x, 760.0)
    height = max(b[1] + b[3] for b in boxes) + DIAGRAM_PADDING - min_y

    out: list[str] = [
        f'<svg xmlns="http://www.w3.org/2000/svg" role="img" '
        f'aria-label="Data-flow diagram" width="{_num(width)}" height="{_num(height)}" '
        f'viewBox="{_num(min_x)} {_num(min_y)} {_num(width)} {_num(height)}" '
        f'font-family="DejaVu Sans, system-ui, sans-serif">',
        "<defs>"
        '<marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="8" '
        'markerHeight="8" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" '
        'fill="#475569"/></marker></defs>',
        f'<rect x="{_num(min_x)}" y="{_num(min_y)}" width="{_num(width)}" '
        f'height="{_num(height)}" fill="#ffffff"/>',
        _legend(min_x + DIAGRAM_PADDING / 2, min_y + 8.0),
    ]
    for boundary, (x, y, w, h) in zip(model.trust_boundaries, boundary_boxes, strict=True):
        stroke = _color(boundary.stroke_color, "#64748b")
        fill = _color(boundary.fill_color, "#94a3b8")
        out.append(
            f'<g class="boundary"><title>{_e(boundary.name)}</title>'
            f'<rect x="{_num(x)}" y="{_num(y)}" width="{_num(w)}" '
            f'height="{_num(h)}" rx="10" fill="{fill}" '
            f'fill-opacity="{_opacity(boundary.fill_opacity, 0.05)}" stroke="{stroke}" '
            f'stroke-opacity="{_opacity(boundary.stroke_opacity, 0.6)}" stroke-width="1.5" '
            f'stroke-dasharray="8 5"/>'
            f'<text x="{_num(x + 10)}" y="{_num(y + 18)}" font-size="12" font-weight="600" '
            f'fill="{stroke}">{_e(_clip(boundary.name, 48))}</text></g>'
        )
    element_badges, flow_badges = threat_badges(model)
    by_id = {e.id: e for e in model.elements}
    for flow in model.data_flows:
        source, target = by_id.get(flow.from_), by_id.get(flow.to)
        if source is None or target is None or source is target:
            continue
        out.append(_svg_flow(flow, source, target, flow_badges.get(flow.id)))
    for element in model.elements:
        out.append(_svg_element(element, element_badges.get(element.id)))
    out.append("</svg>")
    return "".join(out)


def _badge(cx: float, cy: float, badge: ThreatBadge, radius: float = 10.0) -> str:
    count = str(badge.count) if badge.count < 100 else "99+"
    return (
        f'<g class="badge"><circle cx="{_num(cx)}" cy="{_num(cy)}" r="{_num(radius)}" '
        f'fill="{BADGE_COLORS[badge.worst_open]}" stroke="#ffffff" stroke-width="1.5"/>'
        f'<text x="{_num(cx)}" y="{_num(cy + 4)}" font-size="11" font-weight="700" '
        f'text-anchor="middle" fill="#ffffff">{count}</text></g>'
    )


def _legend(x: float, y: float) -> str:
    """Shapes on the first row, badge colours on the second."""
    parts = ['<g class="legend" font-size="11" fill="#334155">']
    cx = x
    shapes = (
        ("External entity", f'<rect x="{{x}}" y="{_num(y)}" width="26" height="16" fill="#ffffff" '
                            'stroke="#334155" stroke-width="1.5"/>'),
        ("Process / service", f'<rect x="{{x}}" y="{_num(y)}" width="26" height="16" rx="6" '
                              'fill="#ffffff" stroke="#334155" stroke-width="1.5"/>'),
        ("Data store", f'<path d="M{{x}},{_num(y)} h26 M{{x}},{_num(y + 16)} h26" stroke="#334155" '
                       'stroke-width="2"/>'),
        ("Data flow", f'<line x1="{{x}}" y1="{_num(y + 8)}" x2="{{x2}}" y2="{_num(y + 8)}" '
                      'stroke="#475569" stroke-width="1.5" marker-end="url(#arrow)"/>'),
        ("Trust boundary", f'<rect x="{{x}}" y="{_num(y)}" width="26" height="16" rx="4" '
                           'fill="none" stroke="#64748b" stroke-width="1.5" stroke-dasharray="5 3"/>'),
    )
    for label, shape in shapes:
        parts.append(shape.format(x=_num(cx), x2=_num(cx + 26)))
        parts.append(f'<text x="{_num(cx + 32)}" y="{_num(y + 12)}">{label}</text>')
        cx += 40 + 6.4 * len(label)
    cx = x
    row = y + 30
    parts.append(f'<text x="{_num(cx)}" y="{_num(row + 12)}">Threats (worst open):</text>')
    cx += 134
    for severity, label in (*((s, s.value) for s in Severity), (None, "all handled")):
        parts.append(
            f'<circle cx="{_num(cx + 8)}" cy="{_num(row + 8)}" r="7" fill="{BADGE_COLORS[severity]}"/>'
            f'<text x="{_num(cx + 20)}" y="{_num(row + 12)}">{label}</text>'
        )
        cx += 32 + 6.4 * len(label)
    parts.append("</g>")
    return "".join(parts)


def _svg_flow(flow: DataFlow, source: Element, target: Element, badge: ThreatBadge | None) -> str:
    assert source.position is not None and target.position is not None
    sx, sy = source.position.x + NODE_WIDTH / 2, source.position.y + NODE_HEIGHT / 2
    tx, ty = target.position.x + NODE_WIDTH / 2, target.position.y + NODE_HEIGHT / 2
    x1, y1 = _edge_point(sx, sy, tx, ty)
    x2, y2 = _edge_point(tx, ty, sx, sy)
    # A label wider than the gap between the two nodes would cover them: clip it to the gap
    # (about 6 px per character at 11 px), keeping at least the flow number.
    room = max(4, int(math.hypot(x2 - x1, y2 - y1) / 6.2))
    label = _clip(flow.name or flow.protocol, max(room, 1))
    if flow.flow_number is not None:
        number = str(flow.flow_number)
        name_room = room - len(number) - 2
        label = f"{number}. {_clip(label, name_room)}" if label and name_room >= 4 else number
    stroke = _color(flow.stroke_color, "#475569")
    full = flow.name or flow.protocol or flow.id
    parts = [
        f'<g class="flow"><title>{_e(full)}</title>'
        f'<line x1="{_num(x1)}" y1="{_num(y1)}" x2="{_num(x2)}" y2="{_num(y2)}" '
        f'stroke="{stroke}" stroke-opacity="{_opacity(flow.stroke_opacity, 0.9)}" '
        f'stroke-width="1.5" marker-end="url(#arrow)"/>'
    ]
    mx, my = (x1 + x2) / 2, (y1 + y2) / 2
    if flow.label_offset is not None:
        mx, my = mx + flow.label_offset.x, my + flow.label_offset.y
    if label:
        # Drawn twice (white halo, then ink) so labels stay legible over lines; some SVG
        # renderers ignore paint-order.
        position = f'x="{_num(mx)}" y="{_num(my - 4)}" font-size="11" text-anchor="middle"'
        text = _e(_clip(label, 40))
        parts.append(
            f'<text {position} fill="#ffffff" stroke="#ffffff" stroke-width="4">{text}</text>'
            f'<text {position} fill="#334155">{text}</text>'
        )
    if badge is not None:
        parts.append(_badge(mx, my + 10, badge, 8.0))
    parts.append("</g>")
    return "".join(parts)


def _svg_element(element: Element, badge: ThreatBadge | None) -> str:
    assert element.position is not None
    x, y = element.position.x, element.position.y
    role = element_role(element.type)
    if role == "none":  # a free-text annotation: no box, no STRIDE badge
        return (
            f'<text class="note" x="{_num(x)}" y="{_num(y + 16)}" font-size="14" '
            f'fill="#475569">{_e(_clip(element.name, 60))}</text>'
        )
    fill = _color(element.fill_color, "#ffffff")
    stroke = _color(element.stroke_color, "#334155")
    paint = f'fill="{fill}" fill-opacity="{_opacity(element.fill_opacity, 1.0)}"'
    style = (
        f'{paint} stroke="{stroke}" '
        f'stroke-opacity="{_opacity(element.stroke_opacity, 1.0)}" stroke-width="1.5"'
    )
    w, h = _num(NODE_WIDTH), _num(NODE_HEIGHT)
    if role == "actor":
        shape = f'<rect x="{_num(x)}" y="{_num(y)}" width="{w}" height="{h}" {style}/>'
    elif role == "store":
        # The DFD data-store symbol: open at the sides, closed top and bottom.
        shape = (
            f'<rect x="{_num(x)}" y="{_num(y)}" width="{w}" height="{h}" {paint} stroke="none"/>'
            f'<path d="M{_num(x)},{_num(y)} h{w} M{_num(x)},{_num(y + NODE_HEIGHT)} h{w}" '
            f'stroke="{stroke}" stroke-opacity="{_opacity(element.stroke_opacity, 1.0)}" '
            f'stroke-width="2"/>'
        )
    else:
        shape = f'<rect x="{_num(x)}" y="{_num(y)}" width="{w}" height="{h}" rx="14" {style}/>'
    cx = x + NODE_WIDTH / 2
    parts = [
        f'<g class="element"><title>{_e(element.name)} ({_e(type_label(element.type))})</title>'
        f"{shape}"
        f'<text x="{_num(cx)}" y="{_num(y + 27)}" font-size="12" font-weight="600" '
        f'text-anchor="middle" fill="#0f172a">{_e(_clip(element.name, 22))}</text>'
        f'<text x="{_num(cx)}" y="{_num(y + 44)}" font-size="10" text-anchor="middle" '
        f'fill="#64748b">{_e(_clip(type_label(element.type), 28))}</text>'
    ]
    if badge is not None:
        parts.append(_badge(x + NODE_WIDTH - 4, y + 4, badge))
    parts.append("</g>")
    return "".join(parts)
