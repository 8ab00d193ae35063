"""Generate a corpus directory: documents streamed to disk, fact table, questions, manifest.

Layout of ``out_dir``::

    docs/<YYYY-MM-DD>_<slug>.md   one Markdown file per document, sorted = chronological
    facts.sqlite                  documents, statements, resolved cells, wide fact table
    questions.jsonl               one question per line: answer, type, evidence, SQL
    manifest.json                 config, sizes, per-difficulty counts, needle position

Documents are rendered one at a time and written immediately; only the current
document's text is in memory, whatever the corpus size.
"""

from __future__ import annotations

import json
import random
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from longctx.experiments.synth import db, render
from longctx.experiments.synth.config import SynthConfig
from longctx.experiments.synth.facts import DocPlan, FactBase, build_fact_base
from longctx.experiments.synth.needle import confuser_depths, plan_needle
from longctx.experiments.synth.queries import build_queries
from longctx.experiments.synth.samples import DOCS_DIR, MANIFEST_FILE, QUESTIONS_FILE
from longctx.experiments.synth.truth import evidence_doc_ids, sql_answer
from longctx.retrieval.tokens import count_tokens

#: Bump when the output for a given config changes.
GENERATOR_VERSION = 1


@dataclass(frozen=True)
class GenerationResult:
    """What :func:`generate` produced (``seconds`` is wall time, not in the manifest)."""

    out_dir: Path
    num_documents: int
    total_tokens: int
    num_questions: int
    seconds: float


def _check_out_dir(out: Path) -> None:
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ValueError(
            f"Output directory {out} exists and is not empty; choose a new or empty directory"
        )


def _plants(cfg: SynthConfig) -> tuple[list[tuple[int, str, str]], object]:
    """Sentences to plant at token offsets: the needle and its confusers (if configured)."""
    if cfg.needle is None:
        return [], None
    plan = plan_needle(cfg.needle, cfg.seed)
    plants = [(int(cfg.needle.depth * cfg.target_tokens), plan.needle_text, "needle")]
    for depth, text in zip(
        confuser_depths(cfg.seed, cfg.needle.depth, len(plan.confusers)), plan.confusers
    ):
        plants.append((int(depth * cfg.target_tokens), text, "confuser"))
    return plants, plan


def _render(base: FactBase, plan: DocPlan, stmts, entity_names, local_plants) -> str:
    domain = base.domain
    rng = random.Random(f"{base.config.seed}/{domain.name}/{plan.doc_id}")
    if plan.kind == "report":
        sections = render.report_sections(rng, domain, plan, stmts)
        name = plan.entity or ""  # report_sections refused a report without one
    else:
        sections = render.noise_sections(rng, domain, plan, entity_names)
        name = rng.choice(entity_names)
    render.fill_to_budget(rng, domain, sections, plan.budget, name)
    return render.assemble(sections, local_plants)


def _write_documents(base: FactBase, docs_dir: Path, plants) -> tuple[dict[str, int], list[dict]]:
    """Render and write every document in order; return token counts and plant positions."""
    by_doc = base.doc_statements()
    names = [e["name"] for e in base.entities]
    counts: dict[str, int] = {}
    placed: list[dict] = []
    cum, cum_budget = 0, 0
    for i, plan in enumerate(base.docs):
        last = i == len(base.docs) - 1
        # Plants are placed in budget space (the renderer's own token estimates), which
        # keeps the planted depth exact even when documents land slightly off budget.
        local = [
            (o - cum_budget, t)
            for o, t, _ in plants
            if cum_budget <= o < cum_budget + plan.budget or (last and o >= cum_budget)
        ]
        cum_budget += plan.budget
        text = _render(base, plan, by_doc[plan.doc_id], names, local)
        (docs_dir / plan.doc_id).write_text(text, encoding="utf-8")
        n = count_tokens(text)
        for o, t, label in plants:
            idx = text.find(t)
            if (o - cum_budget + plan.budget, t) in local and idx >= 0:
                placed.append(
                    {
                        "label": label,
                        "doc_id": plan.doc_id,
                        "text": t,
                        "token_offset": cum + count_tokens(text[:idx]),
                    }
                )
        counts[plan.doc_id] = n
        cum += n
    return counts, placed


