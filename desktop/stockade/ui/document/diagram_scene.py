"""The diagram's geometry: plain rectangles and segments for every entity, queried by area.

No QGraphicsItem per entity: a 10k-element model is 25,000 entities, and an item each costs
seconds to build and hundreds of megabytes. The view asks this scene for what lies in the
exposed area and paints only that.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from enum import StrEnum

from PySide6.QtCore import QLineF, QPointF, QRectF
from PySide6.QtGui import QColor

from stockade.catalog.registry import CatalogError, StrideRole, resolve_component
from stockade.report.diagram_svg import (
    NODE_HEIGHT,
    NODE_WIDTH,
    ThreatBadge,
    boundary_box,
    place_unpositioned,
    threat_badges,
)
from stockade.thf.model import ThreatModel

QUERY_MARGIN = 0.5
"""A query caches the area around the view too (half a view each side), so panning re-scans
the document only after moving that far."""
LOOP_HEIGHT = 40.0
RELATIONSHIP_OFFSET = 12.0
"""Relationships sit beside any flow between the same pair, so both stay clickable."""


class ShapeRole(StrEnum):
    """How an element is drawn, from its STRIDE role."""

    ACTOR = "actor"
    SERVICE = "service"
    STORE = "store"
    ANNOTATION = "annotation"


_ROLE_BY_STRIDE = {
    StrideRole.ACTOR: ShapeRole.ACTOR,
    StrideRole.STORE: ShapeRole.STORE,
    StrideRole.SERVICE: ShapeRole.SERVICE,
    StrideRole.NONE: ShapeRole.ANNOTATION,
}


@dataclass(frozen=True)
class ElementLook:
    """How the catalog says to draw one element type."""

    role: ShapeRole
    label: str


def element_look(element_type: str) -> ElementLook:
    """The catalog's STRIDE role and label for a type; unknown types look like a generic service."""
    try:
        entry = resolve_component(element_type)
    except CatalogError:
        return ElementLook(ShapeRole.SERVICE, element_type.replace("_", " "))
    label = entry.label if entry.id == element_type else element_type.replace("_", " ")
    return ElementLook(_ROLE_BY_STRIDE.get(entry.stride_role, ShapeRole.SERVICE), label)


@dataclass(slots=True)
class DrawnElement:
    entity_id: str
    name: str
    look: ElementLook
    rect: QRectF
    badge: ThreatBadge | None
    source: object
    """The document entity: immutable, so `is` tells whether it changed."""
    flows: list[int] = field(default_factory=list)
    """Indexes of the flows that start or end here (redrawn when it moves)."""


@dataclass(slots=True)
class DrawnFlow:
    section: str
    """`data_flows` or `relationships` (drawn dashed)."""
    entity_id: str
    label: str
    source: int
    target: int
    line: QLineF
    bounds: QRectF
    badge: ThreatBadge | None


@dataclass(slots=True)
class DrawnBoundary:
    entity_id: str
    name: str
    rect: QRectF
    color: QColor


@dataclass
class VisibleSet:
    """Indexes of what lies in (or near) an area of the scene."""

    area: QRectF
    elements: list[int]
    flows: list[int]
    boundaries: list[int]


def _edge_point(rect: QRectF, tx: float, ty: float) -> QPointF:
    """Where the line from `rect`'s centre toward (tx, ty) leaves the rectangle."""
    cx, cy = rect.center().x(), rect.center().y()
    dx, dy = tx - cx, ty - cy
    if dx == 0 and dy == 0:
        return QPointF(cx, cy)
    scale = min(rect.width() / 2 / abs(dx) if dx else math.inf,
                rect.height() / 2 / abs(dy) if dy else math.inf)
    return QPointF(cx + dx * scale, cy + dy * scale)


def flow_line(source: QRectF, target: QRectF) -> QLineF:
    if source == target:  # a self-loop: a short span over the top edge
        x, y = source.center().x(), source.top()
        return QLineF(x - 20.0, y, x + 20.0, y)
    s, t = source.center(), target.center()
    return QLineF(_edge_point(source, t.x(), t.y()), _edge_point(target, s.x(), s.y()))


