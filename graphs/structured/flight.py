"""One extraction per (document, schema, model) at a time, however many questions ask for it.

Questions with the same schema started together (``answer_many(..., concurrency=8)``, the
runner) all miss the record cache in their ``map`` step; without this, each would extract
every document itself.

* **In one process** (threads and asyncio tasks alike) the first ``extract`` task to reach
  a document *leads*: it extracts; the others wait for its outcome and reuse its records.
  A leader that ends without complete records (a window still malformed after the retries,
  an error, a cancellation) hands nothing over: each waiter tries again, one of them
  leading, so a failure is retried or raised in every question, never passed on as
  "no records".
* **Across processes** (with the record cache on) a leader also holds a lock on the
  document in the cache folder: a byte-range lock (``fcntl.lockf``) at an offset taken from
  the document fingerprint in one ``.flights.lock`` file per (schema, model) folder, so a
  document costs no extra file. A leader that finds the range held waits for it, polling
  (record locks belong to processes, and the kernel's deadlock check would misread two
  multi-threaded processes waiting on each other), then reads what the holder cached.
  Record locks are released by the kernel when their process dies, however it dies.
"""

from __future__ import annotations

import asyncio
import fcntl
import os
import threading
import time
from collections.abc import Awaitable, Callable, Hashable
from concurrent.futures import Future
from pathlib import Path
from typing import Any

from longctx.graphs.plugin.api import blocking, run_blocking

#: Seconds between two tries of a document lock held by another process (doubling up to the cap).
POLL_START_S, POLL_MAX_S = 0.005, 0.1


class Flights:
    """In-flight work per key: one leader; the others wait on its
    :class:`~concurrent.futures.Future`."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._live: dict[Hashable, Future[Any]] = {}

    def join(self, key: Hashable) -> tuple[bool, Future[Any]]:
        """``(True, future)`` when the caller leads the work of ``key`` (it must :meth:`land` it),
        else ``(False, future)`` of the leader's outcome."""
        with self._lock:
            fut = self._live.get(key)
            if fut is None:
                fut = self._live[key] = Future[Any]()
                return True, fut
            return False, fut

    def land(self, key: Hashable, fut: Future[Any], value: Any) -> None:
        """End the flight of ``key``: ``value`` is the leader's usable result, ``None`` for none."""
        with self._lock:
            if self._live.get(key) is fut:
                del self._live[key]
        if not fut.done():
            fut.set_result(value)

    def __len__(self) -> int:
        return len(self._live)


#: The extraction flights of this process.
FLIGHTS = Flights()


async def await_flight(fut: Future[Any]) -> Any:
    """The leader's outcome from a coroutine; cancelling the waiter does not cancel the flight."""
    return await asyncio.shield(asyncio.wrap_future(fut))


# -- across processes ----------------------------------------------------------------------
_FILES: dict[str, int] = {}
_FILES_LOCK = threading.Lock()


def _lock_fd(folder: Path) -> int:
    """The process's one descriptor of ``folder/.flights.lock``, kept open: closing any
    descriptor of a file drops every record lock the process holds on it."""
    path = str((folder / ".flights.lock").absolute())
    with _FILES_LOCK:
        fd = _FILES.get(path)
        if fd is None:
            folder.mkdir(parents=True, exist_ok=True)
            fd = _FILES[path] = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        return fd


def _offset(fingerprint: str) -> int:
    return int(fingerprint[:15], 16)  # 60 bits: distinct documents never share a byte in practice


def _try_lock(fd: int, offset: int) -> bool:
    try:
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, offset)
        return True
    except OSError:
        return False


def _unlock(fd: int, offset: int) -> None:
    fcntl.lockf(fd, fcntl.LOCK_UN, 1, offset)


class DocumentLock:
    """The cross-process lock of a document, held by ``with`` (waits with ``time.sleep``) or
    ``async with`` (waits with ``asyncio.sleep``); a no-op when ``folder`` is ``None``.
    Entering gives whether another process held it first (its records may now be in the cache)."""

    def __init__(self, folder: Path | None, fingerprint: str):
        self._folder, self._fingerprint = folder, fingerprint
        self._held: tuple[int, int] | None = None

    async def _acquire(self, pause: Callable[[float], Awaitable[Any]]) -> bool:
        """Poll the byte-range lock until it is held, pausing with a doubling delay; whether it was
        busy."""
        if self._folder is None:
            return False
        fd, offset = _lock_fd(self._folder), _offset(self._fingerprint)
        waited, delay = False, POLL_START_S
        while not _try_lock(fd, offset):
            waited = True
            await pause(delay)
            delay = min(delay * 2, POLL_MAX_S)
        self._held = (fd, offset)
        return waited

    def _release(self) -> None:
        if self._held is not None:
            _unlock(*self._held)
            self._held = None

    def __enter__(self) -> bool:
        return run_blocking(self._acquire(blocking(time.sleep)))

    def __exit__(self, *exc_info: object) -> None:
        self._release()

    async def __aenter__(self) -> bool:
        return await self._acquire(asyncio.sleep)

    async def __aexit__(self, *exc_info: object) -> None:
        self._release()


def document_lock(folder: Path | None, fingerprint: str) -> DocumentLock:
    """Hold the cross-process lock of a document (``with`` in a thread, ``async with`` in a
    coroutine; no-op when ``folder`` is ``None``); entering yields whether another process held it
    first."""
    return DocumentLock(folder, fingerprint)


#: The name the coroutines use: the same lock, entered with ``async with``.
adocument_lock = document_lock


__all__ = ["FLIGHTS", "DocumentLock", "Flights", "adocument_lock", "await_flight", "document_lock"]
