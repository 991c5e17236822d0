"""Read-only data-flow diagram drawn from the positions stored in the document."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import StrEnum
from functools import partial
from typing import Any

from PySide6.QtCore import QLineF, QPointF, QRectF, Qt, Signal
from PySide6.QtGui import (
    QBrush,
    QColor,
    QFont,
    QFontMetricsF,
    QPainter,
    QPainterPath,
    QPainterPathStroker,
    QPen,
    QPolygonF,
    QWheelEvent,
)
from PySide6.QtWidgets import (
    QGraphicsItem,
    QGraphicsScene,
    QGraphicsView,
    QStyleOptionGraphicsItem,
    QWidget,
)

from stockade.catalog.registry import CatalogError, StrideRole, resolve_component
from stockade.thf.model import (
    DataFlow,
    Element,
    MitigationStatus,
    Relationship,
    Severity,
    ThreatModel,
    TrustBoundary,
)

ELEMENT_WIDTH = 150.0
ELEMENT_HEIGHT = 60.0
GRID_STEP_X = 210.0
GRID_STEP_Y = 130.0
BOUNDARY_PADDING = 30.0
DETAIL_LOD = 0.3
"""Below this on-screen scale, items draw plain shapes: text would be unreadable and slow."""
ZOOM_STEP = 1.25
RELATIONSHIP_OFFSET = 12.0
MIN_SCALE = 0.02
MAX_SCALE = 8.0


class ShapeRole(StrEnum):
    """How an element is drawn, from its STRIDE role."""

    ACTOR = "actor"
    SERVICE = "service"
    STORE = "store"
    ANNOTATION = "annotation"


@dataclass(frozen=True)
class ElementLook:
    """How the catalog says to draw one element type."""

    role: ShapeRole
    label: str


_ROLE_BY_STRIDE = {
    StrideRole.ACTOR: ShapeRole.ACTOR,
    StrideRole.STORE: ShapeRole.STORE,
    StrideRole.SERVICE: ShapeRole.SERVICE,
    StrideRole.NONE: ShapeRole.ANNOTATION,
}


def element_look(element_type: str) -> ElementLook:
    """The catalog's STRIDE role and label for a type; unknown types look like a generic service."""
    try:
        entry = resolve_component(element_type)
    except CatalogError:
        return ElementLook(ShapeRole.SERVICE, element_type.replace("_", " "))
    label = entry.label if entry.id == element_type else element_type.replace("_", " ")
    return ElementLook(_ROLE_BY_STRIDE.get(entry.stride_role, ShapeRole.SERVICE), label)


_SEVERITY_COLORS: dict[Severity, str] = {
    Severity.CRITICAL: "#dc2626",
    Severity.HIGH: "#ea580c",
    Severity.MEDIUM: "#d97706",
    Severity.LOW: "#2563eb",
    Severity.INFO: "#6b7280",
}
_SEVERITY_RANK = {s: i for i, s in enumerate(Severity)}
_ROLE_FILL = {
    ShapeRole.ACTOR: QColor("#eef2ff"),
    ShapeRole.SERVICE: QColor("#ecfeff"),
    ShapeRole.STORE: QColor("#fef9c3"),
    ShapeRole.ANNOTATION: QColor(0, 0, 0, 0),
}
_OUTLINE = QColor("#334155")
_FLOW_COLOR = QColor("#475569")
# Enum members looked up once: attribute access on Qt enums is slow in a 25k-item loop.
_SELECTABLE = QGraphicsItem.GraphicsItemFlag.ItemIsSelectable
_ALIGN_CENTER = int(Qt.AlignmentFlag.AlignCenter)
_SELECTED = QColor("#2563eb")
_LABEL_FONT = QFont()
_LABEL_FONT.setPointSizeF(9.0)
_SMALL_FONT = QFont()
_SMALL_FONT.setPointSizeF(7.5)


@dataclass(frozen=True)
class ThreatBadge:
    """How many threats target an element, coloured by the worst one still open."""

    count: int
    worst_open: Severity | None


