"""The review queue: every pending call of a turn as one compact row, decided from the keyboard.

One window-modal dialog, opened with `open()` and awaited (`ask()`), never `exec()`. Rows show
tool, target, a one-line summary, severity, the destructive flag, a note (declined earlier,
edited, would be refused) and the decision; the selected row's exact preview and raw input sit
beside the list. Several rows can be approved or denied at once (destructive calls never in a
bulk approval), a denial can carry a reason (typed, or one of the quick reasons), and a
proposal can be edited before it is decided (E) when the turn allows it.

Keys while the list has focus: arrows move (Shift/Ctrl extend the selection, Ctrl+A selects
all), A approves, D denies with the reason typed below, 1-4 deny with a quick reason, E edits,
U clears a decision, Enter continues once every call is decided. Decisions are only applied
when the queue closes, so any of them can be changed until then.

Everything that came from the model is shown as plain text: table cells are plain display
text, labels are `PlainText`, the preview and input are read-only plain-text editors. Previews
come from `stockade.assistant.review` and are recomputed when a decision or an edit changes
what the later calls would see, so the ids shown are the ids the calls will get.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Literal, Protocol

from PySide6.QtCore import (
    QAbstractTableModel,
    QItemSelection,
    QItemSelectionModel,
    QModelIndex,
    QPersistentModelIndex,
    Qt,
    Signal,
)
from PySide6.QtGui import QBrush, QColor, QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QAbstractItemView,
    QDialog,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QPushButton,
    QSplitter,
    QTableView,
    QVBoxLayout,
    QWidget,
)
from shiboken6 import isValid

from stockade.assistant.review import CallPreview
from stockade.ui.assistant.tool_call_card import plain_label
from stockade.ui.common.colors import MUTED_STYLE, readable, text_style

DESTRUCTIVE_WARNING = (
    "Destructive: this call removes data from the model. It is never approved in bulk; "
    "select it on its own and press A only if you are sure."
)
QUICK_REASONS: tuple[str, ...] = ("Not applicable", "Duplicate", "Wrong severity", "Out of scope")
"""Quick denial reasons, on keys 1 to 4."""
KEY_HELP = ("Keys: ↑↓ move · Shift/Ctrl+click or Shift+↑↓ select · Ctrl+A all · A approve · "
            "D deny · 1-4 deny with a quick reason · E edit · U undo a decision · Enter continue")

_AnyIndex = QModelIndex | QPersistentModelIndex


class Decision(StrEnum):
    APPROVE = "approve"
    DENY = "deny"


class ReviewEnd(StrEnum):
    DECIDED = "decided"  # every call got a decision and the user continued
    DEFERRED = "deferred"  # "Decide later": park the turn (or keep a parked run parked)
    DISMISSED = "dismissed"  # closed with calls left undecided; the turn keeps waiting


@dataclass(frozen=True, slots=True)
class ReviewStep:
    """One decision to apply: approve one call, approve a batch, or deny calls with a reason."""

    kind: Literal["approve", "approve_batch", "deny"]
    call_ids: tuple[str, ...]
    reason: str | None = None


@dataclass(frozen=True, slots=True)
class ReviewOutcome:
    end: ReviewEnd
    steps: tuple[ReviewStep, ...]


class ReviewBackend(Protocol):
    """What the queue asks of whoever owns the calls (a live turn, a parked run)."""

    @property
    def edit_unavailable(self) -> str | None:
        """Why these calls cannot be edited (None: they can)."""
        ...

    async def edit(self, call_id: str, new_input: Any) -> tuple[str, ...]:
        """Apply an edit; the tool's problems with the input, or () when applied."""
        ...

    async def previews(self, skip: frozenset[str]) -> list[CallPreview]:
        """Fresh previews, calls in `skip` (to be denied) not advancing the document."""
        ...


class FixedPreviews:
    """A backend for previews that cannot change (a screenshot, a read-only review)."""

    def __init__(self, views: Sequence[CallPreview],
                 edit_unavailable: str = "These calls cannot be edited here.") -> None:
        self._views = list(views)
        self._why = edit_unavailable

    @property
    def edit_unavailable(self) -> str | None:
        return self._why

    async def edit(self, call_id: str, new_input: Any) -> tuple[str, ...]:
        return (self._why,)

    async def previews(self, skip: frozenset[str]) -> list[CallPreview]:
        return list(self._views)


