"""A deterministic answer-equivalence checker for CorpusQA-style exact answers.

Used when no judge model is configured; results scored this way are labelled
``deterministic-equivalence`` and are an approximation of the LLM judge, not the
official number. Rules:

* Lists (JSON arrays, Python-literal lists, or ``[a, b]``) compare as sets of
  normalised elements; ``[]`` equals only an empty list. A scalar equals a
  one-element list holding an equivalent value.
* Numbers compare within rounding: equal if they differ by at most half a unit in
  the last decimal place of the less precise one *and* by at most 0.5% relative
  (so ``12`` does not match ``12.34``). Thousands separators, currency signs and
  a trailing unit word are ignored.
* Percentages: ``12.34%`` equals ``12.34%`` and ``0.1234``.
* Strings compare case-insensitively with quotes, surrounding punctuation and
  repeated whitespace removed.
"""

from __future__ import annotations

import ast
import json
import re

VERSION = 1

_NUMBER = re.compile(r"^[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.(\d+))?$|^[-+]?\.(\d+)$")
_CURRENCY = "$€£¥￥"
_STRIP = " \t\n\"'“”‘’`.。,，;；"


def parse_list(text: str) -> list | None:
    """The list an answer writes (JSON, a Python literal or ``[a, b]``), or ``None`` when
    it is no list."""
    text = text.strip()
    if not (text.startswith("[") and text.endswith("]")):
        return None
    for parse in (json.loads, ast.literal_eval):
        try:
            value = parse(text)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            continue
        if isinstance(value, list):
            return value
    inner = text[1:-1].strip()
    return [p for p in (s.strip(_STRIP) for s in inner.split(",")) if p] if inner else []


def parse_number(text: str) -> tuple[float, int, bool] | None:
    """(value, decimals, is_percent) of a numeric answer, or ``None``."""
    t = text.strip(_STRIP).replace(" ", "")
    percent = t.endswith("%")
    t = t.rstrip("%").lstrip(_CURRENCY)
    if (
        t[:1] and t[0] in "+-" and t[1:2] and t[1] in _CURRENCY
    ):  # "" is "in" every string: an empty reply is no number
        t = t[0] + t[2:]
    match = _NUMBER.match(t)
    if not match:
        return None
    decimals = len(match.group(1) or match.group(2) or "")
    return float(t.replace(",", "")), decimals, percent


def numbers_equal(a: tuple[float, int, bool], b: tuple[float, int, bool]) -> bool:
    """Whether two :func:`parse_number` values state the same number within rounding (percent vs
    fraction too)."""
    (va, da, pa), (vb, db, pb) = a, b
    candidates = [(va, vb)]
    if pa != pb:  # one side a percentage, the other a fraction
        candidates = [(va, vb * 100) if pb is False else (va * 100, vb)]
    for x, y in candidates:
        tolerance = 0.5 * 10 ** (-min(da, db)) + 1e-9
        relative = abs(x - y) <= 0.005 * max(abs(x), abs(y)) + 1e-9
        if abs(x - y) <= tolerance and relative:
            return True
    return False


def _normalise_string(text: str) -> str:
    return " ".join(text.strip(_STRIP).lower().split())


def _scalars_equal(a: object, b: object) -> bool:
    sa, sb = str(a), str(b)
    na, nb = parse_number(sa), parse_number(sb)
    if na is not None and nb is not None:
        return numbers_equal(na, nb)
    return _normalise_string(sa) == _normalise_string(sb)


def _lists_equal(a: list, b: list) -> bool:
    """Set equality under scalar equivalence (duplicates ignored)."""
    return all(any(_scalars_equal(x, y) for y in b) for x in a) and all(
        any(_scalars_equal(y, x) for x in a) for y in b
    )


def equivalent(predicted: str, gold: str) -> bool:
    """Whether ``predicted`` and ``gold`` state the same answer under the rules above."""
    if not isinstance(predicted, str) or not isinstance(gold, str):
        raise TypeError(
            f"equivalent() takes two strings, got {type(predicted).__name__} and "
            f"{type(gold).__name__}"
        )
    lp, lg = parse_list(predicted), parse_list(gold)
    if lp is not None or lg is not None:
        return _lists_equal(lp if lp is not None else [predicted], lg if lg is not None else [gold])
    return _scalars_equal(predicted, gold)