_OPEN_STATUSES = (None, MitigationStatus.NOT_STARTED, MitigationStatus.IN_PROGRESS)


def _badges(document: ThreatModel) -> dict[str, ThreatBadge]:
    counts: dict[str, int] = {}
    worst: dict[str, Severity] = {}
    for threat in document.threats:
        if threat.element is None:
            continue
        counts[threat.element] = counts.get(threat.element, 0) + 1
        status = threat.mitigation.status if threat.mitigation is not None else None
        if status in _OPEN_STATUSES:
            current = worst.get(threat.element)
            if current is None or _SEVERITY_RANK[threat.severity] < _SEVERITY_RANK[current]:
                worst[threat.element] = threat.severity
    return {eid: ThreatBadge(n, worst.get(eid)) for eid, n in counts.items()}


def _rect_key(rect: QRectF) -> tuple[float, float, float, float]:
    return (rect.x(), rect.y(), rect.width(), rect.height())


def element_signature(
    rect: QRectF, badge: ThreatBadge | None, look: ElementLook
) -> tuple[Any, ...]:
    return (_rect_key(rect), badge, look)


def flow_signature(source: QRectF, target: QRectF) -> tuple[Any, ...]:
    return (_rect_key(source), _rect_key(target))


def boundary_signature(rect: QRectF) -> tuple[Any, ...]:
    return (_rect_key(rect),)


class _EntityItem(QGraphicsItem):
    """Base for diagram items that stand for one document entity."""

    section = ""

    def __init__(self, entity_id: str, source: Any, signature: tuple[Any, ...]) -> None:
        super().__init__()
        self.entity_id = entity_id
        self.source = source
        """The document entity drawn; entities are immutable, so `is` tells if it changed."""
        self.signature = signature
        """Everything else the drawing depends on (geometry, badge); equal means reusable."""
        self.setFlag(_SELECTABLE, True)

    def _pen(self, base: QColor, width: float = 1.2) -> QPen:
        if self.isSelected():
            return QPen(_SELECTED, width + 1.8)
        return QPen(base, width)


class ElementItem(_EntityItem):
    section = "elements"

    def __init__(
        self, element: Element, rect: QRectF, badge: ThreatBadge | None, look: ElementLook
    ) -> None:
        super().__init__(element.id, element, element_signature(rect, badge, look))
        self.name = element.name or element.id
        self.type_label = look.label
        self.role = look.role
        self.badge = badge
        self.setPos(rect.topLeft())
        self._rect = QRectF(0.0, 0.0, rect.width(), rect.height())
        # The badge hangs over the top-right corner, so the bounds grow by its radius.
        self._bounds = self._rect.adjusted(-3.0, -12.0, 12.0, 3.0)
        self.setZValue(2.0)

    def boundingRect(self) -> QRectF:
        """Qt override: boundingRect."""
        return self._bounds

    def shape(self) -> QPainterPath:
        """Qt override: shape."""
        path = QPainterPath()
        path.addRect(self._rect)
        return path

    def paint(
        self, painter: QPainter, option: QStyleOptionGraphicsItem, widget: QWidget | None = None
    ) -> None:
        """Qt override: paint."""
        lod = option.levelOfDetailFromTransform(painter.worldTransform())
        rect = self._rect
        painter.setPen(self._pen(_OUTLINE))
        painter.setBrush(QBrush(_ROLE_FILL[self.role]))
        if lod < DETAIL_LOD:
            painter.drawRect(rect)
            return
        if self.role is ShapeRole.ACTOR:
            painter.drawRect(rect)
        elif self.role is ShapeRole.SERVICE:
            painter.drawRoundedRect(rect, 18.0, 18.0)
        elif self.role is ShapeRole.STORE:
            # A DFD data store: a box open at both ends, drawn as a cylinder-like band.
            painter.drawRect(rect)
            painter.drawLine(QLineF(rect.left() + 8.0, rect.top(), rect.left() + 8.0, rect.bottom()))
        else:
            if self.isSelected():
                painter.setBrush(Qt.BrushStyle.NoBrush)
                painter.drawRect(rect)
        painter.setPen(QPen(QColor("#0f172a")))
        painter.setFont(_LABEL_FONT)
        text_rect = rect.adjusted(10.0, 4.0, -6.0, -18.0)
        metrics = QFontMetricsF(_LABEL_FONT)
        painter.drawText(
            text_rect,
            _ALIGN_CENTER,
            metrics.elidedText(self.name, Qt.TextElideMode.ElideRight, text_rect.width()),
        )
        if self.role is not ShapeRole.ANNOTATION:
            painter.setFont(_SMALL_FONT)
            painter.setPen(QPen(QColor("#64748b")))
            painter.drawText(
                rect.adjusted(6.0, rect.height() - 20.0, -6.0, -3.0),
                _ALIGN_CENTER,
                self.type_label,
            )
        if self.badge is not None:
            self._paint_badge(painter)

    def _paint_badge(self, painter: QPainter) -> None:
        assert self.badge is not None
        color = QColor(
            _SEVERITY_COLORS[self.badge.worst_open] if self.badge.worst_open else "#16a34a"
        )
        center = QPointF(self._rect.right(), self._rect.top())
        painter.setPen(QPen(QColor("white"), 1.5))
        painter.setBrush(QBrush(color))
        painter.drawEllipse(center, 11.0, 11.0)
        painter.setFont(_SMALL_FONT)
        painter.drawText(
            QRectF(center.x() - 11.0, center.y() - 11.0, 22.0, 22.0),
            _ALIGN_CENTER,
            str(self.badge.count) if self.badge.count < 100 else "99+",
        )


