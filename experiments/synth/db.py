"""The fact table in SQLite: statements as written, resolved by the latest-file rule.

Tables:
    documents(doc_id, ord, published, kind, entity, report_year, tokens)
    statements(doc_id, entity, fiscal_year, field, value, text)
    resolved(entity, fiscal_year, field, value, text, doc_id): one row per cell, taken
        from the latest document (highest ``ord``) that states it.
    facts(entity, fiscal_year, <categoricals>, <numeric fields>): the wide table every
        ground-truth query runs on, one row per entity and fiscal year.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from longctx.experiments.synth.facts import STATIC, FactBase

DB_NAME = "facts.sqlite"


def write_database(base: FactBase, path: Path) -> None:
    """Write the fact base to a new SQLite file at ``path`` and build ``resolved`` and ``facts``."""
    conn = sqlite3.connect(path)
    try:
        conn.executescript(
            """
            CREATE TABLE documents(doc_id TEXT PRIMARY KEY, ord INTEGER, published TEXT, kind TEXT,
                                   entity TEXT, report_year INTEGER, tokens INTEGER);
            CREATE TABLE statements(doc_id TEXT, entity TEXT, fiscal_year INTEGER, field TEXT,
                                    value REAL, text TEXT);
            """
        )
        conn.executemany(
            "INSERT INTO documents VALUES (?, ?, ?, ?, ?, ?, NULL)",
            [(d.doc_id, i, d.published, d.kind, d.entity, d.year) for i, d in enumerate(base.docs)],
        )
        conn.executemany(
            "INSERT INTO statements VALUES (?, ?, ?, ?, ?, ?)",
            [
                (s.doc_id, s.entity, s.fiscal_year, s.field, s.value, s.text)
                for s in base.statements
            ],
        )
        _build_resolved(conn, base)
        conn.commit()
    finally:
        conn.close()


def _build_resolved(conn: sqlite3.Connection, base: FactBase) -> None:
    conn.executescript(
        """
        CREATE TABLE resolved AS
        SELECT entity, fiscal_year, field, value, text, doc_id FROM (
            SELECT s.*, ROW_NUMBER() OVER (
                PARTITION BY s.entity, s.fiscal_year, s.field ORDER BY d.ord DESC
            ) AS rn
            FROM statements s JOIN documents d ON d.doc_id = s.doc_id)
        WHERE rn = 1;
        CREATE INDEX resolved_cell ON resolved(field, fiscal_year, entity);
        """
    )
    cats = ", ".join(
        f"(SELECT text FROM resolved c WHERE c.entity = r.entity AND c.fiscal_year = {STATIC} "
        f"AND c.field = '{c.name}') AS {c.name}"
        for c in base.domain.categoricals
    )
    nums = ", ".join(
        f"MAX(CASE WHEN r.field = '{f.name}' THEN r.value END) AS {f.name}"
        for f in base.domain.fields
    )
    conn.execute(
        "CREATE TABLE facts AS SELECT r.entity AS entity, r.fiscal_year AS fiscal_year, "
        f"{cats}, {nums} "
        f"FROM resolved r WHERE r.fiscal_year != {STATIC} GROUP BY r.entity, r.fiscal_year ORDER "
        "BY r.entity, r.fiscal_year"
    )


def set_token_counts(path: Path, counts: dict[str, int]) -> None:
    """Record each rendered document's token count."""
    conn = sqlite3.connect(path)
    try:
        conn.executemany(
            "UPDATE documents SET tokens = ? WHERE doc_id = ?", [(n, d) for d, n in counts.items()]
        )
        conn.commit()
    finally:
        conn.close()


def connect(path: Path) -> sqlite3.Connection:
    """Open a generated fact table read-only."""
    if not Path(path).exists():
        raise FileNotFoundError(f"No fact table at {path}")
    return sqlite3.connect(f"file:{path}?mode=ro", uri=True)
