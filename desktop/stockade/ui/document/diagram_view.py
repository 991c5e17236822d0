"""The Diagram tab: zoom, pan, click-to-select, drag to move, drawn only where it is visible."""

from __future__ import annotations

import math
from typing import Any

from PySide6.QtCore import QLineF, QPointF, QRect, QRectF, Qt, Signal
from PySide6.QtGui import (
    QBrush,
    QColor,
    QContextMenuEvent,
    QFont,
    QFontMetricsF,
    QImage,
    QMouseEvent,
    QPainter,
    QPalette,
    QPen,
    QPolygonF,
    QWheelEvent,
)
from PySide6.QtWidgets import QGraphicsScene, QGraphicsView, QLabel, QMenu, QToolTip, QWidget

from stockade.report.diagram_svg import BADGE_COLORS, ThreatBadge
from stockade.thf.model import ThreatModel
from stockade.ui.document.diagram_legend import DiagramLegend
from stockade.ui.document.diagram_scene import (
    DiagramScene,
    DrawnElement,
    ShapeRole,
    VisibleSet,
    gc_paused,
)

ZOOM_STEP = 1.25
MIN_SCALE = 0.002
MAX_SCALE = 8.0
SHAPES_LOD = 0.12
"""Below this scale elements are flat boxes and flows plain lines: nothing else is visible."""
NAMES_LOD = 0.3
"""From this scale element names are drawn (never smaller than `MIN_TEXT_PIXELS` on screen)."""
LABELS_LOD = 0.4
"""From this scale flow labels and badge counts are drawn too."""
TYPE_LABELS_LOD = 0.6
"""From this scale each box also names its element type."""
LABEL_REACH = 130.0
"""Scene units a flow label or badge may reach past its flow's bounds (labels are elided to
220): a repaint of an area nearby draws them too, so no label is cut at an area's edge."""
OVERVIEW_PIXELS = 2048
"""Longest side of the whole-diagram picture drawn when zoomed far out: one image instead of
every box and line, so the far view costs the same for 100 elements or 50,000."""
OVERVIEW_FLOWS = 8000
"""Flows drawn into that picture at most (an even sample beyond)."""
MAX_FLOWS_DRAWN = 4000
"""Past this many flows on screen the view draws an even sample of them and says so: the
rest would take longer to rasterise than a frame may last, and could not be told apart."""
MIN_TEXT_PIXELS = 9.0
MAX_TEXT_ITEMS = 2500
"""More names than this on screen at once are unreadable anyway: draw boxes instead."""
DRAG_THRESHOLD = 4
"""Screen pixels the mouse must travel before a press on an element becomes a drag."""

_ROLE_FILL = {
    ShapeRole.ACTOR: QColor("#e0e7ff"),
    ShapeRole.SERVICE: QColor("#cffafe"),
    ShapeRole.STORE: QColor("#fef3c7"),
    ShapeRole.ANNOTATION: QColor(0, 0, 0, 0),
}
_INK = QColor("#0f172a")
_MUTED_INK = QColor("#475569")
_OUTLINE = QColor("#334155")
_FLOW_COLOR = QColor("#64748b")
_SELECTED = QColor("#2563eb")
_BADGE_QCOLORS = {key: QColor(value) for key, value in BADGE_COLORS.items()}
_CENTER = int(Qt.AlignmentFlag.AlignCenter)
_LEFT = int(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter)


