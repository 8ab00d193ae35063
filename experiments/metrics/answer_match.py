"""Is a free-text answer right? The deterministic rule of own-corpus scoring.

A gold answer is credited by the first rule that matches, and the rule is kept with the score:

* ``exact``: the answer and the gold are the same token sequence after QA normalisation
  (case, punctuation, the articles a/an/the, whitespace; numbers by value: ``1,200`` = ``1200``;
  CJK text by character).
* ``typed``: the answer states the same number, list or date as the gold, the whole answer read as
  that type (``longctx.experiments.metrics.equivalence``; dates in ISO, ``5 January 2023`` or
  ``January 5, 2023`` form compare by calendar day; a list answer also in prose: ``adm and root``).
* ``phrase`` (text answers only): the gold's token sequence occurs in the answer as whole
  tokens, never inside a word (``adm`` is not in ``README`` or ``administrator``, ``12`` not in
  ``2012`` or ``12.5``), at a place that is neither negated (``not adm``) nor one item of a list
  of alternatives (``adm, sudo or root``) unless the question asks for a list.

Anything else scores wrong (``rule`` is ``None``). An LLM judge, when one is given, replaces the
rules (``judge``). ``number``, ``date`` and ``list`` answers are matched by ``exact`` and ``typed``
only: ``NOK 4.7 billion`` is not the number ``4.7``.
"""

from __future__ import annotations

import calendar
import datetime as dt
import json
import re
from dataclasses import dataclass

from longctx.experiments.metrics.equivalence import (
    equivalent,
    numbers_equal,
    parse_list,
    parse_number,
)
from longctx.experiments.metrics.registry import METRICS

VERSION = 1

RULES = ("exact", "typed", "phrase", "judge")

_ARTICLES = frozenset({"a", "an", "the"})
# Words (after apostrophes are dropped) that deny the phrase that follows them within two tokens.
_NEGATIONS = frozenset(
    (
        "not no never neither nor none without except excluding unlike "
        "isnt arent wasnt werent dont doesnt didnt cannot cant wont nobody "
        "不 没 没有 非 无 不是"
    ).split()
)
# Tokens that join alternatives: "adm or sudo", "adm/sudo", "adm, sudo and root", "adm 或 sudo".
_ALTERNATION = frozenset(
    {"or", "nor", "/", "versus", "vs", "and", "或", "或者", "和", "与", "及", "、"}
)
_LIST_SEPARATORS = _ALTERNATION | {","}
_CLAUSE_END = frozenset({".", ";", ":", "!", "?", "。", "；", "：", "！", "？", "\n"})
_PUNCTUATION = _CLAUSE_END | {",", "/", "、"}
# An item of a list is short: "adm and it can read logs" joins a clause, not a second candidate.
_MAX_ITEM_TOKENS = 4
_ORDINAL_SUFFIXES = frozenset({"st", "nd", "rd", "th"})
_CJK = r"\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af"
_TOKEN = re.compile(
    rf"\d+(?:[.,]\d+)*|[{_CJK}]|[^\W\d_{_CJK}]+(?:'[^\W\d_]+)?|%|[,/、\n]|[.;:!?。；：！？]"
)
_CJK_CHAR = re.compile(f"[{_CJK}]")
_SPELLED = {"percent": "%", "per cent": "%", "pct": "%"}
_LIST_QUESTION = re.compile(
    r"\b(list|all|both|each|every|which ones|name (?:the|all|every))\b"
    # "which groups", not "which process"
    r"|\b(?:what|which) (?!(?:was|does|has|is|this|its|us)\b)\w*[^su\W]s\b|哪些|列出",
    re.IGNORECASE,
)
_MONTHS = (
    {name.lower(): i for i, name in enumerate(calendar.month_name) if name}
    | {name.lower(): i for i, name in enumerate(calendar.month_abbr) if name}
    | {"sept": 9}
)
_DATE_PATTERNS = (
    re.compile(r"^(\d{4})[-/.](\d{1,2})[-/.](\d{1,2})$"),  # 2023-01-05
    re.compile(r"^(\d{1,2})(?:st|nd|rd|th)?\s+([a-z]+)\.?,?\s+(\d{4})$"),  # 5 January 2023
    re.compile(r"^([a-z]+)\.?\s+(\d{1,2})(?:st|nd|rd|th)?,?\s+(\d{4})$"),  # January 5, 2023
    re.compile(r"^(\d{4})年(\d{1,2})月(\d{1,2})日$"),  # 2023年1月5日
)


