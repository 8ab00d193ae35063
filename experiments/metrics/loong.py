"""Loong's GPT-4-judge protocol: the judge prompt, ``Rating: [[n]]`` parsing and the metrics.

Official semantics (``src/utils/metric.py``): the score is the first ``[[n]]`` in the
judge's reply, falling back to ``[n]``; unparsable replies are excluded from the
average (``avg_score`` over effective samples) and the parse-success rate is reported.
Perfect rate = share of effective samples scored exactly 100.

Quirk and fix: per (set, level) the official success rate divides by the number of
*all* lines, not the bucket's; ``parse_success_rate_official`` keeps that number and
``parse_success_rate`` is the bucket's own. ``avg_score_unparsed_as_zero`` is the
stricter variant where an unparsable reply (or a judge call that failed) counts as 0.
A failed *generation* is judged as the empty answer, as the official loop does.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

VERSION = 1

JUDGE_PROMPT = """[Question]
{question}

[Gold Answer]
{gold}

[The Start of Assistant's Predicted Answer]
{prediction}
[The End of Assistant's Predicted Answer]

[System]
We would like to request your feedback on the performance of the AI assistant in response to the user question displayed above according to the gold answer. Please use the following listed aspects and their descriptions as evaluation criteria:
    - Accuracy and Hallucinations: The assistant's answer is semantically consistent with the gold answer; The numerical value and order need to be accurate, and there should be no hallucinations.
    - Completeness: Referring to the reference answers, the assistant's answer should contain all the key points needed to answer the user's question; further elaboration on these key points can be omitted.
Please rate whether this answer is suitable for the question. Please note that the gold answer can be considered as a correct answer to the question.

The assistant receives an overall score on a scale of 1 to 100, where a higher score indicates better overall performance.
Please note that if the assistant's answer and the gold answer fully meet the above criteria, its overall rating should be the full marks (100).
Please first provide a comprehensive explanation of your evaluation, avoiding any potential bias.
Then, output a line indicating the score of the Assistant.

PLEASE OUTPUT WITH THE FOLLOWING FORMAT, WHERE THE SCORE IS A SCALE OF 1 TO 100 BY STRICTLY FOLLOWING THIS FORMAT: "[[score]]", FOR EXAMPLE "Rating: [[100]]":
<start output>
Evaluation evidence: your evluation explanation here, no more than 100 words
Rating: [[score]]
<end output>

Now, start your evaluation:"""  # noqa: E501

_DOUBLE = re.compile(r"\[\[([0-9]*\.?[0-9]+)\]\]")
_SINGLE = re.compile(r"\[([0-9]*\.?[0-9]+)\]")


def judge_prompt(question: str, gold: str, prediction: str) -> str:
    """The official judge prompt filled (``str.format`` positional order: question, gold,
    prediction)."""
    return JUDGE_PROMPT.format(question=question, gold=gold, prediction=prediction)


def judge_question(prompt_template: str, question: str, instruction: str, doc_type: str) -> str:
    """The question shown to the judge: the item's template with ``{docs}`` removed.

    Quirk kept: for ``paper`` items the official code leaves the ``{docs}`` placeholder in.
    """
    if doc_type != "paper":
        prompt_template = prompt_template.replace("{docs}", "")
    return prompt_template.replace("{question}", question).replace("{instruction}", instruction)


def parse_rating(reply: str | None) -> float | None:
    """The rating in ``[[n]]`` (fallback ``[n]``) of a judge reply, or ``None``."""
    if not reply:
        return None
    match = _DOUBLE.search(reply) or _SINGLE.search(reply)
    return float(match.group(1)) if match else None


@dataclass(frozen=True)
class LoongStats:
    """Aggregates over one bucket of ratings (``None`` = unparsable or failed)."""

    n: int
    n_effective: int
    avg_score: float | None
    perfect_rate: float | None
    parse_success_rate: float | None
    avg_score_unparsed_as_zero: float | None


def loong_stats(ratings: Sequence[float | None]) -> LoongStats:
    """Avg score and perfect rate over parseable ratings; rates in [0, 1], scores in [0, 100]."""
    effective = [r for r in ratings if r is not None]
    n, k = len(ratings), len(effective)
    return LoongStats(
        n=n,
        n_effective=k,
        avg_score=round(sum(effective) / k, 2) if k else None,
        perfect_rate=round(sum(1 for r in effective if r == 100) / k, 4) if k else None,
        parse_success_rate=round(k / n, 4) if n else None,
        avg_score_unparsed_as_zero=round(sum(effective) / n, 2) if n else None,
    )
