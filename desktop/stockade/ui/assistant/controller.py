"""The bridge between the window and `AssistantService`: runs governed turns on the qasync loop."""

from __future__ import annotations

import asyncio
import logging
import sys
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QObject, Qt, QTimer, Signal
from PySide6.QtGui import QAction

from stockade.assistant.config import ConfigError, TurnConfig, TurnOverrides, actor_for
from stockade.assistant.errors import (
    REFUSALS,
    ParkUnavailable,
    PassphraseRequired,
    failure_text,
)
from stockade.assistant.records import RunInfo
from stockade.assistant.service import UNSAVED_PREFIX, AssistantService
from stockade.assistant.summary import final_text, turn_text
from stockade.assistant.turn import Turn
from stockade.loop.state import CallStatus, TurnOutcome, TurnPhase, TurnState
from stockade.loop.transaction import UndoAvailability
from stockade.protocol.messages import Message
from stockade.protocol.provider_ids import USER_PROVIDERS, ProviderId
from stockade.settings import Settings, read_settings, save_settings
from stockade.thf.model import ThreatModel
from stockade.tools.runtime import ToolEffect
from stockade.ui.assistant.chat_pane import ChatPane, ModelChoice, ParkedRunItem, TurnView
from stockade.ui.assistant.review_backends import ParkedReview, TurnReview
from stockade.ui.assistant.review_queue import (
    ReviewEnd,
    ReviewOutcome,
    ReviewQueue,
    ReviewStep,
)
from stockade.ui.assistant.screenshot_turn import (
    SCREENSHOT_PROMPT,
    ScreenshotTurn,
    embed_for_screenshot,
    run_screenshot_turn,
)
from stockade.ui.assistant.waiting_calls_dialog import CloseChoice, WaitingCallsDialog

if TYPE_CHECKING:
    from stockade.ui.main_window import MainWindow

log = logging.getLogger(__name__)

RENDER_INTERVAL_MS = 40
"""Streamed text is re-rendered at most this often, so 500 deltas/s never starve the UI."""

PARKED_TEXT = ("Waiting for your decision. This turn is saved; reopen the document any time "
               "to approve or deny, or use `stockade runs` from a terminal.")
NO_DOCUMENT_TEXT = "Open or create a threat model first."
FAILED_TEXT = "The assistant could not finish this turn."
UNDONE_TEXT = "These changes were undone (Edit > Redo brings them back)."
REDONE_TEXT = "These changes were redone."
PARK_UNAVAILABLE_TEXT = ("Decide later is not available: {reason} The turn is still waiting "
                         "here: use Review… to decide its calls now, or Stop to end the turn "
                         "(its calls are then not run).")
_DECISION_FAILURES: tuple[type[Exception], ...] = (*REFUSALS, ValueError)


def install_asyncgen_hooks() -> None:
    """Let the running loop finalize abandoned async generators, as `asyncio.run` does.

    qasync never installs these hooks, so an async generator dropped before its end (an SDK
    response body after the terminal event, a stopped stream) is finalized by the garbage
    collector outside any task, where its async cleanup cannot run. With the hooks its
    `aclose()` runs as a task on the loop and releases the connection properly.
    """
    loop = asyncio.get_running_loop()
    if sys.get_asyncgen_hooks().finalizer is not None:
        return
    firstiter = getattr(loop, "_asyncgen_firstiter_hook", None)
    finalizer = getattr(loop, "_asyncgen_finalizer_hook", None)
    if firstiter is not None and finalizer is not None:
        sys.set_asyncgen_hooks(firstiter=firstiter, finalizer=finalizer)


def model_choices() -> list[ModelChoice]:
    from stockade.protocol.models import load_models

    offered = {p.value for p in USER_PROVIDERS}
    return [ModelChoice(m.provider, m.id, m.label, m.configurable, m.is_default)
            for m in load_models() if m.provider in offered]


