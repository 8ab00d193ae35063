"""A records store: facts read from a corpus as typed records, kept on disk, reduced into one
table and queried with model-written SQL under hard limits.

Why in ``memory/``: this package owns the stores strategies keep what they have read in (the
streaming agent's bounded buffer, PAI's property store) and this is one more: a table of
what the corpus states, reused by every later question on it. None of it prompts or wires a
model (that stays in ``graphs/structured/``), so it imports neither ``graphs`` nor
``agents``; it is bounded and untrusted-input safe on its own, so other code can query a
table of records the same way.

Modules: ``schema`` (the table schema), ``normalize`` (numbers, units, periods), ``table``
(Reduce: records -> one table), ``cache`` (records and schemas on disk), ``database``
(the table in SQLite, model SQL run read-only), ``sql_text`` (the SQL text check),
``sql_guards`` (bounded SQLite functions), ``sql_words`` (names SQL cannot use),
``heap_limit`` (SQLite's process-wide heap limit held only while a query runs).
"""

from longctx.memory.records.cache import RecordCache, SchemaStore, document_fingerprint
from longctx.memory.records.database import (
    QueryResult,
    QueryTimeout,
    QueryTooLarge,
    build_database,
    create_statement,
    run_query,
)
from longctx.memory.records.schema import (
    Attribute,
    TableSchema,
    TimeDimension,
    parse_schema,
    schema_hash,
)
from longctx.memory.records.sql_text import QueryRefused, check_sql, clean_sql
from longctx.memory.records.table import Cell, Table, normalise_records, reduce_cells

__all__ = [
    "Attribute",
    "Cell",
    "QueryRefused",
    "QueryResult",
    "QueryTimeout",
    "QueryTooLarge",
    "RecordCache",
    "SchemaStore",
    "Table",
    "TableSchema",
    "TimeDimension",
    "build_database",
    "check_sql",
    "clean_sql",
    "create_statement",
    "document_fingerprint",
    "normalise_records",
    "parse_schema",
    "reduce_cells",
    "run_query",
    "schema_hash",
]
