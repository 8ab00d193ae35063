"""Query templates after CorpusQA appendix B, each with SQL and an independent Python twin, drawn
per difficulty in the configured mix.

Easy (:mod:`~experiments.synth.easy_queries`): top-k, single-condition filters, extremes, counts.
Medium (:mod:`~experiments.synth.medium_queries`): ratios, multi-condition filters, field
comparisons, growth, grouped comparisons. Hard (:mod:`~experiments.synth.hard_queries`):
multi-step calculations and custom metrics (CorpusQA's "operating safety margin" and Z-score-like
criteria). What they draw from: :mod:`~experiments.synth.query_drawing`. Every maker returns
``None`` when the draw would be ambiguous (ties at a cut-off, a threshold equal to a value), and
the caller draws again.
"""

from __future__ import annotations

import random
import sqlite3
from collections.abc import Callable

from longctx.experiments.synth.config import SynthConfig
from longctx.experiments.synth.domains import Domain
from longctx.experiments.synth.easy_queries import count_lt, extreme, filter_gt, top_k
from longctx.experiments.synth.hard_queries import (
    group_metric_extreme,
    metric_change,
    metric_filter,
    multi_step,
)
from longctx.experiments.synth.medium_queries import (
    field_compare,
    group_difference,
    growth_filter,
    metric_average,
    metric_extreme,
    multi_filter,
)
from longctx.experiments.synth.query_drawing import DrawContext, Query

#: Share of drawn empty-list questions that are kept.
EMPTY_LIST_RATE = 0.15

#: The query makers of each difficulty, drawn from in this order by the seeded RNG.
MAKERS: dict[str, tuple[Callable[[DrawContext], Query | None], ...]] = {
    "easy": (top_k, filter_gt, extreme, count_lt),
    "medium": (
        multi_filter,
        field_compare,
        metric_extreme,
        metric_average,
        group_difference,
        growth_filter,
    ),
    "hard": (multi_step, metric_filter, metric_change, group_metric_extreme),
}


def difficulty_counts(cfg: SynthConfig) -> dict[str, int]:
    """Questions per difficulty, after the configured mix (largest remainders)."""
    raw = [share * cfg.num_questions for share in cfg.difficulty_mix]
    counts = [int(x) for x in raw]
    for i in sorted(range(3), key=lambda i: raw[i] - counts[i], reverse=True)[
        : cfg.num_questions - sum(counts)
    ]:
        counts[i] += 1
    return dict(zip(("easy", "medium", "hard"), counts))


def build_queries(conn: sqlite3.Connection, domain: Domain, cfg: SynthConfig) -> list[Query]:
    """Draw ``cfg.num_questions`` distinct, unambiguous queries (deterministic for the seed)."""
    rng = random.Random(f"{cfg.seed}/{cfg.domain}/queries")
    ctx = DrawContext(conn, domain, cfg, rng)
    out: list[Query] = []
    seen: set[str] = set()
    for difficulty, count in difficulty_counts(cfg).items():
        made, attempts = 0, 0
        while made < count and attempts < 200 * count:
            attempts += 1
            query = rng.choice(MAKERS[difficulty])(ctx)
            if query is None or query.text in seen:
                continue
            # CorpusQA allows "[]", but most of its list answers are not empty.
            if (
                query.answer_type == "list"
                and not conn.execute(query.sql).fetchone()
                and rng.random() > EMPTY_LIST_RATE
            ):
                continue
            seen.add(query.text)
            out.append(query)
            made += 1
    return out
