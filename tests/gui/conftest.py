"""GUI test fixtures: one qasync event loop for the whole session, and document helpers."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
import qasync
from PySide6.QtWidgets import QApplication


@pytest.fixture(scope="session", autouse=True)
def qasync_loop(qapp: QApplication) -> Iterator[qasync.QEventLoop]:
    """A qasync loop driven by the Qt event processing pytest-qt already does.

    `already_running=True` because pytest-qt, not asyncio, pumps the Qt events: tasks scheduled
    by `asyncSlot`s advance whenever a test waits with `qtbot.waitUntil`.
    """
    loop = qasync.QEventLoop(qapp, already_running=True)
    asyncio.set_event_loop(loop)
    yield loop
    asyncio.set_event_loop(None)