class AssistantController(QObject):
    """Runs assistant turns for one window.

    It owns the chat pane (docked in the main window) and one `AssistantService`, whose worker
    thread does every database, keyring and file read the assistant needs (never the UI
    thread). It opens the approval dialog whenever a turn waits for decisions, parks a waiting
    turn on "Decide later", when another document replaces this one, or when the window closes,
    lists and resumes parked runs of the open document, and keeps the window's panes in step
    with what the turn commits (through the shared undo history).
    """

    approvalOpened = Signal(object)
    """A `ReviewQueue` was opened (tests and the screenshot drive it)."""
    closeQuestionOpened = Signal(object)
    """A `WaitingCallsDialog` asks what to do with waiting calls before the window closes."""
    turnPhaseShown = Signal(str)
    """The line under the turn changed to this text (every phase as it happens)."""
    passphraseOpened = Signal(object)
    """A `PassphraseDialog` was opened (no secure keyring: parked runs use a passphrase)."""
    turnSettled = Signal(str)
    parkedRunsChanged = Signal(int)
    turnParked = Signal(str)

    def __init__(self, window: MainWindow, service: AssistantService | None = None) -> None:
        super().__init__(window)
        self.setObjectName("assistantController")
        self.window = window
        window.attach_assistant(self)
        self.pane = ChatPane(window)
        self.dock = window.add_side_dock(self.pane, "Assistant", "chatDock")
        self.service = service or AssistantService()
        self.settings = Settings()
        self.turn: Turn | None = None
        self.dialog: ReviewQueue | None = None
        self.close_question: WaitingCallsDialog | None = None
        self.parked: list[RunInfo] = []
        self._conversation: tuple[Message, ...] = ()
        self._view: TurnView | None = None
        self._latest: TurnState | None = None
        self._latest_base = 0
        self._shown_phase: TurnPhase | None = None
        self._seen_document: ThreatModel | None = None
        self._looping = False
        self._closed = False
        self.ready = False
        """Settings and the keyring state have been loaded (tests wait for this)."""
        self._chat_shown = False
        self._screenshot_edit = False
        self._render_timer = QTimer(self)
        self._render_timer.setObjectName("chatRenderTimer")
        self._render_timer.setSingleShot(True)
        self._render_timer.setInterval(RENDER_INTERVAL_MS)
        self._render_timer.timeout.connect(self._on_render_timer_timeout)
        self._save_timer = QTimer(self)
        self._save_timer.setObjectName("chatSettingsSaveTimer")
        self._save_timer.setSingleShot(True)
        self._save_timer.setInterval(400)
        self._save_timer.timeout.connect(self._on_save_timer_timeout)

        from stockade.ui.main_window import AppTab

        window.register_tab(AppTab.CHAT, self.show_chat)
        window.register_tab(AppTab.CHAT_EDIT, self._show_chat_editing)
        self._build_actions()
        self._show_choices()
        self.pane.promptSubmitted.connect(self._on_pane_promptSubmitted)
        self.pane.prompt_edit.textChanged.connect(self._on_prompt_edit_textChanged)
        self.pane.stopRequested.connect(self.stop)
        self.pane.undoTurnRequested.connect(self._on_pane_undoTurnRequested)
        self.pane.reviewRequested.connect(self._on_pane_reviewRequested)
        self.pane.modelChosen.connect(self._on_pane_modelChosen)
        doc = window.open_document
        doc.documentReplaced.connect(self._on_document_documentReplaced)
        doc.documentChanged.connect(self._on_document_documentChanged)
        # Edit > Undo reverts a whole assistant turn when that turn is the newest edit (and
        # records it in the audit trail); anything else is an ordinary history undo.
        window.undo_action.triggered.disconnect()
        window.undo_action.triggered.connect(lambda _c=False: self.undo_edit())
        self._spawn(self._load_settings())

    # -- construction ----------------------------------------------------------------------

    def _build_actions(self) -> None:
        window = self.window
        menu = window.assistant_menu
        menu.menuAction().setVisible(True)
        self.show_action = self._add_action(menu, "actionShowChat", "Show &chat", self.show_chat,
                                            "Ctrl+4")
        self.stop_action = self._add_action(menu, "actionStopTurn", "&Stop", self.stop)
        menu.addSeparator()
        self.settings_action = self._add_action(menu, "actionAssistantSettings", "&Settings…",
                                                lambda: self._spawn(self.open_settings()))
        self.audit_action = self._add_action(menu, "actionAuditTrail", "&Audit trail…",
                                             lambda: self._spawn(self.open_audit_viewer()))
        window.edit_menu.addSeparator()
        self.preferences_action = self._add_action(
            window.edit_menu, "actionPreferences", "&Preferences…",
            lambda: self._spawn(self.open_settings()))
        self.help_audit_action = self._add_action(
            window.help_menu, "actionHelpAuditTrail", "&Audit trail…",
            lambda: self._spawn(self.open_audit_viewer()))

    def _add_action(self, menu: Any, name: str, text: str, slot: Callable[[], Any],
                    shortcut: str | None = None) -> QAction:
        action = QAction(text, self.window)
        action.setObjectName(name)
        if shortcut:
            action.setShortcut(shortcut)
        action.triggered.connect(lambda _c=False: slot())
        menu.addAction(action)
        return action

    def _spawn(self, coro: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
        return self.window.spawn(coro)

    def _show_choices(self, provider: str | None = None, model: str | None = None) -> None:
        settings = self.settings
        chosen = provider or settings.provider
        self.pane.set_choices(model_choices(), chosen, model or settings.model_for(chosen),
                              preferred=settings.models)

    def show_chat(self) -> None:
        self._chat_shown = True
        self.dock.show()
        self.dock.raise_()
        self.window.resizeDocks([self.dock], [460], Qt.Orientation.Horizontal)
        self.pane.prompt_edit.setFocus()

    def _show_chat_editing(self) -> None:
        self._screenshot_edit = True  # `--tab chat-edit`: the screenshot opens the edit dialog
        self.show_chat()

    def start_screenshot_turn(self) -> None:
        """`--screenshot … --tab chat`: an offline review turn, stopped at its approval dialog."""
        history = self.window.open_document.history
        if not self._chat_shown or history is None or self.turn_live:
            return
        self._show_choices("offline", "stride-rules")
        result = run_screenshot_turn(history, self.settings,
                                     self._document_path() or f"{UNSAVED_PREFIX}screenshot")
        if not isinstance(result, ScreenshotTurn):
            log.info("the screenshot turn did not run: %r", result)
            return
        self._view = self.pane.begin_turn(SCREENSHOT_PROMPT)
        self._render(result.state, 0)
        if result.state.phase is TurnPhase.AWAITING_APPROVAL and result.views:
            self.pane.set_pending(len(result.views))
            dialog = ReviewQueue(result.views, self.window)
            embed_for_screenshot(dialog, self.window)
            dialog.show()
            self.dialog = dialog
            if self._screenshot_edit:
                from stockade.ui.assistant.edit_call_dialog import EditCallDialog

                first = result.views[0]
                edit = EditCallDialog(first, self.window, submit=lambda raw: dialog.backend.edit(
                    first.call_id, raw))
                embed_for_screenshot(edit, self.window)
                edit.show()

    async def _load_settings(self) -> None:
        try:
            loaded = await self.service.worker.run(read_settings)
        except REFUSALS:
            return
        if self._closed:
            return
        self.settings = loaded.settings
        if loaded.problem:
            self.pane.set_notice(loaded.problem)
        if not self.pane.busy:
            self._show_choices()
        await self.refresh_keyring_notice()
        self.ready = True

    async def refresh_keyring_notice(self) -> None:
        from stockade.ui.main_window import keyring_status

        try:
            secure, message = await self.service.worker.run(keyring_status)
        except Exception:  # an unusable keyring is shown as insecure, never as a crash
            secure, message = False, "The system keyring could not be checked."
        if not self._closed:
            self.pane.set_keyring_notice(None if secure else message)

    async def save_settings(self, settings: Settings) -> None:
        self.settings = settings
        current = self._with_recent_files(settings)
        if self.service.worker.closed:
            # The window closed between the save being scheduled and it running: nothing else
            # runs any more, so the last choice is written here rather than lost.
            save_settings(current)
            return
        await self.service.worker.run(lambda: save_settings(current))

    def _with_recent_files(self, settings: Settings) -> Settings:
        # Open Recent writes the same file as files are opened; the settings loaded at start
        # would otherwise put back the list as it was then.
        return settings.model_copy(update={"recent_files": self.window.recent_files.paths})

    def apply_settings(self, settings: Settings) -> None:
        """Use saved settings from now on (the next turn picks them up)."""
        self.settings = settings
        if not self.pane.busy:
            self._show_choices()

    def _on_prompt_edit_textChanged(self) -> None:
        # Load the SDKs while the user types: their import briefly competes with the UI
        # thread for the interpreter, better now than while an answer streams.
        if not self._closed:
            self.service.warm_up()

    @property
    def actor(self) -> str:
        return actor_for(self.settings)

    # -- starting a turn -------------------------------------------------------------------

    def _on_pane_promptSubmitted(self, prompt: str) -> None:
        # The prompt stays on screen from the click: the turn's view is made here, before the
        # task that prepares the provider gets its first slice of the loop.
        if not self.turn_live and not self._looping and \
                self.window.open_document.history is not None:
            self._view = self.pane.begin_turn(prompt)
            self._show_phase_text("Preparing the provider…")
            self.pane.set_busy(True)
        self._spawn(self.send(prompt))

    def _on_pane_modelChosen(self, provider: str, model: str) -> None:
        if provider not in {p.value for p in USER_PROVIDERS}:
            return
        models = dict(self.settings.models)
        if model:
            models[provider] = model
        updated = self.settings.model_copy(update={"provider": ProviderId(provider),
                                                   "models": models})
        if updated != self.settings:
            self.settings = updated
            self._save_timer.start()  # typing a local model name saves once, not per key

    def _on_save_timer_timeout(self) -> None:
        if not self._closed:
            self._spawn(self.save_settings(self.settings))

    def _document_path(self) -> str | None:
        path = self.window.open_document.path
        return str(path.resolve()) if path is not None else None

    @property
    def turn_live(self) -> bool:
        return self.turn is not None and self.turn.live

    async def send(self, prompt: str) -> None:
        """Start a governed turn on the open document with the pane's provider and model."""
        if self.turn_live or self._looping:
            return
        if self.window.open_document.history is None:
            self.pane.set_error(NO_DOCUMENT_TEXT)
            return
        self._looping = True
        try:
            await self._send(prompt)
        finally:
            self._looping = False
            if not self.turn_live and not self._closed:
                self.pane.set_busy(False)  # even after an unexpected error: never stuck busy

    async def _send(self, prompt: str) -> None:
        install_asyncgen_hooks()
        history = self.window.open_document.history
        assert history is not None
        provider, model = self.pane.selection()
        self.pane.set_error(None)
        try:
            config = TurnConfig.from_settings(self.settings, TurnOverrides(provider=provider,
                                                                           model=model))
        except ConfigError as exc:
            if self._view is not None:
                self._view.set_outcome(None)
            self.pane.set_error(str(exc))
            return
        # Feedback at once: the prompt stays visible and the pane says what is happening.
        if self._view is None or self._view.prompt_label.text() != prompt or \
                self._view is not self.pane.current_turn:
            self._view = self.pane.begin_turn(prompt)
        self._shown_phase = None
        self._show_phase_text("Preparing the provider…")
        self.pane.set_busy(True)
        self.pane.set_undo_enabled(False)
        self.pane.set_usage("")
        base_count = len(self._conversation)
        self._seen_document = history.document
        try:
            turn = await self.service.prepare_turn(
                config, history,
                document_path=self._document_path()
                or f"{UNSAVED_PREFIX}{history.document.metadata.title}",
                prompt=prompt, history=self._conversation,
                on_state=lambda state: self._on_runner_state(state, base_count))
        except REFUSALS as exc:
            self._fail_outside_turn(failure_text(exc))
            return
        if self._closed:
            return
        self.turn = turn
        await turn.start()
        await self._continue(turn)

    def _fail_outside_turn(self, message: str) -> None:
        self.pane.set_error(f"The turn could not start: {message}")
        if self._view is not None:
            self._view.set_outcome(None)
        self.pane.set_busy(False)
        self.turn = None

    # -- rendering -------------------------------------------------------------------------

    def _on_runner_state(self, state: TurnState, base_count: int) -> None:
        # Called on every reducer transition (every streamed delta): keep it O(1).
        self._latest = state
        self._latest_base = base_count
        if state.phase is not self._shown_phase:
            # A new phase is shown at once, not at the next throttled render: a phase can be
            # over long before the render timer fires.
            self._shown_phase = state.phase
            text = _PHASE_TEXT.get(state.phase)
            if text is not None and not self._closed:
                self._show_phase_text(text)
        if not self._render_timer.isActive():
            self._render_timer.start()

    def _show_phase_text(self, text: str | None) -> None:
        view = self._view
        if view is None or self._closed:
            return
        if view.outcome_label.text() != (text or ""):
            view.set_outcome(text)
            if text:
                self.turnPhaseShown.emit(text)

    def _on_render_timer_timeout(self) -> None:
        if self._latest is not None and not self._closed:
            self._render(self._latest, self._latest_base)

    def _render(self, state: TurnState, base_count: int) -> None:
        view = self._view
        if view is None or self._closed:
            return
        view.answer.set_markdown(turn_text(state, base_count))
        view.sync_calls(state.calls)
        if state.phase is not TurnPhase.SETTLED and state.phase is not TurnPhase.IDLE:
            self._show_phase_text(_PHASE_TEXT.get(state.phase))
        self._sync_document()

    def _sync_document(self) -> None:
        """Tell the panes when the turn committed (the history is shared, the signal is not)."""
        history = self.window.open_document.history
        if history is not None and history.document is not self._seen_document:
            self._seen_document = history.document
            self.window.open_document.notify_committed()

    # -- the turn loop ---------------------------------------------------------------------

    async def _continue(self, turn: Turn) -> None:
        """From a rest point: ask for decisions until the turn settles, parks or is left waiting."""
        while not self._closed and turn is self.turn:
            state = turn.state
            self._render(state, turn.base_count)
            if state.phase is TurnPhase.AWAITING_APPROVAL:
                self.pane.set_pending(None)
                outcome = await self._ask(turn)
                if turn is not self.turn or self._closed:
                    return
                if turn.phase is TurnPhase.SETTLED:  # stopped while the dialog was open
                    await turn.wait_cancelled()
                    continue
                await self._apply(turn, outcome.steps)
                if turn.phase is TurnPhase.AWAITING_APPROVAL:
                    if outcome.end is ReviewEnd.DEFERRED:
                        await self.park_live()
                        return
                    if outcome.end is ReviewEnd.DISMISSED:
                        if self._view is not None:
                            self._view.set_outcome(None)
                        self.pane.set_pending(len(turn.pending()))
                        return
                continue
            if state.phase is TurnPhase.SETTLED:
                await self._finish(turn)
            return

    async def _ask(self, turn: Turn) -> ReviewOutcome:
        views = await turn.previews()
        dialog = ReviewQueue(views, self.window, backend=TurnReview(turn, self.actor))
        self.dialog = dialog
        self.approvalOpened.emit(dialog)
        try:
            return await dialog.ask()
        finally:
            self.dialog = None
            dialog.deleteLater()
            if self._view is not None:
                self._view.sync_calls(turn.state.calls)  # edits show on the cards

    async def _apply(self, turn: Turn, steps: tuple[ReviewStep, ...]) -> None:
        for step in steps:
            if turn.phase is not TurnPhase.AWAITING_APPROVAL:
                break
            if step.kind == "approve_batch":
                await turn.approve_batch(list(step.call_ids), self.actor)
            elif step.kind == "approve":
                await turn.approve(step.call_ids[0], self.actor)
            else:
                await turn.deny_batch(list(step.call_ids), self.actor, step.reason)
            self._render(turn.state, turn.base_count)

    async def _finish(self, turn: Turn) -> None:
        self._render_timer.stop()
        state = turn.state
        view = self._view
        if view is not None:
            text = turn_text(state, turn.base_count)
            final = turn.final_text
            raw_final = final_text(state, turn.base_count)
            if raw_final and final != raw_final and text.endswith(raw_final):
                text = text[: len(text) - len(raw_final)] + final  # the output guard redacted
            view.answer.set_markdown(text, exact=True)
            view.sync_calls(state.calls)
            view.set_outcome(None)
        self._sync_document()
        outcome = state.outcome
        if outcome is TurnOutcome.CANCELLED:
            self.pane.set_notice(stopped_text(state))
        elif outcome is TurnOutcome.BOUNDED:
            self.pane.set_notice(state.notice)
        elif outcome is TurnOutcome.FAILED:
            error_text = state.error.message if state.error is not None else state.notice
            self.pane.set_error(error_text or FAILED_TEXT)
        if outcome is TurnOutcome.COMPLETED:
            self._conversation = state.history
        self.pane.set_pending(None)
        self.pane.set_busy(False)
        await self._show_usage(turn)
        self._refresh_undo()
        self.turnSettled.emit(turn.run_id)

    async def _show_usage(self, turn: Turn) -> None:
        try:
            summary = await turn.summary()
        except REFUSALS as exc:
            log.info("turn usage could not be read: %s", type(exc).__name__)
            return
        if not self._closed:
            self.pane.set_usage(summary.usage_line())

    # -- stop, undo ------------------------------------------------------------------------

    def stop(self) -> None:
        """Cancel the live turn at once; what arrived stays on screen, no error is shown."""
        turn = self.turn
        if turn is None or not self.turn_live:
            return
        turn.cancel()
        if self.dialog is not None:
            self.dialog.dismiss()  # the loop sees the settled turn and finishes it
        elif not self._looping:
            self._spawn(self._finish_after_cancel(turn))

    async def _finish_after_cancel(self, turn: Turn) -> None:
        await turn.wait_cancelled()
        if turn is self.turn and not self._closed:
            await self._finish(turn)

    def _on_pane_undoTurnRequested(self) -> None:
        self._spawn(self.undo_turn())

    def turn_undoable(self) -> bool:
        return self.turn is not None and self.turn.undoable

    async def undo_turn(self) -> bool:
        """Revert the last turn in one step (recorded in the audit trail first)."""
        turn = self.turn
        if turn is None or not self.turn_undoable():
            return False
        undone = await turn.undo()
        if self._closed:
            return undone
        if undone:
            if self._view is not None:
                self._view.sync_calls(turn.state.calls, undone=True)
                self._view.set_outcome(UNDONE_TEXT)
            self._sync_document()
        self._refresh_undo()
        return undone

    def undo_edit(self) -> None:
        """Edit > Undo: the assistant's turn as one step when it is the newest edit."""
        if self.turn_undoable():
            self._spawn(self.undo_turn())
        else:
            self.window.open_document.undo()

    def _refresh_undo(self) -> None:
        self.pane.set_undo_enabled(self.turn_undoable())

    # -- parking ---------------------------------------------------------------------------

    async def park_live(self) -> bool:
        """"Decide later": seal the waiting turn durably; the document keeps what it has."""
        turn = self.turn
        if turn is None or not turn.waiting:
            return False
        try:
            if not await self._park(turn):
                if turn is self.turn and not self._closed:
                    self.pane.set_notice("The turn was not saved for later; it is still "
                                         "waiting here.")
                    self.pane.set_pending(len(turn.pending()))
                return False
        except REFUSALS as exc:  # unsaved, unreadable file, keyring or database
            log.info("parking the turn failed: %s", type(exc).__name__)
            if turn is self.turn and not self._closed:
                self.pane.set_error(park_unavailable_text(exc))
                self.pane.set_pending(len(turn.pending()))
                if self._view is not None:
                    self._view.set_outcome(None)
            return False
        if turn is self.turn and not self._closed:
            self._after_park(turn)
            await self.refresh_parked()
        return True

    async def _park(self, turn: Turn) -> bool:
        """Park `turn`, asking for a passphrase where no secure keyring exists; False when the
        user cancelled that question (the turn still waits). Refusals propagate."""
        try:
            await self.service.park(turn)
        except PassphraseRequired:
            passphrase = await self.ask_passphrase(confirm=True)
            if passphrase is None:
                return False
            await self.service.park(turn, passphrase=passphrase)
        return True

    def _after_park(self, turn: Turn) -> None:
        if self._view is not None:
            self._view.set_outcome(PARKED_TEXT)
        self.pane.set_pending(None)
        self.pane.set_busy(False)
        self._conversation = ()
        self.turn = None
        self.turnParked.emit(turn.run_id)

    # -- closing with calls waiting ---------------------------------------------------------

    def waiting_calls(self) -> int:
        """Calls waiting for a decision in this window (not parked): closing must ask first."""
        turn = self.turn
        if self._closed or turn is None or not turn.waiting:
            return 0
        return len(turn.pending())

    async def settle_before_close(self) -> bool:
        """Ask what to do with the waiting calls: save the turn for later, deny them all, or
        keep the window open. True when the window may close; nothing is dropped silently."""
        turn = self.turn
        if turn is None or not turn.waiting:
            return True
        if self.dialog is not None:
            self.dialog.dismiss()  # its decisions so far apply; the rest keep waiting
            while self._looping and turn.waiting and self.dialog is not None:
                await asyncio.sleep(0)
        unavailable: str | None = None
        while True:
            if not turn.waiting:
                return True
            dialog = WaitingCallsDialog(len(turn.pending()), self.window,
                                        park_unavailable=unavailable)
            self.close_question = dialog
            self.closeQuestionOpened.emit(dialog)
            try:
                choice = await dialog.ask()
            finally:
                self.close_question = None
                dialog.deleteLater()
            if choice is CloseChoice.CANCEL:
                return False
            if choice is CloseChoice.DENY_ALL:
                await self._deny_all_on_close(turn)
                return True
            try:
                if not await self._park(turn):
                    continue  # the passphrase was not given: ask again
            except REFUSALS as exc:
                # Say why, and ask again without this choice.
                log.info("parking on close failed: %s", type(exc).__name__)
                unavailable = park_unavailable_reason(exc)
                continue
            self._after_park(turn)
            return True

    async def _deny_all_on_close(self, turn: Turn) -> None:
        try:
            await turn.deny_all_and_stop(self.actor)
        except _DECISION_FAILURES as exc:
            log.info("denying the waiting calls failed: %s", type(exc).__name__)
            turn.cancel()
            await turn.wait_cancelled()

    def prepare_to_close(self) -> None:
        """The window is closing: park a turn that waits for a decision, stop any other."""
        if self._closed:
            return
        self._closed = True
        self._render_timer.stop()
        if self._save_timer.isActive():
            self._save_timer.stop()
            try:
                # Closing: the last picker change is kept.
                save_settings(self._with_recent_files(self.settings))
            except OSError:
                log.info("the last model choice could not be saved")
        turn = self.turn
        if self.dialog is not None:
            self.dialog.dismiss()
        if turn is not None and turn.waiting:
            try:
                self.service.park_blocking(turn)
                self.turnParked.emit(turn.run_id)
            except REFUSALS:
                log.warning("the waiting turn could not be parked on close", exc_info=True)
        elif turn is not None and turn.live and not turn.parking:
            turn.cancel()
        self.turn = None
        self.service.close()  # waits for queued work: a Decide later under way completes

    # -- parked runs of the open document ---------------------------------------------------

    def _on_document_documentReplaced(self) -> None:
        turn = self.turn
        if turn is not None and turn.waiting:
            self._spawn(self._park_replaced(turn))
        elif turn is not None and turn.live:
            turn.cancel()
        self.turn = None
        self._view = None
        self._conversation = ()
        self.pane.clear_turns()
        self.pane.set_pending(None)
        self.pane.set_busy(False)
        self.pane.set_undo_enabled(False)
        self._seen_document = self.window.open_document.document
        self._spawn(self.refresh_parked())

    async def _park_replaced(self, turn: Turn) -> None:
        """Another document took the window's place while a turn waited: keep the turn for
        later (it carries its own document, so nothing it committed is lost). If it cannot be
        kept, it is stopped and the pane says so: its calls are not run, never dropped
        silently."""
        try:
            if not await self._park(turn):
                raise ParkUnavailable("no passphrase was given to keep it without a keyring")
            self.turnParked.emit(turn.run_id)
        except REFUSALS as exc:  # ParkUnavailable included
            log.info("the waiting turn could not be parked: %s", type(exc).__name__)
            waiting = len(turn.pending())
            turn.cancel()
            await turn.wait_cancelled()
            if not self._closed:
                self.pane.set_notice(
                    f"The turn that was waiting on the previous document could not be saved "
                    f"for later ({park_unavailable_reason(exc)}), so it was stopped: its "
                    f"{waiting} waiting call{'' if waiting == 1 else 's'} did not run.")

    def _on_document_documentChanged(self) -> None:
        self._seen_document = self.window.open_document.document
        self._refresh_undo()
        turn = self.turn
        if self._view is not None and turn is not None and not turn.parked and \
                turn.phase is TurnPhase.SETTLED:
            # Edit > Redo can bring an undone turn back: show its calls as done again, and say
            # so (the transcript must not keep saying they were undone).
            redone = self.turn_undoable()
            self._view.sync_calls(turn.state.calls, redone=redone)
            said = self._view.outcome_label.text()
            if redone and said == UNDONE_TEXT:
                self._view.set_outcome(REDONE_TEXT)
            elif not redone and said == REDONE_TEXT and \
                    turn.undo_availability() is UndoAvailability.ALREADY_UNDONE:
                self._view.set_outcome(UNDONE_TEXT)

    async def refresh_parked(self) -> list[RunInfo]:
        """Re-read the parked runs of the open document and show them in the pane."""
        path = self._document_path()
        runs: list[RunInfo] = []
        try:
            if path is not None and not self._closed:
                runs = await self.service.list_parked(path, settings=self.settings)
        except REFUSALS as exc:
            if not self._closed:
                self.pane.set_error(failure_text(exc))
            return []
        if self._closed:
            return runs
        self.parked = runs
        items = [ParkedRunItem(r.run_id, r.undecided, len(r.pending)) for r in runs]
        self.pane.set_parked_runs(items)
        self.parkedRunsChanged.emit(len(items))
        return runs

    def _on_pane_reviewRequested(self, run_id: str) -> None:
        if run_id:
            self._spawn(self.review_parked(run_id))
        elif self.turn is not None and not self._looping:
            self._spawn(self._review_live(self.turn))

    async def _review_live(self, turn: Turn) -> None:
        self._looping = True
        try:
            await self._continue(turn)
        finally:
            self._looping = False

    async def review_parked(self, run_id: str) -> None:
        """Decide the calls of a parked run; once every call is decided, resume it here."""
        if self.turn_live or self._looping:
            self.pane.set_notice("Finish or stop the current turn first.")
            return
        self._looping = True
        try:
            await self._review_parked(run_id)
        finally:
            self._looping = False

    async def ask_passphrase(self, *, confirm: bool) -> str | None:
        """Ask for the passphrase parked runs are sealed under (no secure keyring here)."""
        from stockade.ui.assistant.passphrase_dialog import PassphraseDialog

        dialog = PassphraseDialog(self.window, confirm=confirm)
        self.passphraseOpened.emit(dialog)
        return await dialog.ask()

    async def _review_parked(self, run_id: str) -> None:
        try:
            try:
                parked = await self.service.open_parked(run_id)
            except PassphraseRequired:  # sealed under a passphrase; once it opens, the key
                passphrase = await self.ask_passphrase(confirm=False)  # is kept for the run
                if passphrase is None or self._closed:
                    return
                parked = await self.service.open_parked(run_id, passphrase=passphrase)
        except REFUSALS as exc:  # store, keyring, tampered seal, unusable snapshot
            if not self._closed:
                self.pane.set_error(f"This waiting turn cannot be opened: {failure_text(exc)}")
            return
        if self._closed:
            return
        record = next((r for r in self.parked if r.run_id == run_id), None)
        decided = {p.call_id for p in (record.pending if record else ())
                   if p.decision is not None}
        undecided = [c for c in parked.pending() if c.id not in decided]
        if undecided:
            try:
                declined = await self.service.declined(parked.document_path)
            except REFUSALS:
                declined = ()
            backend = ParkedReview(undecided, parked.document, declined)
            views = await backend.previews(frozenset())
            if self._closed:
                return
            dialog = ReviewQueue(views, self.window, backend=backend,
                                 title="Decide the waiting changes",
                                 intro="This turn was saved while waiting for you. Approve or "
                                       "deny each change; once all are decided it continues.")
            dialog.later_button.setText("Keep waiting")
            self.dialog = dialog
            self.approvalOpened.emit(dialog)
            try:
                outcome = await dialog.ask()
            finally:
                self.dialog = None
                dialog.deleteLater()
            if self._closed:
                return
            try:
                for step in outcome.steps:
                    for call_id in step.call_ids:
                        approve = step.kind != "deny"
                        await self.service.decide(run_id, call_id, approve=approve,
                                                  actor=self.actor,
                                                  reason=None if approve else step.reason)
            except _DECISION_FAILURES as exc:
                if not self._closed:
                    self.pane.set_error(f"The decision could not be recorded: "
                                        f"{failure_text(exc)}")
                    await self.refresh_parked()
                return
            if self._closed:
                return
            if outcome.end is not ReviewEnd.DECIDED:
                await self.refresh_parked()
                return
        await self.resume_parked(run_id)

    async def resume_parked(self, run_id: str) -> None:
        """Claim the decided run and continue it in this window's document."""
        history = self.window.open_document.history
        if history is None:
            self.pane.set_error(NO_DOCUMENT_TEXT)
            return
        install_asyncgen_hooks()
        self._conversation = ()
        self._seen_document = history.document
        view = self.pane.begin_turn("Continuing the turn you decided on…")
        self._view = view
        self.pane.set_busy(True)
        try:
            turn = await self.service.resume(
                run_id, settings=self.settings, document_session=history,
                on_state=lambda state: self._on_runner_state(state, 0))
        except REFUSALS as exc:  # undecided, changed document, tampered seal, the claim lost
            log.info("resume refused: %s", type(exc).__name__)
            if self._closed:
                return
            view.set_outcome(None)
            self.pane.set_busy(False)
            self.pane.set_error(f"The waiting turn cannot continue: {failure_text(exc)}")
            await self.refresh_parked()
            return
        if self._closed or history is not self.window.open_document.history:
            return
        self.turn = turn
        self._sync_document()  # the turn's work before the pause is back in the document
        await self.refresh_parked()
        await self._continue(turn)

    # -- dialogs ---------------------------------------------------------------------------

    async def open_settings(self) -> None:
        from stockade.ui.assistant.settings_dialog import SettingsDialog

        dialog = SettingsDialog(self, self.window)
        await dialog.ask()

    async def open_audit_viewer(self) -> None:
        from stockade.ui.assistant.audit_viewer import AuditViewer

        viewer = AuditViewer(self.service, self.window, self._spawn, self.window.prompts)
        await viewer.ask()


def park_unavailable_reason(exc: BaseException) -> str:
    """Why a turn cannot be kept for later, in one sentence ending with a full stop."""
    text = failure_text(exc).rstrip()
    return text if text.endswith(".") else text + "."


def park_unavailable_text(exc: BaseException) -> str:
    return PARK_UNAVAILABLE_TEXT.format(reason=park_unavailable_reason(exc))


def stopped_text(state: TurnState) -> str:
    """What a stopped turn kept: its committed changes, and what did not run."""
    kept = [c for c in state.calls if c.status is CallStatus.SUCCEEDED
            and c.effect is ToolEffect.MUTATE]
    not_run = sum(1 for c in state.calls if c.status is CallStatus.NOT_RUN)
    parts = ["Stopped."]
    if kept:
        parts.append(f"The {len(kept)} change{'' if len(kept) == 1 else 's'} already made "
                     f"{'is' if len(kept) == 1 else 'are'} kept; Undo turn reverts "
                     f"{'it' if len(kept) == 1 else 'them'}.")
    else:
        parts.append("Nothing in the document was changed.")
    if not_run:
        parts.append(f"{not_run} call{'' if not_run == 1 else 's'} did not run.")
    parts.append("What the assistant wrote so far is kept.")
    return " ".join(parts)


_PHASE_TEXT = {
    TurnPhase.REQUESTING: "Asking the model…",
    TurnPhase.STREAMING: "The model is answering…",
    TurnPhase.AWAITING_APPROVAL: "Waiting for you to decide.",
    TurnPhase.EXECUTING: "Running the approved tools…",
}
"""What the turn is doing, shown under the answer while it is live."""

