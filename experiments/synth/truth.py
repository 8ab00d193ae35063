"""Ground truth by two independent paths, and evidence documents.

* :func:`sql_answer` runs a query's SQL on the ``facts`` table (built by SQLite from the
  statements with a window function): the CorpusQA recipe.
* :func:`python_table` re-resolves the raw statements in plain Python (latest document
  wins) and :func:`python_answer` evaluates the query's Python twin on it; tests check
  the two agree.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping

from longctx.experiments.synth.facts import STATIC
from longctx.experiments.synth.values import format_answer


def sql_value(conn: sqlite3.Connection, query) -> object:
    """The raw answer of ``query`` from SQL: a list, a string, an int or a float."""
    rows = conn.execute(query.sql).fetchall()
    if query.answer_type == "list":
        return [r[0] for r in rows]
    if not rows or rows[0][0] is None:
        raise ValueError(f"Query returned no value: {query.sql}")
    return rows[0][0]


def sql_answer(conn: sqlite3.Connection, query) -> str:
    """The gold answer string of ``query``, in CorpusQA's format."""
    return format_answer(sql_value(conn, query), query.answer_type)


def python_table(conn: sqlite3.Connection, categoricals: tuple[str, ...]) -> dict[int, list[dict]]:
    """Rows per fiscal year, resolved from raw statements in plain Python.

    For each (entity, fiscal year, field) the statement of the document with the highest
    position wins (CorpusQA's latest-file rule); static attributes are joined in.
    """
    order = dict(conn.execute("SELECT doc_id, ord FROM documents"))
    latest: dict[tuple, tuple[int, object]] = {}
    for doc_id, entity, fy, fld, value, text in conn.execute("SELECT * FROM statements"):
        key = (entity, fy, fld)
        if key not in latest or order[doc_id] > latest[key][0]:
            latest[key] = (order[doc_id], text if text is not None else value)
    rows: dict[tuple[str, int], dict] = {}
    for (entity, fy, fld), (_, value) in latest.items():
        if fy != STATIC:
            rows.setdefault((entity, fy), {"entity": entity, "fiscal_year": fy})[fld] = value
    for (entity, fy), row in rows.items():
        for cat in categoricals:
            row[cat] = latest[(entity, STATIC, cat)][1]
    by_year: dict[int, list[dict]] = {}
    for (entity, fy), row in sorted(rows.items()):
        by_year.setdefault(fy, []).append(row)
    return by_year


def python_answer(table: Mapping[int, list[dict]], query) -> str:
    """The answer of ``query`` computed by its Python twin on :func:`python_table` rows."""
    return format_answer(query.python(table), query.answer_type)


def cells_clause(query) -> tuple[str, list]:
    """The ``WHERE`` clause (over ``resolved r``) selecting the cells ``query`` reads, and its
    parameters: its numeric fields in its fiscal years (for the entities in its scope) and its
    categorical attributes."""
    params: list = []
    clauses = []
    if query.fields:
        scope = ""
        if query.scope:
            cat, value = query.scope
            scope = (
                " AND r.entity IN (SELECT entity FROM resolved WHERE field = ? AND fiscal_year "
                f"= {STATIC} AND text = ?)"
            )
            params += [cat, value]
        marks_f = ",".join("?" * len(query.fields))
        marks_y = ",".join("?" * len(query.years))
        clauses.append(f"(r.field IN ({marks_f}) AND r.fiscal_year IN ({marks_y}){scope})")
        params = list(query.fields) + list(query.years) + params
    if query.categoricals:
        clauses.append(
            f"(r.field IN ({','.join('?' * len(query.categoricals))}) AND r.fiscal_year = {STATIC})"
        )
        params += list(query.categoricals)
    return " OR ".join(clauses), params


def evidence_doc_ids(conn: sqlite3.Connection, query) -> list[str]:
    """Documents whose statements the answer depends on, in corpus order: the latest documents
    stating each cell the query reads (:func:`cells_clause`)."""
    where, params = cells_clause(query)
    sql = (
        "SELECT DISTINCT r.doc_id FROM resolved r JOIN documents d ON d.doc_id = r.doc_id WHERE "
        f"{where} ORDER BY d.ord"
    )
    return [r[0] for r in conn.execute(sql, params)]