def _question_records(
    cfg: SynthConfig, base: FactBase, db_path: Path, needle_plan, placed
) -> list[dict]:
    conn = db.connect(db_path)
    try:
        queries = build_queries(conn, base.domain, cfg)
        records = []
        for q in queries:
            records.append(
                {
                    "question": q.text,
                    "answer": sql_answer(conn, q),
                    "answer_type": q.answer_type,
                    "difficulty": q.difficulty,
                    "kind": q.kind,
                    "evidence_doc_ids": evidence_doc_ids(conn, q),
                    "sql": q.sql,
                    "fields": list(q.fields),
                    "fiscal_years": list(q.years),
                }
            )
    finally:
        conn.close()
    if needle_plan is not None:
        doc = next(p["doc_id"] for p in placed if p["label"] == "needle")
        records.append(
            {
                "question": needle_plan.question,
                "answer": needle_plan.answer,
                "answer_type": "string",
                "difficulty": "needle",
                "kind": "needle",
                "evidence_doc_ids": [doc],
            }
        )
    prefix = f"synth-{cfg.domain}-{cfg.target_tokens}-s{cfg.seed}"
    return [{"id": f"{prefix}-{i:04d}", "domain": cfg.domain, **r} for i, r in enumerate(records)]


def generate(cfg: SynthConfig, out_dir: str | Path) -> GenerationResult:
    """Generate the corpus, fact table, questions and manifest for ``cfg`` under ``out_dir``.

    Deterministic: the same config writes byte-identical files.

    Raises:
        ValueError: ``out_dir`` is not empty, or the config cannot be satisfied.
        KeyError: unknown domain.
    """
    started = time.perf_counter()
    out = Path(out_dir)
    _check_out_dir(out)
    base = build_fact_base(cfg)
    docs_dir = out / DOCS_DIR
    docs_dir.mkdir(parents=True, exist_ok=True)
    db_path = out / db.DB_NAME
    db.write_database(base, db_path)
    plants, needle_plan = _plants(cfg)
    counts, placed = _write_documents(base, docs_dir, plants)
    db.set_token_counts(db_path, counts)
    total = sum(counts.values())
    for p in placed:
        p["depth"] = round(p["token_offset"] / total, 6)
    records = _question_records(cfg, base, db_path, needle_plan, placed)
    with open(out / QUESTIONS_FILE, "w", encoding="utf-8") as f:
        for r in records:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    manifest = _manifest(cfg, base, counts, records, placed)
    (out / MANIFEST_FILE).write_text(
        json.dumps(manifest, indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    return GenerationResult(out, len(counts), total, len(records), time.perf_counter() - started)


def _manifest(
    cfg: SynthConfig,
    base: FactBase,
    counts: dict[str, int],
    records: list[dict],
    placed: list[dict],
) -> dict:
    by_difficulty: dict[str, int] = {}
    for r in records:
        by_difficulty[r["difficulty"]] = by_difficulty.get(r["difficulty"], 0) + 1
    total = sum(counts.values())
    return {
        "generator_version": GENERATOR_VERSION,
        "config": asdict(cfg),
        "token_counter": "longctx.retrieval.tokens.count_tokens (cl100k)",
        "target_tokens": cfg.target_tokens,
        "total_tokens": total,
        "deviation": round(total / cfg.target_tokens - 1, 6),
        "num_documents": len(counts),
        "num_reports": sum(1 for d in base.docs if d.kind == "report"),
        "num_noise_documents": sum(1 for d in base.docs if d.kind == "noise"),
        "num_entities": len(base.entities),
        "num_questions": len(records),
        "questions_by_difficulty": by_difficulty,
        "plants": placed,
        "documents": [
            {
                "doc_id": d.doc_id,
                "kind": d.kind,
                "entity": d.entity,
                "year": d.year,
                "tokens": counts[d.doc_id],
            }
            for d in base.docs
        ],
    }
