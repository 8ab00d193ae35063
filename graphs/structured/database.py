"""Reduce and Query: records -> one table in an embedded SQLite database; model SQL run safely.

Why SQLite rather than DuckDB: the tables are small (one row per entity and period: a
10M-token corpus gives thousands of rows, which SQLite scans in milliseconds), SQLite is
in the standard library (no dependency), its dialect is the one the synthetic generator
and CorpusQA's NL2SQL ground truth are computed in (same arithmetic, same ``AVG``, same
ordering), and its authorizer gives a statement-level allow-list: only ``SELECT``, reads
and scalar/aggregate functions pass, so ATTACH, PRAGMA, writes and extension loading are
refused by the engine itself, not only by a text filter. Its connection limits, heap limits
(held only while a query runs: :mod:`graphs.structured.heap_limit`) and interrupt bound a
query's value sizes, memory and time (:func:`build_database`, :func:`run_query`). DuckDB
would add file readers (``read_csv``, ``COPY``, ``httpfs``) that have to be switched off one
by one.

Resolution (``conflict_rule``): each cell (entity, period, attribute) takes the value of
the latest document that states it (corpus order; CorpusQA appendix C rule 3 and the
synthetic generator's restatements), or of the first with ``"first_document"``. Static
attributes (a sector) are resolved per entity and written on every row of the entity.
"""

from __future__ import annotations

import contextlib
import json
import math
import re
import sqlite3
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from graphs.structured.heap_limit import held_heap_limit
from graphs.structured.normalize import ValueNotUnderstood, entity_key, normalize_period, normalize_value
from graphs.structured.schema import SQL_TYPES, TableSchema
from graphs.structured.sql_guards import TOO_BIG, Guards
from graphs.structured.sql_guards import install as install_guards
from graphs.structured.sql_words import FORBIDDEN


@dataclass
class Cell:
    """One normalised value and where it came from."""

    entity: str
    period: Any
    attribute: str
    value: Any
    raw: Any
    quote: str
    doc_index: int
    doc_id: str
    title: str
    note: str | None = None
    quote_found: bool | None = None  # whether the quote occurs in the text read (None: records cached before the check was kept)


@dataclass
class Table:
    """The reduced table: rows, the winning cell behind every value, and what was resolved away."""

    schema: TableSchema
    rows: list[dict[str, Any]]
    cells: dict[tuple[str, Any, str], Cell]
    display: dict[str, str]
    stats: dict[str, Any] = field(default_factory=dict)


def normalise_records(schema: TableSchema, extractions: Iterable[tuple[int, str, str, list[dict]]], *,
                      drop_unverified: bool = False) -> tuple[list[Cell], dict[str, Any]]:
    """Cells from per-document records ``(doc_index, doc_id, title, records)``, with counts of
    what could not be read (never dropped silently: the counts go into the ``reduce`` step);
    ``drop_unverified``: leave out values whose quote was not found in the text read."""
    attrs = {a.name: a for a in schema.attributes}
    cells: list[Cell] = []
    stats: dict[str, Any] = {"records": 0, "values": 0, "unreadable": [], "notes": 0, "no_period": 0, "unverified": 0, "dropped_unverified": 0}
    for doc_index, doc_id, title, records in extractions:
        for rec in records:
            stats["records"] += 1
            name = " ".join(str(rec.get("entity", "")).split())
            if not name:
                continue
            period = normalize_period(rec.get("period"), schema.time.type) if schema.time else None
            for attr, cell in (rec.get("values") or {}).items():
                if not cell or attr not in attrs or cell.get("value") is None:
                    continue
                found = cell.get("quote_found")
                if found is False and drop_unverified:
                    stats["dropped_unverified"] += 1
                    continue
                a = attrs[attr]
                try:
                    value, note = normalize_value(cell["value"], a.type, a.unit)
                except ValueNotUnderstood as exc:
                    stats["unreadable"].append({"doc_id": doc_id, "entity": name, "attribute": attr, "value": cell["value"], "error": str(exc)})
                    continue
                if value is None:
                    continue
                when = None if a.static else period
                if schema.time and not a.static and when is None:
                    stats["no_period"] += 1
                stats["values"] += 1
                stats["notes"] += note is not None
                stats["unverified"] += found is False
                cells.append(Cell(name, when, attr, value, cell["value"], str(cell.get("quote") or ""), doc_index, doc_id, title, note, found))
    return cells, stats


