"""Easy queries after CorpusQA appendix B: top-k, single-condition filters, extremes, counts.

Each maker returns a :class:`~experiments.synth.query_drawing.Query` with its SQL and an independent
Python twin, or ``None`` when the draw would be ambiguous (the caller draws again).
"""

from __future__ import annotations

from longctx.experiments.synth.query_drawing import (
    ALPHABETICAL,
    DrawContext,
    Query,
    draw_threshold,
    rows_in,
    written_value,
)


def top_k(c: DrawContext) -> Query | None:
    """Easy, basic ranking: the top k entities by a field, highest first."""
    y = c.year()
    f = c.numeric(y)
    vals = sorted(c.vals(f.name, y).values(), reverse=True)
    k = c.rng.choice([k for k in (3, 5, 10) if k <= max(3, len(vals) // 2)])
    if vals[k - 1] == vals[k]:
        return None
    text = (
        f"List the top {k} {c.domain.plural} with the highest {f.label} in {c.p(y)}, from "
        "highest to lowest."
    )
    sql = f"SELECT entity FROM facts WHERE fiscal_year = {y} ORDER BY {f.name} DESC LIMIT {k}"
    py = lambda t: [r["entity"] for r in sorted(rows_in(t, y), key=lambda r: -r[f.name])[:k]]
    return Query("top_k", "easy", text, "list", sql, (f.name,), (y,), python=py)


def filter_gt(c: DrawContext) -> Query | None:
    """Easy, single-condition filter: entities whose field exceeds a threshold."""
    y = c.year()
    f = c.numeric(y)
    thr = draw_threshold(c.rng, c.vals(f.name, y).values())
    if thr is None:
        return None
    text = (
        f"Which {c.domain.plural} reported {f.label} above {written_value(thr, f.kind)} in "
        f"{c.p(y)}?" + ALPHABETICAL
    )
    sql = f"SELECT entity FROM facts WHERE fiscal_year = {y} AND {f.name} > {thr!r} ORDER BY entity"
    py = lambda t: sorted(r["entity"] for r in rows_in(t, y) if r[f.name] > thr)
    return Query("filter_gt", "easy", text, "list", sql, (f.name,), (y,), python=py)


def extreme(c: DrawContext) -> Query | None:
    """Easy, simple aggregation: the entity with the highest or lowest field."""
    y = c.year()
    f = c.numeric(y)
    high = c.rng.random() < 0.6
    vals = sorted(c.vals(f.name, y).values(), reverse=high)
    if vals[0] == vals[1]:
        return None
    word = "highest" if high else "lowest"
    text = f"Which {c.domain.singular} had the {word} {f.label} in {c.p(y)}?"
    sql = (
        f"SELECT entity FROM facts WHERE fiscal_year = {y} ORDER BY {f.name} "
        f"{'DESC' if high else 'ASC'} LIMIT 1"
    )
    py = lambda t: (max if high else min)(rows_in(t, y), key=lambda r: r[f.name])["entity"]
    return Query("extreme", "easy", text, "string", sql, (f.name,), (y,), python=py)


def count_lt(c: DrawContext) -> Query | None:
    """Easy: how many entities have a field below a threshold."""
    y = c.year()
    f = c.numeric(y)
    thr = draw_threshold(c.rng, c.vals(f.name, y).values())
    if thr is None:
        return None
    text = (
        f"How many {c.domain.plural} reported {f.label} below {written_value(thr, f.kind)} in "
        f"{c.p(y)}?"
    )
    sql = f"SELECT COUNT(*) FROM facts WHERE fiscal_year = {y} AND {f.name} < {thr!r}"
    py = lambda t: sum(1 for r in rows_in(t, y) if r[f.name] < thr)
    return Query("count_lt", "easy", text, "number", sql, (f.name,), (y,), python=py)
