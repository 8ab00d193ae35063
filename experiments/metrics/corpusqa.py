"""CorpusQA scoring: answer extraction, the equivalence-judge prompt and its verdict.

Official semantics (``src/eval.py``): the answer is what follows ``The answer is: ``
(to the end of that line), else the whole response; the judge (deepseek-v3 at
temperature 0 officially) is correct iff its reply contains ``[[YES]]`` and not
``[[NO]]``; a judge API error counts as wrong. Without a judge model we fall back to
:func:`longctx.experiments.metrics.equivalence.equivalent`, and results say so.
"""

from __future__ import annotations

import re

from longctx.experiments.metrics.equivalence import equivalent
from longctx.experiments.metrics.registry import METRICS

VERSION = 1

JUDGE_SYSTEM_PROMPT = """You are an expert in verifying if two answers are the same.
Your input is a problem and two answers, Answer 1 and Answer 2. You need to check if they are equivalent.
Your task is to determine if two answers are equivalent, without attempting to solve the original problem.
Compare the answers to verify they represent identical values or meaning, even when written in different forms or notations.

Your output must follow the following format:
1) Provide an explanation for why the answers are equivalent or not.
2) Then provide your final answer in the form of: [[YES]] or [[NO]]
"""  # noqa: E501

JUDGE_USER_TEMPLATE = """
Problem: {problem}
Answer 1: {answer_1}
Answer 2: {answer_2}
"""

_ANSWER = re.compile(r"The answer is: (.*)")

#: The domains the official script reports, recognised by ``id`` prefix.
DOMAINS = ("financial_zh", "financial_en", "education_en", "real_estate_en")


def extract_answer(response: str) -> str:
    """Text after ``The answer is: `` on its line (stripped), else the whole response stripped."""
    match = _ANSWER.search(response)
    return match.group(1).strip() if match else response.strip()


@METRICS.register("corpusqa_equivalence")
def equivalence_score(prediction: str, ground_truth: str, **_: object) -> float:
    """1.0 when the extracted answer is deterministically equivalent to the gold answer."""
    return float(equivalent(extract_answer(prediction), ground_truth))


def judge_user_prompt(question: str, predicted: str, gold: str) -> str:
    """The judge's user turn: the problem, the model's answer (1) and the gold answer (2)."""
    return JUDGE_USER_TEMPLATE.format(problem=question, answer_1=predicted, answer_2=gold)


def judge_verdict(reply: str | None) -> bool:
    """Correct iff ``[[YES]]`` is in the reply and ``[[NO]]`` is not; no reply is wrong."""
    return bool(reply and "[[YES]]" in reply and "[[NO]]" not in reply)


def domain_of(sample_id: str) -> str | None:
    """The domain named by an id's prefix, as the official script derives it, or ``None``."""
    return next((d for d in DOMAINS if sample_id.startswith(d)), None)