def reduce_cells(schema: TableSchema, cells: Sequence[Cell], conflict_rule: str = "latest_document") -> Table:
    """One row per entity (and period): each cell's value from the latest (or first) document stating it."""
    latest = conflict_rule == "latest_document"
    winners: dict[tuple[str, Any, str], Cell] = {}
    superseded = conflicting = 0
    display: dict[str, tuple[int, str]] = {}
    for c in sorted(cells, key=lambda c: c.doc_index):  # stable: within a document, later records win
        key = (entity_key(c.entity), c.period, c.attribute)
        old = winners.get(key)
        if old is not None:
            superseded += 1
            conflicting += old.value != c.value
            if not latest:
                continue
        winners[key] = c
        ek = key[0]
        if latest or ek not in display:
            display[ek] = (c.doc_index, c.entity)
    names = {k: v[1] for k, v in display.items()}
    static = {a.name for a in schema.attributes if a.static}
    row_keys: dict[tuple[str, Any], dict[str, Any]] = {}
    for (ek, period, attr), c in winners.items():
        if attr in static:
            continue
        row = row_keys.setdefault((ek, period), {schema.entity: names[ek], **({schema.time.name: period} if schema.time else {})})
        row[attr] = c.value
    for ek in names:
        if not any(k[0] == ek for k in row_keys):
            row_keys[(ek, None)] = {schema.entity: names[ek], **({schema.time.name: None} if schema.time else {})}
    for (ek, _), row in row_keys.items():
        for attr in static:
            winner = winners.get((ek, None, attr))
            if winner is not None:
                row[attr] = winner.value
    rows = [{col: row.get(col) for col in schema.columns} for _, row in sorted(row_keys.items(), key=lambda kv: (kv[1][schema.entity], str(kv[0][1])))]
    stats = {"rows": len(rows), "entities": len(names), "cells": len(winners), "superseded": superseded, "conflicting_restatements": conflicting,
             "conflict_rule": conflict_rule}
    return Table(schema, rows, winners, names, stats)


# -- the database -------------------------------------------------------------------------
def create_statement(schema: TableSchema) -> str:
    """``CREATE TABLE`` of the schema, with each column's unit and meaning as a comment."""
    cols = [(schema.entity, "TEXT", schema.entity_description or "the entity")]
    if schema.time:
        cols.append((schema.time.name, "INTEGER" if schema.time.type == "year" else "TEXT", schema.time.description or "the period"))
    for a in schema.attributes:
        note = (f"[{a.unit}] " if a.unit else "") + (a.description or a.name) + (" (same on every row of the entity)" if a.static else "")
        cols.append((a.name, SQL_TYPES[a.type], note))
    lines = [f"  {name} {kind}{',' if i < len(cols) - 1 else ''} -- {note}" for i, (name, kind, note) in enumerate(cols)]
    return f"CREATE TABLE {schema.table} (\n" + "\n".join(lines) + "\n);"


#: The engine's limits besides the value size and the heap (``sqlite3.Connection.setlimit``):
#: result columns (the table has at most 18), SQL text (a query is under 512 tokens) and
#: expression depth (a chain of nested calls such as ``replace(replace(...))`` is one
#: expression, evaluated without an interrupt check, so its length bounds the time a watchdog
#: cannot cut; legitimate queries nest a few levels) and LIKE/GLOB patterns (matching is
#: text length times pattern length at worst; a pattern such as '%bank%' is a few bytes).
ENGINE_LIMITS = {sqlite3.SQLITE_LIMIT_COLUMN: 100, sqlite3.SQLITE_LIMIT_SQL_LENGTH: 100_000, sqlite3.SQLITE_LIMIT_EXPR_DEPTH: 100,
                 sqlite3.SQLITE_LIMIT_LIKE_PATTERN_LENGTH: 1_000}


class GuardedConnection(sqlite3.Connection):
    """A connection with the guarded functions of :mod:`graphs.structured.sql_guards` (``guards``) and
    the SQLite heap limit its queries run under (``heap_limit_bytes``; :func:`run_query`)."""

    guards: Guards | None = None
    heap_limit_bytes: int | None = None

    def close(self) -> None:
        if self.guards is not None:
            self.guards.close()
        super().close()


