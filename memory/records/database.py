"""Query: the reduced table in an embedded SQLite database, and model-written SQL run over it
safely.

Why SQLite rather than DuckDB: the tables are small (one row per entity and period: a
10M-token corpus gives thousands of rows, which SQLite scans in milliseconds), SQLite is
in the standard library (no dependency), its dialect is the one the synthetic generator
and CorpusQA's NL2SQL ground truth are computed in (same arithmetic, same ``AVG``, same
ordering), and its authorizer gives a statement-level allow-list: only ``SELECT``, reads
and scalar/aggregate functions pass, so ATTACH, PRAGMA, writes and extension loading are
refused by the engine itself, not only by a text filter. Its connection limits, heap limits
(held only while a query runs: :mod:`longctx.memory.records.heap_limit`) and interrupt bound a
query's value sizes, memory and time (:func:`build_database`, :func:`run_query`). DuckDB
would add file readers (``read_csv``, ``COPY``, ``httpfs``) that have to be switched off one
by one.
"""

from __future__ import annotations

import contextlib
import json
import math
import sqlite3
import threading
import time
from dataclasses import dataclass
from typing import Any

from longctx.memory.records.heap_limit import held_heap_limit
from longctx.memory.records.schema import SQL_TYPES, TableSchema
from longctx.memory.records.sql_guards import TOO_BIG, Guards
from longctx.memory.records.sql_guards import install as install_guards
from longctx.memory.records.sql_text import QueryRefused, check_sql
from longctx.memory.records.table import Table


def create_statement(schema: TableSchema) -> str:
    """``CREATE TABLE`` of the schema, with each column's unit and meaning as a comment."""
    cols = [(schema.entity, "TEXT", schema.entity_description or "the entity")]
    if schema.time:
        cols.append(
            (
                schema.time.name,
                "INTEGER" if schema.time.type == "year" else "TEXT",
                schema.time.description or "the period",
            )
        )
    for a in schema.attributes:
        note = (
            (f"[{a.unit}] " if a.unit else "")
            + (a.description or a.name)
            + (" (same on every row of the entity)" if a.static else "")
        )
        cols.append((a.name, SQL_TYPES[a.type], note))
    lines = [
        f"  {name} {kind}{',' if i < len(cols) - 1 else ''} -- {note}"
        for i, (name, kind, note) in enumerate(cols)
    ]
    return f"CREATE TABLE {schema.table} (\n" + "\n".join(lines) + "\n);"


#: The engine's limits besides the value size and the heap (``sqlite3.Connection.setlimit``):
#: result columns (the table has at most 18), SQL text (a query is under 512 tokens) and
#: expression depth (a chain of nested calls such as ``replace(replace(...))`` is one
#: expression, evaluated without an interrupt check, so its length bounds the time a watchdog
#: cannot cut; legitimate queries nest a few levels) and LIKE/GLOB patterns (matching is
#: text length times pattern length at worst; a pattern such as '%bank%' is a few bytes).
ENGINE_LIMITS = {
    sqlite3.SQLITE_LIMIT_COLUMN: 100,
    sqlite3.SQLITE_LIMIT_SQL_LENGTH: 100_000,
    sqlite3.SQLITE_LIMIT_EXPR_DEPTH: 100,
    sqlite3.SQLITE_LIMIT_LIKE_PATTERN_LENGTH: 1_000,
}


class GuardedConnection(sqlite3.Connection):
    """A connection with the guarded functions of :mod:`longctx.memory.records.sql_guards`
    (``guards``) and the SQLite heap limit its queries run under (``heap_limit_bytes``;
    :func:`run_query`)."""

    guards: Guards | None = None
    heap_limit_bytes: int | None = None

    def close(self) -> None:
        if self.guards is not None:
            self.guards.close()
        super().close()


