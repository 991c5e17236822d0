"""The bridge between the window and `AssistantSession`: runs governed turns on the qasync loop."""

from __future__ import annotations

import asyncio
import logging
import sys
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QObject, Qt, QTimer, Signal
from PySide6.QtGui import QAction

from stockade.governance.pricebook import PriceBookError
from stockade.governance.session import (
    ApprovePolicy,
    AssistantSession,
    Governance,
    decide_parked,
    open_governance,
    parked_runs,
)
from stockade.loop.history import DocumentSession
from stockade.loop.runner import document_digest
from stockade.loop.serialize import turn_from_json
from stockade.loop.state import TurnOutcome, TurnPhase, TurnState
from stockade.loop.transaction import UndoAvailability
from stockade.protocol.messages import Message, flatten_text
from stockade.settings import Settings, read_settings, save_settings
from stockade.store import StoreError
from stockade.thf.model import ThreatModel
from stockade.thf.reader import read_file
from stockade.ui.assistant.approval_dialog import (
    ApprovalDialog,
    ApprovalEnd,
    ApprovalOutcome,
    ApprovalStep,
    pending_views,
)
from stockade.ui.assistant.chat_pane import ChatPane, ModelChoice, ParkedRunItem, TurnView
from stockade.ui.assistant.governance_worker import GovernanceWorker
from stockade.ui.assistant.screenshot_turn import (
    SCREENSHOT_PROMPT,
    ScreenshotTurn,
    embed_for_screenshot,
    run_screenshot_turn,
)

if TYPE_CHECKING:
    from stockade.ui.main_window import MainWindow

log = logging.getLogger(__name__)

RENDER_INTERVAL_MS = 40
"""Streamed text is re-rendered at most this often, so 500 deltas/s never starve the UI."""
PICKER_PROVIDERS = ("anthropic", "openai", "local", "offline")
"""Providers offered in the chat pane (replay needs a recorded file: tests and demos only)."""

STOPPED_TEXT = "Stopped. What the assistant wrote so far is kept."
PARKED_TEXT = ("Waiting for your decision. This turn is saved; reopen the document any time "
               "to approve or deny, or use `stockade runs` from a terminal.")
NO_DOCUMENT_TEXT = "Open or create a threat model first."
UNSAVED_PARK_TEXT = ("Save the document first: a turn can only wait for later on a document "
                     "that is saved in a file.")
FAILED_TEXT = "The assistant could not finish this turn."


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

    return [ModelChoice(m.provider, m.id, m.label, m.configurable)
            for m in load_models() if m.provider in PICKER_PROVIDERS]


def turn_text(state: TurnState, base_count: int) -> str:
    """Every piece of assistant text of this turn so far (the draft included)."""
    parts = [flatten_text(m) for m in state.messages[base_count:] if m.role == "assistant"]
    return "\n\n".join(p for p in parts if p)


