"""The chat pane: prompt, provider and model, the streamed answer, tool-call cards and turn controls.

The pane only shows things and reports clicks; `AssistantController` runs the turns. Model text
is shown through `MarkdownView` (no HTML, no links, no resources) or as plain text.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QKeyEvent, QResizeEvent
from PySide6.QtWidgets import (
    QComboBox,
    QFrame,
    QHBoxLayout,
    QPlainTextEdit,
    QPushButton,
    QScrollArea,
    QSizePolicy,
    QVBoxLayout,
    QWidget,
)

from stockade.loop.authorization import DenialReason
from stockade.loop.state import CallRecord
from stockade.ui.assistant.tool_call_card import ToolCallCard, plain_label
from stockade.ui.common.colors import MUTED_STYLE, text_style
from stockade.ui.common.markdown_view import MarkdownView

PROVIDER_LABELS: dict[str, str] = {
    "anthropic": "Anthropic",
    "openai": "OpenAI",
    "local": "Local server",
    "offline": "Offline (STRIDE rules)",
}


@dataclass(frozen=True, slots=True)
class ModelChoice:
    provider: str
    model_id: str
    label: str
    configurable: bool = False
    is_default: bool = False


@dataclass(frozen=True, slots=True)
class ParkedRunItem:
    """A parked run of the open document, as the pane lists it."""

    run_id: str
    undecided: int
    total: int


class _GrowingMarkdown(MarkdownView):
    """A Markdown view as tall as its text, so the transcript scrolls as one column."""

    def __init__(self, parent: QWidget) -> None:
        super().__init__(parent)
        self.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.setFixedHeight(24)

    def set_markdown(self, text: str, *, exact: bool = False) -> None:
        super().set_markdown(text, exact=exact)
        self._fit()

    def _fit(self) -> None:
        doc = self.document()
        width = max(self.viewport().width(), 80)
        if doc.textWidth() != width:  # a new width re-lays out every block: only on resize
            doc.setTextWidth(width)
        height = int(doc.size().height()) + 2 * self.frameWidth() + 6
        if height != self.height():
            self.setFixedHeight(max(height, 24))

    def resizeEvent(self, event: QResizeEvent) -> None:
        """Qt override: resizeEvent (re-wrap the text to the new width)."""
        super().resizeEvent(event)
        self._fit()


class TurnView(QFrame):
    """One turn in the transcript: the user's prompt, the answer, and a card per tool call."""

    def __init__(self, prompt: str, parent: QWidget) -> None:
        super().__init__(parent)
        self.setObjectName("chatTurn")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        self.prompt_label = plain_label(prompt, self)
        self.prompt_label.setObjectName("chatTurnPrompt")
        self.prompt_label.setWordWrap(True)
        self.prompt_label.setStyleSheet(
            "background: palette(alternate-base); color: palette(text); padding: 4px; "
            "border: 1px solid palette(mid); border-radius: 4px;"
        )
        layout.addWidget(self.prompt_label)
        self.answer = _GrowingMarkdown(self)
        self.answer.setObjectName("chatAnswer")
        layout.addWidget(self.answer)
        self.cards_box = QVBoxLayout()
        layout.addLayout(self.cards_box)
        self.outcome_label = plain_label("", self)
        self.outcome_label.setObjectName("chatTurnOutcome")
        self.outcome_label.setWordWrap(True)
        self.outcome_label.setStyleSheet(MUTED_STYLE)
        self.outcome_label.hide()
        layout.addWidget(self.outcome_label)
        self.cards: dict[str, ToolCallCard] = {}

    def sync_calls(self, calls: Sequence[CallRecord], *, undone: bool = False,
                   redone: bool = False) -> None:
        for call in calls:
            card = self.cards.get(call.id)
            if card is None:
                card = ToolCallCard(call.id, call.tool_name, call.summary,
                                    destructive=call.destructive, parent=self)
                self.cards[call.id] = card
                self.cards_box.addWidget(card)
            status = call.status.value
            if undone and status == "succeeded":
                status = "undone"
            elif redone and status == "undone":
                status = "succeeded"
            note = None
            if call.denial_reason is DenialReason.POLICY_DENIED:
                note = "by policy"
            elif call.denial_reason is DenialReason.LIMIT_EXCEEDED:
                note = "over the tool-call limit"
            elif call.edit is not None:
                note = "edited by you"
                card.set_summary(call.summary)  # the edited input's own summary
            card.set_status(status, note)

    def set_outcome(self, text: str | None) -> None:
        self.outcome_label.setText(text or "")
        self.outcome_label.setVisible(bool(text))


