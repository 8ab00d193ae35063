"""Deterministic normalisation of extracted values: numbers with scales, currencies and percentages.

The model copies each value as written ("12.34B USD", "NOK 4.7 billion", "$12,345,600
thousand", "45.2 per cent", "(1,234.5)"); this module turns it into a number in the
attribute's declared unit with exact decimal arithmetic, so the same fact written in
different forms gives the same double (and the same SQL answer) every time.

Rules (also in ``docs/structured.md``):

* Separators: ``1,234,567.8`` and ``1.234.567,8`` and ``1 234 567,8`` and ``4,7`` are
  read by position: with both ``,`` and ``.``, the last one is the decimal mark; a lone
  ``,`` followed by exactly three digits (or repeated) groups thousands, otherwise it is
  a decimal comma; a repeated ``.`` groups thousands.
* Negatives: a leading minus (also before a currency: ``-$1.2``) or parentheses ``(1.2)``.
* Scale words (``thousand``, ``million``/``mn``/``M``, ``billion``/``bn``/``B``,
  ``trillion``...) convert to the unit's own scale (``"USD million"``).
* No scale word: a value with a currency marker is an absolute amount (``12,345,600,000
  USD`` is 12,345.6 in ``USD million``); a bare number is already in the attribute's unit
  (a table cell under a "USD millions" header).
* Percentages keep their points (``45.2%`` -> 45.2). No exchange rates are applied: a
  currency other than the unit's is kept as stated and reported in a note.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

#: Scale words (lower case) -> multiplier. Single letters count only right after a number.
SCALE_WORDS = {
    "thousand": 10**3,
    "thousands": 10**3,
    "k": 10**3,
    "000s": 10**3,
    "million": 10**6,
    "millions": 10**6,
    "mn": 10**6,
    "mm": 10**6,
    "mio": 10**6,
    "mln": 10**6,
    "m": 10**6,
    "billion": 10**9,
    "billions": 10**9,
    "bn": 10**9,
    "bln": 10**9,
    "b": 10**9,
    "trillion": 10**12,
    "trillions": 10**12,
    "tn": 10**12,
    "t": 10**12,
    "lakh": 10**5,
    "crore": 10**7,
}
_SINGLE_LETTER = {"k", "m", "b", "t"}
#: Currency symbols and ISO-like codes -> code.
CURRENCY_SYMBOLS = {
    "us$": "USD",
    "$": "USD",
    "€": "EUR",
    "£": "GBP",
    "¥": "JPY",
    "₹": "INR",
    "₩": "KRW",
}
CURRENCY_CODES = (
    "USD",
    "EUR",
    "GBP",
    "JPY",
    "CNY",
    "RMB",
    "NOK",
    "SEK",
    "DKK",
    "CHF",
    "CAD",
    "AUD",
    "INR",
    "KRW",
    "HKD",
    "SGD",
    "BRL",
    "MXN",
    "ZAR",
    "NZD",
)
_CODE = re.compile(r"(?<![A-Za-z])(" + "|".join(CURRENCY_CODES) + r")(?![A-Za-z])", re.I)
_NUMBER = re.compile(r"\d{1,3}(?:[,.\u00a0\u202f' ]\d{3})+(?:[.,]\d+)?|\d+(?:[.,]\d+)?|[.,]\d+")
_PERCENT = re.compile(r"%|\bper\s*cent\b|\bpercent(?:age)?\b|\bpct\b", re.I)
_WORD = re.compile(r"[a-z]+|000s", re.I)
_YEAR = re.compile(r"(?<!\d)(1[89]\d\d|2[01]\d\d)(?!\d)")
_SHORT_FY = re.compile(r"\bFY\s?'?(\d\d)\b", re.I)
_ISO_DATE = re.compile(r"(?<!\d)(\d{4})[-/.](\d{1,2})(?:[-/.](\d{1,2}))?(?!\d)")
TRUE_WORDS = {"true", "yes", "y", "1"}
FALSE_WORDS = {"false", "no", "n", "0"}


class ValueNotUnderstood(ValueError):
    """A value that should be a number (or year, date, boolean) holds none."""


@dataclass(frozen=True)
class Quantity:
    """A parsed amount: the number as written, its scale, currency and percent sign."""

    number: Decimal
    scale: int | None
    currency: str | None
    percent: bool


@dataclass(frozen=True)
class Unit:
    """An attribute's unit: its scale (``USD million`` -> 10**6), currency and percent flag."""

    scale: int
    currency: str | None
    percent: bool


