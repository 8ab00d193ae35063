"""The fact base: entities, their values per period, restatements, and the document plan.

Facts come first and text second (CorpusQA built in reverse): every value a document
will state is decided here, recorded as a *statement* ``(doc_id, entity, period, field,
value)``, and only then rendered. A report for year ``y`` states year ``y`` and restates
year ``y - 1`` as its comparative; a share of comparatives differ from what the earlier
report said, and the latest file wins (CorpusQA appendix C, rule 3).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from longctx.experiments.synth.config import SynthConfig
from longctx.experiments.synth.domains import Domain, get_domain
from longctx.experiments.synth.names import slug

#: Smallest per-document budget that still holds a report's tables and prose.
MIN_DOC_BUDGET = 1_500
#: Fewest entities a corpus has, so top-k and filter questions stay meaningful.
MIN_ENTITIES = 4
#: Fiscal-year sentinel for static (categorical) statements.
STATIC = 0


@dataclass(frozen=True)
class DocPlan:
    """One document to render.

    Attributes:
        doc_id: File name under ``docs/``; names start with the publication date, so
            sorted order is chronological and "latest file" is well defined.
        published: Publication date, ``YYYY-MM-DD``.
        kind: ``report`` (states facts) or ``noise`` (states none).
        entity: Entity name for reports.
        year: Reporting year for reports.
        budget: Token budget of the rendered document.
    """

    doc_id: str
    published: str
    kind: str
    entity: str | None
    year: int | None
    budget: int


@dataclass(frozen=True)
class Statement:
    """A value as one document states it (``fiscal_year`` 0 for static attributes)."""

    doc_id: str
    entity: str
    fiscal_year: int
    field: str
    value: float | None = None
    text: str | None = None


@dataclass
class FactBase:
    """Entities, document plan and every statement, before any text exists."""

    domain: Domain
    config: SynthConfig
    entities: list[dict]
    docs: list[DocPlan]
    statements: list[Statement] = field(default_factory=list)

    def doc_statements(self) -> dict[str, list[Statement]]:
        """Statements grouped by document id."""
        out: dict[str, list[Statement]] = {d.doc_id: [] for d in self.docs}
        for s in self.statements:
            out[s.doc_id].append(s)
        return out


def corpus_shape(cfg: SynthConfig) -> tuple[int, int]:
    """Number of entities and noise documents for the target size.

    Raises:
        ValueError: the target is too small to hold ``MIN_ENTITIES`` entities' reports.
    """
    years = len(cfg.report_years)
    n_docs = max(1, round(cfg.target_tokens / cfg.doc_tokens))
    n_entities = max(MIN_ENTITIES, round(n_docs * (1 - cfg.noise_rate) / years))
    n_noise = max(0, n_docs - n_entities * years)
    if cfg.noise_rate > 0 and n_noise == 0:
        n_noise = 1
    total = n_entities * years + n_noise
    if cfg.target_tokens / total < MIN_DOC_BUDGET:
        raise ValueError(
            f"target_tokens={cfg.target_tokens:,} is too small for {total} documents of at least "
            f"{MIN_DOC_BUDGET} tokens; use at least "
            f"{MIN_DOC_BUDGET * (MIN_ENTITIES * years + 1):,} tokens"
        )
    return n_entities, n_noise


def _perturb(rng: random.Random, value: float, kind: str) -> float:
    """A restated value that differs from ``value`` at the kind's precision."""
    sign = rng.choice((-1, 1))
    if kind == "percent":
        return round(min(99.9, max(0.1, value + sign * rng.uniform(0.3, 2.0))), 1)
    if kind == "usd2":
        return round(value + sign * rng.uniform(0.01, 0.12), 2) + 0.0
    if kind in ("count", "usd_int"):
        return float(max(1, int(value * (1 + sign * rng.uniform(0.01, 0.05))) + sign))
    new = round(value * (1 + sign * rng.uniform(0.02, 0.1)), 1)
    return new if new not in (value, 0.0) else round(value + sign * 0.3, 1)


def _series(
    rng: random.Random, domain: Domain, ent: dict, fiscal_years: list[int]
) -> dict[int, dict[str, float]]:
    out: dict[int, dict[str, float]] = {}
    prev = None
    for fy in fiscal_years:
        prev = {k: v + 0.0 for k, v in domain.year_values(rng, ent, prev).items()}
        out[fy] = prev
    return out


def _publication(rng: random.Random, year: int) -> str:
    return f"{year}-{rng.randint(2, 4):02d}-{rng.randint(1, 28):02d}"


def build_fact_base(cfg: SynthConfig) -> FactBase:
    """Draw entities, values, restatements and the document plan for ``cfg``.

    Deterministic for ``cfg``: all draws come from generators seeded by strings built
    from the seed and the domain.
    """
    domain = get_domain(cfg.domain)
    rng = random.Random(f"{cfg.seed}/{cfg.domain}/facts")
    n_entities, n_noise = corpus_shape(cfg)
    taken: set[str] = set()
    entities = [domain.new_entity(rng, taken) for _ in range(n_entities)]
    years = list(cfg.report_years)
    fiscal_years = [years[0] - 1] + years
    plans: list[tuple[str, str, str | None, int | None]] = []
    statements: list[Statement] = []
    for ent in entities:
        truth = _series(rng, domain, ent, fiscal_years)
        ent["truth"] = truth
        doc_for = {}
        for y in years:
            published = _publication(rng, y + 1)
            doc_id = f"{published}_{slug(ent['name'])}_{slug(domain.document_kind)}-{y}.md"
            doc_for[y] = doc_id
            plans.append((doc_id, "report", ent["name"], y))
            statements += [
                Statement(doc_id, ent["name"], STATIC, c.name, text=ent[c.name])
                for c in domain.categoricals
            ]
        statements += _entity_statements(rng, domain, cfg, ent, doc_for, years)
    for i in range(n_noise):
        published = f"{rng.choice(years) + 1}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
        plans.append((f"{published}_industry-digest-{i + 1:04d}.md", "noise", None, None))
    plans.sort()
    budgets = _split_budget(cfg.target_tokens, len(plans))
    docs = [DocPlan(d, d[:10], k, e, y, b) for (d, k, e, y), b in zip(plans, budgets)]
    return FactBase(domain=domain, config=cfg, entities=entities, docs=docs, statements=statements)


def _entity_statements(
    rng, domain: Domain, cfg: SynthConfig, ent: dict, doc_for: dict, years: list[int]
) -> list[Statement]:
    """Statements of one entity: each report states its year and restates the previous one."""
    out = []
    truth = ent["truth"]
    for y in years:
        for f in domain.fields:
            final = truth[y][f.name]
            restated_later = (y + 1) in doc_for and rng.random() < cfg.restatement_rate
            current = _perturb(rng, final, f.kind) if restated_later else final
            out.append(Statement(doc_for[y], ent["name"], y, f.name, current))
            out.append(Statement(doc_for[y], ent["name"], y - 1, f.name, truth[y - 1][f.name]))
    return out


def _split_budget(total: int, n: int) -> list[int]:
    """``n`` integer budgets summing to ``total``."""
    return [(total * (i + 1)) // n - (total * i) // n for i in range(n)]
