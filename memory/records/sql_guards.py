"""Bounded versions of the SQLite functions one call of which can run for seconds.

SQLite checks an interrupt (and its progress handler) between instructions, never inside a
function: ``printf('%.*c', 2147483647, 'x')`` loops 2 billion times in one call (about 6 s
here, even with a 1 MB value limit, which makes it return NULL), and ``replace``, ``instr``,
two-argument ``trim``/``ltrim``/``rtrim`` and ``LIKE``/``GLOB`` (the ``like``/``glob``
functions) compare every position of a text with every byte of the other argument (a 1 MB
text and a 500 KB pattern: 2.5e11 byte comparisons; ``LIKE '%aaa...b'`` with a 1,000-byte
pattern over 1 MB: 3.7 s).
The query's watchdog cannot cut such a call.

:func:`install` replaces these functions on the model's connection by Python functions that
first check the call (``printf``/``format`` widths and precisions at most
:data:`MAX_PRINTF_WIDTH`; the product of the arguments' lengths at most :data:`MAX_CALL_WORK`)
and the query's deadline, then run SQLite's own function on a private connection: results
are SQLite's, bit for bit, and every such call is also a point where a query past its time
limit stops.
"""

from __future__ import annotations

import re
import sqlite3
import time
from typing import Any

#: Largest printf/format width or precision (a padded column is under 100 characters).
MAX_PRINTF_WIDTH = 1_000
#: Largest product of the byte lengths of a replace/instr/trim/like/glob call's text and pattern:
#: ~10 ms of comparisons at worst; a cell is under 1 KB, a GROUP_CONCAT of names ~50 KB.
MAX_CALL_WORK = 10_000_000

_SPEC = re.compile(r"%([-+ #!0,]*)(\*|\d+)?(?:\.(\*|\d+))?(?:ll|l)?(.)", re.S)


#: The ``reason`` of a call whose result would pass the value limit.
TOO_BIG = "too big"


class CallRefused(Exception):
    """A guarded call that would run unbounded (or a query past its deadline)."""


def _size(value: Any) -> int:
    if value is None:
        return 0
    if isinstance(value, (bytes, bytearray)):
        return len(value)
    return len(str(value).encode("utf-8", errors="surrogatepass"))


_LEADING_NUMBER = re.compile(r"\s*([+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)")


def _as_int(value: Any) -> int:
    """A ``*`` argument as SQLite reads it (at least as large): a number, or the number a text or
    blob starts with (``'9e8 wide'`` is 900,000,000); an infinity counts as unbounded."""
    if value is None or isinstance(value, (int, float)):
        number = value or 0
    else:
        text = (
            value.decode("utf-8", errors="ignore")
            if isinstance(value, (bytes, bytearray))
            else str(value)
        )
        m = _LEADING_NUMBER.match(text)
        number = float(m.group(1)) if m else 0
    try:
        return int(number)
    except (OverflowError, ValueError):  # inf, nan
        return 0 if number != number else 2**63


def printf_widths(fmt: Any, args: tuple[Any, ...]) -> list[int]:
    """Every width and precision a printf format asks for, ``*`` ones read from ``args``."""
    if not isinstance(fmt, str):
        return []
    widths, i = [], 0
    for m in _SPEC.finditer(fmt):
        if m.group(4) == "%" and not (m.group(1) or m.group(2) or m.group(3)):
            continue
        for part in (m.group(2), m.group(3)):
            if part == "*":
                widths.append(abs(_as_int(args[i])) if i < len(args) else 0)
                i += 1
            elif part:
                widths.append(int(part))
        i += 1  # the converted value
    return widths


class Guards:
    """The guarded functions of one connection, the deadline of the query running on it, why the
    last call was refused (``reason``) and the last error of SQLite's own function (``error``)."""

    def __init__(self, max_value_bytes: int):
        self.private = sqlite3.connect(":memory:", check_same_thread=False)
        self.private.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, max_value_bytes)
        self.deadline = float("inf")
        self.reason: str | None = None  # why a call was refused: "timeout", TOO_BIG or a limit
        self.error: str | None = (
            None  # the error of SQLite's own function (ESCAPE of two characters...)
        )

    def _refuse(self, reason: str) -> None:
        self.reason = reason
        raise CallRefused(reason)

    def _check_time(self) -> None:
        if time.perf_counter() > self.deadline:
            self._refuse("timeout")

    def _sqlite(self, name: str, args: tuple[Any, ...]) -> Any:
        marks = ", ".join("?" * len(args))
        try:
            return self.private.execute(f"SELECT {name}({marks})", args).fetchone()[0]
        except sqlite3.Error as exc:
            # "string or blob too big" past the value limit, or a wrong argument
            if "too big" in str(exc).lower():
                self._refuse(TOO_BIG)
            self.error = str(exc)  # the function's own error, reported as SQLite would
            raise CallRefused(self.error) from None

    def printf(self, name: str) -> Any:
        def call(*args: Any) -> Any:
            self._check_time()
            widest = max(printf_widths(args[0] if args else None, args[1:]), default=0)
            if widest > MAX_PRINTF_WIDTH:
                self._refuse(
                    f"{name}() width or precision {widest:,} is over the limit of "
                    f"{MAX_PRINTF_WIDTH:,}"
                )
            return self._sqlite(name, args)

        return call

    def pairwise(self, name: str) -> Any:
        def call(text: Any, pattern: Any, *rest: Any) -> Any:
            self._check_time()
            work = _size(text) * max(1, _size(pattern))
            if work > MAX_CALL_WORK:
                self._refuse(
                    f"{name}() over {_size(text):,} and {_size(pattern):,} bytes is over the "
                    f"limit of {MAX_CALL_WORK:,} byte comparisons"
                )
            return self._sqlite(name, (text, pattern, *rest))

        return call

    def close(self) -> None:
        self.private.close()


def install(conn: sqlite3.Connection, max_value_bytes: int) -> Guards:
    """Replace ``printf``, ``format``, ``replace``, ``instr``, two-argument
    ``trim``/``ltrim``/``rtrim``, ``like`` and ``glob`` (what the ``LIKE`` and ``GLOB`` operators
    call) and ``json_patch`` on ``conn`` by their guarded versions; the returned :class:`Guards`
    holds the deadline."""
    guards = Guards(max_value_bytes)
    for name in ("printf", "format"):
        conn.create_function(name, -1, guards.printf(name), deterministic=True)
    conn.create_function("replace", 3, guards.pairwise("replace"), deterministic=True)
    # json_patch: every patch key looked up in the target's keys
    for name in (
        "instr",
        "trim",
        "ltrim",
        "rtrim",
        "like",
        "glob",
        "json_patch",
    ):
        conn.create_function(name, 2, guards.pairwise(name), deterministic=True)
    conn.create_function("like", 3, guards.pairwise("like"), deterministic=True)  # LIKE ... ESCAPE
    return guards


__all__ = [
    "TOO_BIG",
    "MAX_CALL_WORK",
    "MAX_PRINTF_WIDTH",
    "CallRefused",
    "Guards",
    "install",
    "printf_widths",
]