def _digits(token: str) -> Decimal:
    """One number token with its separators read by position (see the module rules)."""
    s = re.sub(r"[\u00a0\u202f' ]", "", token)
    if "," in s and "." in s:
        decimal_mark = "," if s.rfind(",") > s.rfind(".") else "."
        other = "." if decimal_mark == "," else ","
        s = s.replace(other, "").replace(decimal_mark, ".")
    elif "," in s:
        parts = s.split(",")
        s = s.replace(",", "") if len(parts) > 2 or len(parts[1]) == 3 else s.replace(",", ".")
    elif s.count(".") > 1:
        s = s.replace(".", "")
    if s.startswith("."):
        s = "0" + s
    try:
        return Decimal(s)
    except InvalidOperation as exc:  # pragma: no cover - the regex admits only digits and marks
        raise ValueNotUnderstood(f"not a number: {token!r}") from exc


def _currency(text: str) -> str | None:
    low = text.lower()
    for symbol, code in CURRENCY_SYMBOLS.items():
        if symbol in low:
            return code
    m = _CODE.search(text)
    if m:
        code = m.group(1).upper()
        return "CNY" if code == "RMB" else code
    if re.search(r"\bdollars?\b", low):
        return "USD"
    return None


def _scale(text: str, number_end: int) -> int | None:
    """The scale word of ``text``: any full word, or a single letter right after the number."""
    attached = re.match(r"\s*([A-Za-z]+)\b", text[number_end:])
    if attached and attached.group(1).lower() in SCALE_WORDS:
        return SCALE_WORDS[attached.group(1).lower()]
    for word in _WORD.findall(text):
        low = word.lower()
        if low in SCALE_WORDS and low not in _SINGLE_LETTER:
            return SCALE_WORDS[low]
    return None


def parse_quantity(text: object) -> Quantity:
    """The first number of ``text`` with its sign, scale, currency and percent sign.

    Raises:
        ValueNotUnderstood: ``text`` holds no number.
    """
    if isinstance(text, bool):
        raise ValueNotUnderstood(f"a boolean is not a number: {text!r}")
    if isinstance(text, (int, float)):
        return Quantity(
            Decimal(repr(text)) if isinstance(text, float) else Decimal(text), None, None, False
        )
    raw = str(text).strip()
    m = _NUMBER.search(raw)
    if not m:
        raise ValueNotUnderstood(f"no number in {raw!r}")
    number = _digits(m.group(0))
    before = raw[: m.start()]
    negative = bool(
        re.search(r"[-\u2212\u2013]\s*(?:[A-Za-z]{3}\s*|US\$\s*|[$€£¥₹₩]\s*)?$", before)
    )
    negative = (
        negative
        or (before.rstrip().endswith("(") and ")" in raw[m.end() :])
        or bool(re.match(r"\s*\(", raw) and raw.rstrip().endswith(")"))
    )
    return Quantity(
        -number if negative else number,
        _scale(raw, m.end()),
        _currency(raw),
        bool(_PERCENT.search(raw)),
    )


def parse_unit(unit: str) -> Unit:
    """``"USD million"`` -> scale 10**6, USD; ``"%"`` -> percent; ``""`` / ``"count"`` -> scale
    1."""
    text = unit or ""
    scale = 1
    for word in _WORD.findall(text):
        if word.lower() in SCALE_WORDS and (
            word.lower() not in _SINGLE_LETTER or len(text.strip()) <= 5
        ):
            scale = SCALE_WORDS[word.lower()]
            break
    return Unit(scale, _currency(text), bool(_PERCENT.search(text)))


