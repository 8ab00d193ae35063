"""Values as HTML text for the report's cells: escaped text, numbers, USD, a strategy's colour
swatch, and the element id of a question's drill-down."""

from __future__ import annotations

import html
import re
from typing import Any

from longctx.experiments.reports.plots import strategy_color


def e(value: Any) -> str:
    """HTML-escaped text of any value (``None`` is empty)."""
    return "" if value is None else html.escape(str(value), quote=True)


def anchor(sample_id: Any) -> str:
    """The element id of a question's drill-down (``q-<id>``, safe characters only)."""
    return "q-" + re.sub(r"[^A-Za-z0-9_.-]", "_", str(sample_id))


def swatch(name: str) -> str:
    """A strategy's name after a square of its plot colour."""
    return f'<span class="swatch" style="background:{e(strategy_color(name))}"></span>{e(name)}'


def number(value: Any, digits: int = 2) -> str:
    """A number for a table cell (unescaped: callers escape)."""
    if value is None:
        return ""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)  # callers escape
    if not isinstance(value, float):
        return f"{value:,}"
    text = f"{value:,.{digits}f}".rstrip("0").rstrip(".")
    return "0" if text == "-0" else text  # a tiny negative rounds to zero, not to "-0"


def usd(value: float | None) -> str:
    """An estimated cost in USD (4 decimals below a dollar), or a marked "n/a" where a
    price is missing."""
    if value is None:
        return '<span class="na" title="no price for this model: give one with --prices">n/a</span>'
    return f"${value:,.4f}" if value < 1 else f"${value:,.2f}"


def usd_exact(value: float | None) -> str:
    """USD to the millionth (a cached prompt's saving per answer is often below a cent); blank
    when unknown."""
    return "" if value is None else f"${value:,.6f}"