def _edge_point(rect: QRectF, tx: float, ty: float) -> tuple[float, float]:
    """Where the line from `rect`'s centre toward (tx, ty) leaves the rectangle."""
    cx = rect.x() + rect.width() / 2
    cy = rect.y() + rect.height() / 2
    dx, dy = tx - cx, ty - cy
    if dx == 0 and dy == 0:
        return (cx, cy)
    half_w, half_h = rect.width() / 2, rect.height() / 2
    scale = min(half_w / abs(dx) if dx else math.inf, half_h / abs(dy) if dy else math.inf)
    return (cx + dx * scale, cy + dy * scale)


class FlowItem(_EntityItem):
    section = "data_flows"

    dashed = False

    def __init__(self, flow: DataFlow | Relationship, source: QRectF, target: QRectF) -> None:
        super().__init__(flow.id, flow, flow_signature(source, target))
        self.label = self._label_for(flow)
        self.setZValue(1.0)
        self._loop = source == target
        if self._loop:
            x, y = source.x() + source.width() / 2, source.y()
            self._start = (x - 20.0, y)
            self._end = (x + 20.0, y)
            self._label_at = (x, y - 40.0)
        else:
            sx = source.x() + source.width() / 2
            sy = source.y() + source.height() / 2
            tx = target.x() + target.width() / 2
            ty = target.y() + target.height() / 2
            self._start = _edge_point(source, tx, ty)
            self._end = _edge_point(target, sx, sy)
            # Relationships sit beside any flow between the same pair, labelled nearer the
            # source so the two labels do not cover each other.
            along = 0.5
            if self.dashed:
                self._start, self._end = _shifted(self._start, self._end, RELATIONSHIP_OFFSET)
                along = 0.3
            self._label_at = (
                self._start[0] + (self._end[0] - self._start[0]) * along,
                self._start[1] + (self._end[1] - self._start[1]) * along,
            )
        # Cheap, generous bounds now; the exact path, arrow and pick shape are built on first
        # paint, which for a 10k-flow model happens only for the flows on screen.
        half_label = min(len(self.label), 80) * 3.6 + 8.0
        (x1, y1), (x2, y2), (lx, ly) = self._start, self._end, self._label_at
        left = min(x1, x2, lx - half_label) - 14.0
        top = min(y1, y2, ly - 12.0) - 14.0
        right = max(x1, x2, lx + half_label) + 14.0
        bottom = max(y1, y2, ly + 12.0) + 14.0
        self._bounds = QRectF(left, top, right - left, bottom - top)
        self._geometry: tuple[QPainterPath, QPolygonF, QRectF, QPainterPath] | None = None

    def _ensure_geometry(self) -> tuple[QPainterPath, QPolygonF, QRectF, QPainterPath]:
        if self._geometry is not None:
            return self._geometry
        start, end = QPointF(*self._start), QPointF(*self._end)
        path = QPainterPath()
        path.moveTo(start)
        if self._loop:
            path.cubicTo(start + QPointF(-10.0, -45.0), end + QPointF(10.0, -45.0), end)
            arrow = _arrow_head(QLineF(end + QPointF(4.0, -14.0), end))
        else:
            path.lineTo(end)
            arrow = _arrow_head(QLineF(start, end))
        label_width = min(
            QFontMetricsF(_SMALL_FONT).horizontalAdvance(self.label) + 8.0, self._bounds.width()
        )
        lx, ly = self._label_at
        label_rect = QRectF(lx - label_width / 2, ly - 9.0, label_width, 18.0)
        stroker = QPainterPathStroker()
        stroker.setWidth(10.0)
        pick = stroker.createStroke(path)
        if self.label:
            pick.addRect(label_rect)
        self._geometry = (path, arrow, label_rect, pick)
        return self._geometry

    def boundingRect(self) -> QRectF:
        """Qt override: boundingRect."""
        return self._bounds

    def shape(self) -> QPainterPath:
        """Qt override: shape."""
        return self._ensure_geometry()[3]

    def paint(
        self, painter: QPainter, option: QStyleOptionGraphicsItem, widget: QWidget | None = None
    ) -> None:
        """Qt override: paint."""
        lod = option.levelOfDetailFromTransform(painter.worldTransform())
        pen = self._pen(_FLOW_COLOR)
        if self.dashed:
            pen.setStyle(Qt.PenStyle.DashLine)
        painter.setPen(pen)
        if lod < DETAIL_LOD:
            painter.drawLine(QLineF(*self._start, *self._end))
            return
        path, arrow, label_rect, _ = self._ensure_geometry()
        painter.setBrush(Qt.BrushStyle.NoBrush)
        painter.drawPath(path)
        painter.setBrush(QBrush(pen.color()))
        painter.drawPolygon(arrow)
        if self.label:
            painter.setPen(Qt.PenStyle.NoPen)
            painter.setBrush(QBrush(QColor(255, 255, 255, 220)))
            painter.drawRect(label_rect)
            painter.setPen(QPen(QColor("#1e293b")))
            painter.setFont(_SMALL_FONT)
            painter.drawText(label_rect, _ALIGN_CENTER, self.label)


    @staticmethod
    def _label_for(flow: Any) -> str:
        if flow.flow_number is not None and flow.name:
            return f"{flow.flow_number}. {flow.name}"
        return str(flow.name or flow.protocol or "")


