"""The records (cells) each generated question needs: entity, field, year, value, and
their document.

Evidence documents say *where* an answer's facts are; records say *what* they are. The
evidence ceilings (:mod:`longctx.experiments.ceilings.measure`) need both: MemAgent's ceiling asks
whether the minimal rendering of the needed records fits its memory, and the gold sub-questions
of PAI and Self-Ask name the entities and fields the records cover.

The queries are drawn again from the fact table with the manifest's config (the draw is
deterministic for a seed) and matched to ``questions.jsonl`` by text; the cells are read
from ``resolved`` with the clause of :func:`longctx.experiments.synth.truth.cells_clause`
(a test checks that the records' documents are exactly the evidence documents).
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from pathlib import Path

from longctx.experiments.synth import db
from longctx.experiments.synth.config import config_from_dict
from longctx.experiments.synth.domains import Categorical, Domain, FieldSpec, get_domain
from longctx.experiments.synth.facts import STATIC
from longctx.experiments.synth.queries import build_queries
from longctx.experiments.synth.query_drawing import Query
from longctx.experiments.synth.samples import MANIFEST_FILE, read_questions
from longctx.experiments.synth.truth import cells_clause

# re-exported: its home before the ceiling rules moved into graphs
from longctx.graphs.plugin.ceiling import render_records  # noqa: F401


@dataclass(frozen=True)
class Record:
    """One cell a question reads, as the latest document states it (``year`` 0: a
    static attribute)."""

    entity: str
    field: str
    year: int
    value: str
    doc_id: str


@dataclass(frozen=True)
class QuestionRecords:
    """What one question needs: its cells, and readable sub-questions (one per entity)."""

    records: tuple[Record, ...]
    sub_questions: tuple[str, ...]


def _value_text(value: float | None, text: str | None) -> str:
    """The shortest exact form: the number without trailing zeros, or the categorical's text."""
    if value is None:
        return str(text)
    return f"{value:.6f}".rstrip("0").rstrip(".")


def needed_cells(conn: sqlite3.Connection, query: Query) -> list[Record]:
    """The resolved cells ``query`` reads (fields x years in scope, plus its categoricals), in
    corpus order."""
    where, params = cells_clause(query)
    sql = (
        "SELECT r.entity, r.field, r.fiscal_year, r.value, r.text, r.doc_id FROM resolved r "
        f"JOIN documents d ON d.doc_id = r.doc_id WHERE {where} ORDER BY d.ord, r.entity, "
        "r.fiscal_year, r.field"
    )
    return [Record(e, f, y, _value_text(v, t), d) for e, f, y, v, t, d in conn.execute(sql, params)]


def _label(domain: Domain, name: str) -> str:
    specs: tuple[FieldSpec | Categorical, ...] = (*domain.fields, *domain.categoricals)
    for spec in specs:
        if spec.name == name:
            return spec.label
    return name.replace("_", " ")


def gold_sub_questions(domain: Domain, records: list[Record]) -> list[str]:
    """One sub-question per entity, naming every field and period of it the question reads.

    "What was the revenue and net income of Acme Corp in fiscal 2023 and fiscal 2024?"; the
    entity order is the records' (corpus) order. These stand in for a perfect decomposer.
    """
    by_entity: dict[str, tuple[dict[str, None], dict[int, None]]] = {}
    for r in records:
        fields, years = by_entity.setdefault(r.entity, ({}, {}))
        fields[_label(domain, r.field)] = None
        if r.year != STATIC:
            years[r.year] = None
    out = []
    for entity, (fields, years) in by_entity.items():
        when = f" in {' and '.join(domain.period(y) for y in sorted(years))}" if years else ""
        out.append(f"What was the {' and '.join(fields)} of {entity}{when}?")
    return out


def load_records(path: str | Path) -> dict[str, QuestionRecords]:
    """Records and gold sub-questions of every question of a generated corpus, by question id.

    A needle question needs one record: the needle's answer (entity = the question).

    Raises:
        FileNotFoundError: ``path`` is not a generated corpus.
        ValueError: the redrawn queries do not match ``questions.jsonl`` (another
            generator version).
    """
    root = Path(path)
    manifest = json.loads((root / MANIFEST_FILE).read_text(encoding="utf-8"))
    cfg = config_from_dict(manifest["config"])
    domain = get_domain(cfg.domain)
    conn = db.connect(root / db.DB_NAME)
    try:
        queries = {q.text: q for q in build_queries(conn, domain, cfg)}
        out: dict[str, QuestionRecords] = {}
        for rec in read_questions(root):
            if rec.get("kind") == "needle":
                cells = [
                    Record(
                        rec["question"], "answer", STATIC, rec["answer"], rec["evidence_doc_ids"][0]
                    )
                ]
                out[rec["id"]] = QuestionRecords(tuple(cells), (rec["question"],))
                continue
            query = queries.get(rec["question"])
            if query is None:
                raise ValueError(
                    f"{root}: question {rec['id']} is not among the queries its config draws "
                    "(generator version changed?)"
                )
            cells = needed_cells(conn, query)
            out[rec["id"]] = QuestionRecords(tuple(cells), tuple(gold_sub_questions(domain, cells)))
        return out
    finally:
        conn.close()
