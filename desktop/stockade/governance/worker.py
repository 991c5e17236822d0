"""One worker thread that owns a `Governance`: every database and keyring call runs there.

SQLite connections belong to the thread that opened them, and a write may wait up to the busy
timeout for another process (a `stockade runs resume` in a terminal): neither may ever happen
on the app's UI thread. The app and the command line both reach governance only through here.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from stockade.governance.services import Governance, open_governance, store_database_url
from stockade.store import StoreError
from stockade.store.database import database_path

T = TypeVar("T")


class GovernanceWorker:
    """A `Governance` confined to one thread; `await call(fn)` runs `fn(gov)` there.

    The database is opened on first use, on the worker (creating or migrating it writes files).
    """

    def __init__(self, opener: Callable[[], Governance] | None = None) -> None:
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="stockade-gov")
        self._opener = opener or (lambda: open_governance(recover=False))
        self._gov: Governance | None = None
        self._closed = False

    @property
    def closed(self) -> bool:
        return self._closed

    def _with_gov(self, fn: Callable[[Governance], T]) -> T:
        if self._gov is None:
            self._gov = self._opener()
        return fn(self._gov)

    def _check_open(self) -> None:
        if self._closed:
            raise StoreError("the assistant is closed")

    async def call(self, fn: Callable[[Governance], T]) -> T:
        self._check_open()
        return await asyncio.get_running_loop().run_in_executor(self._executor, self._with_gov, fn)

    def call_blocking(self, fn: Callable[[Governance], T]) -> T:
        """`fn(gov)` on the worker, waiting here (closing the app, where nothing else runs)."""
        self._check_open()
        return self._executor.submit(self._with_gov, fn).result()

    async def read_if_present(self, fn: Callable[[Governance], T]) -> T | None:
        """`fn(gov)` when the store exists, else None: looking never creates the SQLite file
        (a team database always exists; it is set up by its administrator)."""
        self._check_open()

        def read() -> T | None:
            present = self._gov is not None or database_path().exists() or \
                store_database_url() is not None
            return self._with_gov(fn) if present else None

        return await asyncio.get_running_loop().run_in_executor(self._executor, read)

    async def run(self, fn: Callable[[], T]) -> T:
        """Plain blocking work (files, settings, the keyring) off the caller's thread."""
        self._check_open()
        return await asyncio.get_running_loop().run_in_executor(self._executor, fn)

    def close(self) -> None:
        """Close the database on its own thread and stop the worker (waits for queued work)."""
        if self._closed:
            return
        self._closed = True

        def shut() -> None:
            if self._gov is not None:
                self._gov.close()
                self._gov = None

        self._executor.submit(shut)
        self._executor.shutdown(wait=True)