class RelationshipItem(FlowItem):
    """A non-data architecture edge (depends on, deploys to): dashed, never STRIDE-analysed."""

    section = "relationships"
    dashed = True

    @staticmethod
    def _label_for(flow: Any) -> str:
        return str(flow.name or flow.type.replace("_", " "))


def _shifted(
    start: tuple[float, float], end: tuple[float, float], offset: float
) -> tuple[tuple[float, float], tuple[float, float]]:
    """The segment moved sideways by `offset`, so it does not hide a flow between the same pair."""
    dx, dy = end[0] - start[0], end[1] - start[1]
    length = math.hypot(dx, dy)
    if length == 0:
        return start, end
    nx, ny = -dy / length * offset, dx / length * offset
    return (start[0] + nx, start[1] + ny), (end[0] + nx, end[1] + ny)


def _arrow_head(line: QLineF) -> QPolygonF:
    if line.length() == 0:
        return QPolygonF()
    angle = math.atan2(line.dy(), line.dx())
    tip = line.p2()
    size = 10.0
    spread = math.pi / 7
    return QPolygonF(
        [
            tip,
            QPointF(tip.x() - size * math.cos(angle - spread), tip.y() - size * math.sin(angle - spread)),
            QPointF(tip.x() - size * math.cos(angle + spread), tip.y() - size * math.sin(angle + spread)),
        ]
    )


