"""The document tree: sections → entities, threats also under their targets, filter and lazy rows."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, ClassVar

from PySide6.QtCore import (
    QAbstractItemModel,
    QItemSelectionModel,
    QModelIndex,
    QObject,
    QPersistentModelIndex,
    Qt,
    QTimer,
    Signal,
)
from PySide6.QtGui import QColor, QFont
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QHBoxLayout,
    QHeaderView,
    QLineEdit,
    QMenu,
    QTreeView,
    QVBoxLayout,
    QWidget,
)

from stockade.thf.model import (
    SECTION_NAMES,
    MitigationStatus,
    Severity,
    StrideCategory,
    Threat,
    ThreatModel,
)

ModelIndex = QModelIndex | QPersistentModelIndex
_NO_PARENT = QModelIndex()

SECTION_LABELS: dict[str, str] = {
    "layers": "Layers",
    "groups": "Groups",
    "elements": "Elements",
    "data_flows": "Data flows",
    "relationships": "Relationships",
    "trust_boundaries": "Trust boundaries",
    "threats": "Threats",
    "diagrams": "Diagrams",
}

SEVERITY_COLORS: dict[Severity, QColor] = {
    Severity.CRITICAL: QColor("#dc2626"),
    Severity.HIGH: QColor("#ea580c"),
    Severity.MEDIUM: QColor("#d97706"),
    Severity.LOW: QColor("#2563eb"),
    Severity.INFO: QColor("#6b7280"),
}

NO_MITIGATION = "none"
"""Filter value for threats that carry no mitigation block at all."""

FETCH_BATCH = 200
"""Rows added per `fetchMore`: big enough to fill a screen, small enough to never stall."""

_TARGET_SECTIONS = ("elements", "data_flows")


class NodeKind(StrEnum):
    ROOT = "root"
    SECTION = "section"
    ENTITY = "entity"
    TARGETED_THREAT = "targeted_threat"
    """A threat shown a second time, under the element or flow it targets."""


class Column(StrEnum):
    NAME = "Name"
    ID = "Id"
    DETAILS = "Details"


COLUMNS: tuple[Column, ...] = tuple(Column)

ENTITY_KEY_ROLE = int(Qt.ItemDataRole.UserRole) + 1
"""Data role giving `(section, id)` for entity rows and `(section, None)` for section rows."""


def threat_status(threat: Threat) -> str:
    """The mitigation status of a threat, or `none` when it has no mitigation block."""
    return threat.mitigation.status.value if threat.mitigation is not None else NO_MITIGATION


@dataclass(frozen=True)
class TreeFilter:
    """What the filter box asks for; empty text and `None` combos mean "everything"."""

    text: str = ""
    category: StrideCategory | None = None
    severity: Severity | None = None
    status: str | None = None  # a MitigationStatus value or NO_MITIGATION

    @property
    def restricts_threats(self) -> bool:
        return self.category is not None or self.severity is not None or self.status is not None

    @property
    def is_empty(self) -> bool:
        return not self.text.strip() and not self.restricts_threats

    def text_matches(self, *values: str) -> bool:
        needle = self.text.strip().casefold()
        return not needle or any(needle in v.casefold() for v in values)

    def threat_passes_combos(self, threat: Threat) -> bool:
        return (
            (self.category is None or threat.category == self.category)
            and (self.severity is None or threat.severity == self.severity)
            and (self.status is None or threat_status(threat) == self.status)
        )

    def threat_text_matches(self, threat: Threat) -> bool:
        return self.text_matches(
            threat.id, threat.title, threat.category.value, threat.severity.value, threat_status(threat)
        )


@dataclass(eq=False)
class _Node:
    kind: NodeKind
    section: str
    entity_id: str | None
    parent: _Node | None
    row: int
    pending: list[Any] = field(default_factory=list)
    """Everything this node will show as children, in order; `children` is the fetched prefix."""
    children: list[_Node] = field(default_factory=list)
    total_in_document: int = 0


def _entity_name(entity: Any) -> str:
    for attr in ("name", "title"):
        value = getattr(entity, attr, None)
        if isinstance(value, str) and value:
            return value
    return ""


def _entity_details(section: str, entity: Any, element_names: dict[str, str]) -> str:
    if section == "elements":
        return str(entity.type)
    if section in ("data_flows", "relationships"):
        source = element_names.get(entity.from_, entity.from_)
        target = element_names.get(entity.to, entity.to)
        kind = f"{entity.type}: " if section == "relationships" else ""
        return f"{kind}{source} → {target}"
    if section == "threats":
        return f"{entity.category.value} · {entity.severity.value} · {threat_status(entity)}"
    if section == "trust_boundaries":
        count = len(entity.contains)
        return f"{count} element{'s' if count != 1 else ''}"
    if section == "groups":
        return f"in {entity.parent}" if entity.parent else (entity.type or "")
    if section == "diagrams":
        return entity.kind or ""
    return ""


class DocumentTreeModel(QAbstractItemModel):
    """Hand-written item model over one `ThreatModel`; rows are created lazily in batches."""

    SECTION_ORDER: ClassVar[tuple[str, ...]] = SECTION_NAMES

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("documentTreeModel")
        self._document: ThreatModel | None = None
        self._filter = TreeFilter()
        self._entities: dict[str, dict[str, Any]] = {}
        self._threats_by_target: dict[tuple[str, str], list[Threat]] = {}
        self._element_names: dict[str, str] = {}
        self._root = _Node(NodeKind.ROOT, "", None, None, 0)
        self._retired_root: _Node | None = None

    # -- public API -------------------------------------------------------------------------

    @property
    def document(self) -> ThreatModel | None:
        return self._document

    @property
    def tree_filter(self) -> TreeFilter:
        return self._filter

    def set_document(self, document: ThreatModel | None) -> None:
        """Show `document` (or nothing); rebuilds every row, so views must restore their state."""
        self.beginResetModel()
        self._document = document
        self._index_document()
        self._rebuild()
        self.endResetModel()

    def set_filter(self, tree_filter: TreeFilter) -> None:
        if tree_filter == self._filter:
            return
        self.beginResetModel()
        self._filter = tree_filter
        self._rebuild()
        self.endResetModel()

    def section_count(self, section: str) -> tuple[int, int]:
        """(shown, in document) for one section."""
        node = self._section_node(section)
        if node is None:
            return (0, 0)
        return (len(node.pending), node.total_in_document)

    def shown_ids(self, section: str) -> list[str]:
        """Ids the section lists under the current filter (fetched into rows or not yet)."""
        node = self._section_node(section)
        return [str(e.id) for e in node.pending] if node is not None else []

    def section_label(self, section: str) -> str:
        shown, total = self.section_count(section)
        label = SECTION_LABELS[section]
        if self._filter.is_empty:
            return f"{label} ({total})"
        return f"{label} ({shown} of {total})"

    def key_for_index(self, index: ModelIndex) -> tuple[str, str | None] | None:
        node = self._node(index)
        if node is None or node.kind is NodeKind.ROOT:
            return None
        if node.kind is NodeKind.TARGETED_THREAT:
            return ("threats", node.entity_id)
        return (node.section, node.entity_id)

    def section_index(self, section: str) -> QModelIndex:
        node = self._section_node(section)
        if node is None:
            return QModelIndex()
        return self.createIndex(node.row, 0, node)

    def index_for_entity(self, section: str, entity_id: str) -> QModelIndex:
        """The row for an entity in its own section, fetching rows up to it if needed."""
        node = self._section_node(section)
        if node is None:
            return QModelIndex()
        for position, entity in enumerate(node.pending):
            if entity.id == entity_id:
                self._fetch(node, position + 1)
                return self.createIndex(position, 0, node.children[position])
        return QModelIndex()

    def fetched_row_count(self, section: str) -> int:
        node = self._section_node(section)
        return len(node.children) if node is not None else 0

    # -- Qt overrides -----------------------------------------------------------------------

    def index(self, row: int, column: int, parent: ModelIndex = _NO_PARENT) -> QModelIndex:
        """Qt override: index."""
        node = self._node(parent) if parent.isValid() else self._root
        if node is None or not 0 <= row < len(node.children) or not 0 <= column < len(COLUMNS):
            return QModelIndex()
        return self.createIndex(row, column, node.children[row])

    def parent(self, child: ModelIndex | None = None) -> Any:
        """Qt override: parent (with no argument it is QObject.parent, as Qt defines it)."""
        if child is None:
            return QObject.parent(self)
        node = self._node(child)
        if node is None or node.parent is None or node.parent is self._root:
            return QModelIndex()
        return self.createIndex(node.parent.row, 0, node.parent)

    def rowCount(self, parent: ModelIndex = _NO_PARENT) -> int:
        """Qt override: rowCount (fetched rows only; see canFetchMore)."""
        if parent.isValid() and parent.column() != 0:
            return 0
        node = self._node(parent) if parent.isValid() else self._root
        return len(node.children) if node is not None else 0

    def columnCount(self, parent: ModelIndex = _NO_PARENT) -> int:
        """Qt override: columnCount."""
        return len(COLUMNS)

    def hasChildren(self, parent: ModelIndex = _NO_PARENT) -> bool:
        """Qt override: hasChildren (answers before the rows exist, so expanders show)."""
        if parent.isValid() and parent.column() != 0:
            return False
        node = self._node(parent) if parent.isValid() else self._root
        return node is not None and bool(node.pending)

    def canFetchMore(self, parent: ModelIndex) -> bool:
        """Qt override: canFetchMore."""
        node = self._node(parent) if parent.isValid() else self._root
        return node is not None and len(node.children) < len(node.pending)

    def fetchMore(self, parent: ModelIndex) -> None:
        """Qt override: fetchMore."""
        node = self._node(parent) if parent.isValid() else self._root
        if node is not None:
            self._fetch(node, len(node.children) + FETCH_BATCH)

    def headerData(
        self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole
    ) -> Any:
        """Qt override: headerData."""
        if orientation == Qt.Orientation.Horizontal and role == Qt.ItemDataRole.DisplayRole:
            return COLUMNS[section].value
        return None

    def flags(self, index: ModelIndex) -> Qt.ItemFlag:
        """Qt override: flags."""
        if not index.isValid():
            return Qt.ItemFlag.NoItemFlags
        return Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable

    def data(self, index: ModelIndex, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        """Qt override: data."""
        node = self._node(index)
        if node is None:
            return None
        column = COLUMNS[index.column()]
        if role == Qt.ItemDataRole.DisplayRole:
            return self._display(node, column)
        if role == Qt.ItemDataRole.ToolTipRole and node.kind is not NodeKind.SECTION:
            return f"{self._display(node, Column.NAME)} — {self._display(node, Column.DETAILS)}"
        if role == Qt.ItemDataRole.FontRole and node.kind is NodeKind.SECTION:
            font = QFont()
            font.setBold(True)
            return font
        if role == Qt.ItemDataRole.DecorationRole and column is Column.NAME:
            return self._severity_color(node)
        if role == ENTITY_KEY_ROLE:
            return self.key_for_index(index)
        return None

    # -- internals --------------------------------------------------------------------------

    def _node(self, index: ModelIndex) -> _Node | None:
        if not index.isValid():
            return None
        node = index.internalPointer()
        return node if isinstance(node, _Node) else None

    def _section_node(self, section: str) -> _Node | None:
        for node in self._root.children:
            if node.section == section:
                return node
        return None

    def _index_document(self) -> None:
        self._entities = {}
        self._threats_by_target = {}
        self._element_names = {}
        document = self._document
        if document is None:
            return
        for section in self.SECTION_ORDER:
            self._entities[section] = {e.id: e for e in getattr(document, section)}
        self._element_names = {e.id: e.name for e in document.elements}
        for threat in document.threats:
            # A threat naming both an element and a flow is listed under each.
            if threat.element is not None:
                self._threats_by_target.setdefault(("elements", threat.element), []).append(threat)
            if threat.flow is not None:
                self._threats_by_target.setdefault(("data_flows", threat.flow), []).append(threat)

    def _rebuild(self) -> None:
        self._retired_root = self._root
        root = _Node(NodeKind.ROOT, "", None, None, 0)
        document = self._document
        if document is not None:
            for row, section in enumerate(self.SECTION_ORDER):
                entities: Sequence[Any] = getattr(document, section)
                node = _Node(NodeKind.SECTION, section, None, root, row)
                node.total_in_document = len(entities)
                if self._filter.is_empty:
                    node.pending = list(entities)
                else:
                    node.pending = [e for e in entities if self._entity_visible(section, e)]
                root.children.append(node)
            root.pending = list(root.children)
        self._root = root

    def _targeted_threats(self, section: str, entity: Any) -> list[Threat]:
        threats = self._threats_by_target.get((section, entity.id), [])
        flt = self._filter
        if flt.is_empty:
            return threats
        entity_text = flt.text_matches(entity.id, _entity_name(entity))
        return [
            t
            for t in threats
            if flt.threat_passes_combos(t) and (entity_text or flt.threat_text_matches(t))
        ]

    def _entity_visible(self, section: str, entity: Any) -> bool:
        flt = self._filter
        if flt.is_empty:
            return True
        if section == "threats":
            return flt.threat_passes_combos(entity) and flt.threat_text_matches(entity)
        if section in _TARGET_SECTIONS:
            if flt.restricts_threats:
                return bool(self._targeted_threats(section, entity))
            return flt.text_matches(entity.id, _entity_name(entity)) or bool(
                self._targeted_threats(section, entity)
            )
        if flt.restricts_threats:
            return False
        return flt.text_matches(entity.id, _entity_name(entity))

    def _fetch(self, node: _Node, upto: int) -> None:
        start = len(node.children)
        stop = min(upto, len(node.pending))
        if stop <= start:
            return
        parent_index = QModelIndex() if node is self._root else self.createIndex(node.row, 0, node)
        self.beginInsertRows(parent_index, start, stop - 1)
        for row in range(start, stop):
            node.children.append(self._child_node(node, node.pending[row], row))
        self.endInsertRows()

    def _child_node(self, parent: _Node, item: Any, row: int) -> _Node:
        if parent.kind is NodeKind.SECTION:
            child = _Node(NodeKind.ENTITY, parent.section, item.id, parent, row)
            if parent.section in _TARGET_SECTIONS:
                child.pending = self._targeted_threats(parent.section, item)
            return child
        return _Node(NodeKind.TARGETED_THREAT, "threats", item.id, parent, row)

    def _severity_color(self, node: _Node) -> QColor | None:
        if node.kind is NodeKind.SECTION or (
            node.kind is NodeKind.ENTITY and node.section != "threats"
        ):
            return None
        threat = self._entities.get("threats", {}).get(node.entity_id or "")
        return SEVERITY_COLORS[threat.severity] if threat is not None else None

    def _display(self, node: _Node, column: Column) -> str:
        if node.kind is NodeKind.SECTION:
            return self.section_label(node.section) if column is Column.NAME else ""
        section = "threats" if node.kind is NodeKind.TARGETED_THREAT else node.section
        entity = self._entities.get(section, {}).get(node.entity_id or "")
        if entity is None:
            return ""
        if column is Column.NAME:
            name = _entity_name(entity) or entity.id
            if section == "threats":
                return f"[{entity.severity.value}] {name}"
            return name
        if column is Column.ID:
            return str(entity.id)
        return _entity_details(section, entity, self._element_names)


class DocumentTreePane(QWidget):
    """Filter box above a tree view of the document; tells the window what the user selected."""

    entitySelected = Signal(str, str)
    """(section, id) of the entity the user picked (threats picked under a target report "threats")."""
    addRequested = Signal(str, object)
    """(section, preset fields) chosen from the context menu."""
    deleteRequested = Signal(str, str)
    """(section, id) chosen from the context menu."""

    AUTHORABLE: ClassVar[dict[str, str]] = {
        "elements": "element", "data_flows": "data flow", "trust_boundaries": "trust boundary",
        "threats": "threat", "layers": "layer", "groups": "group",
    }

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("documentTreePane")
        self.model = DocumentTreeModel(self)

        self.filter_text = QLineEdit(self)
        self.filter_text.setObjectName("treeFilterText")
        self.filter_text.setPlaceholderText("Filter by id, name, category, severity or status")
        self.filter_text.setClearButtonEnabled(True)
        self.filter_text.setAccessibleName("Filter the tree")
        self.category_combo = self._combo(
            "treeFilterCategory", "Any category", [(c.value, c) for c in StrideCategory]
        )
        self.severity_combo = self._combo(
            "treeFilterSeverity", "Any severity", [(s.value, s) for s in Severity]
        )
        self.status_combo = self._combo(
            "treeFilterStatus",
            "Any status",
            [(s.value.replace("_", " "), s.value) for s in MitigationStatus]
            + [("no mitigation", NO_MITIGATION)],
        )

        self.view = QTreeView(self)
        self.view.setObjectName("documentTreeView")
        self.view.setModel(self.model)
        self.view.setUniformRowHeights(True)  # lets the view skip measuring 10k rows
        self.view.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.view.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.view.header().setSectionResizeMode(0, QHeaderView.ResizeMode.Interactive)
        self.view.header().resizeSection(0, 240)
        self.view.setAlternatingRowColors(True)
        self.view.setAccessibleName("Document tree")
        self.view.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.view.customContextMenuRequested.connect(self._on_view_customContextMenuRequested)
        self.context_menu: QMenu | None = None

        combos = QHBoxLayout()
        combos.setContentsMargins(0, 0, 0, 0)
        for combo in (self.category_combo, self.severity_combo, self.status_combo):
            combos.addWidget(combo)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.filter_text)
        layout.addLayout(combos)
        layout.addWidget(self.view)

        # Typing re-filters after a short pause so a 10k-entity document never lags per keystroke.
        self._filter_timer = QTimer(self)
        self._filter_timer.setObjectName("treeFilterTimer")
        self._filter_timer.setSingleShot(True)
        self._filter_timer.setInterval(150)
        self._filter_timer.timeout.connect(self.apply_filter)
        self.filter_text.textChanged.connect(self._on_filter_text_textChanged)
        for combo in (self.category_combo, self.severity_combo, self.status_combo):
            combo.currentIndexChanged.connect(self.apply_filter)
        self.view.selectionModel().currentChanged.connect(self._on_view_currentChanged)
        self.view.verticalScrollBar().valueChanged.connect(self._on_scroll_valueChanged)
        self.view.expanded.connect(self._on_view_expanded)
        self._selected: tuple[str, str] | None = None
        self._suppress_selection_signal = False

    def _combo(self, name: str, any_label: str, items: Iterable[tuple[str, Any]]) -> QComboBox:
        combo = QComboBox(self)
        combo.setObjectName(name)
        combo.setAccessibleName(f"Filter: {any_label.lower()}")
        combo.addItem(any_label, None)
        for label, value in items:
            combo.addItem(label, value)
        return combo

    # -- public API -------------------------------------------------------------------------

    @property
    def selected_key(self) -> tuple[str, str] | None:
        return self._selected

    def set_document(self, document: ThreatModel | None, *, keep_state: bool = True) -> None:
        """Show a document; with `keep_state`, re-expand sections and re-select the entity."""
        expanded = self._expanded_keys() if keep_state else set()
        selected = self._selected if keep_state else None
        scroll = self.view.verticalScrollBar().value()
        self.model.set_document(document)
        self._restore(expanded, selected)
        if keep_state:
            self.view.verticalScrollBar().setValue(scroll)
        else:
            self._selected = None

    def current_filter(self) -> TreeFilter:
        return TreeFilter(
            text=self.filter_text.text(),
            category=self.category_combo.currentData(),
            severity=self.severity_combo.currentData(),
            status=self.status_combo.currentData(),
        )

    def apply_filter(self) -> None:
        self._filter_timer.stop()
        expanded = self._expanded_keys()
        selected = self._selected
        flt = self.current_filter()
        self.model.set_filter(flt)
        if not flt.is_empty:
            # A filter is a question; show every section that has an answer.
            expanded |= {(s, None) for s in SECTION_NAMES if self.model.section_count(s)[0]}
        self._restore(expanded, selected)

    def expand_sections(self, sections: Iterable[str]) -> None:
        for section in sections:
            self.view.expand(self.model.section_index(section))

    def select_entity(self, section: str, entity_id: str) -> bool:
        """Select an entity's row (without re-emitting `entitySelected`); False if not shown."""
        index = self.model.index_for_entity(section, entity_id)
        if not index.isValid():
            # Hidden by the filter: show no stale row as selected, and re-select it once the
            # filter lets it back in.
            self._suppress_selection_signal = True
            try:
                self.view.selectionModel().clear()
            finally:
                self._suppress_selection_signal = False
            self._selected = (section, entity_id)
            return False
        self._suppress_selection_signal = True
        try:
            self.view.expand(index.parent())
            self.view.selectionModel().setCurrentIndex(
                index,
                QItemSelectionModel.SelectionFlag.ClearAndSelect
                | QItemSelectionModel.SelectionFlag.Rows,
            )
            self.view.scrollTo(index)
        finally:
            self._suppress_selection_signal = False
        self._selected = (section, entity_id)
        return True

    def build_context_menu(self, key: tuple[str, str | None] | None) -> QMenu | None:
        """The menu for a row: add the row's kind (with the row as preset), delete the row."""
        if key is None or self.model.document is None:
            return None
        section, entity_id = key
        menu = QMenu(self)
        menu.setObjectName("treeContextMenu")

        def add(text: str, target: str, preset: dict[str, Any], name: str) -> None:
            action = menu.addAction(text)
            action.setObjectName(name)
            action.triggered.connect(lambda _c=False: self.addRequested.emit(target, preset))

        if entity_id is not None and section == "elements":
            add("Add threat on this element…", "threats", {"element": entity_id}, "ctxAddThreat")
            add("Add data flow from this element…", "data_flows", {"from": entity_id}, "ctxAddFlow")
        elif entity_id is not None and section == "data_flows":
            add("Add threat on this flow…", "threats", {"flow": entity_id}, "ctxAddThreat")
        if section in self.AUTHORABLE:
            add(f"Add {self.AUTHORABLE[section]}…", section, {}, "ctxAdd")
            if entity_id is not None:
                menu.addSeparator()
                delete = menu.addAction(f"Delete {self.AUTHORABLE[section]} “{entity_id}”")
                delete.setObjectName("ctxDelete")
                delete.triggered.connect(
                    lambda _c=False: self.deleteRequested.emit(section, entity_id)
                )
        return menu if menu.actions() else None

    # -- slots ------------------------------------------------------------------------------

    def _on_view_customContextMenuRequested(self, pos: Any) -> None:
        index = self.view.indexAt(pos)
        menu = self.build_context_menu(self.model.key_for_index(index) if index.isValid() else None)
        if menu is None:
            return
        if self.context_menu is not None:
            self.context_menu.deleteLater()
        self.context_menu = menu
        menu.popup(self.view.viewport().mapToGlobal(pos))

    def _on_filter_text_textChanged(self, _text: str) -> None:
        self._filter_timer.start()

    def _on_view_currentChanged(self, current: QModelIndex, _previous: QModelIndex) -> None:
        key = self.model.key_for_index(current)
        if key is None or key[1] is None:
            return
        section, entity_id = key[0], key[1]
        self._selected = (section, entity_id)
        if not self._suppress_selection_signal:
            self.entitySelected.emit(section, entity_id)

    def _on_view_expanded(self, _index: QModelIndex) -> None:
        self._fetch_visible_tails()

    def _on_scroll_valueChanged(self, _value: int) -> None:
        self._fetch_visible_tails()

    # -- internals --------------------------------------------------------------------------

    def _fetch_visible_tails(self) -> None:
        """Fetch the next batch of any expanded section whose last built row is on screen.

        QTreeView itself only fetches for the very last row of the whole view, so a long
        section followed by other sections would otherwise stop at its first batch.
        """
        model = self.model
        bottom = self.view.viewport().height()
        for row in range(model.rowCount()):
            section_index = model.index(row, 0)
            if not self.view.isExpanded(section_index) or not model.canFetchMore(section_index):
                continue
            last = model.index(model.rowCount(section_index) - 1, 0, section_index)
            rect = self.view.visualRect(last)
            if rect.isValid() and rect.top() <= bottom:
                model.fetchMore(section_index)

    def _expanded_keys(self) -> set[tuple[str, str | None]]:
        keys: set[tuple[str, str | None]] = set()
        model = self.model
        for row in range(model.rowCount()):
            section_index = model.index(row, 0)
            if not self.view.isExpanded(section_index):
                continue
            section, _ = model.key_for_index(section_index) or ("", None)
            keys.add((section, None))
            for child_row in range(model.rowCount(section_index)):
                child = model.index(child_row, 0, section_index)
                if self.view.isExpanded(child):
                    key = model.key_for_index(child)
                    if key is not None:
                        keys.add(key)
        return keys

    def _restore(
        self, expanded: set[tuple[str, str | None]], selected: tuple[str, str] | None
    ) -> None:
        for section, entity_id in sorted(expanded, key=lambda k: (k[0], k[1] or "")):
            if entity_id is None:
                self.view.expand(self.model.section_index(section))
        for section, entity_id in expanded:
            if entity_id is not None:
                index = self.model.index_for_entity(section, entity_id)
                if index.isValid():
                    self.view.expand(index)
        if selected is not None and not self.select_entity(*selected):
            self.view.selectionModel().clearSelection()
