"""Reduce: per-document records -> normalised cells -> one table, restatements resolved.

Resolution (``conflict_rule``): each cell (entity, period, attribute) takes the value of
the latest document that states it (corpus order; CorpusQA appendix C rule 3 and the
synthetic generator's restatements), or of the first with ``"first_document"``. Static
attributes (a sector) are resolved per entity and written on every row of the entity.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from longctx.memory.records.normalize import (
    ValueNotUnderstood,
    entity_key,
    normalize_period,
    normalize_value,
)
from longctx.memory.records.schema import TableSchema


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
    #: Whether the quote occurs in the text read (None: records cached before the check was kept).
    quote_found: bool | None = None


@dataclass
class Table:
    """The reduced table: rows, the winning cell behind every value, and what was resolved away."""

    schema: TableSchema
    rows: list[dict[str, Any]]
    cells: dict[tuple[str, Any, str], Cell]
    display: dict[str, str]
    stats: dict[str, Any] = field(default_factory=dict)


def normalise_records(
    schema: TableSchema,
    extractions: Iterable[tuple[int, str, str, list[dict[str, Any]]]],
    *,
    drop_unverified: bool = False,
) -> tuple[list[Cell], dict[str, Any]]:
    """Cells from per-document records ``(doc_index, doc_id, title, records)``, with counts of
    what could not be read (never dropped silently: the counts go into the ``reduce`` step);
    ``drop_unverified``: leave out values whose quote was not found in the text read."""
    attrs = {a.name: a for a in schema.attributes}
    cells: list[Cell] = []
    stats: dict[str, Any] = {
        "records": 0,
        "values": 0,
        "unreadable": [],
        "notes": 0,
        "no_period": 0,
        "unverified": 0,
        "dropped_unverified": 0,
    }
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
                    stats["unreadable"].append(
                        {
                            "doc_id": doc_id,
                            "entity": name,
                            "attribute": attr,
                            "value": cell["value"],
                            "error": str(exc),
                        }
                    )
                    continue
                if value is None:
                    continue
                when = None if a.static else period
                if schema.time and not a.static and when is None:
                    stats["no_period"] += 1
                stats["values"] += 1
                stats["notes"] += note is not None
                stats["unverified"] += found is False
                cells.append(
                    Cell(
                        name,
                        when,
                        attr,
                        value,
                        cell["value"],
                        str(cell.get("quote") or ""),
                        doc_index,
                        doc_id,
                        title,
                        note,
                        found,
                    )
                )
    return cells, stats


def reduce_cells(
    schema: TableSchema, cells: Sequence[Cell], conflict_rule: str = "latest_document"
) -> Table:
    """One row per entity (and period): each cell's value from the latest (or first) document
    stating it."""
    winners, names, superseded, conflicting = _winners(cells, conflict_rule == "latest_document")
    rows = _rows(schema, winners, names)
    stats = {
        "rows": len(rows),
        "entities": len(names),
        "cells": len(winners),
        "superseded": superseded,
        "conflicting_restatements": conflicting,
        "conflict_rule": conflict_rule,
    }
    return Table(schema, rows, winners, names, stats)


def _winners(
    cells: Sequence[Cell], latest: bool
) -> tuple[dict[tuple[str, Any, str], Cell], dict[str, str], int, int]:
    """The cell that wins each (entity, period, attribute), the name each entity is shown by, and
    the counts of cells superseded and of restatements that conflict."""
    winners: dict[tuple[str, Any, str], Cell] = {}
    superseded = conflicting = 0
    display: dict[str, tuple[int, str]] = {}
    # stable: within a document, later records win
    for c in sorted(cells, key=lambda c: c.doc_index):
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
    return winners, {k: v[1] for k, v in display.items()}, superseded, conflicting


def _rows(
    schema: TableSchema, winners: dict[tuple[str, Any, str], Cell], names: dict[str, str]
) -> list[dict[str, Any]]:
    """The table's rows, sorted by entity and period: an entity's static attributes on each of its
    rows, an entity with none but static ones on one row of no period."""
    static = {a.name for a in schema.attributes if a.static}
    row_keys: dict[tuple[str, Any], dict[str, Any]] = {}
    for (ek, period, attr), c in winners.items():
        if attr in static:
            continue
        row = row_keys.setdefault(
            (ek, period),
            {schema.entity: names[ek], **({schema.time.name: period} if schema.time else {})},
        )
        row[attr] = c.value
    for ek in names:
        if not any(k[0] == ek for k in row_keys):
            row_keys[(ek, None)] = {
                schema.entity: names[ek],
                **({schema.time.name: None} if schema.time else {}),
            }
    for (ek, _), row in row_keys.items():
        for attr in static:
            winner = winners.get((ek, None, attr))
            if winner is not None:
                row[attr] = winner.value
    return [
        {col: row.get(col) for col in schema.columns}
        for _, row in sorted(row_keys.items(), key=lambda kv: (kv[1][schema.entity], str(kv[0][1])))
    ]


__all__ = ["Cell", "Table", "normalise_records", "reduce_cells"]
