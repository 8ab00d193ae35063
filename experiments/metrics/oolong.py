"""OOLONG's official scoring (abertsch72/oolong @ adbf1cb, ``src/eval/eval_helpers.py``), written
again as pure functions.

OOLONG-synth (``synth_process_response``): the reply is cut to its answer
(:func:`synth_parse`: the text after the last ``:``, stripped, ``*``, ``[`` and ``]`` removed; a
reply without ``:`` is kept whole when under 20 characters, else its last word), then scored
against the first element of the gold list: 1 on equal strings; the comparison phrases ("more
common", "less common", "same frequency") score 1 when the gold contains them; a numeric answer
earns ``0.75 ** |gold - reply|``; a date answer is read by python-dateutil and scores when it is
the gold date (midnight, no time zone). ``tests/oolong_official.py`` runs the official function
on a few hundred pairs; ``tests/test_oolong_scoring.py`` holds ours to it.

OOLONG-real (``dnd_process_response``): the reply's first ``\\boxed{\\text{...}}``, else its first
``\\boxed{...}``, read as an int, a comma-separated list or a string (:func:`dnd_parse_answer`, as
the gold is read); int answers earn ``0.75 ** |difference|``, strings score on case-insensitive
equality, lists by the share of the gold's items named (set overlap over the gold's length).

The official score keeps its Python type (``int`` 1 or 0, ``float`` partial credit, ``bool`` for
dates) so that :func:`official_summary` prints the official ``overall.txt`` line to the character.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from longctx.experiments.metrics.registry import METRICS
from longctx.retrieval.extras import require

VERSION = 1

#: The answer types of OOLONG-synth's ``answer_type`` field that the scorer treats apart.
NUMERIC = "ANSWER_TYPE.NUMERIC"
DATE = "ANSWER_TYPE.DATE"
#: The comparison answers, matched as substrings of the gold.
COMPARISONS = ("more common", "less common", "same frequency")
#: Words in a reply that raise the parse confidence from ``med`` to ``high``.
_SURE_MARKERS = ("User:", "Answer:", "Date:", "Label")
#: How a date gold is written in the data: ``[datetime.date(2023, 1, 5)]``.
_GOLD_DATE = "[datetime.date(%Y, %m, %d)]"
#: The reply is short enough to be taken whole (or, after ``:``, to be ``vhigh`` confidence).
_SHORT = 20
#: ``\boxed{\text{...}}`` first, then ``\boxed{...}`` with any run of braces around it.
_BOXED_TEXT = re.compile(r"\\boxed\{\\text\{([^}]*)\}\}")
_BOXED = re.compile(r"\\boxed\{+([^}]*)\}+")


@dataclass(frozen=True)
class Scored:
    """One scored reply, as the official ``this_output`` records it.

    Attributes:
        score: 1 / 0 (``int``), partial credit (``float``) or a date verdict (``bool``).
        attempted_parse: What was read from the reply (``str`` for synth; int, str or list for DnD).
        parse_confidence: ``low``, ``med``, ``high`` or ``vhigh`` (synth), ``low`` / ``high`` (DnD).
        answer: The gold as the official record stores it (``str(gold)`` for synth).
    """

    score: float
    attempted_parse: Any
    parse_confidence: str
    answer: Any


def synth_parse(reply: str) -> tuple[str, str]:
    """``synth_attempt_answer_parse``: (the answer read from ``reply``, parse confidence).

    A reply of 20 characters or more with no ``:`` and no word at all (only white space) has no
    last word: the official code fails there; ours reads "" (docs/protocols.md).
    """
    if ":" not in reply:
        if len(reply) < _SHORT:
            return reply, "low"
        words = reply.split()
        return (words[-1] if words else ""), "low"
    answer = reply.rsplit(":", 1)[1].strip()
    for mark in ("*", "[", "]"):
        answer = answer.replace(mark, "")
    confidence = "high" if any(m in reply for m in _SURE_MARKERS) else "med"
    if len(answer) < _SHORT:
        return answer, "vhigh"
    phrase = next((p for p in COMPARISONS if p in answer), None)
    return (phrase if phrase is not None else answer), confidence


def synth_gold(answer: str) -> Any:
    """The gold of an OOLONG-synth ``answer`` field: a date written ``[datetime.date(Y, M, D)]``
    as a midnight ``datetime``, else the first element of the Python list literal."""
    if "datetime" in answer:
        return datetime.strptime(answer, _GOLD_DATE)
    return ast.literal_eval(answer)[0]


def _date_parser() -> Any:
    """python-dateutil's ``parse`` (the ``oolong`` extra)."""
    require("dateutil", extra="oolong", feature="scoring OOLONG-synth date answers")
    from dateutil import parser

    return parser.parse