class BoundaryItem(_EntityItem):
    section = "trust_boundaries"

    def __init__(self, boundary: TrustBoundary, rect: QRectF) -> None:
        super().__init__(boundary.id, boundary, boundary_signature(rect))
        self.name = boundary.name
        self.color = QColor(boundary.stroke_color or "#ef4444")
        if not self.color.isValid():
            self.color = QColor("#ef4444")
        self.setPos(rect.topLeft())
        self._rect = QRectF(0.0, 0.0, rect.width(), rect.height())
        self._title = QRectF(6.0, 4.0, min(rect.width() - 12.0, 260.0), 18.0)
        stroker = QPainterPathStroker()
        stroker.setWidth(8.0)
        outline = QPainterPath()
        outline.addRect(self._rect)
        # Only the border and the title pick: clicks inside reach the elements it contains.
        self._shape = stroker.createStroke(outline)
        self._shape.addRect(self._title)
        self._bounds = self._rect.adjusted(-5.0, -5.0, 5.0, 5.0)
        self.setZValue(0.0)

    def boundingRect(self) -> QRectF:
        """Qt override: boundingRect."""
        return self._bounds

    def shape(self) -> QPainterPath:
        """Qt override: shape."""
        return self._shape

    def paint(
        self, painter: QPainter, option: QStyleOptionGraphicsItem, widget: QWidget | None = None
    ) -> None:
        """Qt override: paint."""
        pen = self._pen(self.color, 1.5)
        pen.setStyle(Qt.PenStyle.DashLine)
        painter.setPen(pen)
        fill = QColor(self.color)
        fill.setAlphaF(0.04)
        painter.setBrush(QBrush(fill))
        painter.drawRect(self._rect)
        painter.setPen(QPen(self.color.darker(130)))
        painter.setFont(_LABEL_FONT)
        painter.drawText(self._title, int(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter), self.name)


@dataclass(frozen=True)
class DiagramLayout:
    """Where every element and boundary goes; elements without a stored position get a grid slot."""

    elements: dict[str, QRectF]
    boundaries: dict[str, QRectF]
    unpositioned: int


def layout_document(document: ThreatModel) -> DiagramLayout:
    rects: dict[str, QRectF] = {}
    missing: list[Element] = []
    for element in document.elements:
        if element.position is None:
            missing.append(element)
        else:
            rects[element.id] = QRectF(
                element.position.x, element.position.y, ELEMENT_WIDTH, ELEMENT_HEIGHT
            )
    if missing:
        bottom = max((r.bottom() for r in rects.values()), default=-GRID_STEP_Y)
        left = min((r.left() for r in rects.values()), default=0.0)
        columns = max(1, math.ceil(math.sqrt(len(missing))))
        top = bottom + GRID_STEP_Y
        for i, element in enumerate(missing):
            row, col = divmod(i, columns)
            rects[element.id] = QRectF(
                left + col * GRID_STEP_X, top + row * GRID_STEP_Y, ELEMENT_WIDTH, ELEMENT_HEIGHT
            )
    boundaries: dict[str, QRectF] = {}
    for boundary in document.trust_boundaries:
        members = [rects[m] for m in boundary.contains if m in rects]
        if boundary.position is not None and boundary.size is not None:
            boundaries[boundary.id] = QRectF(
                boundary.position.x, boundary.position.y, boundary.size.width, boundary.size.height
            )
            continue
        if members:
            box = _union(members).adjusted(
                -BOUNDARY_PADDING, -BOUNDARY_PADDING - 18.0, BOUNDARY_PADDING, BOUNDARY_PADDING
            )
        else:
            box = QRectF(0.0, 0.0, 400.0, 300.0)
        if boundary.position is not None:
            box.moveTopLeft(QPointF(boundary.position.x, boundary.position.y))
        boundaries[boundary.id] = box
    return DiagramLayout(rects, boundaries, len(missing))