def build_database(
    table: Table, *, max_value_bytes: int = 1_000_000, heap_limit_bytes: int = 256 * 2**20
) -> GuardedConnection:
    """An in-memory database holding the table, read-only from here on (see :func:`run_query`).

    Limits are set on the connection before the authorizer (which refuses every PRAGMA of the
    model's SQL): values longer than ``max_value_bytes`` fail with "string or blob too big"
    (``SQLITE_LIMIT_LENGTH``: a 20 MB cell or a doubling ``replace`` chain stops at once);
    temporary b-trees (sorts, ``DISTINCT``) stay in memory, under SQLite's hard heap limit of
    ``heap_limit_bytes`` while :func:`run_query` runs (an allocation past it fails, the query ends
    with a memory error; the soft limit at half of it makes SQLite shed cache first). SQLite's
    heap limits hold for the whole process, so they are set only for the time a query runs and
    restored after (:func:`longctx.memory.records.heap_limit.held_heap_limit`); building sets none.
    The functions one call of which can run unbounded are replaced by guarded versions
    (:mod:`longctx.memory.records.sql_guards`).
    """
    schema = table.schema
    conn = sqlite3.connect(":memory:", check_same_thread=False, factory=GuardedConnection)
    cols = [f"{schema.entity} TEXT"] + (
        [f"{schema.time.name} {'INTEGER' if schema.time.type == 'year' else 'TEXT'}"]
        if schema.time
        else []
    )
    cols += [f"{a.name} {SQL_TYPES[a.type]}" for a in schema.attributes]
    conn.execute(f"CREATE TABLE {schema.table} ({', '.join(cols)})")
    marks = ", ".join("?" * len(schema.columns))
    conn.executemany(
        f"INSERT INTO {schema.table} VALUES ({marks})",
        [[r.get(c) for c in schema.columns] for r in table.rows],
    )
    conn.commit()
    stored = max(
        (len(v.encode()) for r in table.rows for v in r.values() if isinstance(v, str)), default=0
    )
    conn.execute("PRAGMA temp_store = MEMORY")
    conn.heap_limit_bytes = int(heap_limit_bytes)
    # a stored cell always stays readable
    conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, max(int(max_value_bytes), stored))
    for limit, value in ENGINE_LIMITS.items():
        conn.setlimit(limit, value)
    conn.guards = install_guards(conn, conn.getlimit(sqlite3.SQLITE_LIMIT_LENGTH))
    conn.execute("PRAGMA query_only = 1")
    conn.set_authorizer(_authorize)
    return conn


class QueryTimeout(RuntimeError):
    """SQL that ran past the time limit."""


class QueryTooLarge(RuntimeError):
    """SQL that made a value longer than the value limit or needed more memory than the heap
    limit."""


_ALLOWED_ACTIONS = {
    sqlite3.SQLITE_SELECT,
    sqlite3.SQLITE_READ,
    sqlite3.SQLITE_FUNCTION,
    getattr(sqlite3, "SQLITE_RECURSIVE", 33),
}
#: Functions refused by the engine: file and extension access, and the two that make large values
#: out of nothing (``randomblob(9e8)``, ``zeroblob(9e8)``), which answer no question.
_DENIED_FUNCTIONS = {
    "load_extension",
    "readfile",
    "writefile",
    "edit",
    "fts3_tokenizer",
    "sqlite_compileoption_get",
    "randomblob",
    "zeroblob",
}


def _authorize(action: int, arg1: Any, arg2: Any, db: Any, trigger: Any) -> int:
    if action not in _ALLOWED_ACTIONS:
        return sqlite3.SQLITE_DENY
    if action == sqlite3.SQLITE_FUNCTION and str(arg2).lower() in _DENIED_FUNCTIONS:
        return sqlite3.SQLITE_DENY
    return sqlite3.SQLITE_OK


