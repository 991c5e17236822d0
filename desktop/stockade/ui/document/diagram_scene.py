"""The diagram's geometry: plain rectangles and segments for every entity, queried by area.

No QGraphicsItem per entity: a 10k-element model is 25,000 entities, and an item each costs
seconds to build and hundreds of megabytes. The view asks this scene for what lies in the
exposed area and paints only that.
"""

from __future__ import annotations

import contextlib
import gc
import math
from collections.abc import Iterator
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

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
    box: Box
    badge: ThreatBadge | None
    source: object
    """The document entity: immutable, so `is` tells whether it changed."""


@dataclass(slots=True)
class DrawnFlow:
    section: str
    """`data_flows` or `relationships` (drawn dashed)."""
    entity_id: str
    entity: Any
    """The flow or relationship drawn (its label is made from it when first shown)."""
    source: int
    target: int
    box: Box
    """Bounds of both endpoints' boxes: enough to find it, cheap to compute for 75k flows."""
    badge: ThreatBadge | None
    line: QLineF | None = None
    """Edge to edge, built the first time it is drawn near enough to see arrows."""
    center_line: QLineF | None = None
    """Centre to centre, built the first time it is drawn from far away."""
    _label: str | None = None

    @property
    def label(self) -> str:
        if self._label is None:
            flow = self.entity
            if self.section == "data_flows":
                number = flow.flow_number
                self._label = f"{number}. {flow.name}" if number is not None and flow.name else (
                    flow.name or flow.protocol or "")
            else:
                self._label = flow.name or str(flow.type).replace("_", " ")
        return self._label


@dataclass(slots=True)
class DrawnBoundary:
    entity_id: str
    name: str
    rect: QRectF
    box: Box
    color: QColor


@dataclass
class VisibleSet:
    """Indexes of what lies in (or near) an area of the scene."""

    area: QRectF
    elements: list[int]
    flows: list[int]
    boundaries: list[int]


def _edge_point(cx: float, cy: float, hw: float, hh: float, tx: float, ty: float) -> tuple[float, float]:
    """Where the line from a box's centre (half-size hw, hh) toward (tx, ty) leaves the box."""
    dx, dy = tx - cx, ty - cy
    if dx == 0 and dy == 0:
        return (cx, cy)
    scale = min(hw / abs(dx) if dx else math.inf, hh / abs(dy) if dy else math.inf)
    return (cx + dx * scale, cy + dy * scale)


def flow_line(source: QRectF, target: QRectF) -> QLineF:
    return _flow_line(source.x(), source.y(), source.width(), source.height(),
                      target.x(), target.y(), target.width(), target.height())


def _flow_line(sx: float, sy: float, sw: float, sh: float,
               tx: float, ty: float, tw: float, th: float) -> QLineF:
    if sx == tx and sy == ty:  # a self-loop: a short span over the top edge
        x = sx + sw / 2
        return QLineF(x - 20.0, sy, x + 20.0, sy)
    scx, scy, tcx, tcy = sx + sw / 2, sy + sh / 2, tx + tw / 2, ty + th / 2
    x1, y1 = _edge_point(scx, scy, sw / 2, sh / 2, tcx, tcy)
    x2, y2 = _edge_point(tcx, tcy, tw / 2, th / 2, scx, scy)
    return QLineF(x1, y1, x2, y2)


def _shifted(line: QLineF, offset: float) -> QLineF:
    length = line.length()
    if length == 0:
        return line
    nx, ny = -line.dy() / length * offset, line.dx() / length * offset
    return line.translated(nx, ny)


def route(section: str, source: QRectF, target: QRectF) -> QLineF:
    line = flow_line(source, target)
    return _shifted(line, RELATIONSHIP_OFFSET) if section == "relationships" else line


Box = tuple[float, float, float, float]
"""(left, top, right, bottom): plain floats are what area scans compare fastest."""


def _rect_box(rect: QRectF) -> Box:
    return (rect.left(), rect.top(), rect.right(), rect.bottom())