def _has_drawn_entity(document: ThreatModel, section: str, entity_id: str) -> bool:
    if section not in ("elements", "data_flows", "relationships", "trust_boundaries"):
        return False
    return any(e.id == entity_id for e in getattr(document, section))


def _union(rects: Iterable[QRectF]) -> QRectF:
    it = iter(rects)
    box = QRectF(next(it))
    for rect in it:
        box = box.united(rect)
    return box


class DiagramView(QGraphicsView):
    """The Diagram tab: zoomable, selectable, never edits the document."""

    entitySelected = Signal(str, str)
    """(section, id) of the element, flow or trust boundary the user clicked."""
    zoomChanged = Signal(float)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("diagramView")
        self._scene = QGraphicsScene(self)
        self._scene.setObjectName("diagramScene")
        self.setScene(self._scene)
        self.setRenderHint(QPainter.RenderHint.Antialiasing, True)
        self.setDragMode(QGraphicsView.DragMode.ScrollHandDrag)
        self.setTransformationAnchor(QGraphicsView.ViewportAnchor.AnchorUnderMouse)
        self.setOptimizationFlag(QGraphicsView.OptimizationFlag.DontSavePainterState, True)
        self.setViewportUpdateMode(QGraphicsView.ViewportUpdateMode.SmartViewportUpdate)
        self.setBackgroundBrush(QBrush(QColor("#f8fafc")))
        self._items: dict[tuple[str, str], _EntityItem] = {}
        self._suppress_selection_signal = False
        self._needs_fit = False
        self._document: ThreatModel | None = None
        self._stale = False
        self._keep_view = True
        self._built_once = False
        self._pending_selection: tuple[str, str] | None = None
        self.items_created = 0
        """Items made since the last full draw (tests check that edits reuse the rest)."""
        self._scene.selectionChanged.connect(self._on_scene_selectionChanged)

    # -- public API -------------------------------------------------------------------------

    @property
    def is_drawn(self) -> bool:
        """False while a document waits to be drawn on first show."""
        return not self._stale

    @property
    def item_count(self) -> int:
        self.ensure_built()
        return len(self._items)

    def item_for(self, section: str, entity_id: str) -> QGraphicsItem | None:
        self.ensure_built()
        return self._items.get((section, entity_id))

    def set_document(self, document: ThreatModel | None, *, keep_view: bool = True) -> None:
        """Show `document`; with `keep_view` the zoom, scroll and selection stay.

        A hidden view only remembers the document and draws it when first shown, so opening
        a 10k-element model does not pay for a diagram nobody is looking at yet.
        """
        self._document = document
        if not keep_view:
            self._pending_selection = None
        self._keep_view = self._keep_view and keep_view if self._stale else keep_view
        self._stale = True
        if self.isVisible():
            self._rebuild()

    def ensure_built(self) -> None:
        """Draw the pending document now, even while hidden (tests, screenshots)."""
        if self._stale:
            self._rebuild()

    def _rebuild(self) -> None:
        pending = self._pending_selection
        if pending is not None:
            selected: tuple[str, str] | None = pending if pending[0] else None
        else:
            selected = self._scene_selected_key() if self._keep_view else None
        self._stale = False
        self._pending_selection = None
        center = self.mapToScene(self.viewport().rect().center())
        incremental = self._keep_view and self._built_once and self._document is not None
        self._suppress_selection_signal = True
        try:
            if incremental:
                assert self._document is not None
                self._update(self._document)
            else:
                self._scene.clear()
                self._items = {}
                self.items_created = 0
                if self._document is not None:
                    self._build(self._document)
        finally:
            self._suppress_selection_signal = False
        if selected is not None:
            self.select_entity(*selected, center_on=False)
        if self._keep_view and self._built_once and not self._needs_fit:
            self.centerOn(center)
        else:
            self.fit()
        self._built_once = True
        self._keep_view = True

    def selected_key(self) -> tuple[str, str] | None:
        if self._stale and self._pending_selection is not None:
            return self._pending_selection if self._pending_selection[0] else None
        return self._scene_selected_key()

    def _scene_selected_key(self) -> tuple[str, str] | None:
        for item in self._scene.selectedItems():
            if isinstance(item, _EntityItem):
                return (item.section, item.entity_id)
        return None

    def select_entity(self, section: str, entity_id: str, *, center_on: bool = True) -> bool:
        """Select the item for an entity without re-emitting `entitySelected`.

        While the view is hidden and not yet drawn, the selection is remembered and applied
        when it is, so picking in the tree never forces a 10k-item diagram build.
        """
        if self._stale and not self.isVisible():
            self._pending_selection = (section, entity_id)
            return self._document is not None and _has_drawn_entity(
                self._document, section, entity_id
            )
        item = self._items.get((section, entity_id))
        self._suppress_selection_signal = True
        try:
            self._scene.clearSelection()
            if item is not None:
                item.setSelected(True)
                if center_on:
                    self.centerOn(item)
        finally:
            self._suppress_selection_signal = False
        return item is not None

    def zoom_in(self) -> None:
        self._zoom_by(ZOOM_STEP)

    def zoom_out(self) -> None:
        self._zoom_by(1.0 / ZOOM_STEP)

    def fit(self) -> None:
        bounds = self._scene.itemsBoundingRect()
        if bounds.isEmpty():
            self.resetTransform()
            return
        if not self.isVisible() or self.viewport().width() < 10:
            # The viewport has no real size until shown; fit again on the first show.
            self._needs_fit = True
        self.fitInView(bounds.adjusted(-20.0, -20.0, 20.0, 20.0), Qt.AspectRatioMode.KeepAspectRatio)
        self._clamp_zoom()
        self.zoomChanged.emit(self.current_scale())

    def current_scale(self) -> float:
        return float(self.transform().m11())

    # -- Qt overrides -----------------------------------------------------------------------

    def wheelEvent(self, event: QWheelEvent) -> None:
        """Qt override: wheelEvent (ctrl+wheel zooms; a plain wheel scrolls)."""
        if event.modifiers() & Qt.KeyboardModifier.ControlModifier:
            delta = event.angleDelta().y()
            if delta:
                self._zoom_by(ZOOM_STEP if delta > 0 else 1.0 / ZOOM_STEP)
            event.accept()
            return
        super().wheelEvent(event)

    def showEvent(self, event: Any) -> None:
        """Qt override: showEvent (completes a fit requested before the view had a size)."""
        super().showEvent(event)
        if self._stale:
            self._rebuild()
        if self._needs_fit:
            self._needs_fit = False
            self.fit()
            self._needs_fit = False

    def resizeEvent(self, event: Any) -> None:
        """Qt override: resizeEvent."""
        super().resizeEvent(event)
        if self._needs_fit and self.isVisible():
            self._needs_fit = False
            self.fit()
            self._needs_fit = False

    # -- internals --------------------------------------------------------------------------

    def _zoom_by(self, factor: float) -> None:
        target = self.current_scale() * factor
        if not MIN_SCALE <= target <= MAX_SCALE:
            return
        self.scale(factor, factor)
        self.zoomChanged.emit(self.current_scale())

    def _clamp_zoom(self) -> None:
        scale = self.current_scale()
        if scale > MAX_SCALE:
            self.scale(MAX_SCALE / scale, MAX_SCALE / scale)
        elif 0 < scale < MIN_SCALE:
            self.scale(MIN_SCALE / scale, MIN_SCALE / scale)

    def _build(self, document: ThreatModel) -> None:
        layout = layout_document(document)
        badges = _badges(document)
        scene = self._scene
        # Indexing while adding thousands of items costs a re-balance per insert; build the
        # BSP index once at the end instead.
        scene.setItemIndexMethod(QGraphicsScene.ItemIndexMethod.NoIndex)
        for boundary in document.trust_boundaries:
            self._add(BoundaryItem(boundary, layout.boundaries[boundary.id]))
        looks: dict[str, ElementLook] = {}
        for element in document.elements:
            look = looks.get(element.type)
            if look is None:
                look = looks[element.type] = element_look(element.type)
            self._add(ElementItem(element, layout.elements[element.id], badges.get(element.id), look))
        for flow in document.data_flows:
            source = layout.elements.get(flow.from_)
            target = layout.elements.get(flow.to)
            if source is not None and target is not None:
                self._add(FlowItem(flow, source, target))
        for relationship in document.relationships:
            source = layout.elements.get(relationship.from_)
            target = layout.elements.get(relationship.to)
            if source is not None and target is not None:
                self._add(RelationshipItem(relationship, source, target))
        scene.setItemIndexMethod(QGraphicsScene.ItemIndexMethod.BspTreeIndex)
        scene.setSceneRect(scene.itemsBoundingRect().adjusted(-200.0, -200.0, 200.0, 200.0))

    def _update(self, document: ThreatModel) -> None:
        """Redraw after an edit: keep every item whose entity and geometry are unchanged.

        An edit replaces only the entities it touches (the rest are the same objects), so
        a commit on a 10k-element model swaps a handful of items instead of 25,000.
        """
        layout = layout_document(document)
        badges = _badges(document)
        previous = self._items
        self._items = {}
        looks: dict[str, ElementLook] = {}
        for boundary in document.trust_boundaries:
            rect = layout.boundaries[boundary.id]
            self._keep_or_add(
                previous, "trust_boundaries", boundary, boundary_signature(rect),
                partial(BoundaryItem, boundary, rect),
            )
        for element in document.elements:
            look = looks.get(element.type)
            if look is None:
                look = looks[element.type] = element_look(element.type)
            rect = layout.elements[element.id]
            badge = badges.get(element.id)
            self._keep_or_add(
                previous, "elements", element, element_signature(rect, badge, look),
                partial(ElementItem, element, rect, badge, look),
            )
        for flow in document.data_flows:
            source = layout.elements.get(flow.from_)
            target = layout.elements.get(flow.to)
            if source is not None and target is not None:
                self._keep_or_add(
                    previous, "data_flows", flow, flow_signature(source, target),
                    partial(FlowItem, flow, source, target),
                )
        for relationship in document.relationships:
            source = layout.elements.get(relationship.from_)
            target = layout.elements.get(relationship.to)
            if source is not None and target is not None:
                self._keep_or_add(
                    previous, "relationships", relationship, flow_signature(source, target),
                    partial(RelationshipItem, relationship, source, target),
                )
        for gone in previous.values():
            self._scene.removeItem(gone)

    def _keep_or_add(
        self,
        previous: dict[tuple[str, str], _EntityItem],
        section: str,
        entity: Any,
        signature: tuple[Any, ...],
        create: Callable[[], _EntityItem],
    ) -> None:
        old = previous.pop((section, entity.id), None)
        if old is not None and old.source is entity and old.signature == signature:
            self._items[(section, entity.id)] = old
            return
        if old is not None:
            self._scene.removeItem(old)
        self._add(create())

    def _add(self, item: _EntityItem) -> None:
        self._scene.addItem(item)
        self._items[(item.section, item.entity_id)] = item
        self.items_created += 1

    def _on_scene_selectionChanged(self) -> None:
        if self._suppress_selection_signal:
            return
        key = self._scene_selected_key()
        if key is not None:
            self.entitySelected.emit(*key)
