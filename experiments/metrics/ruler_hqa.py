"""MemAgent's RULER-HotpotQA scoring: answer extraction, ``sub_em``, EM and HotpotQA F1.

Mirrors ``taskutils/memory_eval/utils/__init__.py`` and ``ruler_hqa.py`` of
BytedTsinghua-SIA/MemAgent: the reply is cut after a ``</think>`` (if any), the answer is
what follows the last ``the answer is`` (lower case, ``*`` removed, a trailing ``.``
stripped), and an item without that phrase scores 0. ``sub_em`` is 1 when either
normalised string contains the other (SQuAD normalisation), so an answer that normalises
to the empty string matches everything: the official guard scores an empty extraction 0
before the metric is called, and :func:`item_scores` is only called past that guard too.
"""

from __future__ import annotations

from collections import Counter

from longctx.experiments.metrics.registry import METRICS
from longctx.experiments.metrics.text import normalize_answer

VERSION = 1

#: The phrase the prompts ask for ("Therefore, the answer is ..."); matched
#: case-sensitively, as official.
ANSWER_PHRASE = "the answer is"
_END_TOKENS = ("<｜Assistant｜>", "<｜end▁of▁sentence｜>")


def strip_thinking(response: str) -> str:
    """``extract_solution``: the text after the last ``</think>``, or the whole reply when
    there is none."""
    return response.split("</think>")[-1].strip() if "</think>" in response else response


def extract_answer(response: str) -> str | None:
    """``extract_answer``: what follows the last ``the answer is``, or ``None``
    without the phrase."""
    text = response.replace("*", "")
    if ANSWER_PHRASE not in text:
        return None
    answer = text.rsplit(ANSWER_PHRASE, 1)[-1].strip()
    for token in _END_TOKENS:
        answer = answer.replace(token, "")
    return answer.strip().strip(".").strip()


def official_prediction(response: str) -> str | None:
    """The ``pred`` field ``ruler_hqa.py`` writes for a stripped reply (``None``: no
    answer phrase)."""
    solution = strip_thinking(response)
    return extract_answer(solution) if solution else extract_answer(response)


@METRICS.register("sub_em")
def sub_em(prediction: str, ground_truth: str, **_: object) -> float:
    """1.0 when the normalised gold is in the normalised prediction or the other way round."""
    gold, pred = normalize_answer(ground_truth), normalize_answer(prediction)
    return float(gold in pred or pred in gold)


@METRICS.register("exact_match")
def exact_match(prediction: str, ground_truth: str, **_: object) -> float:
    """1.0 when the normalised strings are equal."""
    return float(normalize_answer(prediction) == normalize_answer(ground_truth))


@METRICS.register("hotpotqa_f1")
def hotpotqa_f1(prediction: str, ground_truth: str, **_: object) -> float:
    """HotpotQA's F1: token overlap of the normalised strings; a yes/no/noanswer mismatch is 0."""
    pred, gold = normalize_answer(prediction), normalize_answer(ground_truth)
    if (pred in ("yes", "no", "noanswer") or gold in ("yes", "no", "noanswer")) and pred != gold:
        return 0.0
    pred_tokens, gold_tokens = pred.split(), gold.split()
    same = sum((Counter(pred_tokens) & Counter(gold_tokens)).values())
    if same == 0:
        return 0.0
    precision, recall = same / len(pred_tokens), same / len(gold_tokens)
    return 2 * precision * recall / (precision + recall)


def item_scores(prediction: str, ground_truth: str) -> dict[str, float]:
    """``judge_f1``, ``judge_em``, ``judge_sub_em`` of one item as ``calc_metrics`` gives them
    (rounded to 2 places)."""
    return {
        "f1": round(hotpotqa_f1(prediction, ground_truth), 2),
        "em": round(exact_match(prediction, ground_truth), 2),
        "sub_em": round(sub_em(prediction, ground_truth), 2),
    }
