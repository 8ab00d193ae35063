"""Query templates after CorpusQA appendix B, each with SQL and an independent Python twin.

Easy: top-k, single-condition filters, extremes, counts. Medium: ratios, multi-condition
filters, field comparisons, growth, grouped comparisons. Hard: multi-step calculations
and custom metrics (CorpusQA's "operating safety margin" and Z-score-like criteria).
Every maker returns ``None`` when the draw would be ambiguous (ties at a cut-off, a
threshold equal to a value), and the caller draws again.
"""

from __future__ import annotations

import math
import random
import re
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from experiments.synth.config import SynthConfig
from experiments.synth.domains import Domain, Metric

#: Field pairs compared directly (CorpusQA: "basic EPS higher than diluted EPS"; Figure 1:
#: "more net cash from financing activities than from operating activities").
COMPARISONS = {
    "finance": (("basic_eps", "diluted_eps"), ("financing_cash_flow", "operating_cash_flow")),
    "education": (("part_time_faculty", "full_time_faculty"),),
}
_SORTED = " List them in alphabetical order."
#: Share of drawn empty-list questions that are kept.
EMPTY_LIST_RATE = 0.15


@dataclass(frozen=True)
class Query:
    """A generated question with the SQL that answers it and what it reads."""

    kind: str
    difficulty: str
    text: str
    answer_type: str
    sql: str
    fields: tuple[str, ...]
    years: tuple[int, ...]
    categoricals: tuple[str, ...] = ()
    scope: tuple[str, Any] | None = None  # (categorical, its value)
    python: Callable[..., Any] | None = field(default=None, compare=False, repr=False)


class _Ctx:
    """What makers draw from: the domain, the years, a seeded RNG and the SQL fact table."""

    def __init__(
        self, conn: sqlite3.Connection, domain: Domain, cfg: SynthConfig, rng: random.Random
    ):
        self.conn, self.domain, self.cfg, self.rng = conn, domain, cfg, rng

    def year(self) -> int:
        return self.rng.choice(self.cfg.report_years)

    def vals(self, expr: str, year: int, where: str = "1") -> dict[str, float]:
        rows = self.conn.execute(
            f"SELECT entity, {expr} FROM facts WHERE fiscal_year = {year} AND {where}"
        )
        return {e: v for e, v in rows if v is not None}

    def numeric(self, year: int, positive: bool = False):
        fields = [
            f
            for f in self.domain.fields
            if not positive or min(self.vals(f.name, year).values()) > 0
        ]
        return self.rng.choice(fields)

    def p(self, year: int) -> str:
        return self.domain.period(year)


def _nice(x: float) -> float:
    """``x`` rounded to two significant figures, the way a person writes a threshold."""
    if x == 0:
        return 0.0
    digits = 1 - int(math.floor(math.log10(abs(x))))
    return round(x, digits)


def _threshold(rng: random.Random, values, empty_rate: float = 0.08) -> float | None:
    """A round threshold inside (or, rarely, above) the values' range, equal to none of them."""
    ordered = sorted(values)
    x = (
        ordered[-1] * 1.3 + 1
        if rng.random() < empty_rate and ordered[-1] > 0
        else ordered[int(rng.uniform(0.2, 0.8) * len(ordered))]
    )
    thr = _nice(x)
    return None if thr in ordered else thr


def _show(x: float, kind: str) -> str:
    """A threshold written as a question would write it."""
    if kind == "usd_m":
        return f"USD {x:,.0f} million" if x == int(x) else f"USD {x:,.1f} million"
    if kind == "count":
        return f"{x:,.0f}"
    if kind == "percent":
        return f"{x:g}%"
    if kind == "usd2":
        return f"${x:.2f}"
    return f"${x:,.0f}"


def _margin(x: float, kind: str) -> str:
    """A difference written unambiguously: percentage points for rates."""
    return f"{x:g} percentage points" if kind == "percent" else _show(x, kind)


def _in_unit(kind: str) -> str:
    return {
        "usd_m": " Give the answer in USD millions.",
        "usd2": " Give the answer in USD.",
        "usd_int": " Give the answer in USD.",
    }.get(kind, "")


def _rows(t, y):
    return t.get(y, [])