def result_cell(value: Any, max_chars: int = 1_000) -> Any:
    """A result cell as JSON-safe data of bounded size: a BLOB -> ``"<blob N bytes: 0a1b...>"``,
    an infinite float (``1e999``) -> ``"Infinity"``/``"-Infinity"`` (NaN, which SQLite stores as
    NULL, -> ``"NaN"``), text longer than ``max_chars`` -> cut with ``"... [cut: N
    characters]"``."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        data = bytes(value)
        return f"<blob {len(data):,} bytes: {data[:16].hex()}{'...' if len(data) > 16 else ''}>"
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, str) and len(value) > max_chars:
        return f"{value[:max_chars]}... [cut: {len(value):,} characters]"
    return value


@dataclass
class QueryResult:
    """Columns, rows (at most ``max_rows``, JSON-safe cells; :func:`result_cell`) and whether rows
    were cut."""

    columns: list[str]
    rows: list[list[Any]]
    truncated: bool
    seconds: float
    nbytes: int = 0  # JSON bytes of the rows kept
    cut_cells: int = 0  # cells converted or cut by result_cell


def run_query(
    conn: sqlite3.Connection,
    sql: str,
    *,
    timeout_s: float = 5.0,
    max_rows: int = 200,
    max_result_bytes: int = 65_536,
    max_cell_chars: int = 1_000,
) -> QueryResult:
    """Run ``sql`` read-only under hard limits: ``timeout_s`` of wall clock (a watchdog thread
    interrupts the connection, and a progress handler checks the clock between instructions),
    ``max_rows`` rows and ``max_result_bytes`` of JSON rows (the first row is always kept), each
    cell made JSON-safe and cut at ``max_cell_chars`` (:func:`result_cell`). The value and memory
    limits are the connection's (:func:`build_database`); the heap limit holds, process-wide, from
    the statement's start until its cursor is closed, and the limits before come back after.

    Raises:
        QueryRefused: not a single read-only SELECT (text check, then SQLite's authorizer).
        QueryTimeout: past ``timeout_s``.
        QueryTooLarge: a value past the value limit, or past the heap limit.
        sqlite3.Error: any other SQL error (its message goes back to the model).
    """
    check_sql(sql)
    started = time.perf_counter()
    deadline = started + timeout_s
    fired = threading.Event()

    def interrupt() -> None:
        fired.set()
        try:
            conn.interrupt()
        except sqlite3.ProgrammingError:  # closed meanwhile: nothing left to stop
            pass

    guards = getattr(conn, "guards", None)
    if guards is not None:
        guards.deadline, guards.reason, guards.error = deadline, None, None
    watchdog = threading.Timer(timeout_s, interrupt)
    watchdog.daemon = True
    conn.set_progress_handler(lambda: int(time.perf_counter() > deadline), 1_000)
    cur: sqlite3.Cursor | None = None
    limit = getattr(conn, "heap_limit_bytes", None)
    heap = contextlib.ExitStack()
    watchdog.start()
    try:
        if limit:
            heap.enter_context(held_heap_limit(limit))
        cur = conn.execute(sql)
        rows, nbytes, cut, truncated = _fetch(cur, max_rows, max_result_bytes, max_cell_chars)
        columns = [d[0] for d in cur.description or []]
    except MemoryError:
        raise QueryTooLarge(
            "the query needed more memory than the database's heap limit: compute less, or "
            "aggregate"
        ) from None
    except sqlite3.DatabaseError as exc:
        _raise_for(
            exc,
            conn,
            guards,
            timed_out=fired.is_set() or time.perf_counter() > deadline,
            timeout_s=timeout_s,
        )
        raise
    finally:
        watchdog.cancel()
        conn.set_progress_handler(None, 0)
        if guards is not None:
            guards.deadline = float("inf")
        if cur is not None:
            cur.close()
        heap.close()  # after the cursor: its sorter's memory is freed under the limit
    return QueryResult(columns, rows, truncated, time.perf_counter() - started, nbytes, cut)


def _fetch(
    cur: sqlite3.Cursor, max_rows: int, max_result_bytes: int, max_cell_chars: int
) -> tuple[list[list[Any]], int, int, bool]:
    """The rows of ``cur`` within ``max_rows`` and ``max_result_bytes`` of JSON (the first row
    always), each cell through :func:`result_cell`: ``(rows, their bytes, cells cut,
    truncated)``."""
    rows: list[list[Any]] = []
    nbytes = cut = 0
    while (row := cur.fetchone()) is not None:
        if len(rows) >= max_rows:
            return rows, nbytes, cut, True
        cells = [result_cell(v, max_cell_chars) for v in row]
        cut += sum(a is not b for a, b in zip(cells, row))
        size = len(json.dumps(cells, ensure_ascii=False, default=str).encode())
        if rows and nbytes + size > max_result_bytes:
            return rows, nbytes, cut, True
        rows.append(cells)
        nbytes += size
    return rows, nbytes, cut, False


def _raise_for(
    exc: sqlite3.DatabaseError,
    conn: sqlite3.Connection,
    guards: Any,
    *,
    timed_out: bool,
    timeout_s: float,
) -> None:
    """Raise the error a query's ``exc`` stands for (a timeout, a value or string too large, a
    refusal, a guard's own error); return when it is an ordinary SQL error, re-raised as it is."""
    message = str(exc).lower()
    reason = guards.reason if guards is not None and "user-defined function" in message else None
    if ("interrupt" in message and timed_out) or reason == "timeout":
        raise QueryTimeout(f"the query ran longer than {timeout_s:g} s") from None
    if reason and reason != TOO_BIG:
        raise QueryTooLarge(f"{reason}: the query may not build large strings") from None
    if guards is not None and guards.error and "user-defined function" in message:
        raise sqlite3.OperationalError(guards.error) from None
    if "too big" in message or reason == TOO_BIG:
        limit = conn.getlimit(sqlite3.SQLITE_LIMIT_LENGTH)
        raise QueryTooLarge(
            f"a value longer than {limit:,} bytes was made (string or blob too big): "
            "the query may not build large strings or blobs"
        ) from None
    if "not authorized" in message:
        raise QueryRefused(
            f"refused by the database: {exc} (only SELECT over the table is allowed)"
        ) from exc


__all__ = [
    "ENGINE_LIMITS",
    "GuardedConnection",
    "QueryResult",
    "QueryTimeout",
    "QueryTooLarge",
    "build_database",
    "create_statement",
    "result_cell",
    "run_query",
]
