"""Hard queries after CorpusQA appendix B: multi-step calculations and custom metrics (its
"operating safety margin" and Z-score-like criteria).

Each maker returns a :class:`~experiments.synth.query_drawing.Query` with its SQL and an independent
Python twin, or ``None`` when the draw would be ambiguous (the caller draws again).
"""

from __future__ import annotations

import re

from longctx.experiments.synth.domains import Metric
from longctx.experiments.synth.query_drawing import (
    ALPHABETICAL,
    DrawContext,
    Query,
    draw_threshold,
    nice_number,
    rows_in,
    written_margin,
    written_value,
)


def multi_step(c: DrawContext) -> Query | None:
    """Hard, multi-step (CorpusQA appendix B): filter, average a field, list members above it
    by a margin."""
    y = c.year()
    f1, f2 = c.rng.sample(list(c.domain.fields), 2)
    t1 = draw_threshold(c.rng, c.vals(f1.name, y).values(), 0.0)
    if t1 is None:
        return None
    spread = sorted(c.vals(f2.name, y).values())
    margin = nice_number(abs(spread[len(spread) // 2]) * c.rng.choice((0.1, 0.2, 0.3)) or 1.0)
    text = (
        f"For all {c.domain.plural} with {f1.label} below {written_value(t1, f1.kind)} in "
        f"{c.p(y)}, calculate the average "
        f"{f2.label}. Then list the {c.domain.plural} in this group whose {f2.label} is more than "
        f"{written_margin(margin, f2.kind)} above that average." + ALPHABETICAL
    )
    sql = (
        f"WITH g AS (SELECT entity, {f2.name} AS v FROM facts WHERE fiscal_year = {y} AND "
        f"{f1.name} < {t1!r}) "
        f"SELECT entity FROM g WHERE v > (SELECT AVG(v) FROM g) + {margin!r} ORDER BY entity"
    )

    def py(t):
        group = [r for r in rows_in(t, y) if r[f1.name] < t1]
        if not group:
            return []
        mean = sum(r[f2.name] for r in group) / len(group)
        return sorted(r["entity"] for r in group if r[f2.name] > mean + margin)

    return Query("multi_step", "hard", text, "list", sql, (f1.name, f2.name), (y,), python=py)


def metric_filter(c: DrawContext) -> Query | None:
    """Hard, advanced metric construction: a custom metric above a threshold within a group."""
    y = c.year()
    m: Metric = c.rng.choice(c.domain.metrics)
    cat = c.rng.choice(c.domain.categoricals)
    group = c.rng.choice(sorted(set(c.vals(cat.name, y).values())))
    vals = c.vals(m.sql, y, f"{cat.name} = '{group}'").values()
    thr = draw_threshold(c.rng, vals, 0.05)
    if thr is None:
        return None
    shown = f"{thr:g}%" if m.answer_type == "percentage" else f"{thr:g}"
    text = (
        f"Among {c.domain.plural} whose {cat.label} is {group}, identify those whose "
        f"{m.description} exceeded {shown} in {c.p(y)}." + ALPHABETICAL
    )
    sql = (
        f"SELECT entity FROM facts WHERE fiscal_year = {y} AND {cat.name} = '{group}' AND "
        f"{m.sql} > {thr!r} ORDER BY entity"
    )
    py = lambda t: sorted(
        r["entity"] for r in rows_in(t, y) if r[cat.name] == group and m.fn(r) > thr
    )
    return Query(
        "metric_filter",
        "hard",
        text,
        "list",
        sql,
        m.fields,
        (y,),
        (cat.name,),
        (cat.name, group),
        python=py,
    )


def metric_change(c: DrawContext) -> Query | None:
    """Hard: entities whose custom metric rose by more than a margin across two years."""
    y = c.year()
    m: Metric = c.rng.choice(c.domain.metrics)
    d = c.rng.choice((0.5, 1, 2)) if m.answer_type == "percentage" else c.rng.choice((0, 0.5, 1))
    unit = " percentage points" if m.answer_type == "percentage" else ""
    text = (
        f"Which {c.domain.plural} increased their {m.description} by more than {d:g}{unit} from "
        f"{c.p(y - 1)} to {c.p(y)}?" + ALPHABETICAL
    )
    sql = (
        "SELECT a.entity FROM facts a JOIN facts b ON a.entity = b.entity AND b.fiscal_year = "
        f"{y - 1} "
        f"WHERE a.fiscal_year = {y} AND ({_qualify(m, 'a')}) - ({_qualify(m, 'b')}) > {d!r} "
        "ORDER BY a.entity"
    )

    def py(t):
        before = {r["entity"]: m.fn(r) for r in rows_in(t, y - 1)}
        return sorted(r["entity"] for r in rows_in(t, y) if m.fn(r) - before[r["entity"]] > d)

    return Query("metric_change", "hard", text, "list", sql, m.fields, (y - 1, y), python=py)


def group_metric_extreme(c: DrawContext) -> Query | None:
    """Hard, complex business logic: the category with the highest mean metric after a filter."""
    y = c.year()
    m: Metric = c.rng.choice(c.domain.metrics)
    cat = c.rng.choice(c.domain.categoricals)
    f = c.numeric(y)
    thr = draw_threshold(c.rng, c.vals(f.name, y).values(), 0.0)
    if thr is None:
        return None
    sql = (
        f"SELECT {cat.name}, AVG({m.sql}) AS s FROM facts WHERE fiscal_year = {y} AND {f.name} > "
        f"{thr!r} GROUP BY {cat.name} ORDER BY s DESC"
    )
    scores = [s for _, s in c.conn.execute(sql)]
    if len(scores) < 2 or scores[0] == scores[1]:
        return None
    text = (
        f"Considering only {c.domain.plural} with {f.label} above {written_value(thr, f.kind)} in "
        f"{c.p(y)}, which {cat.label} had the highest average {m.description}?"
    )

    def py(t):
        groups: dict[str, list[float]] = {}
        for r in rows_in(t, y):
            if r[f.name] > thr:
                groups.setdefault(r[cat.name], []).append(m.fn(r))
        return max(groups, key=lambda g: sum(groups[g]) / len(groups[g]))

    return Query(
        "group_metric_extreme",
        "hard",
        text,
        "string",
        f"SELECT {cat.name} FROM ({sql}) LIMIT 1",
        tuple(dict.fromkeys(m.fields + (f.name,))),
        (y,),
        (cat.name,),
        python=py,
    )


def _qualify(m: Metric, alias: str) -> str:
    """``m.sql`` with every field prefixed by a table alias."""
    return re.sub(r"\b(" + "|".join(m.fields) + r")\b", lambda mt: f"{alias}.{mt.group(1)}", m.sql)