def _shifted(line: QLineF, offset: float) -> QLineF:
    length = line.length()
    if length == 0:
        return line
    nx, ny = -line.dy() / length * offset, line.dx() / length * offset
    return line.translated(nx, ny)


def route(section: str, source: QRectF, target: QRectF) -> QLineF:
    line = flow_line(source, target)
    return _shifted(line, RELATIONSHIP_OFFSET) if section == "relationships" else line


def _line_bounds(line: QLineF, loop: bool) -> QRectF:
    box = QRectF(line.p1(), line.p2()).normalized()
    return box.adjusted(-12.0, -LOOP_HEIGHT - 12.0 if loop else -12.0, 12.0, 12.0)


class DiagramScene:
    """Everything the diagram draws for one document, with area queries and hit tests."""

    def __init__(self, document: ThreatModel, previous: DiagramScene | None = None) -> None:
        self.document = document
        placed = place_unpositioned(document)
        element_badges, flow_badges = threat_badges(document)
        reuse = previous._elements_by_source() if previous is not None else {}
        looks: dict[str, ElementLook] = {}
        self.elements: list[DrawnElement] = []
        self.element_index: dict[str, int] = {}
        for element in placed.elements:
            assert element.position is not None
            badge = element_badges.get(element.id)
            old = reuse.get(id(element))
            if old is not None and old.badge == badge and old.source is element:
                drawn = DrawnElement(old.entity_id, old.name, old.look, old.rect, badge, element)
            else:
                look = looks.get(element.type)
                if look is None:
                    look = looks[element.type] = element_look(element.type)
                drawn = DrawnElement(
                    element.id, element.name or element.id, look,
                    QRectF(element.position.x, element.position.y, NODE_WIDTH, NODE_HEIGHT),
                    badge, element,
                )
            self.element_index[element.id] = len(self.elements)
            self.elements.append(drawn)
        self.flows: list[DrawnFlow] = []
        self.flow_index: dict[tuple[str, str], int] = {}
        for section, entities in (("data_flows", document.data_flows),
                                  ("relationships", document.relationships)):
            for flow in entities:
                source = self.element_index.get(flow.from_)
                target = self.element_index.get(flow.to)
                if source is None or target is None:
                    continue
                if section == "data_flows":
                    number = getattr(flow, "flow_number", None)
                    label = f"{number}. {flow.name}" if number is not None and flow.name else (
                        flow.name or getattr(flow, "protocol", "") or "")
                else:
                    label = flow.name or str(getattr(flow, "type", "")).replace("_", " ")
                line = route(section, self.elements[source].rect, self.elements[target].rect)
                index = len(self.flows)
                self.flows.append(DrawnFlow(
                    section, flow.id, label, source, target, line,
                    _line_bounds(line, source == target),
                    flow_badges.get(flow.id) if section == "data_flows" else None,
                ))
                self.flow_index[(section, flow.id)] = index
                self.elements[source].flows.append(index)
                if target != source:
                    self.elements[target].flows.append(index)
        self.boundaries: list[DrawnBoundary] = []
        self.boundary_index: dict[str, int] = {}
        for i, boundary in enumerate(placed.trust_boundaries):
            x, y, w, h = boundary_box(placed, i)
            color = QColor(boundary.stroke_color or "#ef4444")
            if not color.isValid():
                color = QColor("#ef4444")
            self.boundary_index[boundary.id] = len(self.boundaries)
            self.boundaries.append(DrawnBoundary(boundary.id, boundary.name, QRectF(x, y, w, h), color))
        self._visible: VisibleSet | None = None

    def _elements_by_source(self) -> dict[int, DrawnElement]:
        return {id(e.source): e for e in self.elements}

    # -- queries ----------------------------------------------------------------------------

    @property
    def entity_count(self) -> int:
        return len(self.elements) + len(self.flows) + len(self.boundaries)

    def bounds(self) -> QRectF:
        box = QRectF()
        for rects in ([e.rect for e in self.elements], [f.bounds for f in self.flows],
                      [b.rect for b in self.boundaries]):
            for rect in rects:
                box = box.united(rect) if not box.isNull() else QRectF(rect)
        return box

    def entity_rect(self, section: str, entity_id: str) -> QRectF | None:
        """The scene rectangle an entity occupies (a flow: its line's bounds)."""
        if section == "elements" and entity_id in self.element_index:
            return QRectF(self.elements[self.element_index[entity_id]].rect)
        if section == "trust_boundaries" and entity_id in self.boundary_index:
            return QRectF(self.boundaries[self.boundary_index[entity_id]].rect)
        index = self.flow_index.get((section, entity_id))
        return QRectF(self.flows[index].bounds) if index is not None else None

    def has(self, section: str, entity_id: str) -> bool:
        return self.entity_rect(section, entity_id) is not None

    def visible(self, area: QRectF) -> VisibleSet:
        """What lies in `area`, from a cached scan of a larger area around it when possible."""
        cached = self._visible
        if cached is not None and cached.area.contains(area):
            return cached
        mx, my = area.width() * QUERY_MARGIN, area.height() * QUERY_MARGIN
        wide = area.adjusted(-mx, -my, mx, my)
        left, top, right, bottom = wide.left(), wide.top(), wide.right(), wide.bottom()

        def inside(rect: QRectF) -> bool:
            return not (rect.right() < left or rect.left() > right
                        or rect.bottom() < top or rect.top() > bottom)

        self._visible = VisibleSet(
            wide,
            [i for i, e in enumerate(self.elements) if inside(e.rect)],
            [i for i, f in enumerate(self.flows) if inside(f.bounds)],
            [i for i, b in enumerate(self.boundaries) if inside(b.rect)],
        )
        return self._visible

    def hit(self, point: QPointF, tolerance: float) -> tuple[str, str] | None:
        """The entity under a scene point: elements first, then flows, then boundary edges."""
        probe = QRectF(point.x() - tolerance, point.y() - tolerance, 2 * tolerance, 2 * tolerance)
        visible = self.visible(probe)
        for i in reversed(visible.elements):
            if self.elements[i].rect.contains(point):
                return ("elements", self.elements[i].entity_id)
        best: tuple[float, int] | None = None
        for i in visible.flows:
            flow = self.flows[i]
            if not flow.bounds.contains(point):
                continue
            distance = _distance_to_segment(point, flow.line)
            if distance <= tolerance and (best is None or distance < best[0]):
                best = (distance, i)
        if best is not None:
            flow = self.flows[best[1]]
            return (flow.section, flow.entity_id)
        for i in reversed(visible.boundaries):
            if self.boundary_grip(i, point, tolerance):
                return ("trust_boundaries", self.boundaries[i].entity_id)
        return None

    def boundary_grip(self, index: int, point: QPointF, tolerance: float) -> bool:
        """On a boundary's edge or title strip (its inside lets clicks reach the elements)."""
        rect = self.boundaries[index].rect
        outer = rect.adjusted(-tolerance, -tolerance, tolerance, tolerance)
        inner = rect.adjusted(tolerance, tolerance, -tolerance, -tolerance)
        title = QRectF(rect.left(), rect.top(), min(rect.width(), 280.0), 24.0)
        return outer.contains(point) and (not inner.contains(point) or title.contains(point))

    # -- moving -----------------------------------------------------------------------------

    def move_element(self, index: int, top_left: QPointF) -> None:
        """Move an element (while dragging) and re-route the flows attached to it."""
        element = self.elements[index]
        element.rect = QRectF(top_left, element.rect.size())
        for flow_index in element.flows:
            flow = self.flows[flow_index]
            flow.line = route(flow.section, self.elements[flow.source].rect,
                              self.elements[flow.target].rect)
            flow.bounds = _line_bounds(flow.line, flow.source == flow.target)
        self._visible = None

    def move_boundary(self, index: int, top_left: QPointF) -> None:
        boundary = self.boundaries[index]
        boundary.rect = QRectF(top_left, boundary.rect.size())
        self._visible = None


def _distance_to_segment(point: QPointF, line: QLineF) -> float:
    ax, ay, bx, by = line.x1(), line.y1(), line.x2(), line.y2()
    dx, dy = bx - ax, by - ay
    length2 = dx * dx + dy * dy
    if length2 == 0:
        return math.hypot(point.x() - ax, point.y() - ay)
    t = max(0.0, min(1.0, ((point.x() - ax) * dx + (point.y() - ay) * dy) / length2))
    return math.hypot(point.x() - (ax + t * dx), point.y() - (ay + t * dy))