class AssistantController(QObject):
    """Runs assistant turns for one window.

    It owns the chat pane (docked in the main window), opens the approval dialog whenever a turn
    waits for decisions, parks a waiting turn on "Decide later" or when the window closes, lists
    and resumes parked runs of the open document, and keeps the window's panes in step with what
    the turn commits (through the shared undo history).

    Threads: the session's own hooks write to SQLite from the event-loop thread (that is the
    governance design, one short transaction per step). Everything else this controller reads or
    writes in the database — parked runs, decisions, resume checks, the audit viewer — runs on the
    `GovernanceWorker` thread with its own `Governance`, because SQLite connections are confined
    to the thread that opened them. File reads and settings writes go to that worker too.
    """

    approvalOpened = Signal(object)
    """An `ApprovalDialog` was opened (tests and the screenshot drive it)."""
    turnSettled = Signal(str)
    parkedRunsChanged = Signal(int)
    turnParked = Signal(str)

    def __init__(self, window: MainWindow) -> None:
        super().__init__(window)
        self.setObjectName("assistantController")
        self.window = window
        window.attach_assistant(self)
        self.pane = ChatPane(window)
        self.dock = window.add_side_dock(self.pane, "Assistant", "chatDock")
        self.worker = GovernanceWorker()
        self.settings = Settings()
        self.session: AssistantSession | None = None
        self.dialog: ApprovalDialog | None = None
        self.parked: list[dict[str, Any]] = []
        self._gov: Governance | None = None
        self._registry: Any = None
        self._loading_tools: asyncio.Future[Any] | None = None
        self._conversation: tuple[Message, ...] = ()
        self._base_count = 0
        self._view: TurnView | None = None
        self._latest: TurnState | None = None
        self._seen_document: ThreatModel | None = None
        self._looping = False
        self._closed = False
        self.ready = False
        self._chat_shown = False
        """Settings and the keyring state have been loaded (tests wait for this)."""
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
        self._build_actions()
        self.pane.set_choices(model_choices(), self.settings.provider,
                              self.settings.model_for())
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

    def show_chat(self) -> None:
        self._chat_shown = True
        self.dock.show()
        self.dock.raise_()
        self.window.resizeDocks([self.dock], [460], Qt.Orientation.Horizontal)
        self.pane.prompt_edit.setFocus()

    def start_screenshot_turn(self) -> None:
        """`--screenshot … --tab chat`: an offline review turn, stopped at its approval dialog."""
        history = self.window.open_document.history
        if not self._chat_shown or history is None or self.turn_live:
            return
        self.pane.set_choices(model_choices(), "offline", "stride-rules")
        result = run_screenshot_turn(
            history, self.settings, self._document_path() or "unsaved",
            lambda: self.make_provider("offline", "stride-rules", None, history))
        if not isinstance(result, ScreenshotTurn):
            log.info("the screenshot turn did not run: %r", result)
            return
        self._base_count = 0
        self._view = self.pane.begin_turn(SCREENSHOT_PROMPT)
        self._render(result.state)
        if result.state.phase is TurnPhase.AWAITING_APPROVAL and result.views:
            self.pane.set_pending(len(result.views))
            dialog = ApprovalDialog(result.views, self.window)
            embed_for_screenshot(dialog, self.window)
            dialog.show()
            self.dialog = dialog

    async def _load_settings(self) -> None:
        try:
            loaded = await self.worker.run(read_settings)
        except StoreError:
            return
        if self._closed:
            return
        self.settings = loaded.settings
        if loaded.problem:
            self.pane.set_notice(loaded.problem)
        if not self.pane.busy:
            self.pane.set_choices(model_choices(), self.settings.provider,
                                  self.settings.model_for())
        await self.refresh_keyring_notice()
        self.ready = True

    async def refresh_keyring_notice(self) -> None:
        from stockade.ui.main_window import keyring_status

        try:
            secure, message = await self.worker.run(keyring_status)
        except Exception:  # an unusable keyring is shown as insecure, never as a crash
            secure, message = False, "The system keyring could not be checked."
        if not self._closed:
            self.pane.set_keyring_notice(None if secure else message)

    async def save_settings(self, settings: Settings) -> None:
        self.settings = settings
        current = self._with_recent_files(settings)
        await self.worker.run(lambda: save_settings(current))

    def _with_recent_files(self, settings: Settings) -> Settings:
        # Open Recent writes the same file as files are opened; the settings loaded at start
        # would otherwise put back the list as it was then.
        return settings.model_copy(update={"recent_files": self.window.recent_files.paths})

    def apply_settings(self, settings: Settings) -> None:
        """Use saved settings from now on (the next turn picks them up)."""
        self.settings = settings
        if not self.pane.busy:
            self.pane.set_choices(model_choices(), settings.provider, settings.model_for())

    async def _tools(self) -> Any:
        """The tool registry every turn of this window uses (built off the UI thread, once).

        The worker also opens the database first, so creating or migrating it (file writes)
        happens there and the event-loop thread's own connection only has to attach.
        """
        if self._registry is None:
            if self._loading_tools is None:
                self._loading_tools = asyncio.ensure_future(self._load_tools())
            try:
                self._registry = await asyncio.shield(self._loading_tools)
            except Exception:
                self._loading_tools = None  # the next turn tries again
                raise
        return self._registry

    async def _load_tools(self) -> Any:
        registry = await self.worker.run(_load_turn_tools)
        if self._gov is None:
            await self.worker.call(lambda _gov: None)
        return registry

    def _on_prompt_edit_textChanged(self) -> None:
        # Load the SDKs while the user types: their import briefly competes with the UI
        # thread for the interpreter, better now than while an answer streams.
        if self._registry is None and self._loading_tools is None and not self._closed:
            self._loading_tools = asyncio.ensure_future(self._load_tools())
            self._loading_tools.add_done_callback(_quiet)

    def _main_gov(self) -> Governance:
        """The governance the session hooks use on the event-loop thread (opened on demand)."""
        if self._gov is None:
            self._gov = open_governance(recover=False)
        return self._gov

    @property
    def actor(self) -> str:
        name = self.settings.author_name.strip()
        return f"user:{name}" if name else "user"

    # -- starting a turn -------------------------------------------------------------------

    def _on_pane_promptSubmitted(self, prompt: str) -> None:
        self._spawn(self.send(prompt))

    def _on_pane_modelChosen(self, provider: str, model: str) -> None:
        if provider not in PICKER_PROVIDERS:
            return
        models = dict(self.settings.models)
        if model:
            models[provider] = model
        updated = self.settings.model_copy(update={"provider": provider, "models": models})
        if updated != self.settings:
            self.settings = updated
            self._save_timer.start()  # typing a local model name saves once, not per key

    def _on_save_timer_timeout(self) -> None:
        if not self._closed:
            self._spawn(self.save_settings(self.settings))

    def _document_path(self) -> str | None:
        path = self.window.open_document.path
        return str(path.resolve()) if path is not None else None

    def make_provider(self, provider_name: str, model: str, base_url: str | None,
                      history: DocumentSession) -> Any:
        """The provider for a turn (tests replace this to script answers)."""
        from stockade.providers.factory import create_provider

        return create_provider(provider_name, model=model, base_url=base_url,
                               document_source=lambda: history.document)

    @property
    def turn_live(self) -> bool:
        session = self.session
        return session is not None and not session.parked and \
            session.state.phase is not TurnPhase.SETTLED and \
            session.state.phase is not TurnPhase.IDLE

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
        self.pane.set_busy(True)
        registry = await self._tools()
        history = self.window.open_document.history
        if history is None or self._closed:
            self.pane.set_busy(False)
            return
        provider_name, model = self.pane.selection()
        settings = self.settings
        base_url = settings.local_base_url if provider_name == "local" else None
        self.pane.set_error(None)
        try:
            provider = self.make_provider(provider_name, model, base_url, history)
            gov = self._main_gov()
            session = AssistantSession.create(
                gov, document_session=history,
                document_path=self._document_path() or f"unsaved:{history.document.metadata.title}",
                provider=provider, provider_name=provider_name, model=model,
                limits=settings.turn_limits(), budgets=settings.credits.budgets(),
                guard_policy=settings.guard_policy, approve=ApprovePolicy.MANUAL,
                registry=registry, on_state=self._on_runner_state, base_url=base_url)
        except (ValueError, PriceBookError, StoreError) as exc:
            self.pane.set_busy(False)
            self.pane.set_error(str(exc))
            return
        self.session = session
        self._base_count = len(self._conversation)
        self._seen_document = history.document
        self._view = self.pane.begin_turn(prompt)
        self.pane.set_undo_enabled(False)
        self.pane.set_usage("")
        try:
            state = await session.start(prompt, self._conversation)
        except (StoreError, OSError) as exc:
            self._fail_outside_turn(str(exc))
            return
        await self._continue(session, state)

    def _fail_outside_turn(self, message: str) -> None:
        self.pane.set_error(f"The turn could not start: {message}")
        self.pane.set_busy(False)
        self.session = None

    # -- rendering -------------------------------------------------------------------------

    def _on_runner_state(self, state: TurnState) -> None:
        # Called on every reducer transition (every streamed delta): keep it O(1).
        self._latest = state
        if not self._render_timer.isActive():
            self._render_timer.start()

    def _on_render_timer_timeout(self) -> None:
        if self._latest is not None and not self._closed:
            self._render(self._latest)

    def _render(self, state: TurnState) -> None:
        view = self._view
        if view is None or self._closed:
            return
        view.answer.set_markdown(turn_text(state, self._base_count))
        view.sync_calls(state.calls)
        self._sync_document()

    def _sync_document(self) -> None:
        """Tell the panes when the turn committed (the history is shared, the signal is not)."""
        history = self.window.open_document.history
        if history is not None and history.document is not self._seen_document:
            self._seen_document = history.document
            self.window.open_document.notify_committed()

    # -- the turn loop ---------------------------------------------------------------------

    async def _continue(self, session: AssistantSession, state: TurnState) -> None:
        """From a rest point: ask for decisions until the turn settles, parks or is left waiting."""
        while not self._closed and session is self.session:
            self._render(state)
            if state.phase is TurnPhase.AWAITING_APPROVAL:
                self.pane.set_pending(None)
                outcome = await self._ask(session, state)
                if session is not self.session or self._closed:
                    return
                state = session.state
                if state.phase is TurnPhase.SETTLED:  # stopped while the dialog was open
                    state = await session.wait_cancelled()
                    continue
                state = await self._apply(session, outcome.steps)
                if state.phase is TurnPhase.AWAITING_APPROVAL:
                    if outcome.end is ApprovalEnd.DEFERRED:
                        await self.park_live()
                        return
                    if outcome.end is ApprovalEnd.DISMISSED:
                        self.pane.set_pending(len(state.pending_calls()))
                        return
                continue
            if state.phase is TurnPhase.SETTLED:
                self._finish(session, state)
            return

    async def _ask(self, session: AssistantSession, state: TurnState) -> ApprovalOutcome:
        history = session.document_session
        views = await pending_views(state.pending_calls(), history.document)
        dialog = ApprovalDialog(views, self.window)
        self.dialog = dialog
        self.approvalOpened.emit(dialog)
        try:
            return await dialog.ask()
        finally:
            self.dialog = None
            dialog.deleteLater()

    async def _apply(self, session: AssistantSession, steps: tuple[ApprovalStep, ...]) -> TurnState:
        state = session.state
        for step in steps:
            if state.phase is not TurnPhase.AWAITING_APPROVAL:
                break
            if step.kind == "approve_batch":
                state = await session.approve_batch(list(step.call_ids), self.actor)
            elif step.kind == "approve":
                state = await session.approve(step.call_ids[0], self.actor)
            else:
                state = await session.deny(step.call_ids[0], self.actor, "denied in the app")
            self._render(state)
        return state

    def _finish(self, session: AssistantSession, state: TurnState) -> None:
        self._render_timer.stop()
        view = self._view
        if view is not None:
            final = session.final_text
            text = turn_text(state, self._base_count)
            raw_final = ""
            for message in reversed(state.history[self._base_count:]):
                if message.role == "assistant" and flatten_text(message):
                    raw_final = flatten_text(message)
                    break
            if raw_final and final != raw_final and text.endswith(raw_final):
                text = text[: len(text) - len(raw_final)] + final  # the output guard redacted
            view.answer.set_markdown(text, exact=True)
            view.sync_calls(state.calls)
        self._sync_document()
        outcome = state.outcome
        if outcome is TurnOutcome.CANCELLED:
            self.pane.set_notice(STOPPED_TEXT)
        elif outcome is TurnOutcome.BOUNDED:
            self.pane.set_notice(state.notice)
        elif outcome is TurnOutcome.FAILED:
            error_text = state.error.message if state.error is not None else state.notice
            self.pane.set_error(error_text or FAILED_TEXT)
        if outcome is TurnOutcome.COMPLETED:
            self._conversation = state.history
        self.pane.set_pending(None)
        self.pane.set_busy(False)
        self._show_usage(session)
        self._refresh_undo()
        self.turnSettled.emit(session.run_id)

    def _show_usage(self, session: AssistantSession) -> None:
        try:
            summary = session.summary()
        except (StoreError, OSError) as exc:
            log.info("turn usage could not be read: %s", type(exc).__name__)
            return
        usage = summary.usage
        text = (f"Tokens: {usage['input_tokens']} in, {usage['output_tokens']} out · "
                f"Credits spent: {summary.credits_spent}")
        permit = session.hooks.last_permit
        if permit is not None:
            text += (f" (last request reserved {permit.reserved_credits}, "
                     f"estimated {permit.estimated_credits})")
        self.pane.set_usage(text)

    # -- stop, undo ------------------------------------------------------------------------

    def stop(self) -> None:
        """Cancel the live turn at once; what arrived stays on screen, no error is shown."""
        session = self.session
        if session is None or not self.turn_live:
            return
        session.cancel()
        if self.dialog is not None:
            self.dialog.dismiss()  # the loop sees the settled turn and finishes it
        elif not self._looping:
            self._spawn(self._finish_after_cancel(session))

    async def _finish_after_cancel(self, session: AssistantSession) -> None:
        state = await session.wait_cancelled()
        if session is self.session and not self._closed:
            self._finish(session, state)

    def _on_pane_undoTurnRequested(self) -> None:
        self._spawn(self.undo_turn())

    def turn_undoable(self) -> bool:
        session = self.session
        return (session is not None and not session.parked
                and session.state.phase is TurnPhase.SETTLED
                and session.runner.undo_availability() is UndoAvailability.UNDOABLE)

    async def undo_turn(self) -> bool:
        """Revert the last turn in one step (recorded in the audit trail first)."""
        session = self.session
        if session is None or not self.turn_undoable():
            return False
        undone = await session.undo()
        if self._closed:
            return undone
        if undone:
            if self._view is not None:
                self._view.sync_calls(session.state.calls, undone=True)
                self._view.set_outcome("These changes were undone.")
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
        session = self.session
        if session is None or session.state.phase is not TurnPhase.AWAITING_APPROVAL:
            return False
        path = self.window.open_document.path
        if path is None:
            self.pane.set_notice(UNSAVED_PARK_TEXT)
            self.pane.set_pending(len(session.state.pending_calls()))
            return False
        base = session.document_session.document
        if self.window.open_document.is_dirty:
            base = await self.worker.run(lambda: read_file(path))
        if self._closed or session is not self.session:
            return False  # closing parked it already
        try:
            session.park(base_document=base)
        except Exception as exc:  # keyring or database: the turn keeps waiting in memory
            log.warning("parking the turn failed: %s", type(exc).__name__)
            self.pane.set_error(f"The turn could not be saved for later ({type(exc).__name__}); "
                                "it is still waiting here.")
            self.pane.set_pending(len(session.state.pending_calls()))
            return False
        self._after_park(session)
        await self.refresh_parked()
        return True

    def _after_park(self, session: AssistantSession) -> None:
        if self._view is not None:
            self._view.set_outcome(PARKED_TEXT)
        self.pane.set_pending(None)
        self.pane.set_busy(False)
        self._conversation = ()
        self.session = None
        self.turnParked.emit(session.run_id)

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
        session = self.session
        if self.dialog is not None:
            self.dialog.dismiss()
        if session is not None and not session.parked:
            phase = session.state.phase
            path = self.window.open_document.path
            if phase is TurnPhase.AWAITING_APPROVAL and path is not None:
                try:
                    base = session.document_session.document
                    if self.window.open_document.is_dirty:
                        base = read_file(path)  # closing: a short synchronous read is fine
                    session.park(base_document=base)
                    self.turnParked.emit(session.run_id)
                except Exception:
                    log.warning("the waiting turn could not be parked on close", exc_info=True)
            elif phase is not TurnPhase.SETTLED and phase is not TurnPhase.IDLE:
                session.cancel()
        self.session = None
        self.worker.close()
        if self._gov is not None:
            self._gov.close()
            self._gov = None

    # -- parked runs of the open document ---------------------------------------------------

    def _on_document_documentReplaced(self) -> None:
        if self.turn_live and self.session is not None:
            session = self.session
            if session.state.phase is TurnPhase.AWAITING_APPROVAL and self.dialog is None:
                try:
                    session.park()
                    self.turnParked.emit(session.run_id)
                except Exception:
                    log.warning("the waiting turn could not be parked", exc_info=True)
            else:
                session.cancel()
        self.session = None
        self._view = None
        self._conversation = ()
        self.pane.set_pending(None)
        self.pane.set_busy(False)
        self.pane.set_undo_enabled(False)
        self._seen_document = self.window.open_document.document
        self._spawn(self.refresh_parked())

    def _on_document_documentChanged(self) -> None:
        self._seen_document = self.window.open_document.document
        self._refresh_undo()
        session = self.session
        if self._view is not None and session is not None and not session.parked and \
                session.state.phase is TurnPhase.SETTLED:
            # Edit > Redo can bring an undone turn back: show its calls as done again.
            self._view.sync_calls(session.state.calls, redone=self.turn_undoable())

    async def refresh_parked(self) -> list[dict[str, Any]]:
        """Re-read the parked runs of the open document and show them in the pane."""
        path = self._document_path()
        runs: list[dict[str, Any]] = []
        try:
            if path is not None and not self._closed:
                runs = await self.worker.read_if_present(lambda g: parked_runs(g, path)) or []
        except StoreError as exc:
            if not self._closed:
                self.pane.set_error(str(exc))
            return []
        if self._closed:
            return runs
        self.parked = runs
        items = [ParkedRunItem(r["run_id"], sum(1 for p in r["pending"] if p["decision"] is None),
                               len(r["pending"])) for r in runs]
        self.pane.set_parked_runs(items)
        self.parkedRunsChanged.emit(len(items))
        return runs

    def _on_pane_reviewRequested(self, run_id: str) -> None:
        if run_id:
            self._spawn(self.review_parked(run_id))
        elif self.session is not None and not self._looping:
            self._spawn(self._review_live(self.session))

    async def _review_live(self, session: AssistantSession) -> None:
        self._looping = True
        try:
            await self._continue(session, session.state)
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

    async def _review_parked(self, run_id: str) -> None:
        try:
            snapshot = await self.worker.call(lambda g: g.runs.open_snapshot(run_id))
            state = turn_from_json(snapshot["runner"]["turn"], await self._tools())
            document = ThreatModel.model_validate(snapshot["document"])
        except Exception as exc:  # store, keyring, tampered seal, unusable snapshot: all refusals
            if not self._closed:
                self.pane.set_error(f"This waiting turn cannot be opened: {_plain(exc)}")
            return
        if self._closed:
            return
        record = next((r for r in self.parked if r["run_id"] == run_id), None)
        decided = {p["call_id"] for p in (record or {}).get("pending", [])
                   if p["decision"] is not None}
        undecided = [c for c in state.pending_calls() if c.id not in decided]
        if undecided:
            views = await pending_views(undecided, document)
            if self._closed:
                return
            dialog = ApprovalDialog(views, self.window, title="Decide the waiting changes",
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
                        await self.worker.call(_decision(run_id, call_id, step.kind != "deny",
                                                         self.actor))
            except (StoreError, ValueError) as exc:
                if not self._closed:
                    self.pane.set_error(f"The decision could not be recorded: {_plain(exc)}")
                    await self.refresh_parked()
                return
            if self._closed:
                return
            if outcome.end is not ApprovalEnd.DECIDED:
                await self.refresh_parked()
                return
        await self.resume_parked(run_id, snapshot)

    async def resume_parked(self, run_id: str, snapshot: dict[str, Any]) -> None:
        """Claim the decided run and continue it in this window's document."""
        history = self.window.open_document.history
        if history is None:
            self.pane.set_error(NO_DOCUMENT_TEXT)
            return
        install_asyncgen_hooks()
        try:
            ticket = await self.worker.call(lambda g: AssistantSession.prepare_resume(g, run_id))
            registry = await self._tools()
        except Exception as exc:  # undecided calls, changed document, tampered seal, store
            if not self._closed:
                self.pane.set_error(f"The waiting turn cannot continue: {_plain(exc)}")
                await self.refresh_parked()
            return
        if self._closed or history is not self.window.open_document.history:
            return
        if not self._adopt_snapshot_document(history, snapshot):
            return
        provider_name = str(snapshot.get("provider_name", ""))
        model = str(snapshot.get("model", ""))
        self._base_count = int(snapshot.get("base_count", 0))
        self._conversation = ()
        self._seen_document = history.document
        self._view = self.pane.begin_turn("Continuing the turn you decided on…")
        self.pane.set_busy(True)
        try:
            provider = self.make_provider(provider_name, model, snapshot.get("base_url"), history)
            session = await AssistantSession.resume(
                self._main_gov(), ticket, provider=provider, document_session=history,
                registry=registry, on_state=self._on_runner_state,
                wallet=self.settings.credits.budgets())
        except Exception as exc:  # the claim lost, or the snapshot no longer matches its tools
            log.info("resume refused: %s", type(exc).__name__)
            if self._closed:
                return
            self.pane.set_busy(False)
            self.pane.set_error(f"The waiting turn cannot continue: {_plain(exc)}")
            await self.refresh_parked()
            return
        if self._closed:
            return
        self.session = session
        await self.refresh_parked()
        await self._continue(session, session.state)

    def _adopt_snapshot_document(self, history: DocumentSession,
                                 snapshot: dict[str, Any]) -> bool:
        """Make the open document the one the turn was working on (no work is lost)."""
        parked_doc = ThreatModel.model_validate(snapshot["document"])
        if document_digest(history.document) == document_digest(parked_doc):
            return True
        if self.window.open_document.is_dirty:
            self.pane.set_error("The open document has unsaved changes; save or discard them "
                                "before continuing the waiting turn.")
            return False
        # The turn had committed work before it parked that the file never got: restore it as
        # one undoable step, then continue on top of it.
        history.apply_edit(parked_doc, "Assistant changes before the pause")
        self._seen_document = None
        self._sync_document()
        return True

    # -- dialogs ---------------------------------------------------------------------------

    async def open_settings(self) -> None:
        from stockade.ui.assistant.settings_dialog import SettingsDialog

        dialog = SettingsDialog(self, self.window)
        await dialog.ask()

    async def open_audit_viewer(self) -> None:
        from stockade.ui.assistant.audit_viewer import AuditViewer

        viewer = AuditViewer(self.worker, self.window, self._spawn)
        await viewer.ask()


def _quiet(task: asyncio.Future[Any]) -> None:
    """Retrieve a background warm-up's outcome (the turn that needs it reports failures)."""
    if not task.cancelled():
        task.exception()


def _load_turn_tools() -> Any:
    """The tool registry, with the provider SDKs imported: a second or more of work (SDK
    imports, 16 JSON schemas) that must never run on the UI thread. Built once per window."""
    # The factory imports provider modules only when one is chosen; import the two SDK-backed
    # ones here so choosing Anthropic or OpenAI later never imports an SDK on the UI thread.
    import stockade.providers.anthropic
    import stockade.providers.factory
    import stockade.providers.openai
    import stockade.tools.prompt  # noqa: F401
    from stockade.tools.registry import default_registry

    registry = default_registry()
    registry.specs()
    return registry


def _decision(run_id: str, call_id: str, approve: bool,
              actor: str) -> Callable[[Governance], bool]:
    def decide(gov: Governance) -> bool:
        return decide_parked(gov, run_id, call_id, approve=approve, actor=actor,
                             reason=None if approve else "denied in the app")

    return decide


def _plain(exc: BaseException) -> str:
    """An exception as one authored line (our own errors carry readable text)."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return text or type(exc).__name__