def build_database(table: Table, *, max_value_bytes: int = 1_000_000, heap_limit_bytes: int = 256 * 2**20) -> GuardedConnection:
    """An in-memory database holding the table, read-only from here on (see :func:`run_query`).

    Limits are set on the connection before the authorizer (which refuses every PRAGMA of the
    model's SQL): values longer than ``max_value_bytes`` fail with "string or blob too big"
    (``SQLITE_LIMIT_LENGTH``: a 20 MB cell or a doubling ``replace`` chain stops at once);
    temporary b-trees (sorts, ``DISTINCT``) stay in memory, under SQLite's hard heap limit of
    ``heap_limit_bytes`` while :func:`run_query` runs (an allocation past it fails, the query ends
    with a memory error; the soft limit at half of it makes SQLite shed cache first). SQLite's
    heap limits hold for the whole process, so they are set only for the time a query runs and
    restored after (:func:`graphs.structured.heap_limit.held_heap_limit`); building sets none.
    The functions one call of which can run unbounded are replaced by guarded versions
    (:mod:`graphs.structured.sql_guards`).
    """
    schema = table.schema
    conn = sqlite3.connect(":memory:", check_same_thread=False, factory=GuardedConnection)
    cols = [f"{schema.entity} TEXT"] + ([f"{schema.time.name} {'INTEGER' if schema.time.type == 'year' else 'TEXT'}"] if schema.time else [])
    cols += [f"{a.name} {SQL_TYPES[a.type]}" for a in schema.attributes]
    conn.execute(f"CREATE TABLE {schema.table} ({', '.join(cols)})")
    marks = ", ".join("?" * len(schema.columns))
    conn.executemany(f"INSERT INTO {schema.table} VALUES ({marks})", [[r.get(c) for c in schema.columns] for r in table.rows])
    conn.commit()
    stored = max((len(v.encode()) for r in table.rows for v in r.values() if isinstance(v, str)), default=0)
    conn.execute("PRAGMA temp_store = MEMORY")
    conn.heap_limit_bytes = int(heap_limit_bytes)
    conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, max(int(max_value_bytes), stored))  # a stored cell always stays readable
    for limit, value in ENGINE_LIMITS.items():
        conn.setlimit(limit, value)
    conn.guards = install_guards(conn, conn.getlimit(sqlite3.SQLITE_LIMIT_LENGTH))
    conn.execute("PRAGMA query_only = 1")
    conn.set_authorizer(_authorize)
    return conn


class QueryRefused(ValueError):
    """SQL that is not one read-only SELECT over the table (file, network, attach, write...)."""


class QueryTimeout(RuntimeError):
    """SQL that ran past the time limit."""


class QueryTooLarge(RuntimeError):
    """SQL that made a value longer than the value limit or needed more memory than the heap limit."""


_ALLOWED_ACTIONS = {sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_FUNCTION, getattr(sqlite3, "SQLITE_RECURSIVE", 33)}
#: Functions refused by the engine: file and extension access, and the two that make large values
#: out of nothing (``randomblob(9e8)``, ``zeroblob(9e8)``), which answer no question.
_DENIED_FUNCTIONS = {"load_extension", "readfile", "writefile", "edit", "fts3_tokenizer", "sqlite_compileoption_get", "randomblob", "zeroblob"}
_MAKERS = re.compile(r"\b(randomblob|zeroblob)\s*\(", re.I)


def _authorize(action: int, arg1: Any, arg2: Any, db: Any, trigger: Any) -> int:
    if action not in _ALLOWED_ACTIONS:
        return sqlite3.SQLITE_DENY
    if action == sqlite3.SQLITE_FUNCTION and str(arg2).lower() in _DENIED_FUNCTIONS:
        return sqlite3.SQLITE_DENY
    return sqlite3.SQLITE_OK


def sql_spans(sql: str) -> list[tuple[str, int, int]]:
    """``sql`` cut into ``("code" | "string" | "identifier" | "comment", start, end)`` spans.

    Strings are ``'...'`` (``''`` inside), quoted identifiers ``"..."`` (``""`` inside),
    ``[...]`` and `` `...` ``; comments ``--`` to the end of the line and ``/* ... */`` (an
    unclosed one runs to the end), recognised only outside strings and identifiers.
    """
    spans: list[tuple[str, int, int]] = []
    i, n, code = 0, len(sql), 0
    while i < n:
        ch = sql[i]
        if ch in "'\"`[":
            close = "]" if ch == "[" else ch
            j = i + 1
            while j < n:
                if sql[j] == close:
                    if close != "]" and j + 1 < n and sql[j + 1] == close:  # a doubled quote stays inside
                        j += 2
                        continue
                    break
                j += 1
            end = min(j + 1, n)
            kind = "string" if ch == "'" else "identifier"
        elif sql.startswith("--", i):
            j = sql.find("\n", i)
            end, kind = (n if j < 0 else j), "comment"
        elif sql.startswith("/*", i):
            j = sql.find("*/", i + 2)
            end, kind = (n if j < 0 else j + 2), "comment"
        else:
            i += 1
            continue
        if code < i:
            spans.append(("code", code, i))
        spans.append((kind, i, end))
        i = code = end
    if code < n:
        spans.append(("code", code, n))
    return spans


def _blank(sql: str, kinds: set[str], fill: str = " ") -> str:
    """``sql`` with the spans of ``kinds`` overwritten by ``fill``, every offset kept."""
    return "".join(fill * (b - a) if kind in kinds else sql[a:b] for kind, a, b in sql_spans(sql))