def synth_score(answer: str, answer_type: str, reply: str) -> Scored:
    """``synth_process_response`` for one item: the official score, parse and confidence.

    Args:
        answer: The item's ``answer`` field (a Python list literal, or a date literal).
        answer_type: The item's ``answer_type`` (``ANSWER_TYPE.NUMERIC``, ``ANSWER_TYPE.DATE``...).
        reply: The model's reply.
    """
    gold = synth_gold(answer)
    parsed, confidence = synth_parse(reply)
    read: Any = parsed
    score: float = 0
    if parsed == str(gold):
        score = 1
    elif parsed in COMPARISONS:
        score = 1 if parsed in str(gold) else 0
    elif answer_type == NUMERIC:
        try:
            read = int(parsed)
            gold = int(gold)
        except (TypeError, ValueError):  # the official catch-all meets only these here
            confidence = "low"
        else:
            score = 0.75 ** abs(gold - read)
    elif answer_type == DATE:
        parse = _date_parser()
        try:
            read = parse(parsed)
        except (ValueError, OverflowError, TypeError):  # ParserError is a ValueError
            confidence = "low"
        else:
            score = read == gold
    return Scored(
        score=score, attempted_parse=str(read), parse_confidence=confidence, answer=str(gold)
    )


def dnd_parse_answer(answer: Any) -> Any:
    """``dnd_parse_answer``: an int if ``int()`` takes it, else a list of the non-empty
    comma-separated items when there is a comma, else the string itself."""
    try:
        return int(answer)
    except ValueError:
        pass
    if "," in answer:
        return [item.strip() for item in answer.split(",") if item.strip()]
    return answer


def dnd_parse_response(reply: str) -> tuple[Any, str]:
    """``dnd_parse_response``: the boxed answer read by :func:`dnd_parse_answer` (``high``), or the
    whole reply unread (``low``) when nothing is boxed."""
    found = _BOXED_TEXT.search(reply) or _BOXED.search(reply)
    if found is None:
        return reply, "low"
    return dnd_parse_answer(found.group(1)), "high"


def dnd_score(answer: Any, reply: str) -> Scored:
    """``dnd_process_response`` for one item: the official score of ``reply`` against ``answer``
    (the item's ``answer`` field, an int or a string)."""
    gold = dnd_parse_answer(answer)
    parsed, confidence = dnd_parse_response(reply)
    score = 0.0
    if isinstance(gold, int) and isinstance(parsed, int):
        score = 0.75 ** abs(gold - parsed)
    elif isinstance(gold, str) and isinstance(parsed, str):
        score = float(gold.strip().lower() == parsed.strip().lower())
    elif isinstance(gold, list) and isinstance(parsed, list):
        score = len(set(gold) & set(parsed)) / len(gold) if gold else 0.0
    return Scored(score=score, attempted_parse=parsed, parse_confidence=confidence, answer=gold)


def official_total(scores: list[float]) -> float:
    """The official running ``correct``: the scores added in run order from ``0`` (an ``int``
    while every score is)."""
    total: float = 0
    for value in scores:
        total += value
    return total


def official_summary(model: str, scores: list[float]) -> str:
    """The line the official script writes to ``overall.txt`` for ``scores`` in run order."""
    total = official_total(scores)
    return (
        f"Overall score for {model} on {len(scores)} examples: {total}/{len(scores)} = "
        f"{total / len(scores)}"
    )


@METRICS.register("oolong_synth")
def oolong_synth(prediction: str, ground_truth: str, *, answer_type: str, **_: object) -> float:
    """OOLONG-synth's official score of ``prediction`` in [0, 1] (:func:`synth_score`)."""
    return float(synth_score(ground_truth, answer_type, prediction).score)


@METRICS.register("oolong_dnd")
def oolong_dnd(prediction: str, ground_truth: Any, **_: object) -> float:
    """OOLONG-real's official score of ``prediction`` in [0, 1] (:func:`dnd_score`)."""
    return float(dnd_score(ground_truth, prediction).score)