class _PromptEdit(QPlainTextEdit):
    """Enter (or Ctrl+Enter) sends, Shift+Enter starts a new line, Tab moves to the next control."""

    submitted = Signal()

    def keyPressEvent(self, event: QKeyEvent) -> None:
        """Qt override: keyPressEvent."""
        if event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter) and \
                not event.modifiers() & Qt.KeyboardModifier.ShiftModifier:
            self.submitted.emit()
            return
        super().keyPressEvent(event)


class ChatPane(QWidget):
    """Shows the conversation and turn state; reports the user's clicks as signals."""

    promptSubmitted = Signal(str)
    stopRequested = Signal()
    undoTurnRequested = Signal()
    reviewRequested = Signal(str)
    """A parked run id, or "" for the live turn that is waiting."""
    modelChosen = Signal(str, str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("chatPane")
        self.setMinimumWidth(320)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(6, 6, 6, 6)

        picker = QHBoxLayout()
        self.provider_combo = QComboBox(self)
        self.provider_combo.setObjectName("chatProviderCombo")
        self.provider_combo.setAccessibleName("Provider")
        self.model_combo = QComboBox(self)
        self.model_combo.setObjectName("chatModelCombo")
        self.model_combo.setAccessibleName("Model")
        self.model_combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.model_combo.setMinimumContentsLength(14)
        picker.addWidget(self.provider_combo)
        picker.addWidget(self.model_combo, 1)
        layout.addLayout(picker)

        self.keyring_notice = plain_label("", self)
        self.keyring_notice.setObjectName("chatKeyringNotice")
        self.keyring_notice.setWordWrap(True)
        self.keyring_notice.setStyleSheet("color: #92400e; background: #fef3c7; padding: 4px;")
        self.keyring_notice.hide()
        layout.addWidget(self.keyring_notice)

        self.parked_area = QFrame(self)
        self.parked_area.setObjectName("chatParkedArea")
        self.parked_layout = QVBoxLayout(self.parked_area)
        self.parked_layout.setContentsMargins(0, 0, 0, 0)
        self.parked_area.hide()
        layout.addWidget(self.parked_area)

        self.transcript = QScrollArea(self)
        self.transcript.setObjectName("chatTranscript")
        self.transcript.setAccessibleName("Conversation")
        self.transcript.setWidgetResizable(True)
        self.transcript.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self._body = QWidget(self.transcript)
        self._body_layout = QVBoxLayout(self._body)
        self._body_layout.addStretch(1)
        self.transcript.setWidget(self._body)
        layout.addWidget(self.transcript, 1)

        pending = QHBoxLayout()
        self.pending_label = plain_label("", self)
        self.pending_label.setObjectName("chatPendingLabel")
        self.pending_label.setStyleSheet(text_style("#92400e"))
        self.pending_label.setWordWrap(True)
        self.review_button = QPushButton("Review…", self)
        self.review_button.setObjectName("chatReviewButton")
        self.review_button.clicked.connect(lambda _c=False: self.reviewRequested.emit(""))
        pending.addWidget(self.pending_label, 1)
        pending.addWidget(self.review_button)
        layout.addLayout(pending)
        self.set_pending(None)

        self.notice_label = plain_label("", self)
        self.notice_label.setObjectName("chatNoticeLabel")
        self.notice_label.setWordWrap(True)
        self.notice_label.setStyleSheet("color: #1e3a8a; background: #eff6ff; padding: 4px;")
        self.notice_label.hide()
        layout.addWidget(self.notice_label)
        self.error_label = plain_label("", self)
        self.error_label.setObjectName("chatErrorLabel")
        self.error_label.setStyleSheet(text_style("#b91c1c"))
        # Authored errors can be long (a damaged database says how to move it aside): wrap
        # them, or the end of the advice is cut off at the pane's edge.
        self.error_label.setWordWrap(True)
        self.error_label.hide()
        layout.addWidget(self.error_label)
        self.usage_label = plain_label("", self)
        self.usage_label.setObjectName("chatUsageLabel")
        self.usage_label.setStyleSheet(MUTED_STYLE)
        self.usage_label.setWordWrap(True)
        layout.addWidget(self.usage_label)

        self.prompt_edit = _PromptEdit(self)
        self.prompt_edit.setObjectName("chatPromptEdit")
        self.prompt_edit.setPlaceholderText("Ask the assistant about this threat model…")
        self.prompt_edit.setAccessibleName("Prompt")
        self.prompt_edit.setToolTip("Enter or Ctrl+Enter sends · Shift+Enter: new line · Tab: next control")
        # A prompt box that swallows Tab traps keyboard users inside it.
        self.prompt_edit.setTabChangesFocus(True)
        self.prompt_edit.setMaximumHeight(90)
        layout.addWidget(self.prompt_edit)
        buttons = QHBoxLayout()
        self.undo_turn_button = QPushButton("Undo turn", self)
        self.undo_turn_button.setObjectName("chatUndoTurnButton")
        self.undo_turn_button.setEnabled(False)
        self.stop_button = QPushButton("Stop", self)
        self.stop_button.setObjectName("chatStopButton")
        self.stop_button.setEnabled(False)
        self.send_button = QPushButton("Send", self)
        self.send_button.setObjectName("chatSendButton")
        self.send_button.setDefault(True)
        buttons.addWidget(self.undo_turn_button)
        buttons.addStretch(1)
        buttons.addWidget(self.stop_button)
        buttons.addWidget(self.send_button)
        layout.addLayout(buttons)

        self._choices: list[ModelChoice] = []
        self._preferred: dict[str, str] = {}
        self._busy = False
        self.turns: list[TurnView] = []
        self.send_button.clicked.connect(self._on_send_clicked)
        self.prompt_edit.submitted.connect(self._on_send_clicked)
        self.stop_button.clicked.connect(lambda _c=False: self.stopRequested.emit())
        self.undo_turn_button.clicked.connect(lambda _c=False: self.undoTurnRequested.emit())
        self.provider_combo.currentIndexChanged.connect(self._on_provider_combo_changed)
        self.model_combo.activated.connect(self._on_model_combo_activated)
        self.model_combo.currentTextChanged.connect(self._on_model_combo_text)

    # -- provider and model ----------------------------------------------------------------

    def set_choices(self, choices: Sequence[ModelChoice], provider: str, model: str,
                    preferred: Mapping[str, str] | None = None) -> None:
        """Fill the pickers from the model list and select `provider` / `model`.

        `preferred` is the user's model per provider (settings): switching provider selects
        it, so picking a provider never silently picks its most expensive model.
        """
        self._choices = list(choices)
        if preferred is not None:
            self._preferred = dict(preferred)
        self.provider_combo.blockSignals(True)
        self.provider_combo.clear()
        for name in dict.fromkeys(c.provider for c in self._choices):
            self.provider_combo.addItem(PROVIDER_LABELS.get(name, name), name)
        index = self.provider_combo.findData(provider)
        self.provider_combo.setCurrentIndex(max(index, 0))
        self.provider_combo.blockSignals(False)
        self._fill_models(model)

    def selection(self) -> tuple[str, str]:
        provider = str(self.provider_combo.currentData() or "")
        data = self.model_combo.currentData()
        text = self.model_combo.currentText().strip()
        if self.model_combo.isEditable():
            return provider, text
        return provider, str(data or text)

    def _fill_models(self, model: str) -> None:
        provider = str(self.provider_combo.currentData() or "")
        options = [c for c in self._choices if c.provider == provider]
        configurable = any(c.configurable for c in options)
        self.model_combo.blockSignals(True)
        self.model_combo.clear()
        self.model_combo.setEditable(configurable)
        if configurable:
            self.model_combo.addItem(model or "", model or "")
            self.model_combo.setToolTip("The model name your server knows (for example llama3.1).")
        else:
            for choice in options:
                self.model_combo.addItem(choice.label, choice.model_id)
            index = self.model_combo.findData(model)
            self.model_combo.setCurrentIndex(max(index, 0))
            self.model_combo.setToolTip("")
        self.model_combo.blockSignals(False)

    def _on_provider_combo_changed(self, _index: int) -> None:
        provider = str(self.provider_combo.currentData() or "")
        options = [c for c in self._choices if c.provider == provider]
        chosen = self._preferred.get(provider)
        if not chosen or not any(c.configurable or c.model_id == chosen for c in options):
            chosen = next((c.model_id for c in options if c.is_default),
                          options[0].model_id if options else "")
            if any(c.configurable for c in options):
                chosen = self._preferred.get(provider, "")
        self._fill_models(chosen)
        self._choose(*self.selection())

    def _on_model_combo_activated(self, _index: int) -> None:
        self._choose(*self.selection())

    def _on_model_combo_text(self, _text: str) -> None:
        if self.model_combo.isEditable():
            self._choose(*self.selection())

    def _choose(self, provider: str, model: str) -> None:
        if model:
            self._preferred[provider] = model  # switching back selects it again
        self.modelChosen.emit(provider, model)

    # -- turns -----------------------------------------------------------------------------

    def begin_turn(self, prompt: str) -> TurnView:
        view = TurnView(prompt, self._body)
        self._body_layout.insertWidget(self._body_layout.count() - 1, view)
        self.turns.append(view)
        self.set_notice(None)
        self.set_error(None)
        self.scroll_to_end()
        return view

    def clear_turns(self) -> None:
        """Start an empty transcript (another document is open: its context is not this one)."""
        for view in self.turns:
            view.hide()
            view.deleteLater()
        self.turns.clear()
        self.set_notice(None)
        self.set_error(None)
        self.set_usage("")

    @property
    def current_turn(self) -> TurnView | None:
        return self.turns[-1] if self.turns else None

    def scroll_to_end(self) -> None:
        # After the layout has grown; a direct call would scroll to the old end.
        QTimer.singleShot(0, self._scroll_now)

    def _scroll_now(self) -> None:
        bar = self.transcript.verticalScrollBar()
        bar.setValue(bar.maximum())

    def set_busy(self, busy: bool) -> None:
        self._busy = busy
        self.send_button.setEnabled(not busy)
        self.stop_button.setEnabled(busy)
        self.provider_combo.setEnabled(not busy)
        self.model_combo.setEnabled(not busy)

    @property
    def busy(self) -> bool:
        return self._busy

    def set_undo_enabled(self, enabled: bool) -> None:
        self.undo_turn_button.setEnabled(enabled)

    def set_pending(self, count: int | None) -> None:
        if not count:
            self.pending_label.setText("")
            self.pending_label.hide()
            self.review_button.hide()
            return
        self.pending_label.setText(f"Waiting for your decision: {count} call"
                                   f"{'' if count == 1 else 's'}")
        self.pending_label.show()
        self.review_button.show()

    def set_notice(self, text: str | None) -> None:
        """Informational (a bound was reached, the turn was stopped): never styled as an error."""
        self.notice_label.setText(text or "")
        self.notice_label.setVisible(bool(text))

    def set_error(self, text: str | None) -> None:
        """One authored line; anything after the first line is dropped."""
        line = (text or "").strip().splitlines()[0] if text and text.strip() else ""
        self.error_label.setText(line)
        self.error_label.setVisible(bool(line))

    def set_usage(self, text: str) -> None:
        self.usage_label.setText(text)

    def set_keyring_notice(self, text: str | None) -> None:
        self.keyring_notice.setText(text or "")
        self.keyring_notice.setVisible(bool(text))

    def set_parked_runs(self, items: Sequence[ParkedRunItem]) -> None:
        while self.parked_layout.count():
            item = self.parked_layout.takeAt(0)
            widget = item.widget() if item is not None else None
            if widget is not None:
                widget.deleteLater()
        for run in items:
            row = QFrame(self.parked_area)
            row.setObjectName(f"parkedRun_{run.run_id}")
            row.setStyleSheet("background: #fef3c7; color: #1f2937;")
            line = QHBoxLayout(row)
            line.setContentsMargins(6, 4, 6, 4)
            text = (f"Waiting for your decision: {run.undecided} call"
                    f"{'' if run.undecided == 1 else 's'}"
                    if run.undecided else
                    f"Ready to continue: all {run.total} call{'' if run.total == 1 else 's'} "
                    "decided")
            label = plain_label(text, row)
            label.setObjectName("parkedRunLabel")
            label.setWordWrap(True)
            button = QPushButton("Review…" if run.undecided else "Continue", row)
            button.setObjectName("parkedRunReviewButton")
            button.clicked.connect(lambda _c=False, rid=run.run_id: self.reviewRequested.emit(rid))
            line.addWidget(label, 1)
            line.addWidget(button)
            self.parked_layout.addWidget(row)
        self.parked_area.setVisible(bool(items))

    def parked_run_ids(self) -> list[str]:
        ids = []
        for i in range(self.parked_layout.count()):
            item = self.parked_layout.itemAt(i)
            widget = item.widget() if item is not None else None
            if widget is not None and not widget.isHidden() and \
                    widget.objectName().startswith("parkedRun_"):
                ids.append(widget.objectName().removeprefix("parkedRun_"))
        return ids

    def _on_send_clicked(self) -> None:
        text = self.prompt_edit.toPlainText().strip()
        if not text or self._busy:
            return
        self.prompt_edit.clear()
        self.promptSubmitted.emit(text)