# -- easy ---------------------------------------------------------------------------------
def top_k(c: _Ctx) -> Query | None:
    """Easy, basic ranking: the top k entities by a field, highest first."""
    y = c.year()
    f = c.numeric(y)
    vals = sorted(c.vals(f.name, y).values(), reverse=True)
    k = c.rng.choice([k for k in (3, 5, 10) if k <= max(3, len(vals) // 2)])
    if vals[k - 1] == vals[k]:
        return None
    text = f"List the top {k} {c.domain.plural} with the highest {f.label} in {c.p(y)}, from highest to lowest."
    sql = f"SELECT entity FROM facts WHERE fiscal_year = {y} ORDER BY {f.name} DESC LIMIT {k}"
    py = lambda t: [r["entity"] for r in sorted(_rows(t, y), key=lambda r: -r[f.name])[:k]]
    return Query("top_k", "easy", text, "list", sql, (f.name,), (y,), python=py)


def filter_gt(c: _Ctx) -> Query | None:
    """Easy, single-condition filter: entities whose field exceeds a threshold."""
    y = c.year()
    f = c.numeric(y)
    thr = _threshold(c.rng, c.vals(f.name, y).values())
    if thr is None:
        return None
    text = (
        f"Which {c.domain.plural} reported {f.label} above {_show(thr, f.kind)} in {c.p(y)}?"
        + _SORTED
    )
    sql = f"SELECT entity FROM facts WHERE fiscal_year = {y} AND {f.name} > {thr!r} ORDER BY entity"
    py = lambda t: sorted(r["entity"] for r in _rows(t, y) if r[f.name] > thr)
    return Query("filter_gt", "easy", text, "list", sql, (f.name,), (y,), python=py)


def extreme(c: _Ctx) -> Query | None:
    """Easy, simple aggregation: the entity with the highest or lowest field."""
    y = c.year()
    f = c.numeric(y)
    high = c.rng.random() < 0.6
    vals = sorted(c.vals(f.name, y).values(), reverse=high)
    if vals[0] == vals[1]:
        return None
    word = "highest" if high else "lowest"
    text = f"Which {c.domain.singular} had the {word} {f.label} in {c.p(y)}?"
    sql = f"SELECT entity FROM facts WHERE fiscal_year = {y} ORDER BY {f.name} {'DESC' if high else 'ASC'} LIMIT 1"
    py = lambda t: (max if high else min)(_rows(t, y), key=lambda r: r[f.name])["entity"]
    return Query("extreme", "easy", text, "string", sql, (f.name,), (y,), python=py)


def count_lt(c: _Ctx) -> Query | None:
    """Easy: how many entities have a field below a threshold."""
    y = c.year()
    f = c.numeric(y)
    thr = _threshold(c.rng, c.vals(f.name, y).values())
    if thr is None:
        return None
    text = f"How many {c.domain.plural} reported {f.label} below {_show(thr, f.kind)} in {c.p(y)}?"
    sql = f"SELECT COUNT(*) FROM facts WHERE fiscal_year = {y} AND {f.name} < {thr!r}"
    py = lambda t: sum(1 for r in _rows(t, y) if r[f.name] < thr)
    return Query("count_lt", "easy", text, "number", sql, (f.name,), (y,), python=py)


# -- medium -------------------------------------------------------------------------------
def multi_filter(c: _Ctx) -> Query | None:
    """Medium, multi-condition combination: one field above and another below a threshold."""
    y = c.year()
    f1, f2 = c.rng.sample(list(c.domain.fields), 2)
    t1 = _threshold(c.rng, c.vals(f1.name, y).values(), 0.0)
    t2 = _threshold(c.rng, c.vals(f2.name, y).values(), 0.0)
    if t1 is None or t2 is None:
        return None
    text = (
        f"Which {c.domain.plural} had {f1.label} above {_show(t1, f1.kind)} and {f2.label} below "
        f"{_show(t2, f2.kind)} in {c.p(y)}?" + _SORTED
    )
    sql = f"SELECT entity FROM facts WHERE fiscal_year = {y} AND {f1.name} > {t1!r} AND {f2.name} < {t2!r} ORDER BY entity"
    py = lambda t: sorted(r["entity"] for r in _rows(t, y) if r[f1.name] > t1 and r[f2.name] < t2)
    return Query("multi_filter", "medium", text, "list", sql, (f1.name, f2.name), (y,), python=py)


def field_compare(c: _Ctx) -> Query | None:
    """Medium: entities whose one field exceeds another (CorpusQA's basic vs diluted EPS)."""
    y = c.year()
    a, b = (c.domain.field(n) for n in c.rng.choice(COMPARISONS[c.domain.name]))
    text = (
        f"List the {c.domain.plural} whose {a.label} was higher than their {b.label} in {c.p(y)}."
        + _SORTED
    )
    sql = (
        f"SELECT entity FROM facts WHERE fiscal_year = {y} AND {a.name} > {b.name} ORDER BY entity"
    )
    py = lambda t: sorted(r["entity"] for r in _rows(t, y) if r[a.name] > r[b.name])
    return Query("field_compare", "medium", text, "list", sql, (a.name, b.name), (y,), python=py)


def metric_extreme(c: _Ctx) -> Query | None:
    """Medium, ratio calculation: the entity with the highest custom metric."""
    y = c.year()
    m: Metric = c.rng.choice(c.domain.metrics)
    vals = sorted(c.vals(m.sql, y).values(), reverse=True)
    if vals[0] == vals[1]:
        return None
    text = f"Which {c.domain.singular} had the highest {m.description} in {c.p(y)}?"
    sql = f"SELECT entity FROM facts WHERE fiscal_year = {y} ORDER BY {m.sql} DESC LIMIT 1"
    py = lambda t: max(_rows(t, y), key=m.fn)["entity"]
    return Query("metric_extreme", "medium", text, "string", sql, m.fields, (y,), python=py)


def metric_average(c: _Ctx) -> Query | None:
    """Medium, simple custom metric: the metric's mean over all entities."""
    y = c.year()
    m: Metric = c.rng.choice(c.domain.metrics)
    text = f"What was the average {m.description} across all {c.domain.plural} in {c.p(y)}?"
    sql = f"SELECT AVG({m.sql}) FROM facts WHERE fiscal_year = {y}"
    py = lambda t: sum(m.fn(r) for r in _rows(t, y)) / len(_rows(t, y))
    return Query("metric_average", "medium", text, m.answer_type, sql, m.fields, (y,), python=py)


def group_difference(c: _Ctx) -> Query | None:
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
        f"Compare the average {f.label} of {c.domain.plural} whose {cat.label} is {a} with those whose {cat.label} "
        f"is {b} in {c.p(y)}: what is the first average minus the second?" + _in_unit(f.kind)
    )
    avg = lambda g: (
        f"(SELECT AVG({f.name}) FROM facts WHERE fiscal_year = {y} AND {cat.name} = '{g}')"
    )
    sql = f"SELECT {avg(a)} - {avg(b)}"

    def py(t):
        mean = lambda g: (lambda xs: sum(xs) / len(xs))(
            [r[f.name] for r in _rows(t, y) if r[cat.name] == g]
        )
        return mean(a) - mean(b)

    return Query(
        "group_difference", "medium", text, ans_type, sql, (f.name,), (y,), (cat.name,), python=py
    )


def growth_filter(c: _Ctx) -> Query | None:
    """Medium: entities whose field grew by more than a percentage across two years."""
    y = c.year()
    f = c.numeric(y - 1, positive=True)
    pct = c.rng.choice((0, 5, 10, 15))
    by = f" by more than {pct}%" if pct else ""
    text = (
        f"Which {c.domain.plural} increased their {f.label}{by} from {c.p(y - 1)} to {c.p(y)}?"
        + _SORTED
    )
    sql = (
        f"SELECT a.entity FROM facts a JOIN facts b ON a.entity = b.entity AND b.fiscal_year = {y - 1} "
        f"WHERE a.fiscal_year = {y} AND (a.{f.name} - b.{f.name}) * 100.0 / b.{f.name} > {pct} ORDER BY a.entity"
    )

    def py(t):
        before = {r["entity"]: r[f.name] for r in _rows(t, y - 1)}
        return sorted(
            r["entity"]
            for r in _rows(t, y)
            if (r[f.name] - before[r["entity"]]) * 100.0 / before[r["entity"]] > pct
        )

    return Query("growth_filter", "medium", text, "list", sql, (f.name,), (y - 1, y), python=py)


# -- hard ---------------------------------------------------------------------------------
def multi_step(c: _Ctx) -> Query | None:
    """Hard, multi-step (CorpusQA appendix B): filter, average a field, list members above it by a margin."""
    y = c.year()
    f1, f2 = c.rng.sample(list(c.domain.fields), 2)
    t1 = _threshold(c.rng, c.vals(f1.name, y).values(), 0.0)
    if t1 is None:
        return None
    spread = sorted(c.vals(f2.name, y).values())
    margin = _nice(abs(spread[len(spread) // 2]) * c.rng.choice((0.1, 0.2, 0.3)) or 1.0)
    text = (
        f"For all {c.domain.plural} with {f1.label} below {_show(t1, f1.kind)} in {c.p(y)}, calculate the average "
        f"{f2.label}. Then list the {c.domain.plural} in this group whose {f2.label} is more than "
        f"{_margin(margin, f2.kind)} above that average." + _SORTED
    )
    sql = (
        f"WITH g AS (SELECT entity, {f2.name} AS v FROM facts WHERE fiscal_year = {y} AND {f1.name} < {t1!r}) "
        f"SELECT entity FROM g WHERE v > (SELECT AVG(v) FROM g) + {margin!r} ORDER BY entity"
    )

    def py(t):
        group = [r for r in _rows(t, y) if r[f1.name] < t1]
        if not group:
            return []
        mean = sum(r[f2.name] for r in group) / len(group)
        return sorted(r["entity"] for r in group if r[f2.name] > mean + margin)

    return Query("multi_step", "hard", text, "list", sql, (f1.name, f2.name), (y,), python=py)


def metric_filter(c: _Ctx) -> Query | None:
    """Hard, advanced metric construction: a custom metric above a threshold within a group."""
    y = c.year()
    m: Metric = c.rng.choice(c.domain.metrics)
    cat = c.rng.choice(c.domain.categoricals)
    group = c.rng.choice(sorted(set(c.vals(cat.name, y).values())))
    vals = c.vals(m.sql, y, f"{cat.name} = '{group}'").values()
    thr = _threshold(c.rng, vals, 0.05)
    if thr is None:
        return None
    shown = f"{thr:g}%" if m.answer_type == "percentage" else f"{thr:g}"
    text = (
        f"Among {c.domain.plural} whose {cat.label} is {group}, identify those whose {m.description} exceeded "
        f"{shown} in {c.p(y)}." + _SORTED
    )
    sql = f"SELECT entity FROM facts WHERE fiscal_year = {y} AND {cat.name} = '{group}' AND {m.sql} > {thr!r} ORDER BY entity"
    py = lambda t: sorted(
        r["entity"] for r in _rows(t, y) if r[cat.name] == group and m.fn(r) > thr
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


def metric_change(c: _Ctx) -> Query | None:
    """Hard: entities whose custom metric rose by more than a margin across two years."""
    y = c.year()
    m: Metric = c.rng.choice(c.domain.metrics)
    d = c.rng.choice((0.5, 1, 2)) if m.answer_type == "percentage" else c.rng.choice((0, 0.5, 1))
    unit = " percentage points" if m.answer_type == "percentage" else ""
    text = (
        f"Which {c.domain.plural} increased their {m.description} by more than {d:g}{unit} from {c.p(y - 1)} "
        f"to {c.p(y)}?" + _SORTED
    )
    sql = (
        f"SELECT a.entity FROM facts a JOIN facts b ON a.entity = b.entity AND b.fiscal_year = {y - 1} "
        f"WHERE a.fiscal_year = {y} AND ({_qualify(m, 'a')}) - ({_qualify(m, 'b')}) > {d!r} ORDER BY a.entity"
    )

    def py(t):
        before = {r["entity"]: m.fn(r) for r in _rows(t, y - 1)}
        return sorted(r["entity"] for r in _rows(t, y) if m.fn(r) - before[r["entity"]] > d)

    return Query("metric_change", "hard", text, "list", sql, m.fields, (y - 1, y), python=py)


def group_metric_extreme(c: _Ctx) -> Query | None:
    """Hard, complex business logic: the category with the highest mean metric after a filter."""
    y = c.year()
    m: Metric = c.rng.choice(c.domain.metrics)
    cat = c.rng.choice(c.domain.categoricals)
    f = c.numeric(y)
    thr = _threshold(c.rng, c.vals(f.name, y).values(), 0.0)
    if thr is None:
        return None
    sql = (
        f"SELECT {cat.name}, AVG({m.sql}) AS s FROM facts WHERE fiscal_year = {y} AND {f.name} > {thr!r} "
        f"GROUP BY {cat.name} ORDER BY s DESC"
    )
    scores = [s for _, s in c.conn.execute(sql)]
    if len(scores) < 2 or scores[0] == scores[1]:
        return None
    text = (
        f"Considering only {c.domain.plural} with {f.label} above {_show(thr, f.kind)} in {c.p(y)}, which {cat.label} "
        f"had the highest average {m.description}?"
    )

    def py(t):
        groups: dict[str, list[float]] = {}
        for r in _rows(t, y):
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


MAKERS: dict[str, tuple[Callable[[_Ctx], Query | None], ...]] = {
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
    ctx = _Ctx(conn, domain, cfg, rng)
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