def clean_sql(text: str) -> str:
    """The SQL of a reply: the first fenced block (or the whole text), comments and a trailing ``;``
    removed; ``--`` or ``/*`` inside a string (``WHERE company = 'C1--x'``) is text, not a comment."""
    m = re.search(r"```(?:sql|sqlite)?\s*(.*?)```", text, re.S | re.I)
    sql = m.group(1) if m else text
    sql = "".join(" " if kind == "comment" else sql[a:b] for kind, a, b in sql_spans(sql))
    sql = sql.strip().rstrip(";").strip()
    start = re.search(r"\b(with|select)\b", _blank(sql, {"string", "identifier"}), re.I)
    return sql[start.start():] if start else sql


def check_sql(sql: str) -> None:
    """Refuse anything but one SELECT (or WITH ... SELECT) statement without file or network access.

    Raises:
        QueryRefused: with the reason, which goes back to the model.
    """
    if not sql:
        raise QueryRefused("the reply holds no SQL statement")
    if not re.match(r"(with|select)\b", sql, re.I):
        raise QueryRefused("only one SELECT statement (optionally starting with WITH) is allowed")
    code = _blank(sql, {"string"})  # string literals are data; identifiers and comments stay visible to the checks
    if ";" in code:
        raise QueryRefused("only one statement is allowed (no ';' inside)")
    m = FORBIDDEN.search(code)
    if m:
        raise QueryRefused(f"'{m.group(1) or m.group(0)}' is not allowed: the query may read the table only (no files, network, other databases or settings)")
    m = _MAKERS.search(code)
    if m:
        raise QueryRefused(f"'{m.group(1)}' is not allowed: it makes values, it reads none")


def result_cell(value: Any, max_chars: int = 1_000) -> Any:
    """A result cell as JSON-safe data of bounded size: a BLOB -> ``"<blob N bytes: 0a1b...>"``,
    an infinite float (``1e999``) -> ``"Infinity"``/``"-Infinity"`` (NaN, which SQLite stores as
    NULL, -> ``"NaN"``), text longer than ``max_chars`` -> cut with ``"... [cut: N characters]"``."""
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
    """Columns, rows (at most ``max_rows``, JSON-safe cells; :func:`result_cell`) and whether rows were cut."""

    columns: list[str]
    rows: list[list[Any]]
    truncated: bool
    seconds: float
    nbytes: int = 0  # JSON bytes of the rows kept
    cut_cells: int = 0  # cells converted or cut by result_cell


def run_query(conn: sqlite3.Connection, sql: str, *, timeout_s: float = 5.0, max_rows: int = 200,
              max_result_bytes: int = 65_536, max_cell_chars: int = 1_000) -> QueryResult:
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
    rows: list[list[Any]] = []
    nbytes = cut = 0
    truncated = False
    cur: sqlite3.Cursor | None = None
    limit = getattr(conn, "heap_limit_bytes", None)
    heap = contextlib.ExitStack()
    watchdog.start()
    try:
        if limit:
            heap.enter_context(held_heap_limit(limit))
        cur = conn.execute(sql)
        while (row := cur.fetchone()) is not None:
            if len(rows) >= max_rows:
                truncated = True
                break
            cells = [result_cell(v, max_cell_chars) for v in row]
            cut += sum(a is not b for a, b in zip(cells, row))
            size = len(json.dumps(cells, ensure_ascii=False, default=str).encode())
            if rows and nbytes + size > max_result_bytes:
                truncated = True
                break
            rows.append(cells)
            nbytes += size
        columns = [d[0] for d in cur.description or []]
    except MemoryError:
        raise QueryTooLarge("the query needed more memory than the database's heap limit: compute less, or aggregate") from None
    except sqlite3.DatabaseError as exc:
        message = str(exc).lower()
        reason = guards.reason if guards is not None and "user-defined function" in message else None
        if ("interrupt" in message and (fired.is_set() or time.perf_counter() > deadline)) or reason == "timeout":
            raise QueryTimeout(f"the query ran longer than {timeout_s:g} s") from None
        if reason and reason != TOO_BIG:
            raise QueryTooLarge(f"{reason}: the query may not build large strings") from None
        if guards is not None and guards.error and "user-defined function" in message:
            raise sqlite3.OperationalError(guards.error) from None
        if "too big" in message or reason == TOO_BIG:
            limit = conn.getlimit(sqlite3.SQLITE_LIMIT_LENGTH)
            raise QueryTooLarge(
                f"a value longer than {limit:,} bytes was made (string or blob too big): the query may not build large strings or blobs"
            ) from None
        if "not authorized" in message:
            raise QueryRefused(f"refused by the database: {exc} (only SELECT over the table is allowed)") from exc
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


__all__ = [
    "ENGINE_LIMITS", "FORBIDDEN", "Cell", "QueryRefused", "QueryResult", "QueryTimeout", "QueryTooLarge", "Table", "build_database",
    "check_sql", "clean_sql", "create_statement", "normalise_records", "reduce_cells", "result_cell", "run_query", "sql_spans",
]
