"""The approval dialog: every pending call of an iteration, what it would change, and a decision.

Window-modal, opened with `open()` and awaited (`ask()`), never `exec()`. Everything that came
from the model — summaries, raw input, preview values — is shown as plain text only (labels in
`PlainText` format, read-only plain-text editors). The preview (`stockade.assistant.review`) runs
the call's pure action on a copy of the document and shows the entity diff; nothing is committed.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Literal

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QDialog,
    QFrame,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QScrollArea,
    QVBoxLayout,
    QWidget,
)

from stockade.assistant.review import CallPreview
from stockade.ui.assistant.tool_call_card import plain_label
from stockade.ui.common.colors import text_style

DESTRUCTIVE_WARNING = (
    "Destructive: this call removes data from the model. It is never approved in bulk; "
    "approve it on its own only if you are sure."
)


class ApprovalEnd(StrEnum):
    DECIDED = "decided"  # every call shown got a decision
    DEFERRED = "deferred"  # "Decide later": park the turn (or keep a parked run parked)
    DISMISSED = "dismissed"  # closed with calls left undecided; the turn keeps waiting


@dataclass(frozen=True, slots=True)
class ApprovalStep:
    """One decision, in the order the user made it."""

    kind: Literal["approve", "deny", "approve_batch"]
    call_ids: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class ApprovalOutcome:
    end: ApprovalEnd
    steps: tuple[ApprovalStep, ...]


class _CallRow(QFrame):
    """One call: summary, warning, preview, raw input, and its two buttons."""

    def __init__(self, view: CallPreview, parent: QWidget) -> None:
        super().__init__(parent)
        self.view = view
        self.setObjectName(f"approvalRow_{view.call_id}")
        self.setFrameShape(QFrame.Shape.StyledPanel)
        layout = QVBoxLayout(self)
        title = plain_label(f"{view.tool_name}  ·  call {view.call_id}", self)
        title.setObjectName("approvalTool")
        font = title.font()
        font.setBold(True)
        title.setFont(font)
        layout.addWidget(title)
        self.summary_label = plain_label(view.summary or "(no summary)", self)
        self.summary_label.setObjectName("approvalSummary")
        self.summary_label.setWordWrap(True)
        layout.addWidget(self.summary_label)
        if view.destructive:
            warning = plain_label(DESTRUCTIVE_WARNING, self)
            warning.setObjectName("approvalDestructiveWarning")
            warning.setWordWrap(True)
            warning.setStyleSheet(text_style("#b91c1c", "font-weight: bold;"))
            layout.addWidget(warning)
        layout.addWidget(plain_label("What would change:", self))
        self.preview_edit = self._text_box("approvalPreview", "\n".join(view.changes), 110)
        layout.addWidget(self.preview_edit)
        layout.addWidget(plain_label("Input sent by the assistant:", self))
        self.raw_edit = self._text_box("approvalRawInput", view.raw_input, 90)
        layout.addWidget(self.raw_edit)
        buttons = QHBoxLayout()
        self.status_label = plain_label("", self)
        self.status_label.setObjectName("approvalRowStatus")
        self.approve_button = QPushButton("Approve", self)
        self.approve_button.setObjectName("approveButton")
        self.deny_button = QPushButton("Deny", self)
        self.deny_button.setObjectName("denyButton")
        buttons.addWidget(self.status_label, 1)
        buttons.addWidget(self.deny_button)
        buttons.addWidget(self.approve_button)
        layout.addLayout(buttons)
        self.decision: str | None = None

    def _text_box(self, name: str, text: str, height: int) -> QPlainTextEdit:
        box = QPlainTextEdit(self)
        box.setObjectName(name)
        box.setReadOnly(True)
        box.setPlainText(text)
        box.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        box.setMinimumHeight(height)
        box.setMaximumHeight(height * 2)
        return box

    def mark(self, decision: str) -> None:
        self.decision = decision
        self.status_label.setText("Approved" if decision == "approve" else "Denied")
        self.approve_button.setEnabled(False)
        self.deny_button.setEnabled(False)


class ApprovalDialog(QDialog):
    """Asks for a decision on each pending call; `ask()` returns them in the order made."""

    callApproved = Signal(str)
    callDenied = Signal(str)
    batchApproved = Signal(list)
    decisionDeferred = Signal()

    def __init__(self, views: Sequence[CallPreview], parent: QWidget, *,
                 title: str = "Approve the assistant's changes",
                 intro: str | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("approvalDialog")
        self.setWindowTitle(title)
        self.setWindowModality(Qt.WindowModality.WindowModal)
        self.resize(720, 640)
        self._steps: list[ApprovalStep] = []
        self._end: ApprovalEnd | None = None
        self._future: asyncio.Future[ApprovalOutcome] | None = None
        layout = QVBoxLayout(self)
        count = len(views)
        heading = intro or (f"The assistant wants to make {count} change"
                            f"{'' if count == 1 else 's'}. Nothing happens until you approve.")
        self.intro_label = plain_label(heading, self)
        self.intro_label.setWordWrap(True)
        layout.addWidget(self.intro_label)
        scroll = QScrollArea(self)
        scroll.setObjectName("approvalScroll")
        scroll.setWidgetResizable(True)
        body = QWidget(scroll)
        body_layout = QVBoxLayout(body)
        self.rows: dict[str, _CallRow] = {}
        for view in views:
            row = _CallRow(view, body)
            row.approve_button.clicked.connect(
                lambda _c=False, cid=view.call_id: self._on_row_approve(cid))
            row.deny_button.clicked.connect(
                lambda _c=False, cid=view.call_id: self._on_row_deny(cid))
            body_layout.addWidget(row)
            self.rows[view.call_id] = row
        body_layout.addStretch(1)
        scroll.setWidget(body)
        layout.addWidget(scroll, 1)
        footer = QHBoxLayout()
        self.later_button = QPushButton("Decide later", self)
        self.later_button.setObjectName("decideLaterButton")
        self.later_button.setToolTip("Keep this turn waiting safely; you can decide after "
                                     "reopening the document, or from the command line.")
        self.approve_all_button = QPushButton("Approve all non-destructive", self)
        self.approve_all_button.setObjectName("approveAllButton")
        footer.addWidget(self.later_button)
        footer.addStretch(1)
        footer.addWidget(self.approve_all_button)
        layout.addLayout(footer)
        self.later_button.clicked.connect(self._on_later_clicked)
        self.approve_all_button.clicked.connect(self._on_approve_all_clicked)
        self.finished.connect(self._on_finished)
        self._refresh_bulk()

    # -- the awaited result ----------------------------------------------------------------

    async def ask(self) -> ApprovalOutcome:
        """Show the dialog window-modal and wait until it closes."""
        self._future = asyncio.get_running_loop().create_future()
        self.open()
        return await self._future

    def dismiss(self) -> None:
        """Close without deciding the rest (the turn was stopped meanwhile)."""
        if self.isVisible():
            self.reject()

    @property
    def steps(self) -> tuple[ApprovalStep, ...]:
        return tuple(self._steps)

    def undecided_ids(self) -> list[str]:
        return [cid for cid, row in self.rows.items() if row.decision is None]

    # -- slots -----------------------------------------------------------------------------

    def _on_row_approve(self, call_id: str) -> None:
        row = self.rows[call_id]
        if row.decision is not None:
            return
        row.mark("approve")
        self._steps.append(ApprovalStep("approve", (call_id,)))
        self.callApproved.emit(call_id)
        self._after_decision()

    def _on_row_deny(self, call_id: str) -> None:
        row = self.rows[call_id]
        if row.decision is not None:
            return
        row.mark("deny")
        self._steps.append(ApprovalStep("deny", (call_id,)))
        self.callDenied.emit(call_id)
        self._after_decision()

    def _on_approve_all_clicked(self) -> None:
        # The ids are captured now: only calls shown here, undecided and non-destructive.
        ids = [cid for cid, row in self.rows.items()
               if row.decision is None and not row.view.destructive]
        if not ids:
            return
        for cid in ids:
            self.rows[cid].mark("approve")
        self._steps.append(ApprovalStep("approve_batch", tuple(ids)))
        self.batchApproved.emit(ids)
        self._after_decision()

    def _on_later_clicked(self) -> None:
        self._end = ApprovalEnd.DEFERRED
        self.decisionDeferred.emit()
        self.reject()

    def _after_decision(self) -> None:
        self._refresh_bulk()
        if not self.undecided_ids():
            self._end = ApprovalEnd.DECIDED
            self.accept()

    def _refresh_bulk(self) -> None:
        self.approve_all_button.setEnabled(any(
            row.decision is None and not row.view.destructive for row in self.rows.values()))

    def _on_finished(self, _result: int) -> None:
        end = self._end or (ApprovalEnd.DECIDED if not self.undecided_ids()
                            else ApprovalEnd.DISMISSED)
        if self._future is not None and not self._future.done():
            self._future.set_result(ApprovalOutcome(end, tuple(self._steps)))


def label_is_plain(label: QLabel) -> bool:
    """True when `label` cannot interpret its text as markup (tests check every model string)."""
    return label.textFormat() is Qt.TextFormat.PlainText
