"""Medium queries after CorpusQA appendix B: ratios, multi-condition filters, field comparisons,
growth, grouped comparisons.

Each maker returns a :class:`~experiments.synth.query_drawing.Query` with its SQL and an independent
Python twin, or ``None`` when the draw would be ambiguous (the caller draws again).
"""

from __future__ import annotations

from longctx.experiments.synth.domains import Metric
from longctx.experiments.synth.query_drawing import (
    ALPHABETICAL,
    DrawContext,
    Query,
    draw_threshold,
    rows_in,
    unit_clause,
    written_value,
)

#: Field pairs compared directly (CorpusQA: "basic EPS higher than diluted EPS"; Figure 1:
#: "more net cash from financing activities than from operating activities").
COMPARISONS = {
    "finance": (("basic_eps", "diluted_eps"), ("financing_cash_flow", "operating_cash_flow")),
    "education": (("part_time_faculty", "full_time_faculty"),),
}


def multi_filter(c: DrawContext) -> Query | None:
    """Medium, multi-condition combination: one field above and another below a threshold."""
    y = c.year()
    f1, f2 = c.rng.sample(list(c.domain.fields), 2)
    t1 = draw_threshold(c.rng, c.vals(f1.name, y).values(), 0.0)
    t2 = draw_threshold(c.rng, c.vals(f2.name, y).values(), 0.0)
    if t1 is None or t2 is None:
        return None
    text = (
        f"Which {c.domain.plural} had {f1.label} above {written_value(t1, f1.kind)} and "
        f"{f2.label} below {written_value(t2, f2.kind)} in {c.p(y)}?" + ALPHABETICAL
    )
    sql = (
        f"SELECT entity FROM facts WHERE fiscal_year = {y} AND {f1.name} > {t1!r} AND {f2.name} "
        f"< {t2!r} ORDER BY entity"
    )
    py = lambda t: sorted(r["entity"] for r in rows_in(t, y) if r[f1.name] > t1 and r[f2.name] < t2)
    return Query("multi_filter", "medium", text, "list", sql, (f1.name, f2.name), (y,), python=py)


def field_compare(c: DrawContext) -> Query | None:
    """Medium: entities whose one field exceeds another (CorpusQA's basic vs diluted EPS)."""
    y = c.year()
    a, b = (c.domain.field(n) for n in c.rng.choice(COMPARISONS[c.domain.name]))
    text = (
        f"List the {c.domain.plural} whose {a.label} was higher than their {b.label} in {c.p(y)}."
        + ALPHABETICAL
    )
    sql = (
        f"SELECT entity FROM facts WHERE fiscal_year = {y} AND {a.name} > {b.name} ORDER BY entity"
    )
    py = lambda t: sorted(r["entity"] for r in rows_in(t, y) if r[a.name] > r[b.name])
    return Query("field_compare", "medium", text, "list", sql, (a.name, b.name), (y,), python=py)


def metric_extreme(c: DrawContext) -> Query | None:
    """Medium, ratio calculation: the entity with the highest custom metric."""
    y = c.year()
    m: Metric = c.rng.choice(c.domain.metrics)
    vals = sorted(c.vals(m.sql, y).values(), reverse=True)
    if vals[0] == vals[1]:
        return None
    text = f"Which {c.domain.singular} had the highest {m.description} in {c.p(y)}?"
    sql = f"SELECT entity FROM facts WHERE fiscal_year = {y} ORDER BY {m.sql} DESC LIMIT 1"
    py = lambda t: max(rows_in(t, y), key=m.fn)["entity"]
    return Query("metric_extreme", "medium", text, "string", sql, m.fields, (y,), python=py)


def metric_average(c: DrawContext) -> Query | None:
    """Medium, simple custom metric: the metric's mean over all entities."""
    y = c.year()
    m: Metric = c.rng.choice(c.domain.metrics)
    text = f"What was the average {m.description} across all {c.domain.plural} in {c.p(y)}?"
    sql = f"SELECT AVG({m.sql}) FROM facts WHERE fiscal_year = {y}"
    py = lambda t: sum(m.fn(r) for r in rows_in(t, y)) / len(rows_in(t, y))
    return Query("metric_average", "medium", text, m.answer_type, sql, m.fields, (y,), python=py)


def group_difference(c: DrawContext) -> Query | None:
    """Medium, grouped comparison: difference of a field's mean between two categories."""
    y = c.year()
    cat = c.rng.choice(c.domain.categoricals)
    f = c.numeric(y)
    present = sorted({v for v in c.vals(cat.name, y).values()})
    if len(present) < 2:
        return None
    a, b = c.rng.sample(present, 2)
    ans_type = "percentage" if f.kind == "percent" else "number"
    text = (
        f"Compare the average {f.label} of {c.domain.plural} whose {cat.label} is {a} with those "
        f"whose {cat.label} "
        f"is {b} in {c.p(y)}: what is the first average minus the second?" + unit_clause(f.kind)
    )
    avg = lambda g: (
        f"(SELECT AVG({f.name}) FROM facts WHERE fiscal_year = {y} AND {cat.name} = '{g}')"
    )
    sql = f"SELECT {avg(a)} - {avg(b)}"

    def py(t):
        mean = lambda g: (lambda xs: sum(xs) / len(xs))(
            [r[f.name] for r in rows_in(t, y) if r[cat.name] == g]
        )
        return mean(a) - mean(b)

    return Query(
        "group_difference", "medium", text, ans_type, sql, (f.name,), (y,), (cat.name,), python=py
    )


def growth_filter(c: DrawContext) -> Query | None:
    """Medium: entities whose field grew by more than a percentage across two years."""
    y = c.year()
    f = c.numeric(y - 1, positive=True)
    pct = c.rng.choice((0, 5, 10, 15))
    by = f" by more than {pct}%" if pct else ""
    text = (
        f"Which {c.domain.plural} increased their {f.label}{by} from {c.p(y - 1)} to {c.p(y)}?"
        + ALPHABETICAL
    )
    sql = (
        "SELECT a.entity FROM facts a JOIN facts b ON a.entity = b.entity AND b.fiscal_year = "
        f"{y - 1} "
        f"WHERE a.fiscal_year = {y} AND (a.{f.name} - b.{f.name}) * 100.0 / b.{f.name} > {pct} "
        "ORDER BY a.entity"
    )

    def py(t):
        before = {r["entity"]: r[f.name] for r in rows_in(t, y - 1)}
        return sorted(
            r["entity"]
            for r in rows_in(t, y)
            if (r[f.name] - before[r["entity"]]) * 100.0 / before[r["entity"]] > pct
        )

    return Query("growth_filter", "medium", text, "list", sql, (f.name,), (y - 1, y), python=py)
