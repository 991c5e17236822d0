"""GUI test fixtures: one qasync event loop for the whole session, and document helpers."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
import qasync
from PySide6.QtWidgets import QApplication, QWidget
from pytestqt.qtbot import QtBot

from stockade.thf.model import ThreatModel
from stockade.ui.app import create_main_window
from stockade.ui.common.prompts import Prompts, UnappliedChoice, UnsavedChoice
from tests.helpers.fake_provider import FakeProviderServer

T = TypeVar("T")


@pytest.fixture(scope="session", autouse=True)
def qasync_loop(qapp: QApplication) -> Iterator[qasync.QEventLoop]:
    """A qasync loop driven by the Qt event processing pytest-qt already does.

    `already_running=True` because pytest-qt, not asyncio, pumps the Qt events: tasks scheduled
    by `asyncSlot`s advance whenever a test waits with `qtbot.waitUntil`.
    """
    loop = qasync.QEventLoop(qapp, already_running=True)
    # An explicit executor so its worker threads can be joined before Qt tears down.
    executor = qasync.QThreadExecutor(2)
    loop.set_default_executor(executor)
    asyncio.set_event_loop(loop)
    yield loop
    executor.shutdown(wait=True)
    asyncio.set_event_loop(None)


class ScriptedPrompts(Prompts):
    """Answers the window's questions from queues and records what it told the user."""

    def __init__(self, parent: QWidget) -> None:
        super().__init__(parent)
        self.errors: list[tuple[str, str]] = []
        self.infos: list[tuple[str, str]] = []
        self.open_paths: list[str | None] = []
        self.import_paths: list[str | None] = []
        self.save_paths: list[str | None] = []
        self.unsaved_answers: list[UnsavedChoice] = []
        self.unsaved_questions: list[str] = []
        self.cascade_answers: list[bool] = []
        self.cascade_questions: list[tuple[str, list[str]]] = []
        self.unapplied_answers: list[UnappliedChoice] = []
        self.unapplied_questions: list[str] = []

    async def choose_open_path(self, directory: str = "") -> str | None:
        return self.open_paths.pop(0) if self.open_paths else None

    async def choose_import_path(self, directory: str = "") -> str | None:
        return self.import_paths.pop(0) if self.import_paths else None

    async def choose_save_path(self, suggested: str, name_filter: str = "", title: str = "") -> str | None:
        return self.save_paths.pop(0) if self.save_paths else None

    async def ask_unsaved_changes(self, name: str) -> UnsavedChoice:
        self.unsaved_questions.append(name)
        return self.unsaved_answers.pop(0) if self.unsaved_answers else UnsavedChoice.CANCEL

    async def confirm_cascade(self, question: str, removals: list[str]) -> bool:
        self.cascade_questions.append((question, removals))
        return self.cascade_answers.pop(0) if self.cascade_answers else False

    async def ask_unapplied_edits(self, name: str) -> UnappliedChoice:
        self.unapplied_questions.append(name)
        return self.unapplied_answers.pop(0) if self.unapplied_answers else UnappliedChoice.CANCEL

    def show_error(self, title: str, text: str) -> None:
        self.errors.append((title, text))

    def show_info(self, title: str, text: str) -> None:
        self.infos.append((title, text))


class WindowDriver:
    """A shown MainWindow with scripted prompts, and a way to await its coroutines."""

    def __init__(self, qtbot: QtBot) -> None:
        self.qtbot = qtbot
        self.window = create_main_window(probe_keyring=False)
        self.prompts = ScriptedPrompts(self.window)
        self.window.prompts = self.prompts
        qtbot.addWidget(self.window)
        self.window.show()
        qtbot.waitExposed(self.window)

    def run(self, coro: Coroutine[Any, Any, T], timeout_ms: int = 10_000) -> T:
        task = self.window.spawn(coro)
        self.qtbot.waitUntil(task.done, timeout=timeout_ms)
        return task.result()

    def open(self, path: Path) -> bool:
        return self.run(self.window.open_file(path))

    @property
    def document(self) -> ThreatModel:
        document = self.window.open_document.document
        assert document is not None
        return document


@pytest.fixture
def driver(qtbot: QtBot) -> Iterator[WindowDriver]:
    drv = WindowDriver(qtbot)
    yield drv
    # Nothing may be asked on the way out: the test is over.
    drv.window._close_approved = True
    drv.window.close()


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeProviderServer]:
    """The fake provider server, with the Anthropic SDK pointed at it and a key stored."""
    from tests.gui.chat_helpers import use_fake_server  # it imports this module's driver

    with FakeProviderServer() as fake:
        use_fake_server(monkeypatch, fake)
        yield fake