@dataclass(slots=True)
class QueueRow:
    """One pending call and what the user decided about it so far."""

    view: CallPreview
    decision: Decision | None = None
    reason: str | None = None

    @property
    def note(self) -> str:
        notes = []
        if self.view.declined_earlier is not None:
            earlier = self.view.declined_earlier.reason
            notes.append(f"declined earlier ({earlier})" if earlier else "declined earlier")
        if self.view.edited:
            notes.append("edited by you")
        if self.view.refused:
            notes.append("would be refused")
        return "; ".join(notes)

    @property
    def decision_text(self) -> str:
        if self.decision is Decision.APPROVE:
            return "Approve"
        if self.decision is Decision.DENY:
            return f"Deny: {self.reason}" if self.reason else "Deny"
        return ""


_COLUMNS = ("Tool", "Target", "Proposal", "Severity", "", "Note", "Decision")
_DESTRUCTIVE_COLUMN = 4


class CallQueueModel(QAbstractTableModel):
    """The queue's rows (hand-written model over `QueueRow`s, in call order)."""

    def __init__(self, rows: Sequence[QueueRow], parent: QWidget) -> None:
        super().__init__(parent)
        self.setObjectName("reviewQueueModel")
        self.rows = list(rows)

    def rowCount(self, parent: _AnyIndex = QModelIndex()) -> int:  # noqa: B008
        """Qt override: rowCount."""
        return 0 if parent.isValid() else len(self.rows)

    def columnCount(self, parent: _AnyIndex = QModelIndex()) -> int:  # noqa: B008
        """Qt override: columnCount."""
        return 0 if parent.isValid() else len(_COLUMNS)

    def headerData(self, section: int, orientation: Qt.Orientation,
                   role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        """Qt override: headerData."""
        if orientation is Qt.Orientation.Horizontal and role == Qt.ItemDataRole.DisplayRole:
            return _COLUMNS[section] if section != _DESTRUCTIVE_COLUMN else "⚠"
        if orientation is Qt.Orientation.Horizontal and role == Qt.ItemDataRole.ToolTipRole:
            return "Destructive" if section == _DESTRUCTIVE_COLUMN else None
        return None

    def data(self, index: _AnyIndex, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        """Qt override: data (display text is plain text; nothing is rendered as markup)."""
        if not index.isValid() or not 0 <= index.row() < len(self.rows):
            return None
        row, column = self.rows[index.row()], index.column()
        view = row.view
        if role in (Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.ToolTipRole):
            values = (view.tool_name, view.target, _one_line(view.headline or view.summary),
                      view.severity or "", "destructive" if view.destructive else "",
                      row.note, row.decision_text)
            if role == Qt.ItemDataRole.ToolTipRole and column == 2:
                return view.summary
            return values[column]
        if role == Qt.ItemDataRole.ForegroundRole:
            if column == 6 and row.decision is Decision.APPROVE:
                return QBrush(QColor(readable("#15803d")))
            if column == 6 and row.decision is Decision.DENY:
                return QBrush(QColor(readable("#6b7280")))
            if column in (4, 5) and (view.destructive or view.declined_earlier is not None):
                return QBrush(QColor(readable("#b91c1c" if column == 4 else "#92400e")))
        return None

    def row_changed(self, index: int) -> None:
        self.dataChanged.emit(self.index(index, 0), self.index(index, len(_COLUMNS) - 1))

    def replace_views(self, views: Sequence[CallPreview]) -> None:
        by_id = {v.call_id: v for v in views}
        for i, row in enumerate(self.rows):
            fresh = by_id.get(row.view.call_id)
            if fresh is not None and fresh != row.view:
                row.view = fresh
                self.row_changed(i)


def _one_line(text: str) -> str:
    flat = " ".join((text or "(no summary)").split())
    return flat if len(flat) <= 140 else flat[:139] + "…"


class ReviewQueue(QDialog):
    """Asks for a decision on each pending call; `ask()` returns them once the queue closes."""

    callsApproved = Signal(list)
    callsDenied = Signal(list, str)
    callEdited = Signal(str)
    decisionDeferred = Signal()
    previewsRefreshed = Signal()
    editDialogOpened = Signal(object)
    """An `EditCallDialog` was opened over the queue (tests and the screenshot drive it)."""

    def __init__(self, views: Sequence[CallPreview], parent: QWidget, *,
                 backend: ReviewBackend | None = None,
                 title: str = "Review the assistant's proposals",
                 intro: str | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("reviewQueue")
        self.setWindowTitle(title)
        self.setWindowModality(Qt.WindowModality.WindowModal)
        self.resize(1100, 660)
        self.backend: ReviewBackend = backend or FixedPreviews(views)
        self._end: ReviewEnd | None = None
        self._future: asyncio.Future[ReviewOutcome] | None = None
        self._refresh: asyncio.Task[None] | None = None
        self._editing = False
        self.model = CallQueueModel([QueueRow(v) for v in views], self)
        self.rows: dict[str, QueueRow] = {r.view.call_id: r for r in self.model.rows}

        layout = QVBoxLayout(self)
        count = len(views)
        heading = intro or (f"The assistant proposes {count} change"
                            f"{'' if count == 1 else 's'}. Nothing happens until you approve; "
                            "decisions apply when you continue.")
        self.intro_label = plain_label(heading, self)
        self.intro_label.setObjectName("reviewIntro")
        self.intro_label.setWordWrap(True)
        layout.addWidget(self.intro_label)
        keys = plain_label(KEY_HELP, self)
        keys.setObjectName("reviewKeyHelp")
        keys.setWordWrap(True)
        keys.setStyleSheet(MUTED_STYLE)
        layout.addWidget(keys)

        splitter = QSplitter(Qt.Orientation.Horizontal, self)
        splitter.setObjectName("reviewSplitter")
        self.table = QTableView(splitter)
        self.table.setObjectName("reviewTable")
        self.table.setModel(self.model)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setWordWrap(False)
        self.table.setAlternatingRowColors(True)
        self.table.verticalHeader().setVisible(False)
        self.table.verticalHeader().setDefaultSectionSize(24)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        header.setStretchLastSection(False)
        for column, width in enumerate((84, 130, 300, 60, 26, 104, 104)):
            self.table.setColumnWidth(column, width)
        # The summary takes what is left, so severity, flag, note and decision stay in view.
        header.setSectionResizeMode(2, QHeaderView.ResizeMode.Stretch)
        header.setSectionResizeMode(_DESTRUCTIVE_COLUMN, QHeaderView.ResizeMode.Fixed)
        splitter.addWidget(self.table)

        detail = QWidget(splitter)
        detail.setObjectName("reviewDetail")
        detail_layout = QVBoxLayout(detail)
        detail_layout.setContentsMargins(6, 0, 0, 0)
        self.detail_title = plain_label("", detail)
        self.detail_title.setObjectName("reviewDetailTitle")
        font = self.detail_title.font()
        font.setBold(True)
        self.detail_title.setFont(font)
        self.detail_title.setWordWrap(True)
        detail_layout.addWidget(self.detail_title)
        self.detail_summary = plain_label("", detail)
        self.detail_summary.setObjectName("reviewDetailSummary")
        self.detail_summary.setWordWrap(True)
        detail_layout.addWidget(self.detail_summary)
        self.destructive_label = plain_label(DESTRUCTIVE_WARNING, detail)
        self.destructive_label.setObjectName("reviewDestructiveWarning")
        self.destructive_label.setWordWrap(True)
        self.destructive_label.setStyleSheet(text_style("#b91c1c", "font-weight: bold;"))
        detail_layout.addWidget(self.destructive_label)
        self.note_label = plain_label("", detail)
        self.note_label.setObjectName("reviewNote")
        self.note_label.setWordWrap(True)
        self.note_label.setStyleSheet(text_style("#92400e"))
        detail_layout.addWidget(self.note_label)
        detail_layout.addWidget(plain_label("What would change:", detail))
        self.preview_edit = self._text_box(detail, "reviewPreview")
        detail_layout.addWidget(self.preview_edit, 3)
        detail_layout.addWidget(plain_label("Input (exactly what would run):", detail))
        self.raw_edit = self._text_box(detail, "reviewRawInput")
        detail_layout.addWidget(self.raw_edit, 2)
        splitter.addWidget(detail)
        splitter.setStretchFactor(0, 3)
        splitter.setStretchFactor(1, 2)
        splitter.setSizes([720, 380])
        layout.addWidget(splitter, 1)

        actions = QHBoxLayout()
        self.approve_button = self._button("Approve selected (A)", "reviewApproveButton")
        self.deny_button = self._button("Deny selected (D)", "reviewDenyButton")
        self.edit_button = self._button("Edit… (E)", "reviewEditButton")
        self.undecide_button = self._button("Undo decision (U)", "reviewUndecideButton")
        for button in (self.approve_button, self.deny_button, self.edit_button,
                       self.undecide_button):
            actions.addWidget(button)
        actions.addStretch(1)
        layout.addLayout(actions)

        reasons = QHBoxLayout()
        reason_label = plain_label("Deny with a reason:", self)
        reason_label.setToolTip("Optional; the assistant is told the reason with the denial.")
        reasons.addWidget(reason_label)
        self.reason_edit = QLineEdit(self)
        self.reason_edit.setObjectName("reviewReasonEdit")
        self.reason_edit.setPlaceholderText("optional: type it, then Enter denies the "
                                            "selected calls")
        self.reason_edit.setMinimumWidth(220)
        self.reason_edit.setMaxLength(500)
        reasons.addWidget(self.reason_edit, 1)
        self.quick_buttons: dict[str, QPushButton] = {}
        reasons.addWidget(plain_label("or:", self))
        for number, reason in enumerate(QUICK_REASONS, start=1):
            button = self._button(f"{reason} ({number})", f"reviewQuickReason{number}")
            button.setToolTip(f"Deny the selected calls: {reason.lower()}")
            button.clicked.connect(lambda _c=False, r=reason: self.deny_selected(r))
            reasons.addWidget(button)
            self.quick_buttons[reason] = button
        layout.addLayout(reasons)

        footer = QHBoxLayout()
        self.later_button = self._button("Decide later", "decideLaterButton")
        self.later_button.setToolTip("Keep this turn waiting safely; you can decide after "
                                     "reopening the document, or from the command line.")
        self.approve_all_button = self._button("Approve all non-destructive", "approveAllButton")
        self.deny_all_button = self._button("Deny all", "reviewDenyAllButton")
        self.status_label = plain_label("", self)
        self.status_label.setObjectName("reviewStatus")
        self.continue_button = self._button("Continue (Enter)", "reviewContinueButton")
        self.continue_button.setDefault(True)
        footer.addWidget(self.later_button)
        footer.addWidget(self.approve_all_button)
        footer.addWidget(self.deny_all_button)
        footer.addStretch(1)
        footer.addWidget(self.status_label)
        footer.addWidget(self.continue_button)
        layout.addLayout(footer)

        self.approve_button.clicked.connect(lambda _c=False: self.approve_selected())
        self.deny_button.clicked.connect(lambda _c=False: self.deny_selected())
        self.edit_button.clicked.connect(lambda _c=False: self.edit_current())
        self.undecide_button.clicked.connect(lambda _c=False: self.undecide_selected())
        self.reason_edit.returnPressed.connect(self._on_reason_edit_returnPressed)
        self.later_button.clicked.connect(self._on_later_clicked)
        self.approve_all_button.clicked.connect(self._on_approve_all_clicked)
        self.deny_all_button.clicked.connect(self._on_deny_all_clicked)
        self.continue_button.clicked.connect(self._on_continue_clicked)
        self.finished.connect(self._on_finished)
        selection = self.table.selectionModel()
        selection.selectionChanged.connect(self._on_selection_changed)
        selection.currentRowChanged.connect(self._on_current_row_changed)
        self._install_keys()
        if self.model.rows:
            self.select_calls([self.model.rows[0].view.call_id])
        self.table.setFocus()
        self._refresh_controls()

    # -- construction helpers --------------------------------------------------------------

    def _button(self, text: str, name: str) -> QPushButton:
        button = QPushButton(text, self)
        button.setObjectName(name)
        button.setAutoDefault(False)
        return button

    def _text_box(self, parent: QWidget, name: str) -> QPlainTextEdit:
        box = QPlainTextEdit(parent)
        box.setObjectName(name)
        box.setReadOnly(True)
        box.setLineWrapMode(QPlainTextEdit.LineWrapMode.WidgetWidth)
        return box

    def _install_keys(self) -> None:
        bindings: list[tuple[str, Any]] = [
            ("A", self.approve_selected), ("D", self.deny_selected), ("E", self.edit_current),
            ("U", self.undecide_selected), ("Backspace", self.undecide_selected),
            ("Return", self._on_continue_clicked), ("Enter", self._on_continue_clicked),
        ]
        bindings += [(str(n), lambda r=reason: self.deny_selected(r))
                     for n, reason in enumerate(QUICK_REASONS, start=1)]
        self._shortcuts: list[QShortcut] = []
        for key, slot in bindings:
            # Bound to the list only, so typing a reason never approves anything.
            shortcut = QShortcut(QKeySequence(key), self.table)
            shortcut.setContext(Qt.ShortcutContext.WidgetShortcut)
            shortcut.activated.connect(lambda s=slot: s())
            self._shortcuts.append(shortcut)

    # -- the awaited result ----------------------------------------------------------------

    async def ask(self) -> ReviewOutcome:
        """Show the queue window-modal and wait until it closes."""
        self._future = asyncio.get_running_loop().create_future()
        self.open()
        self.table.setFocus()
        return await self._future

    def dismiss(self) -> None:
        """Close without deciding the rest (the turn was stopped, or the window is closing)."""
        if self.isVisible():
            self.reject()

    @property
    def steps(self) -> tuple[ReviewStep, ...]:
        """The decisions to apply: denials grouped by reason, then approvals (call order)."""
        steps: list[ReviewStep] = []
        reasons: dict[str | None, list[str]] = {}
        for row in self.model.rows:
            if row.decision is Decision.DENY:
                reasons.setdefault(row.reason, []).append(row.view.call_id)
        steps += [ReviewStep("deny", tuple(ids), reason) for reason, ids in reasons.items()]
        batch = tuple(r.view.call_id for r in self.model.rows
                      if r.decision is Decision.APPROVE and not r.view.destructive)
        if batch:
            steps.append(ReviewStep("approve_batch", batch))
        steps += [ReviewStep("approve", (r.view.call_id,)) for r in self.model.rows
                  if r.decision is Decision.APPROVE and r.view.destructive]
        return tuple(steps)

    def undecided_ids(self) -> list[str]:
        return [r.view.call_id for r in self.model.rows if r.decision is None]

    # -- selection -------------------------------------------------------------------------

    def selected_ids(self) -> list[str]:
        rows = sorted({i.row() for i in self.table.selectionModel().selectedRows()})
        return [self.model.rows[r].view.call_id for r in rows]

    def current_id(self) -> str | None:
        index = self.table.currentIndex()
        if not index.isValid():
            return None
        return self.model.rows[index.row()].view.call_id

    def select_calls(self, call_ids: Sequence[str]) -> None:
        """Select exactly these rows (the first becomes current)."""
        wanted = set(call_ids)
        selection = QItemSelection()
        first: QModelIndex | None = None
        for i, row in enumerate(self.model.rows):
            if row.view.call_id in wanted:
                left, right = self.model.index(i, 0), self.model.index(i, len(_COLUMNS) - 1)
                selection.select(left, right)
                first = first or left
        model = self.table.selectionModel()
        if first is not None:
            model.setCurrentIndex(first, QItemSelectionModel.SelectionFlag.NoUpdate)
        model.select(selection, QItemSelectionModel.SelectionFlag.ClearAndSelect)
        self._show_detail()

    def _on_selection_changed(self, _selected: QItemSelection,
                              _deselected: QItemSelection) -> None:
        self._refresh_controls()

    def _on_current_row_changed(self, _current: QModelIndex, _previous: QModelIndex) -> None:
        self._show_detail()

    def _show_detail(self) -> None:
        call_id = self.current_id()
        row = self.rows.get(call_id) if call_id else None
        if row is None:
            for widget in (self.detail_title, self.detail_summary, self.note_label):
                widget.setText("")
            self.destructive_label.hide()
            self.preview_edit.setPlainText("")
            self.raw_edit.setPlainText("")
            return
        view = row.view
        self.detail_title.setText(f"{view.tool_name}  ·  call {view.call_id}"
                                  + (f"  ·  {view.target}" if view.target else ""))
        self.detail_summary.setText(view.summary or "(no summary)")
        self.destructive_label.setVisible(view.destructive)
        notes = []
        if view.declined_earlier is not None:
            earlier = view.declined_earlier
            notes.append("You declined this proposal in an earlier turn"
                         + (f" ({earlier.reason})." if earlier.reason else "."))
        if view.edited:
            notes.append("You changed: " + "; ".join(view.edited))
        self.note_label.setText(" ".join(notes))
        self.note_label.setVisible(bool(notes))
        self.preview_edit.setPlainText("\n".join(view.changes))
        self.raw_edit.setPlainText(view.raw_input)

    # -- decisions -------------------------------------------------------------------------

    def approve_selected(self) -> list[str]:
        """Approve the selected undecided-or-denied calls; destructive ones only when selected
        alone. Returns the ids approved."""
        ids = self.selected_ids()
        rows = [self.rows[i] for i in ids]
        skipped = 0
        if len(rows) == 1 and rows[0].view.destructive:
            approved = ids
        else:
            approved = [r.view.call_id for r in rows if not r.view.destructive]
            skipped = len(rows) - len(approved)
        if approved:
            self._decide(approved, Decision.APPROVE, None)
            self.callsApproved.emit(approved)
        if skipped:
            self.status_label.setText(
                f"{skipped} destructive call{'' if skipped == 1 else 's'} left out: a "
                "destructive call is approved on its own (select just it, then A).")
        return approved

    def deny_selected(self, reason: str | None = None) -> list[str]:
        """Deny the selected calls (destructive ones too) with `reason`, or the typed one."""
        ids = self.selected_ids()
        if not ids:
            return []
        words = (reason if reason is not None else self.reason_edit.text()).strip() or None
        self._decide(ids, Decision.DENY, words)
        self.callsDenied.emit(ids, words or "")
        return ids

    def undecide_selected(self) -> None:
        ids = [i for i in self.selected_ids() if self.rows[i].decision is not None]
        if ids:
            self._decide(ids, None, None, advance=False)

    def _decide(self, ids: Sequence[str], decision: Decision | None, reason: str | None, *,
                advance: bool = True) -> None:
        was_denied = {i for i, r in self.rows.items() if r.decision is Decision.DENY}
        for index, row in enumerate(self.model.rows):
            if row.view.call_id in ids:
                row.decision, row.reason = decision, reason if decision is Decision.DENY else None
                self.model.row_changed(index)
        if advance and len(ids) == 1:
            self._move_to_next_undecided(ids[0])
        now_denied = {i for i, r in self.rows.items() if r.decision is Decision.DENY}
        if now_denied != was_denied:
            self.refresh_previews()
        self._refresh_controls()

    def _move_to_next_undecided(self, after: str) -> None:
        order = [r.view.call_id for r in self.model.rows]
        start = order.index(after)
        for call_id in order[start + 1:] + order[:start]:
            if self.rows[call_id].decision is None:
                self.select_calls([call_id])
                return

    def _on_approve_all_clicked(self) -> None:
        # The ids are captured now: only calls shown here, undecided and non-destructive.
        ids = [r.view.call_id for r in self.model.rows
               if r.decision is None and not r.view.destructive]
        if ids:
            self._decide(ids, Decision.APPROVE, None)
            self.callsApproved.emit(ids)

    def _on_deny_all_clicked(self) -> None:
        ids = self.undecided_ids()
        if ids:
            reason = self.reason_edit.text().strip() or None
            self._decide(ids, Decision.DENY, reason)
            self.callsDenied.emit(ids, reason or "")

    def _on_reason_edit_returnPressed(self) -> None:
        if self.selected_ids():
            self.deny_selected()
            self.table.setFocus()

    def _refresh_controls(self) -> None:
        selected = [self.rows[i] for i in self.selected_ids()]
        self.approve_button.setEnabled(bool(selected) and (
            any(not r.view.destructive for r in selected) or len(selected) == 1))
        self.deny_button.setEnabled(bool(selected))
        for button in self.quick_buttons.values():
            button.setEnabled(bool(selected))
        self.undecide_button.setEnabled(any(r.decision is not None for r in selected))
        why = self.backend.edit_unavailable
        self.edit_button.setEnabled(len(selected) == 1 and why is None and not self._editing)
        self.edit_button.setToolTip(why or "Change this proposal's input before deciding")
        self.approve_all_button.setEnabled(any(
            r.decision is None and not r.view.destructive for r in self.model.rows))
        self.deny_all_button.setEnabled(bool(self.undecided_ids()))
        undecided = len(self.undecided_ids())
        total = len(self.model.rows)
        self.continue_button.setEnabled(undecided == 0)
        self.status_label.setText(f"{total - undecided} of {total} decided")

    def _on_continue_clicked(self) -> None:
        if self.undecided_ids():
            left = len(self.undecided_ids())
            self.status_label.setText(f"{left} call{'' if left == 1 else 's'} still "
                                      "undecided: decide each, or Decide later.")
            return
        self._end = ReviewEnd.DECIDED
        self.accept()

    def _on_later_clicked(self) -> None:
        self._end = ReviewEnd.DEFERRED
        self.decisionDeferred.emit()
        self.reject()

    def _on_finished(self, _result: int) -> None:
        end = self._end or (ReviewEnd.DECIDED if not self.undecided_ids()
                            else ReviewEnd.DISMISSED)
        if self._refresh is not None and not self._refresh.done():
            self._refresh.cancel()
        if self._future is not None and not self._future.done():
            self._future.set_result(ReviewOutcome(end, self.steps))

    # -- edits and fresh previews ----------------------------------------------------------

    def edit_current(self) -> None:
        """Open the edit dialog for the current call (E)."""
        call_id = self.current_id()
        if call_id is None or self._editing or self.backend.edit_unavailable is not None:
            return
        if len(self.selected_ids()) > 1:
            self.select_calls([call_id])
        self._editing = True
        self._refresh_controls()
        task = asyncio.ensure_future(self._edit(call_id))
        self._edit_task = task

    async def _edit(self, call_id: str) -> None:
        from stockade.ui.assistant.edit_call_dialog import EditCallDialog

        try:
            row = self.rows[call_id]
            dialog = EditCallDialog(row.view, self,
                                    submit=lambda raw: self.backend.edit(call_id, raw))
            self.editDialogOpened.emit(dialog)
            edited = await dialog.ask()
            if not isValid(self):
                return  # the queue was closed and deleted meanwhile (the turn stopped)
            dialog.deleteLater()
            if edited:
                self.callEdited.emit(call_id)
                await self._refresh_now()
        finally:
            self._editing = False
            if isValid(self) and self.isVisible():
                self._refresh_controls()
                self.table.setFocus()

    def refresh_previews(self) -> None:
        """Recompute previews in the background (a denial changes the later calls' ids)."""
        if self._refresh is not None and not self._refresh.done():
            self._refresh.cancel()
        self._refresh = asyncio.ensure_future(self._refresh_now())

    async def _refresh_now(self) -> None:
        denied = frozenset(i for i, r in self.rows.items() if r.decision is Decision.DENY)
        views = await self.backend.previews(denied)
        if not isValid(self) or (self._future is not None and self._future.done()):
            return  # closed while the previews were computed: nothing left to show them in
        self.model.replace_views(views)
        self._show_detail()
        self._refresh_controls()
        self.previewsRefreshed.emit()

    async def settled(self) -> None:
        """Wait for a preview refresh under way (tests)."""
        while self._refresh is not None and not self._refresh.done():
            await asyncio.wait({self._refresh})


def label_is_plain(label: QLabel) -> bool:
    """True when `label` cannot interpret its text as markup (tests check every model string)."""
    return label.textFormat() is Qt.TextFormat.PlainText