@dataclass(frozen=True)
class Match:
    """A verdict and the rule that gave it (``None`` when nothing matched)."""

    correct: bool
    rule: str | None


@dataclass(frozen=True)
class _Token:
    text: str
    glued_left: bool  # no space or punctuation before it ("12" in "v12", "th" in "12th")


def tokens(text: str) -> list[_Token]:
    """QA-normalised tokens: lower case, articles and quotes dropped, punctuation kept only where
    it separates list items or clauses, CJK one token per character."""
    text = text.lower().replace("’", "'").replace("‘", "'")
    for word, symbol in _SPELLED.items():
        text = re.sub(rf"\b{word}\b", f" {symbol}", text)
    out: list[_Token] = []
    end = -1
    for m in _TOKEN.finditer(text):
        word = m.group().replace("'", "")
        if word in _ARTICLES:
            end = m.end()
            continue
        glued = (
            m.start() == end
            and word[0].isalnum()
            and bool(out)
            and out[-1].text[-1:].isalnum()
            and not (_CJK_CHAR.match(word) or _CJK_CHAR.match(out[-1].text[-1:]))
        )  # CJK has no word boundaries: one token per character
        out.append(_Token(word, glued))
        end = m.end()
    return out


def _words(toks: list[_Token]) -> list[str]:
    return [t.text for t in toks if t.text not in _PUNCTUATION]


def _same_token(a: str, b: str) -> bool:
    if a == b:
        return True
    na, nb = parse_number(a), parse_number(b)
    return na is not None and nb is not None and numbers_equal(na, nb)


def _same_sequence(a: list[str], b: list[str]) -> bool:
    return len(a) == len(b) and all(_same_token(x, y) for x, y in zip(a, b))


def parse_date(text: str) -> dt.date | None:
    """The calendar day a whole answer names (ISO, day-month-year, month-day-year, 年月日),
    or None."""
    t = " ".join(text.strip().strip(" .\"'").lower().split())
    for i, pattern in enumerate(_DATE_PATTERNS):
        m = pattern.match(t)
        if not m:
            continue
        a, b, c = m.groups()
        try:
            if i in (0, 3):
                return dt.date(int(a), int(b), int(c))
            day, month = (a, b) if i == 1 else (b, a)
            return dt.date(int(c), _MONTHS[month], int(day)) if month in _MONTHS else None
        except ValueError:
            return None
    return None


_PROSE_LIST = re.compile(r"\s*(?:,|;|、|\band\b|\bor\b|和|与|及)\s*")


def _typed(answer: str, gold: str) -> bool:
    """Same number, list or date, the whole answer read as that type."""
    if equivalent(answer, gold):
        return True
    gold_date, answer_date = parse_date(gold), parse_date(answer)
    if gold_date is not None and answer_date is not None:
        return gold_date == answer_date
    gold_list = parse_list(gold)
    if (
        gold_list is not None and parse_list(answer) is None
    ):  # a list answered in prose: "adm and root"
        items = [p.strip() for p in _PROSE_LIST.split(answer.strip().rstrip(".")) if p.strip()]
        return len(items) > 1 and equivalent(json.dumps(items, ensure_ascii=False), gold)
    return False


def _negated(toks: list[_Token], start: int) -> bool:
    """A negation within the two tokens before ``start``, in the same clause."""
    for j in range(start - 1, max(start - 3, -1), -1):
        if toks[j].text in _CLAUSE_END:
            return False
        if toks[j].text in _NEGATIONS:
            return True
    return False


def _item_length(toks: list[_Token], start: int, step: int) -> int:
    """Tokens of the list item beginning at ``start`` going in direction ``step`` (to a separator or
    clause end)."""
    n, i = 0, start
    while (
        0 <= i < len(toks)
        and toks[i].text not in _LIST_SEPARATORS
        and toks[i].text not in _CLAUSE_END
    ):
        n, i = n + 1, i + step
    return n