def to_unit(value: object, unit: str) -> tuple[float, str | None]:
    """``value`` as a number in ``unit``, and a note when something was not converted (currency).

    Raises:
        ValueNotUnderstood: no number in ``value``, or one too large for a double.
    """
    q = parse_quantity(value)
    target = parse_unit(unit)
    number = q.number
    if q.scale is not None:
        number = number * q.scale / target.scale
    elif q.currency is not None and target.scale != 1 and not target.percent:
        number = number / target.scale
    note = None
    if q.currency and target.currency and q.currency != target.currency:
        note = (
            f"currency {q.currency} kept as stated (unit {target.currency}; no exchange rate "
            "applied)"
        )
    out = float(number)
    # 400 digits, or an inf/nan given as a number: SQL over it gives Infinity, not a value
    if not math.isfinite(out):
        raise ValueNotUnderstood(f"not a finite number: {str(value)[:80]!r}")
    return out, note


def normalize_value(value: object, kind: str, unit: str = "") -> tuple[object, str | None]:
    """A cell's stored value for an attribute of type ``kind`` and its note.

    ``number``/``percent`` -> float in the unit; ``integer`` -> int; ``boolean`` -> 0/1;
    ``date`` -> ``YYYY-MM-DD`` / ``YYYY-MM`` / ``YYYY`` when recognisable; ``text`` -> the
    text with whitespace collapsed. ``None`` or an empty string stays ``None``.

    Raises:
        ValueNotUnderstood: a number, boolean or date with nothing to read.
    """
    if value is None or (isinstance(value, str) and not value.strip()):
        return None, None
    if kind in ("number", "percent"):
        return to_unit(value, unit if kind == "number" else (unit or "%"))
    if kind == "integer":
        number, note = to_unit(value, unit)
        return int(round(number)), note
    if kind == "boolean":
        word = str(value).strip().lower()
        if word in TRUE_WORDS:
            return 1, None
        if word in FALSE_WORDS:
            return 0, None
        raise ValueNotUnderstood(f"not a yes/no value: {value!r}")
    if kind == "date":
        return normalize_date(str(value)), None
    return " ".join(str(value).split()), None


def normalize_date(text: str) -> str:
    """``2024-03-05`` / ``2024/3/5`` -> ``2024-03-05``; ``March 2024`` -> ``2024-03``; a year alone
    -> ``2024``."""
    m = _ISO_DATE.search(text)
    if m:
        y, mo, d = m.group(1), int(m.group(2)), m.group(3)
        return f"{y}-{mo:02d}-{int(d):02d}" if d else f"{y}-{mo:02d}"
    months = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
    y = _YEAR.search(text)
    if not y:
        raise ValueNotUnderstood(f"no date in {text!r}")
    for i, name in enumerate(months, 1):
        if re.search(rf"\b{name}[a-z]*\b", text, re.I):
            return f"{y.group(1)}-{i:02d}"
    return y.group(1)


def normalize_period(value: object, kind: str) -> object:
    """A period (the time dimension) as stored: a year as int (``FY2024``, ``Fall 2024``,
    ``FY24``), a date as ISO text, other text collapsed; ``None`` when absent or unreadable."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        return value if kind == "year" else str(value)
    text = str(value)
    if kind == "year":
        m = _YEAR.search(text)
        if m:
            return int(m.group(1))
        short = _SHORT_FY.search(text)
        return 2000 + int(short.group(1)) if short else None
    if kind == "date":
        try:
            return normalize_date(text)
        except ValueNotUnderstood:
            return None
    return " ".join(text.split())


def entity_key(name: str) -> str:
    """The key entity names are matched by: case-folded, whitespace collapsed, outer punctuation
    stripped."""
    return " ".join(str(name).split()).strip(" .,;:'\"").casefold()


__all__ = [
    "Quantity",
    "Unit",
    "ValueNotUnderstood",
    "entity_key",
    "normalize_date",
    "normalize_period",
    "normalize_value",
    "parse_quantity",
    "parse_unit",
    "to_unit",
]