class DiagramView(QGraphicsView):
    """Draws the document from a `DiagramScene`; edits leave as `entityMoved` requests."""

    entitySelected = Signal(str, str)
    """(section, id) of the element, flow or trust boundary the user clicked."""
    entityMoved = Signal(str, str, object)
    """(section, id, update-action input) after a drag: the window commits it as one step."""
    addRequested = Signal(str, object)
    """(section, preset fields) from the context menu."""
    deleteRequested = Signal(str, str)
    zoomChanged = Signal(float)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("diagramView")
        self.setAccessibleName("Data-flow diagram")
        self._qscene = QGraphicsScene(self)
        self._qscene.setObjectName("diagramScene")
        self.setScene(self._qscene)
        self.setDragMode(QGraphicsView.DragMode.ScrollHandDrag)
        self.setTransformationAnchor(QGraphicsView.ViewportAnchor.AnchorUnderMouse)
        self.setOptimizationFlag(QGraphicsView.OptimizationFlag.DontSavePainterState, True)
        self.setViewportUpdateMode(QGraphicsView.ViewportUpdateMode.MinimalViewportUpdate)
        self.setMouseTracking(True)
        self.legend = DiagramLegend(self)
        self.thinned_label = QLabel(self)
        self.thinned_label.setObjectName("diagramThinnedNote")
        self.thinned_label.setAccessibleName("Flows drawn at this zoom")
        self.thinned_label.setAutoFillBackground(True)
        self.thinned_label.setMargin(4)
        self.thinned_label.move(8, 8)
        self.thinned_label.hide()
        self._geometry: DiagramScene | None = None
        self._document: ThreatModel | None = None
        self._stale = False
        self._keep_view = True
        self._built_once = False
        self._needs_fit = False
        self._selected: tuple[str, str] | None = None
        self._press: tuple[QPointF, tuple[str, str] | None] | None = None
        self._drag: tuple[str, int, QPointF, QPointF] | None = None
        """(section, index, scene point pressed, the entity's top-left then) while dragging."""
        self._dragged = False
        self._text_cache: dict[tuple[str, int, int], tuple[str, ...]] = {}
        self._overview: tuple[Any, ...] | None = None
        self._picture: tuple[DiagramScene, tuple[float, QRectF, QImage, int] | None] | None = None
        self.builds = 0
        """Full geometry builds so far (tests check a hidden view builds nothing)."""
        self.last_paint_seconds = 0.0

    # -- public API -------------------------------------------------------------------------

    @property
    def is_drawn(self) -> bool:
        """False while a document waits to be drawn on first show."""
        return not self._stale

    @property
    def geometry_scene(self) -> DiagramScene | None:
        self.ensure_built()
        return self._geometry

    @property
    def item_count(self) -> int:
        """Entities the diagram draws (elements, flows, relationships, boundaries)."""
        self.ensure_built()
        return self._geometry.entity_count if self._geometry is not None else 0

    def entity_rect(self, section: str, entity_id: str) -> QRectF | None:
        self.ensure_built()
        return self._geometry.entity_rect(section, entity_id) if self._geometry else None

    def set_document(self, document: ThreatModel | None, *, keep_view: bool = True) -> None:
        """Show `document`; with `keep_view` the zoom, scroll and selection stay.

        A hidden view only remembers the document and builds its geometry when first shown,
        so opening a model never pays for a diagram nobody is looking at yet.
        """
        self._document = document
        self._keep_view = self._keep_view and keep_view if self._stale else keep_view
        if not keep_view:
            self._selected = None
        self._stale = True
        self._drag = None
        if self.isVisible():
            self._rebuild()

    def ensure_built(self) -> None:
        """Build the pending document's geometry now, even while hidden (tests, export)."""
        if self._stale:
            self._rebuild()

    def selected_key(self) -> tuple[str, str] | None:
        return self._selected

    def select_entity(self, section: str, entity_id: str, *, center_on: bool = True) -> bool:
        """Highlight an entity without re-emitting `entitySelected`; False if it is not drawn."""
        key = (section, entity_id)
        drawn = self._is_drawn_entity(section, entity_id)
        self._selected = key if drawn else None
        if drawn and center_on and not self._stale:
            rect = self.entity_rect(section, entity_id)
            if rect is not None and not self._viewport_scene_rect().contains(rect.center()):
                self.centerOn(rect.center())
        self.viewport().update()
        return drawn

    def zoom_in(self) -> None:
        self._zoom_by(ZOOM_STEP)

    def zoom_out(self) -> None:
        self._zoom_by(1.0 / ZOOM_STEP)

    def fit(self) -> None:
        self.ensure_built()
        bounds = self._qscene.sceneRect()
        if self._geometry is None or bounds.isEmpty():
            self.resetTransform()
            return
        if not self.isVisible() or self.viewport().width() < 10:
            # The viewport has no real size until shown; fit again on the first show.
            self._needs_fit = True
        content = self._geometry.bounds()
        self.fitInView(content.adjusted(-20.0, -20.0, 20.0, 20.0), Qt.AspectRatioMode.KeepAspectRatio)
        self._clamp_zoom()
        self.zoomChanged.emit(self.current_scale())

    def current_scale(self) -> float:
        return float(self.transform().m11())

    # -- building ---------------------------------------------------------------------------

    def _is_drawn_entity(self, section: str, entity_id: str) -> bool:
        if self._geometry is not None and not self._stale:
            return self._geometry.has(section, entity_id)
        document = self._document
        if document is None or section not in (
            "elements", "data_flows", "relationships", "trust_boundaries"
        ):
            return False
        return any(e.id == entity_id for e in getattr(document, section))

    def _rebuild(self) -> None:
        self._stale = False
        center = self.mapToScene(self.viewport().rect().center())
        keep = self._keep_view and self._built_once and self._document is not None
        previous = self._geometry if keep else None
        self._overview = self._picture = None
        self._geometry = DiagramScene(self._document, previous) if self._document is not None else None
        self.builds += 1
        if self._geometry is None:
            self._qscene.setSceneRect(QRectF())
        else:
            bounds = self._geometry.bounds()
            # Room to pan past the edges, as on paper.
            margin = max(bounds.width(), bounds.height(), 800.0) * 0.25
            self._qscene.setSceneRect(bounds.adjusted(-margin, -margin, margin, margin))
        if self._selected is not None and not self._is_drawn_entity(*self._selected):
            self._selected = None
        if keep and not self._needs_fit:
            self.centerOn(center)
        else:
            self.fit()
        self._built_once = True
        self._keep_view = True
        self.viewport().update()

    # -- painting ---------------------------------------------------------------------------

    def drawBackground(self, painter: QPainter, rect: QRectF | QRect) -> None:
        """Qt override: drawBackground (the whole diagram is drawn here, area by area)."""
        rect = QRectF(rect)
        painter.fillRect(rect, self.palette().color(QPalette.ColorRole.Base))
        geometry = self._geometry
        if geometry is None or self._stale:
            return
        scale = self.current_scale()
        image = self._overview_picture(geometry)
        if image is not None and scale <= image[0] * 1.5:
            painter.setRenderHint(QPainter.RenderHint.SmoothPixmapTransform, True)
            painter.drawImage(image[1], image[2])
            self._note_thinned(image[3], len(geometry.flows))
            self._paint_selection(painter, geometry, scale)
            return
        # Far away, a larger cached scan is cheap to draw (lists built once): keep it longer.
        wide = geometry.visible(rect, 4.0 if scale < SHAPES_LOD else 1.5)
        if scale < SHAPES_LOD:
            painter.setRenderHint(QPainter.RenderHint.Antialiasing, False)
            self._paint_overview(painter, geometry, wide)
            self._paint_selection(painter, geometry, scale)
            return
        visible = geometry.exactly_in(rect)
        detailed = len(visible.elements) <= MAX_TEXT_ITEMS * 4
        painter.setRenderHint(QPainter.RenderHint.Antialiasing, detailed)
        painter.setRenderHint(QPainter.RenderHint.TextAntialiasing, True)
        self._paint_boundaries(painter, geometry, visible, scale)
        self._paint_flows(painter, geometry, visible, rect, scale, detailed)
        self._paint_elements(painter, geometry, visible, rect, scale, detailed)
        self._paint_selection(painter, geometry, scale)

    def _overview_picture(self, geometry: DiagramScene) -> tuple[float, QRectF, QImage, int] | None:
        """(its scale, the scene area it shows, the picture, flows drawn), drawn once per
        geometry; None for a diagram small enough to draw as it is at every zoom."""
        cached = self._picture
        if cached is not None and cached[0] is geometry:
            return cached[1]
        picture: tuple[float, QRectF, QImage, int] | None = None
        bounds = geometry.bounds()
        longest = max(bounds.width(), bounds.height(), 1.0)
        picture_scale = min(OVERVIEW_PIXELS / longest, SHAPES_LOD)
        if len(geometry.elements) + len(geometry.flows) > 3000 and picture_scale < SHAPES_LOD:
            image = QImage(max(1, math.ceil(bounds.width() * picture_scale)),
                           max(1, math.ceil(bounds.height() * picture_scale)),
                           QImage.Format.Format_ARGB32_Premultiplied)
            image.fill(self.palette().color(QPalette.ColorRole.Base))
            painter = QPainter(image)
            painter.scale(picture_scale, picture_scale)
            painter.translate(-bounds.left(), -bounds.top())
            everything = geometry.visible(bounds.adjusted(-1.0, -1.0, 1.0, 1.0))
            with gc_paused():
                drawn = self._paint_overview(painter, geometry, everything, OVERVIEW_FLOWS)
            painter.end()
            self._overview = None
            picture = (picture_scale, QRectF(bounds), image, drawn)
        self._picture = (geometry, picture)
        return picture

    def _paint_overview(self, painter: QPainter, geometry: DiagramScene, wide: VisibleSet,
                        max_flows: int = MAX_FLOWS_DRAWN) -> int:
        """Far away: flat boxes, plain lines and badge squares, from lists built once per scan
        (panning reuses them; Qt clips what is off screen)."""
        cached = self._overview
        if cached is None or cached[0] is not wide:
            elements, flows = geometry.elements, geometry.flows
            by_role: dict[ShapeRole, list[QRectF]] = {role: [] for role in ShapeRole}
            dots: dict[Any, list[QRectF]] = {}
            for i in wide.elements:
                element = elements[i]
                by_role[element.look.role].append(element.rect)
                if element.badge is not None:
                    x1, y0 = element.box[2], element.box[1]
                    dots.setdefault(element.badge.worst_open, []).append(
                        QRectF(x1 - 30.0, y0, 30.0, 30.0))
            shown = wide.flows
            if len(shown) > max_flows:
                shown = shown[:: math.ceil(len(shown) / max_flows)]
            solid = [geometry.center_line(i) for i in shown if flows[i].section == "data_flows"]
            dashed = [geometry.center_line(i) for i in shown if flows[i].section != "data_flows"]
            cached = self._overview = (wide, by_role, dots, solid, dashed, len(shown), len(wide.flows))
        _wide, by_role, dots, solid, dashed, drawn, total = cached
        self._note_thinned(drawn, total)
        painter.setBrush(Qt.BrushStyle.NoBrush)
        for boundary in (geometry.boundaries[i] for i in wide.boundaries):
            painter.setPen(self._cosmetic(boundary.color, 1.0))
            painter.drawRect(boundary.rect)
        painter.setPen(self._cosmetic(_FLOW_COLOR, 1.0))
        painter.drawLines(solid)
        if dashed:
            pen = self._cosmetic(_FLOW_COLOR, 1.0)
            pen.setStyle(Qt.PenStyle.DashLine)
            painter.setPen(pen)
            painter.drawLines(dashed)
        for role, rects in by_role.items():
            if rects:
                fill = _ROLE_FILL[role] if role is not ShapeRole.ANNOTATION else QColor(148, 163, 184, 90)
                painter.setBrush(QBrush(fill))
                # A box is a few pixels here: its outline in the role's tint keeps it visible.
                painter.setPen(self._cosmetic(fill.darker(160), 1.0))
                painter.drawRects(rects)
        painter.setPen(Qt.PenStyle.NoPen)
        for severity, rects in dots.items():
            painter.setBrush(QBrush(_BADGE_QCOLORS[severity]))
            painter.drawRects(rects)
        return drawn

    def _note_thinned(self, drawn: int, total: int) -> None:
        thinned = drawn < total
        if thinned:
            text = f"Zoom in to see every flow: {drawn:,} of {total:,} drawn at this zoom"
            if self.thinned_label.text() != text:
                self.thinned_label.setText(text)
                self.thinned_label.adjustSize()
        if thinned != self.thinned_label.isVisible():
            self.thinned_label.setVisible(thinned)

    def _cosmetic(self, color: QColor, width: float = 1.2) -> QPen:
        pen = QPen(color, width)
        pen.setCosmetic(True)  # the same on-screen width at every zoom
        return pen

    def _font(self, scale: float, base: float) -> QFont:
        font = QFont(self.font())
        font.setPixelSize(max(1, round(max(base, MIN_TEXT_PIXELS / scale))))
        return font

    def _paint_boundaries(self, painter: QPainter, geometry: DiagramScene, visible: VisibleSet,
                          scale: float) -> None:
        if not visible.boundaries:
            return
        font = self._font(scale, 13.0)
        for i in visible.boundaries:
            boundary = geometry.boundaries[i]
            pen = self._cosmetic(boundary.color, 1.5)
            pen.setStyle(Qt.PenStyle.DashLine)
            painter.setPen(pen)
            fill = QColor(boundary.color)
            fill.setAlphaF(0.05)
            painter.setBrush(QBrush(fill))
            painter.drawRoundedRect(boundary.rect, 10.0, 10.0)
            if scale >= NAMES_LOD:
                painter.setFont(font)
                # The boundary's own colour, toned so its name reads on the canvas either way.
                dark = self.palette().color(QPalette.ColorRole.Base).lightness() < 128
                painter.setPen(QPen(boundary.color.lighter(150) if dark else boundary.color.darker(115)))
                title = QRectF(boundary.rect.left() + 10.0, boundary.rect.top() + 4.0,
                               boundary.rect.width() - 20.0, font.pixelSize() * 1.4)
                metrics = QFontMetricsF(font)
                painter.drawText(title, _LEFT, metrics.elidedText(
                    boundary.name, Qt.TextElideMode.ElideRight, title.width()))

    def _paint_flows(self, painter: QPainter, geometry: DiagramScene, visible: VisibleSet,
                     rect: QRectF, scale: float, detailed: bool) -> None:
        solid: list[QLineF] = []
        dashed: list[QLineF] = []
        near = scale >= NAMES_LOD
        line_of = geometry.line if near else geometry.center_line
        flows = geometry.flows
        shown = visible.flows
        if len(shown) > MAX_FLOWS_DRAWN:
            shown = shown[:: math.ceil(len(shown) / MAX_FLOWS_DRAWN)]
        self._note_thinned(len(shown), len(visible.flows))
        for i in shown:
            (dashed if flows[i].section == "relationships" else solid).append(line_of(i))
        painter.setPen(self._cosmetic(_FLOW_COLOR, 1.2 if detailed else 1.0))
        painter.drawLines(solid)
        if dashed:
            pen = self._cosmetic(_FLOW_COLOR)
            pen.setStyle(Qt.PenStyle.DashLine)
            painter.setPen(pen)
            painter.drawLines(dashed)
        if scale < NAMES_LOD or len(visible.flows) > MAX_TEXT_ITEMS:
            return
        painter.setPen(Qt.PenStyle.NoPen)
        painter.setBrush(QBrush(_FLOW_COLOR))
        reach = rect.adjusted(-LABEL_REACH, -LABEL_REACH, LABEL_REACH, LABEL_REACH)
        for i in visible.flows:
            line = geometry.line(i)
            if reach.contains(line.p2()):
                painter.drawPolygon(_arrow_head(line, 11.0))
        labels = scale >= LABELS_LOD
        font = self._font(scale, 11.0)
        metrics = QFontMetricsF(font)
        base = self.palette().color(QPalette.ColorRole.Base)
        halo = QColor(base)
        halo.setAlpha(225)
        text_color = self.palette().color(QPalette.ColorRole.Text)
        for i in geometry.exactly_in(reach).flows:
            flow = geometry.flows[i]
            middle = geometry.line(i).center()
            if not reach.contains(middle):
                continue
            if labels and flow.label:
                painter.setFont(font)
                text = metrics.elidedText(flow.label, Qt.TextElideMode.ElideRight, 220.0)
                width = metrics.horizontalAdvance(text) + 8.0
                box = QRectF(middle.x() - width / 2, middle.y() - metrics.height() / 2 - 1.0,
                             width, metrics.height() + 2.0)
                painter.setPen(Qt.PenStyle.NoPen)
                painter.setBrush(QBrush(halo))
                painter.drawRect(box)
                painter.setPen(QPen(text_color))
                painter.drawText(box, _CENTER, text)
            if flow.badge is not None:
                offset = metrics.height() if labels and flow.label else 0.0
                self._paint_badge(painter, QPointF(middle.x(), middle.y() + offset), flow.badge,
                                  scale, 9.0, labels)

    def _paint_elements(self, painter: QPainter, geometry: DiagramScene, visible: VisibleSet,
                        rect: QRectF, scale: float, detailed: bool) -> None:
        elements = geometry.elements
        by_role: dict[ShapeRole, list[QRectF]] = {role: [] for role in ShapeRole}
        for i in visible.elements:
            element = elements[i]
            by_role[element.look.role].append(element.rect)
        painter.setPen(self._cosmetic(_OUTLINE, 1.2))
        for role, rects in by_role.items():
            if not rects:
                continue
            if role is ShapeRole.ANNOTATION:
                if detailed:
                    continue
                painter.setBrush(QBrush(QColor(148, 163, 184, 90)))
            else:
                painter.setBrush(QBrush(_ROLE_FILL[role]))
            if not detailed:
                # Far away a box is a few pixels: its outline in the role's tint keeps it visible.
                painter.setPen(self._cosmetic(_ROLE_FILL[role].darker(160), 1.0))
            if not detailed or role is ShapeRole.ACTOR:
                painter.drawRects(rects)
            elif role is ShapeRole.SERVICE:
                for r in rects:
                    painter.drawRoundedRect(r, 16.0, 16.0)
            else:  # a DFD data store: closed top and bottom, open sides
                painter.setPen(Qt.PenStyle.NoPen)
                painter.drawRects(rects)
                painter.setPen(self._cosmetic(_OUTLINE, 2.0))
                painter.drawLines([QLineF(r.topLeft(), r.topRight()) for r in rects]
                                  + [QLineF(r.bottomLeft(), r.bottomRight()) for r in rects])
                painter.setPen(self._cosmetic(_OUTLINE, 1.2))
        if not detailed:
            self._paint_badge_dots(painter, geometry, visible)
            return
        show_names = scale >= NAMES_LOD and len(visible.elements) <= MAX_TEXT_ITEMS
        labels = scale >= LABELS_LOD
        type_labels = scale >= TYPE_LABELS_LOD
        if show_names:
            font = self._font(scale, 12.0)
            font.setBold(True)
            small = self._font(scale, 10.0)
            metrics = QFontMetricsF(font)
            for i in visible.elements:
                element = elements[i]
                if rect.intersects(element.rect):
                    self._paint_name(painter, element, font, metrics, small, type_labels)
        badge_area = rect.adjusted(-40.0, -40.0, 40.0, 40.0)
        for i in geometry.exactly_in(badge_area).elements:
            element = elements[i]
            if element.badge is not None and element.look.role is not ShapeRole.ANNOTATION:
                self._paint_badge(painter, element.rect.topRight(), element.badge, scale, 11.0, labels)

    def _paint_name(self, painter: QPainter, element: DrawnElement, font: QFont,
                    metrics: QFontMetricsF, small: QFont, labels: bool) -> None:
        r = element.rect
        annotation = element.look.role is ShapeRole.ANNOTATION
        type_room = 0.0 if annotation or not labels else small.pixelSize() * 1.3
        lines = self._name_lines(element.name, font, metrics, r.width() - 12.0,
                                 r.height() - 6.0 - type_room)
        painter.setFont(font)
        painter.setPen(QPen(self.palette().color(QPalette.ColorRole.Text) if annotation else _INK))
        line_height = metrics.height()
        top = r.center().y() - (line_height * len(lines) + type_room) / 2
        for n, text in enumerate(lines):
            painter.drawText(QRectF(r.left() + 6.0, top + n * line_height, r.width() - 12.0,
                                    line_height), _CENTER, text)
        if type_room:
            painter.setFont(small)
            painter.setPen(QPen(_MUTED_INK))
            painter.drawText(QRectF(r.left() + 4.0, top + len(lines) * line_height,
                                    r.width() - 8.0, type_room), _CENTER,
                             QFontMetricsF(small).elidedText(
                                 element.look.label, Qt.TextElideMode.ElideRight, r.width() - 8.0))

    def _name_lines(self, name: str, font: QFont, metrics: QFontMetricsF, width: float,
                    height: float) -> tuple[str, ...]:
        """The name on one or two lines (word-wrapped, then elided), cached per size."""
        key = (name, font.pixelSize(), int(width))
        cached = self._text_cache.get(key)
        if cached is not None:
            return cached
        if len(self._text_cache) > 20_000:
            self._text_cache.clear()
        elide = Qt.TextElideMode.ElideRight
        if metrics.horizontalAdvance(name) <= width or height < metrics.height() * 2:
            lines: tuple[str, ...] = (metrics.elidedText(name, elide, width),)
        else:
            words = name.split()
            first = ""
            while words and metrics.horizontalAdvance((first + " " + words[0]).strip()) <= width:
                first = (first + " " + words.pop(0)).strip()
            if not first:  # one long word: break it where it stops fitting
                first = metrics.elidedText(name, elide, width)
                lines = (first,)
            else:
                lines = (first, metrics.elidedText(" ".join(words), elide, width))
        self._text_cache[key] = lines
        return lines

    def _paint_badge(self, painter: QPainter, center: QPointF, badge: ThreatBadge, scale: float,
                     radius: float, with_count: bool) -> None:
        r = max(radius, 5.0 / scale)
        painter.setPen(self._cosmetic(QColor("white"), 1.5))
        painter.setBrush(QBrush(_BADGE_QCOLORS[badge.worst_open]))
        painter.drawEllipse(center, r, r)
        if with_count:
            font = self._font(scale, r * 1.1)
            font.setBold(True)
            painter.setFont(font)
            painter.setPen(QPen(QColor("white")))
            painter.drawText(QRectF(center.x() - r, center.y() - r, 2 * r, 2 * r), _CENTER,
                             str(badge.count) if badge.count < 100 else "99+")

    def _paint_badge_dots(self, painter: QPainter, geometry: DiagramScene, visible: VisibleSet) -> None:
        """Tiny scale: a square per element with threats, in its worst open severity's colour."""
        dots: dict[Any, list[QRectF]] = {}
        for i in visible.elements:
            element = geometry.elements[i]
            if element.badge is not None:
                corner = element.rect.topRight()
                dots.setdefault(element.badge.worst_open, []).append(
                    QRectF(corner.x() - 30.0, corner.y(), 30.0, 30.0))
        painter.setPen(Qt.PenStyle.NoPen)
        for severity, rects in dots.items():
            painter.setBrush(QBrush(_BADGE_QCOLORS[severity]))
            painter.drawRects(rects)

    def _paint_selection(self, painter: QPainter, geometry: DiagramScene, scale: float) -> None:
        if self._selected is None:
            return
        section, entity_id = self._selected
        pen = self._cosmetic(_SELECTED, 3.0)
        painter.setPen(pen)
        painter.setBrush(Qt.BrushStyle.NoBrush)
        if section == "elements" and entity_id in geometry.element_index:
            painter.drawRect(geometry.elements[geometry.element_index[entity_id]].rect.adjusted(
                -3.0, -3.0, 3.0, 3.0))
        elif section == "trust_boundaries" and entity_id in geometry.boundary_index:
            painter.drawRoundedRect(geometry.boundaries[geometry.boundary_index[entity_id]].rect,
                                    10.0, 10.0)
        elif (section, entity_id) in geometry.flow_index:
            line = geometry.line(geometry.flow_index[(section, entity_id)])
            painter.drawLine(line)
            painter.setBrush(QBrush(_SELECTED))
            painter.drawPolygon(_arrow_head(line, max(11.0, 6.0 / scale)))

    # -- Qt overrides -----------------------------------------------------------------------

    def mousePressEvent(self, event: QMouseEvent) -> None:
        """Qt override: mousePressEvent (a press on an entity selects it and may start a drag)."""
        if event.button() != Qt.MouseButton.LeftButton or self._geometry is None:
            super().mousePressEvent(event)
            return
        point = self.mapToScene(event.position().toPoint())
        hit = self._geometry.hit(point, self._tolerance())
        if hit is None:
            self._press = None
            super().mousePressEvent(event)  # empty canvas: pan
            return
        self._press = (QPointF(event.position()), hit)
        self._dragged = False
        geometry = self._geometry
        if hit[0] == "elements":
            index = geometry.element_index[hit[1]]
            self._drag = ("elements", index, point, geometry.elements[index].rect.topLeft())
        elif hit[0] == "trust_boundaries":
            index = geometry.boundary_index[hit[1]]
            self._drag = ("trust_boundaries", index, point, geometry.boundaries[index].rect.topLeft())
        else:
            self._drag = None
        if hit != self._selected:
            self._selected = hit
            self.viewport().update()
            self.entitySelected.emit(*hit)
        event.accept()

    def mouseMoveEvent(self, event: QMouseEvent) -> None:
        """Qt override: mouseMoveEvent (drags move the entity; hovering shows its full name)."""
        if self._drag is not None and self._press is not None and self._geometry is not None:
            travelled = (QPointF(event.position()) - self._press[0]).manhattanLength()
            if self._dragged or travelled >= DRAG_THRESHOLD:
                self._dragged = True
                section, index, pressed, origin = self._drag
                delta = self.mapToScene(event.position().toPoint()) - pressed
                target = QPointF(round(origin.x() + delta.x()), round(origin.y() + delta.y()))
                if section == "elements":
                    self._geometry.move_element(index, target)
                else:
                    self._geometry.move_boundary(index, target)
                self.viewport().update()
            event.accept()
            return
        if event.buttons() == Qt.MouseButton.NoButton and self._geometry is not None:
            self._show_hover(event)
        super().mouseMoveEvent(event)

    def mouseReleaseEvent(self, event: QMouseEvent) -> None:
        """Qt override: mouseReleaseEvent (a finished drag becomes one edit request)."""
        drag, dragged = self._drag, self._dragged
        self._drag, self._press, self._dragged = None, None, False
        if drag is not None and dragged and self._geometry is not None:
            section, index, _pressed, _origin = drag
            if section == "elements":
                element = self._geometry.elements[index]
                top_left = element.rect.topLeft()
                self.entityMoved.emit("elements", element.entity_id,
                                      {"position": {"x": top_left.x(), "y": top_left.y()}})
            else:
                boundary = self._geometry.boundaries[index]
                r = boundary.rect
                self.entityMoved.emit("trust_boundaries", boundary.entity_id, {
                    "position": {"x": r.x(), "y": r.y()},
                    "size": {"width": r.width(), "height": r.height()},
                })
            event.accept()
            return
        super().mouseReleaseEvent(event)

    def contextMenuEvent(self, event: QContextMenuEvent) -> None:
        """Qt override: contextMenuEvent (add here, or act on the entity under the mouse)."""
        if self._document is None or self._geometry is None:
            return
        point = self.mapToScene(event.pos())
        hit = self._geometry.hit(point, self._tolerance())
        menu = QMenu(self)
        menu.setObjectName("diagramContextMenu")
        if hit is None:
            position = {"x": round(point.x() - 80.0), "y": round(point.y() - 30.0)}
            action = menu.addAction("Add element here…")
            action.triggered.connect(
                lambda _c=False: self.addRequested.emit("elements", {"position": position}))
        else:
            section, entity_id = hit
            if section == "elements":
                menu.addAction("Add threat on this element…").triggered.connect(
                    lambda _c=False: self.addRequested.emit("threats", {"element": entity_id}))
                menu.addAction("Add data flow from this element…").triggered.connect(
                    lambda _c=False: self.addRequested.emit("data_flows", {"from": entity_id}))
            elif section == "data_flows":
                menu.addAction("Add threat on this flow…").triggered.connect(
                    lambda _c=False: self.addRequested.emit("threats", {"flow": entity_id}))
            if section != "relationships":
                menu.addSeparator()
                menu.addAction(f"Delete “{entity_id}”").triggered.connect(
                    lambda _c=False: self.deleteRequested.emit(section, entity_id))
        menu.popup(event.globalPos())
        menu.aboutToHide.connect(menu.deleteLater)

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
        """Qt override: showEvent (builds a pending document; completes an early fit)."""
        super().showEvent(event)
        if self._stale:
            self._rebuild()
        if self._needs_fit:
            self._needs_fit = False
            self.fit()
            self._needs_fit = False

    def resizeEvent(self, event: Any) -> None:
        """Qt override: resizeEvent (keeps the legend in its corner)."""
        super().resizeEvent(event)
        self.legend.place()
        if self._needs_fit and self.isVisible():
            self._needs_fit = False
            self.fit()
            self._needs_fit = False

    # -- internals --------------------------------------------------------------------------

    def _tolerance(self) -> float:
        return 6.0 / max(self.current_scale(), 1e-6)

    def _viewport_scene_rect(self) -> QRectF:
        return self.mapToScene(self.viewport().rect()).boundingRect()

    def _show_hover(self, event: QMouseEvent) -> None:
        assert self._geometry is not None
        hit = self._geometry.hit(self.mapToScene(event.position().toPoint()), self._tolerance())
        text = self._hover_text(hit)
        if text:
            QToolTip.showText(event.globalPosition().toPoint(), text, self.viewport())
        else:
            QToolTip.hideText()

    def _hover_text(self, hit: tuple[str, str] | None) -> str:
        geometry = self._geometry
        if hit is None or geometry is None:
            return ""
        section, entity_id = hit
        if section == "elements":
            element = geometry.elements[geometry.element_index[entity_id]]
            text = f"{element.name}\n{element.look.label} · {entity_id}"
            badge = element.badge
        elif section == "trust_boundaries":
            return f"{geometry.boundaries[geometry.boundary_index[entity_id]].name} (trust boundary)"
        else:
            flow = geometry.flows[geometry.flow_index[(section, entity_id)]]
            source = geometry.elements[flow.source].name
            target = geometry.elements[flow.target].name
            text = f"{flow.label or entity_id}\n{source} → {target}"
            badge = flow.badge
        if badge is not None:
            worst = badge.worst_open.value if badge.worst_open else "all handled"
            text += f"\n{badge.count} threat{'s' if badge.count != 1 else ''} (worst open: {worst})"
        return text

    def hover_text_at(self, scene_point: QPointF) -> str:
        """What hovering over a scene point shows (the full name and its threats)."""
        self.ensure_built()
        if self._geometry is None:
            return ""
        return self._hover_text(self._geometry.hit(scene_point, self._tolerance()))

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


def _arrow_head(line: QLineF, size: float) -> QPolygonF:
    if line.length() == 0:
        return QPolygonF()
    angle = math.atan2(line.dy(), line.dx())
    tip = line.p2()
    spread = math.pi / 7
    return QPolygonF([
        tip,
        QPointF(tip.x() - size * math.cos(angle - spread), tip.y() - size * math.sin(angle - spread)),
        QPointF(tip.x() - size * math.cos(angle + spread), tip.y() - size * math.sin(angle + spread)),
    ])