def box_rect(box: Box) -> QRectF:
    return QRectF(box[0], box[1], box[2] - box[0], box[3] - box[1])


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """No cyclic collection while building tens of thousands of small acyclic records: each
    collection would walk the whole open document, doubling the build time for nothing."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


class DiagramScene:
    """Everything the diagram draws for one document, with area queries and hit tests."""

    def __init__(self, document: ThreatModel, previous: DiagramScene | None = None) -> None:
        with gc_paused():
            self._build(document, previous)

    def _build(self, document: ThreatModel, previous: DiagramScene | None) -> None:
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
                drawn = DrawnElement(old.entity_id, old.name, old.look, old.rect, old.box, badge,
                                     element)
            else:
                look = looks.get(element.type)
                if look is None:
                    look = looks[element.type] = element_look(element.type)
                x, y = element.position.x, element.position.y
                drawn = DrawnElement(
                    element.id, element.name or element.id, look,
                    QRectF(x, y, NODE_WIDTH, NODE_HEIGHT), (x, y, x + NODE_WIDTH, y + NODE_HEIGHT),
                    badge, element,
                )
            self.element_index[element.id] = len(self.elements)
            self.elements.append(drawn)
        self.flows: list[DrawnFlow] = []
        self.flow_index: dict[tuple[str, str], int] = {}
        element_index, elements, flows = self.element_index, self.elements, self.flows
        for section, entities in (("data_flows", document.data_flows),
                                  ("relationships", document.relationships)):
            badges = flow_badges if section == "data_flows" else {}
            for flow in entities:
                source = element_index.get(flow.from_)
                target = element_index.get(flow.to)
                if source is None or target is None:
                    continue
                ax0, ay0, ax1, ay1 = elements[source].box
                bx0, by0, bx1, by1 = elements[target].box
                top = (ay0 if ay0 < by0 else by0) - (LOOP_HEIGHT + 12.0 if source == target else 12.0)
                box = ((ax0 if ax0 < bx0 else bx0) - 12.0, top,
                       (ax1 if ax1 > bx1 else bx1) + 12.0, (ay1 if ay1 > by1 else by1) + 12.0)
                self.flow_index[(section, flow.id)] = len(flows)
                flows.append(DrawnFlow(section, flow.id, flow, source, target, box,
                                       badges.get(flow.id)))
        self.boundaries: list[DrawnBoundary] = []
        self.boundary_index: dict[str, int] = {}
        for i, boundary in enumerate(placed.trust_boundaries):
            x, y, w, h = boundary_box(placed, i)
            color = QColor(boundary.stroke_color or "#ef4444")
            if not color.isValid():
                color = QColor("#ef4444")
            self.boundary_index[boundary.id] = len(self.boundaries)
            self.boundaries.append(DrawnBoundary(boundary.id, boundary.name, QRectF(x, y, w, h),
                                                 (x, y, x + w, y + h), color))
        self._visible: VisibleSet | None = None
        self._everything: VisibleSet | None = None
        self._attached: dict[int, list[int]] = {}
        self._bounds = self._compute_bounds()

    def _flow_box(self, source: int, target: int) -> Box:
        a, b = self.elements[source].box, self.elements[target].box
        top = min(a[1], b[1]) - (LOOP_HEIGHT + 12.0 if source == target else 12.0)
        return (min(a[0], b[0]) - 12.0, top, max(a[2], b[2]) + 12.0, max(a[3], b[3]) + 12.0)

    def line(self, index: int) -> QLineF:
        """A flow's edge-to-edge line (built on first use)."""
        flow = self.flows[index]
        if flow.line is None:
            flow.line = route(flow.section, self.elements[flow.source].rect,
                              self.elements[flow.target].rect)
        return flow.line

    def center_line(self, index: int) -> QLineF:
        """A flow's centre-to-centre line (what a far-away view draws)."""
        flow = self.flows[index]
        if flow.center_line is None:
            a, b = self.elements[flow.source].box, self.elements[flow.target].box
            flow.center_line = QLineF((a[0] + a[2]) / 2, (a[1] + a[3]) / 2,
                                      (b[0] + b[2]) / 2, (b[1] + b[3]) / 2)
        return flow.center_line

    def _elements_by_source(self) -> dict[int, DrawnElement]:
        return {id(e.source): e for e in self.elements}

    # -- queries ----------------------------------------------------------------------------

    @property
    def entity_count(self) -> int:
        return len(self.elements) + len(self.flows) + len(self.boundaries)

    def bounds(self) -> QRectF:
        """Everything drawn: elements and boundaries (flows run between elements)."""
        return QRectF(self._bounds)

    def _compute_bounds(self) -> QRectF:
        boxes = [e.box for e in self.elements] + [b.box for b in self.boundaries]
        if not boxes:
            return QRectF()
        return box_rect((min(b[0] for b in boxes), min(b[1] for b in boxes),
                         max(b[2] for b in boxes), max(b[3] for b in boxes)))

    def entity_rect(self, section: str, entity_id: str) -> QRectF | None:
        """The scene rectangle an entity occupies (a flow: its line's bounds)."""
        if section == "elements" and entity_id in self.element_index:
            return QRectF(self.elements[self.element_index[entity_id]].rect)
        if section == "trust_boundaries" and entity_id in self.boundary_index:
            return QRectF(self.boundaries[self.boundary_index[entity_id]].rect)
        index = self.flow_index.get((section, entity_id))
        return box_rect(self.flows[index].box) if index is not None else None

    def has(self, section: str, entity_id: str) -> bool:
        return self.entity_rect(section, entity_id) is not None

    def visible(self, area: QRectF, reuse_up_to: float = 1.5) -> VisibleSet:
        """What lies in `area`, from a cached scan of a larger area around it when possible.

        A cached scan serves an area inside it at most `reuse_up_to` times smaller (zooming in
        asks for less, and a close view must not get the whole canvas back to sift through).
        """
        mx, my = area.width() * QUERY_MARGIN, area.height() * QUERY_MARGIN
        wide = area.adjusted(-mx, -my, mx, my)
        cached = self._visible
        if (cached is not None and cached.area.contains(area)
                and cached.area.width() <= wide.width() * reuse_up_to
                and cached.area.height() <= wide.height() * reuse_up_to):
            return cached
        if wide.contains(self._bounds):
            if self._everything is None:
                self._everything = VisibleSet(
                    QRectF(self._bounds), list(range(len(self.elements))),
                    list(range(len(self.flows))), list(range(len(self.boundaries))))
            self._everything.area = wide
            self._visible = self._everything
        else:
            self._visible = self._scan(wide)
        return self._visible

    def exactly_in(self, area: QRectF) -> VisibleSet:
        """What lies in `area` itself (filtered from the cached scan around it)."""
        wide = self.visible(area)
        left, top, right, bottom = area.left(), area.top(), area.right(), area.bottom()

        def keep(indexes: list[int], items: list[Any]) -> list[int]:
            out = []
            for i in indexes:
                x0, y0, x1, y1 = items[i].box
                if x1 >= left and x0 <= right and y1 >= top and y0 <= bottom:
                    out.append(i)
            return out

        return VisibleSet(area, keep(wide.elements, self.elements), keep(wide.flows, self.flows),
                          keep(wide.boundaries, self.boundaries))

    def _scan(self, wide: QRectF) -> VisibleSet:
        left, top, right, bottom = wide.left(), wide.top(), wide.right(), wide.bottom()
        return VisibleSet(
            wide,
            _overlapping([e.box for e in self.elements], left, top, right, bottom),
            self._flows_crossing(left, top, right, bottom),
            _overlapping([b.box for b in self.boundaries], left, top, right, bottom),
        )

    def _moved(self) -> None:
        self._visible = self._everything = None
        self._bounds = self._compute_bounds()

    def _flows_crossing(self, left: float, top: float, right: float, bottom: float) -> list[int]:
        """Flows whose segment passes through the area, not merely whose bounds overlap it:
        a long flow's bounds cover much of the canvas, its line very little."""
        elements = self.elements
        out: list[int] = []
        pad = 14.0
        for i in _overlapping([f.box for f in self.flows], left, top, right, bottom):
            flow = self.flows[i]
            x0, y0, x1, y1 = flow.box
            if x0 >= left and x1 <= right and y0 >= top and y1 <= bottom:
                out.append(i)  # wholly inside: no need to clip
                continue
            a, b = elements[flow.source].box, elements[flow.target].box
            if flow.source == flow.target or _segment_meets_box(
                (a[0] + a[2]) / 2, (a[1] + a[3]) / 2, (b[0] + b[2]) / 2, (b[1] + b[3]) / 2,
                left - pad, top - pad, right + pad, bottom + pad,
            ):
                out.append(i)
        return out

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
            x0, y0, x1, y1 = flow.box
            if not (x0 <= point.x() <= x1 and y0 <= point.y() <= y1):
                continue
            distance = _distance_to_segment(point, self.line(i))
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
        element.box = _rect_box(element.rect)
        attached = self._attached.get(index)
        if attached is None:  # found once per dragged element, not built for all 10k up front
            attached = self._attached[index] = [
                i for i, f in enumerate(self.flows) if index in (f.source, f.target)]
        for flow_index in attached:
            flow = self.flows[flow_index]
            flow.line = flow.center_line = None
            flow.box = self._flow_box(flow.source, flow.target)
        self._moved()

    def move_boundary(self, index: int, top_left: QPointF) -> None:
        boundary = self.boundaries[index]
        boundary.rect = QRectF(top_left, boundary.rect.size())
        boundary.box = _rect_box(boundary.rect)
        self._moved()