def _alternative(toks: list[_Token], start: int, stop: int) -> bool:
    """Whether the span [start, stop) is one item of a list of alternatives
    (``adm, sudo or root``)."""
    after = toks[stop].text if stop < len(toks) else None
    before = toks[start - 1].text if start > 0 else None
    if after in _ALTERNATION and 0 < _item_length(toks, stop + 1, 1) <= _MAX_ITEM_TOKENS:
        return True
    if before in _ALTERNATION and 0 < _item_length(toks, start - 2, -1) <= _MAX_ITEM_TOKENS:
        return True
    if "," in (after, before):  # a comma list counts when the clause joins its items with or/and
        i = start
        while i > 0 and toks[i - 1].text not in _CLAUSE_END:
            i -= 1
        j = stop
        while j < len(toks) and toks[j].text not in _CLAUSE_END:
            j += 1
        clause = [t.text for t in toks[i:j]]
        return any(t in _ALTERNATION for t in clause) and clause.count(",") + 1 >= 2
    return False


def _boundary_ok(toks: list[_Token], start: int, stop: int) -> bool:
    """The span is not part of a longer word: nothing glued before it, and nothing glued after it
    but a unit after a number (``12kg``), not an ordinal suffix (``12th``)."""
    if toks[start].glued_left:
        return False
    if stop < len(toks) and toks[stop].glued_left:
        last, nxt = toks[stop - 1].text, toks[stop].text
        return parse_number(last) is not None and nxt.isalpha() and nxt not in _ORDINAL_SUFFIXES
    return True


def _phrase(answer: str, gold: str, *, allow_lists: bool) -> bool:
    gold_toks = [t.text for t in tokens(gold)]
    while gold_toks and gold_toks[-1] in _PUNCTUATION:
        gold_toks.pop()
    while gold_toks and gold_toks[0] in _PUNCTUATION:
        gold_toks.pop(0)
    if not gold_toks:
        return False
    toks = tokens(answer)
    k = len(gold_toks)
    for start in range(len(toks) - k + 1):
        stop = start + k
        if not all(_same_token(toks[start + i].text, g) for i, g in enumerate(gold_toks)):
            continue
        if not _boundary_ok(toks, start, stop) or _negated(toks, start):
            continue
        if not allow_lists and _alternative(toks, start, stop):
            continue
        return True
    return False


def asks_for_list(question: str | None) -> bool:
    """Whether a question asks for several items (``Which groups are ...``,
    ``List ...``, ``哪些``)."""
    return bool(question) and bool(_LIST_QUESTION.search(question or ""))


def match_answer(
    answer: str, gold: str, *, answer_type: str | None = None, question: str | None = None
) -> Match:
    """Whether ``answer`` states ``gold``, and by which rule (see the module docstring).

    Args:
        answer: The extracted answer (not the whole transcript).
        gold: The gold answer.
        answer_type: ``number``, ``list``, ``date``, ``text`` or None (untyped: treated as text).
        question: The question, to tell whether several candidates are what it asks for.
    """
    if not isinstance(answer, str) or not isinstance(gold, str):
        raise TypeError(
            f"match_answer() takes two strings, got {type(answer).__name__} and "
            f"{type(gold).__name__}"
        )
    answer_words, gold_words = _words(tokens(answer)), _words(tokens(gold))
    if (
        gold_words
        and _same_sequence(answer_words, gold_words)
        and (parse_list(gold) is None) == (parse_list(answer) is None)
    ):
        return Match(True, "exact")
    if _typed(answer, gold):
        return Match(True, "typed")
    if answer_type in (None, "text"):
        allow_lists = parse_list(gold) is not None or asks_for_list(question)
        if _phrase(answer, gold, allow_lists=allow_lists):
            return Match(True, "phrase")
    return Match(False, None)


@METRICS.register("answer_match")
def answer_match_score(prediction: str, ground_truth: str, **kwargs: str | None) -> float:
    """1.0 when :func:`match_answer` credits the prediction (``answer_type``, ``question``
    as keywords)."""
    return float(
        match_answer(
            prediction,
            ground_truth,
            answer_type=kwargs.get("answer_type"),
            question=kwargs.get("question"),
        ).correct
    )
