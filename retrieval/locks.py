"""Exclusive file locks shared by threads and processes (``fcntl.flock``), naming their holder.

One lock per path serves the index cache (one builder per index key), the experiment
runner (one run per result folder, race-free manifest updates) and MemAgent (one process
per run key). ``flock`` locks belong to an open file and are released by the kernel
when the holding process dies, however it dies, so a lock left by a killed process is
simply taken over by the next one: no stale-lock clean-up. Lock files are never deleted
(deleting one while another process waits on it would let two holders in).

Within one process a per-path re-entrant lock comes first: other threads wait on it (or
are refused) just as other processes are, and the holding thread may re-enter.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from longctx.retrieval.contract.errors import LongctxError


class LockHeld(LongctxError, RuntimeError):
    """The lock is held by someone else (``holder``: pid, host, start time, what, when known)."""

    def __init__(self, message: str, *, path: Path, holder: dict[str, Any] | None):
        super().__init__(message)
        self.path = path
        self.holder = holder or {}


class _Entry:
    def __init__(self) -> None:
        self.rlock = threading.RLock()
        self.depth = 0
        self.fd: int | None = None


_ENTRIES: dict[str, _Entry] = {}
_ENTRIES_LOCK = threading.Lock()


def _entry(path: Path) -> _Entry:
    with _ENTRIES_LOCK:
        return _ENTRIES.setdefault(str(path), _Entry())


def read_holder(path: str | os.PathLike[str]) -> dict[str, Any] | None:
    """What the lock file at ``path`` says about its (last) holder, or ``None``."""
    try:
        holder: dict[str, Any] | None = json.loads(
            Path(path).read_text(encoding="utf-8") or "null"
        )  # the JSON the holder wrote
        return holder
    except (OSError, ValueError):
        return None


def describe_holder(holder: dict[str, Any] | None) -> str:
    """``pid 123 on host, started 2025-01-01T10:00:00`` (or ``another process``)."""
    if not holder:
        return "another process"
    return f"pid {holder.get('pid')} on {holder.get('host')}, started {holder.get('started')}"


@contextlib.contextmanager
def exclusive_lock(
    path: str | os.PathLike[str], *, wait: bool = True, what: str = ""
) -> Iterator[Path]:
    """Hold the exclusive lock of ``path`` (created with its folder) for the ``with`` block.

    Args:
        path: The lock file.
        wait: Block until the lock is free; else raise :class:`LockHeld` naming the holder.
        what: A few words on what is locked, for messages and the holder record.
    """
    path = Path(path).absolute()
    entry = _entry(path)
    if not entry.rlock.acquire(blocking=wait):
        holder = read_holder(path)
        raise LockHeld(
            f"{what or path} is in use by {describe_holder(holder)} (lock {path})",
            path=path,
            holder=holder,
        )
    try:
        if entry.depth == 0:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
            except BlockingIOError:
                os.close(fd)
                holder = read_holder(path)
                raise LockHeld(
                    f"{what or path} is in use by {describe_holder(holder)} (lock {path})",
                    path=path,
                    holder=holder,
                ) from None
            except BaseException:
                os.close(fd)
                raise
            record = {
                "pid": os.getpid(),
                "host": socket.gethostname(),
                "started": time.strftime("%Y-%m-%dT%H:%M:%S"),
                "thread": threading.current_thread().name,
                "what": what,
            }
            os.ftruncate(fd, 0)
            os.pwrite(fd, json.dumps(record).encode(), 0)
            entry.fd = fd
        entry.depth += 1
    except BaseException:
        entry.rlock.release()
        raise
    try:
        yield path
    finally:
        entry.depth -= 1
        if entry.depth == 0 and entry.fd is not None:
            fd, entry.fd = entry.fd, None
            try:
                fcntl.flock(fd, fcntl.LOCK_UN)
            finally:
                os.close(fd)
        entry.rlock.release()
