"""Reduce and Query: records -> one table in an embedded SQLite database; model SQL run safely.

Why SQLite rather than DuckDB: the tables are small (one row per entity and period: a
10M-token corpus gives thousands of rows, which SQLite scans in milliseconds), SQLite is
in the standard library (no dependency), its dialect is the one the synthetic generator
and CorpusQA's NL2SQL ground truth are computed in (same arithmetic, same ``AVG``, same
ordering), and its authorizer gives a statement-level allow-list: only ``SELECT``, reads
and scalar/aggregate functions pass, so ATTACH, PRAGMA, writes and extension loading are
refused by the engine itself, not only by a text filter. A progress handler enforces the
time limit. DuckDB would add file readers (``read_csv``, ``COPY``, ``httpfs``) that have
to be switched off one by one.

Resolution (``conflict_rule``): each cell (entity, period, attribute) takes the value of
the latest document that states it (corpus order; CorpusQA appendix C rule 3 and the
synthetic generator's restatements), or of the first with ``"first_document"``. Static
attributes (a sector) are resolved per entity and written on every row of the entity.
"""

from __future__ import annotations

import re
import sqlite3
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from graphs.structured.normalize import ValueNotUnderstood, entity_key, normalize_period, normalize_value
from graphs.structured.schema import SQL_TYPES, TableSchema


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
            c = winners.get((ek, None, attr))
            if c is not None:
                row[attr] = c.value
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


def build_database(table: Table) -> sqlite3.Connection:
    """An in-memory database holding the table, read-only from here on (see :func:`run_query`)."""
    schema = table.schema
    conn = sqlite3.connect(":memory:", check_same_thread=False)
    cols = [f"{schema.entity} TEXT"] + ([f"{schema.time.name} {'INTEGER' if schema.time.type == 'year' else 'TEXT'}"] if schema.time else [])
    cols += [f"{a.name} {SQL_TYPES[a.type]}" for a in schema.attributes]
    conn.execute(f"CREATE TABLE {schema.table} ({', '.join(cols)})")
    marks = ", ".join("?" * len(schema.columns))
    conn.executemany(f"INSERT INTO {schema.table} VALUES ({marks})", [[r.get(c) for c in schema.columns] for r in table.rows])
    conn.commit()
    conn.execute("PRAGMA query_only = 1")
    conn.set_authorizer(_authorize)
    return conn


class QueryRefused(ValueError):
    """SQL that is not one read-only SELECT over the table (file, network, attach, write...)."""


class QueryTimeout(RuntimeError):
    """SQL that ran past the time limit."""


#: Words refused before the query reaches the engine (file or network access, other databases).
FORBIDDEN = re.compile(
    r"\b(attach|detach|copy|pragma|vacuum|load_extension|readfile|writefile|edit|fts3_tokenizer|zipfile|sqlar\w*|"
    r"read_\w+|load|install|export|import|http\w*|s3|glob_files)\b\s*(\(|\s|$)|file:|https?://",
    re.I,
)
_ALLOWED_ACTIONS = {sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_FUNCTION, getattr(sqlite3, "SQLITE_RECURSIVE", 33)}
_DENIED_FUNCTIONS = {"load_extension", "readfile", "writefile", "edit", "fts3_tokenizer", "sqlite_compileoption_get"}


def _authorize(action: int, arg1: Any, arg2: Any, db: Any, trigger: Any) -> int:
    if action not in _ALLOWED_ACTIONS:
        return sqlite3.SQLITE_DENY
    if action == sqlite3.SQLITE_FUNCTION and str(arg2).lower() in _DENIED_FUNCTIONS:
        return sqlite3.SQLITE_DENY
    return sqlite3.SQLITE_OK


def clean_sql(text: str) -> str:
    """The SQL of a reply: the first fenced block (or the whole text), comments and a trailing ``;`` removed."""
    m = re.search(r"```(?:sql|sqlite)?\s*(.*?)```", text, re.S | re.I)
    sql = m.group(1) if m else text
    sql = re.sub(r"--[^\n]*", " ", sql)
    sql = re.sub(r"/\*.*?\*/", " ", sql, flags=re.S)
    sql = sql.strip().rstrip(";").strip()
    start = re.search(r"\b(with|select)\b", sql, re.I)
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
    if ";" in re.sub(r"'(?:[^']|'')*'", "''", sql):
        raise QueryRefused("only one statement is allowed (no ';' inside)")
    m = FORBIDDEN.search(re.sub(r"'(?:[^']|'')*'", "''", sql))
    if m:
        raise QueryRefused(f"'{m.group(1) or m.group(0)}' is not allowed: the query may read the table only (no files, network, other databases or settings)")


@dataclass
class QueryResult:
    """Columns, rows (at most ``max_rows``) and whether more rows were cut."""

    columns: list[str]
    rows: list[list[Any]]
    truncated: bool
    seconds: float


def run_query(conn: sqlite3.Connection, sql: str, *, timeout_s: float = 5.0, max_rows: int = 200) -> QueryResult:
    """Run ``sql`` read-only under the time limit.

    Raises:
        QueryRefused: not a single read-only SELECT (text check, then SQLite's authorizer).
        QueryTimeout: past ``timeout_s``.
        sqlite3.Error: any other SQL error (its message goes back to the model).
    """
    check_sql(sql)
    started = time.perf_counter()
    deadline = started + timeout_s
    conn.set_progress_handler(lambda: int(time.perf_counter() > deadline), 10_000)
    try:
        cur = conn.execute(sql)
        rows = cur.fetchmany(max_rows + 1)
    except sqlite3.DatabaseError as exc:
        if time.perf_counter() > deadline and "interrupt" in str(exc).lower():
            raise QueryTimeout(f"the query ran longer than {timeout_s:g} s") from exc
        if "not authorized" in str(exc).lower():
            raise QueryRefused(f"refused by the database: {exc} (only SELECT over the table is allowed)") from exc
        raise
    finally:
        conn.set_progress_handler(None, 0)
    columns = [d[0] for d in cur.description or []]
    return QueryResult(columns, [list(r) for r in rows[:max_rows]], len(rows) > max_rows, time.perf_counter() - started)


__all__ = [
    "Cell", "FORBIDDEN", "QueryRefused", "QueryResult", "QueryTimeout", "Table", "build_database", "check_sql", "clean_sql",
    "create_statement", "normalise_records", "reduce_cells", "run_query",
]
