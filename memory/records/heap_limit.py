"""SQLite's heap limits held only while model-written SQL runs, and given back after.

Why: SQLite's hard and soft heap limits (``sqlite3_hard_heap_limit64``,
``sqlite3_soft_heap_limit64``) hold for every connection of the SQLite library in the process:
MemAgent's checkpoints, the LLM cache, the memory trace, the synthetic generator's databases.
The ``PRAGMA hard_heap_limit`` that Python's ``sqlite3`` can reach only lowers the hard limit,
so a structured answer that set it once left every later SQLite allocation of the process under
256 MB (and the soft limit at half making SQLite shed cache) for good.

:func:`held_heap_limit` lowers both limits when the first guarded query of the process starts
(remembering the values before) and restores them when the last one in flight ends (thread-safe,
re-entrant: overlapping queries keep the lowest limit asked for until the last ends; a change
other code makes meanwhile is overwritten then). Raising a
limit back needs the C functions, which :mod:`ctypes` reaches in the SAME library instance as
``_sqlite3`` through the extension module's own file (``ctypes.CDLL(_sqlite3.__file__)``: its
symbol look-up searches the module, where a statically linked SQLite lives, then the libraries it
links, where a shared ``libsqlite3`` lives), else through the ``libsqlite3`` mapped into the
process (``/proc/self/maps``) or the library's usual name. A candidate is used only once a
probe agrees with SQLite's own pragmas on a Python connection (a different copy of SQLite, such
as a system library beside a statically linked module, answers differently).

Where none is reachable, the limits are lowered through the pragmas as before and only the soft
one is restored: the hard limit stays at the lowest value asked for until the process ends, as
a warning says once. Remaining exposure either way: a checkpoint or cache write in another thread
while a guarded query runs shares the lowered limits for that window (the query's run time,
bounded by its watchdog), and SQLite memory already used elsewhere in the process counts toward
the query's limit (the limits count the whole library's memory).
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import logging
import sqlite3
import sys
import threading
from collections.abc import Callable, Iterator

log = logging.getLogger(__name__)

_LOCK = threading.Lock()
_ACTIVE = 0
_SAVED: tuple[int, int] = (0, 0)
_RESOLVED = False
_HARD: Callable[[int], int] | None = None
_SOFT: Callable[[int], int] | None = None


def _pragma(name: str, value: int | None = None) -> int:
    """``PRAGMA <name>[ = value]`` on a private connection (the limits are process-wide); the value
    after."""
    conn = sqlite3.connect(":memory:")
    try:
        if value is not None:
            conn.execute(f"PRAGMA {name} = {int(value)}")
        return int(conn.execute(f"PRAGMA {name}").fetchone()[0])
    finally:
        conn.close()


def _candidates() -> Iterator[str]:
    """Files that may hold the SQLite instance ``_sqlite3`` uses, the likeliest first."""
    try:
        import _sqlite3

        yield str(_sqlite3.__file__)
    except (ImportError, AttributeError):  # a build without the file (built into the interpreter)
        pass
    if sys.platform.startswith("linux"):
        try:
            with open("/proc/self/maps") as maps:
                paths = {line.split()[-1] for line in maps if "libsqlite3" in line}
            yield from sorted(paths)
        except OSError:
            pass
    name = ctypes.util.find_library("sqlite3")
    if name:
        yield name
    if sys.platform == "win32":
        yield "sqlite3.dll"  # the DLL next to _sqlite3.pyd, loaded with it


def _functions(path: str) -> tuple[Callable[[int], int], Callable[[int], int]] | None:
    """The two limit functions of ``path`` if they are those of the ``sqlite3`` module's SQLite."""
    try:
        lib = ctypes.CDLL(path)
        hard, soft = lib.sqlite3_hard_heap_limit64, lib.sqlite3_soft_heap_limit64  # SQLite >= 3.31
    except (OSError, AttributeError):
        return None
    for fn in (hard, soft):
        fn.restype, fn.argtypes = ctypes.c_int64, [ctypes.c_int64]
    if (hard(-1), soft(-1)) != (_pragma("hard_heap_limit"), _pragma("soft_heap_limit")):
        return None
    before = soft(-1)
    limit = hard(-1)
    # one byte apart: harmless
    probe = 2**62 if before == 0 else before - 1 if limit and before >= limit else before + 1
    soft(probe)
    try:
        agrees = _pragma("soft_heap_limit") == probe
    finally:
        soft(before)
    return (hard, soft) if agrees else None


def _resolve() -> None:
    """Find the limit functions once (under ``_LOCK``); warn once where there are none."""
    global _RESOLVED, _HARD, _SOFT
    if _RESOLVED:
        return
    _RESOLVED = True
    for path in _candidates():
        found = _functions(path)
        if found:
            _HARD, _SOFT = found
            return
    log.warning(
        "SQLite's heap-limit functions are not reachable through ctypes here: the structured "
        "strategy's SQL lowers the process's hard heap limit with a pragma, which cannot raise "
        "it again, so every SQLite connection of this process keeps it"
    )


def restorable() -> bool:
    """Whether :func:`held_heap_limit` can give the hard limit back (the C functions were
    reached)."""
    with _LOCK:
        _resolve()
        return _HARD is not None


def heap_limits() -> tuple[int, int]:
    """The process's SQLite ``(hard, soft)`` heap limits in bytes (0: none), as its pragmas read
    them."""
    return _pragma("hard_heap_limit"), _pragma("soft_heap_limit")


def _set(hard: int, soft: int) -> None:
    """Set both limits, the hard one first (setting it lowers a larger soft limit, then the soft one
    is set)."""
    if _HARD is not None and _SOFT is not None:
        _HARD(hard)
        _SOFT(soft)
    else:
        if hard > 0:
            _pragma("hard_heap_limit", hard)  # lowers only
        _pragma("soft_heap_limit", soft)


def _lower(limit: int, current: int) -> int:
    """``limit``, or a lower limit already in force (0 is none)."""
    return limit if current <= 0 else min(limit, current)


@contextlib.contextmanager
def held_heap_limit(hard_bytes: int) -> Iterator[None]:
    """Hold SQLite's hard heap limit at most ``hard_bytes`` (the soft one at most half of it) while
    the block runs, in the whole process; the limits before the first block in flight come back
    when the last one ends. A lower limit already in force stays."""
    global _ACTIVE, _SAVED
    hard_bytes = int(hard_bytes)
    with _LOCK:
        _resolve()
        current = (
            (_HARD(-1), _SOFT(-1)) if _HARD is not None and _SOFT is not None else heap_limits()
        )
        if _ACTIVE == 0:
            _SAVED = current
        _ACTIVE += 1
        try:
            _set(_lower(hard_bytes, current[0]), _lower(hard_bytes // 2, current[1]))
        except BaseException:
            _leave()
            raise
    try:
        yield
    finally:
        with _LOCK:
            _leave()


def _leave() -> None:
    """One guarded block less (under ``_LOCK``); the last one gives the limits before back."""
    global _ACTIVE
    _ACTIVE -= 1
    if _ACTIVE == 0:
        _set(*_SAVED)


__all__ = ["heap_limits", "held_heap_limit", "restorable"]