def _overlapping(boxes: list[Box], left: float, top: float, right: float,
                 bottom: float) -> list[int]:
    return [i for i, (x0, y0, x1, y1) in enumerate(boxes)
            if x1 >= left and x0 <= right and y1 >= top and y0 <= bottom]


def _segment_meets_box(x1: float, y1: float, x2: float, y2: float, left: float, top: float,
                       right: float, bottom: float) -> bool:
    """Liang-Barsky: whether the segment has any part inside the box."""
    t0, t1 = 0.0, 1.0
    dx, dy = x2 - x1, y2 - y1
    for p, q in ((-dx, x1 - left), (dx, right - x1), (-dy, y1 - top), (dy, bottom - y1)):
        if p == 0:
            if q < 0:
                return False
            continue
        t = q / p
        if p < 0:
            if t > t1:
                return False
            t0 = max(t0, t)
        else:
            if t < t0:
                return False
            t1 = min(t1, t)
    return t0 <= t1


def _distance_to_segment(point: QPointF, line: QLineF) -> float:
    ax, ay, bx, by = line.x1(), line.y1(), line.x2(), line.y2()
    dx, dy = bx - ax, by - ay
    length2 = dx * dx + dy * dy
    if length2 == 0:
        return math.hypot(point.x() - ax, point.y() - ay)
    t = max(0.0, min(1.0, ((point.x() - ax) * dx + (point.y() - ay) * dy) / length2))
    return math.hypot(point.x() - (ax + t * dx), point.y() - (ay + t * dy))
