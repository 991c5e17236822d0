"""One worker thread that owns the window's `Governance`: SQLite and blocking files off the UI thread."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from stockade.governance.session import Governance, open_governance
from stockade.store import StoreError
from stockade.store.database import database_path

T = TypeVar("T")


class GovernanceWorker:
    """A `Governance` confined to one worker thread; `call(fn)` runs `fn(gov)` there.

    SQLite connections are confined to the thread that opened them, so every database read
    or write of the window's dialogs and parked-run handling goes through this one thread.
    """

    def __init__(self, opener: Callable[[], Governance] = open_governance) -> None:
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="stockade-gov")
        self._opener = opener
        self._gov: Governance | None = None
        self._closed = False

    def _run(self, fn: Callable[[Governance], T]) -> T:
        if self._gov is None:
            self._gov = self._opener()
        return fn(self._gov)

    async def call(self, fn: Callable[[Governance], T]) -> T:
        if self._closed:
            raise StoreError("the assistant is closed")
        return await asyncio.get_running_loop().run_in_executor(self._executor, self._run, fn)

    async def read_if_present(self, fn: Callable[[Governance], T]) -> T | None:
        """`fn(gov)` when the database file exists, else None: looking never creates it."""
        if self._closed:
            raise StoreError("the assistant is closed")

        def read() -> T | None:
            return self._run(fn) if database_path().exists() else None

        return await asyncio.get_running_loop().run_in_executor(self._executor, read)

    async def run(self, fn: Callable[[], T]) -> T:
        """Plain blocking work (files, settings) off the UI thread, no database."""
        if self._closed:
            raise StoreError("the assistant is closed")
        return await asyncio.get_running_loop().run_in_executor(self._executor, fn)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True

        def shut() -> None:
            if self._gov is not None:
                self._gov.close()

        self._executor.submit(shut)
        self._executor.shutdown(wait=True)
