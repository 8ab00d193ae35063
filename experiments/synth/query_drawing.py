"""What every query maker draws from: the :class:`Query` it returns, the draw context (domain,
years, seeded RNG, SQL fact table), round thresholds, and numbers written as a question
writes them."""

from __future__ import annotations

import math
import random
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from longctx.experiments.synth.config import SynthConfig
from longctx.experiments.synth.domains import Domain

#: Appended to every question whose answer is a list.
ALPHABETICAL = " List them in alphabetical order."


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


class DrawContext:
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


def nice_number(x: float) -> float:
    """``x`` rounded to two significant figures, the way a person writes a threshold."""
    if x == 0:
        return 0.0
    digits = 1 - int(math.floor(math.log10(abs(x))))
    return round(x, digits)


def draw_threshold(rng: random.Random, values, empty_rate: float = 0.08) -> float | None:
    """A round threshold inside (or, rarely, above) the values' range, equal to none of them."""
    ordered = sorted(values)
    x = (
        ordered[-1] * 1.3 + 1
        if rng.random() < empty_rate and ordered[-1] > 0
        else ordered[int(rng.uniform(0.2, 0.8) * len(ordered))]
    )
    thr = nice_number(x)
    return None if thr in ordered else thr


def written_value(x: float, kind: str) -> str:
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


def written_margin(x: float, kind: str) -> str:
    """A difference written unambiguously: percentage points for rates."""
    return f"{x:g} percentage points" if kind == "percent" else written_value(x, kind)


def unit_clause(kind: str) -> str:
    """The sentence naming the unit an answer of this ``kind`` is given in ("" where
    none is needed)."""
    return {
        "usd_m": " Give the answer in USD millions.",
        "usd2": " Give the answer in USD.",
        "usd_int": " Give the answer in USD.",
    }.get(kind, "")


def rows_in(t, y):
    """The rows of year ``y`` in a Python twin's table (none when the year is missing)."""
    return t.get(y, [])
