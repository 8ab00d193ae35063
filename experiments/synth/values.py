"""Quantities and their written forms, and answers in CorpusQA's output format.

Every value is generated at a precision that each of its written forms states exactly
(money in steps of USD 0.1 million, rates to 0.1 point), so "$12.3 million",
"12,300,000 USD" and "USD 12.3M" all denote the same fact and no answer depends on
rounding in the text.
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from decimal import ROUND_HALF_UP, Decimal

#: Value kinds: USD millions (1 decimal), head counts, percentages (1 decimal),
#: per-share dollars (2 decimals), whole dollars.
KINDS = ("usd_m", "count", "percent", "usd2", "usd_int")


def _sign(value: float) -> str:
    return "-" if value < 0 else ""


def written_forms(value: float, kind: str) -> list[str]:
    """All the ways the renderer may write ``value`` in prose (table cells excluded).

    Why: tests and the evidence checker look a fact up in the rendered text by any of
    its forms, so the renderer must draw its prose forms from this list only.
    """
    s, a = _sign(value), abs(value)
    if kind == "usd_m":
        m = f"{a:,.1f}"
        return [
            f"{s}${m} million",
            f"{s}{round(a * 1_000_000):,} USD",
            f"USD {s}{m}M",
            f"{s}${round(a * 1000):,} thousand",
        ]
    if kind == "count":
        return [f"{int(value):,}", f"{int(value)}"]
    if kind == "percent":
        return [f"{value:.1f}%", f"{value:.1f} percent", f"{value:.1f} per cent"]
    if kind == "usd2":
        return [f"{s}${a:.2f}", f"{s}{a:.2f} USD", f"USD {s}{a:.2f}"]
    if kind == "usd_int":
        return [f"{s}${int(a):,}", f"{s}{int(a):,} USD", f"USD {s}{int(a):,}"]
    raise ValueError(f"Unknown value kind {kind!r}; expected one of {KINDS}")


def table_cell(value: float, kind: str) -> str:
    """The value as a table cell whose unit is in the column header; negatives in parentheses."""
    a = abs(value)
    body = {
        "usd_m": f"{a:,.1f}",
        "count": f"{int(a):,}",
        "percent": f"{a:.1f}",
        "usd2": f"{a:.2f}",
        "usd_int": f"{int(a):,}",
    }
    if kind not in body:
        raise ValueError(f"Unknown value kind {kind!r}; expected one of {KINDS}")
    return f"({body[kind]})" if value < 0 else body[kind]


def all_forms(value: float, kind: str) -> list[str]:
    """Prose forms plus the table-cell form: what a reader may find in a document."""
    return written_forms(value, kind) + [table_cell(value, kind)]


def pick_form(value: float, kind: str, rng: random.Random) -> str:
    """One prose form of ``value`` chosen at random, so the same quantity reads differently."""
    return rng.choice(written_forms(value, kind))


def unit_label(kind: str) -> str:
    """The unit written in a table header or a question ("USD millions", "%", ...)."""
    return {
        "usd_m": "USD millions",
        "count": "number",
        "percent": "%",
        "usd2": "USD",
        "usd_int": "USD",
    }[kind]


def round2(x: float) -> Decimal:
    """``x`` rounded half-up to 2 decimals (CorpusQA: numbers keep 2 decimal places)."""
    return Decimal(repr(float(x))).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)


def format_number(x: float) -> str:
    """A number answer: 2 decimals, no units, no thousands separators."""
    return str(round2(x))


def format_percent(x: float) -> str:
    """A percentage answer: ``x`` is already in percent; 2 decimals and a % sign."""
    return f"{round2(x)}%"


def format_list(items: Sequence[str]) -> str:
    """A list answer: a JSON array of strings (``[]`` when nothing matches)."""
    return json.dumps(list(items), ensure_ascii=False)


def format_answer(value, answer_type: str) -> str:
    """Render a computed answer in CorpusQA's format for ``answer_type``.

    Args:
        value: A list of strings, a string, an int (counts) or a float.
        answer_type: ``list``, ``string``, ``number`` or ``percentage``.
    """
    if answer_type == "list":
        return format_list(value)
    if answer_type == "string":
        return str(value)
    if answer_type == "number":
        return str(value) if isinstance(value, int) else format_number(value)
    if answer_type == "percentage":
        return format_percent(value)
    raise ValueError(f"Unknown answer type {answer_type!r}")
