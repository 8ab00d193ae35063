"""MemoryAgentBench scoring: answer parsing, the per-dataset post-processing and its metrics.

Mirrors ``utils/eval_other_utils.py`` of HUST-AI-HYZ/MemoryAgentBench @ 455306d. Every
metric is the maximum over the gold answers (a string, a list, or a list of lists,
flattened); the text is normalised SQuAD-style. Post-processing per dataset
(``post_process``): ICL scores the parsed first line only; EventQA the parsed line plus
``eventqa_recall`` (every gold element in the raw reply); ReDial the recall@1/5/10 of the
recommended titles, each matched to its nearest known title by edit distance; every other
dataset the better of the raw reply and the parsed line, metric by metric. ROUGE (which
the official code also computes but no headline uses) is left out.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from longctx.experiments.metrics.registry import METRICS
from longctx.experiments.metrics.ruler_hqa import exact_match, hotpotqa_f1
from longctx.experiments.metrics.text import normalize_answer

VERSION = 1

#: The metrics every dataset gets (``calculate_metrics`` less ROUGE).
BASE_METRICS = ("exact_match", "f1", "substring_exact_match")
ANSWER_PREFIX = "Answer:"
_AFTER_PREFIX = re.compile(f"(?:{ANSWER_PREFIX})(.*)(?:\n|$)", flags=re.IGNORECASE)
_FIRST_LINE = re.compile(r"(?:^)(.*)(?:\n|$)")
_LEADING_PREFIX = re.compile(f"^{re.escape(ANSWER_PREFIX)}", flags=re.IGNORECASE)


@METRICS.register("substring_exact_match")
def substring_exact_match(prediction: str, ground_truth: str, **_: object) -> float:
    """1.0 when the normalised gold is inside the normalised prediction (one way only)."""
    return float(normalize_answer(ground_truth) in normalize_answer(prediction))


def gold_list(ground_truths: Any) -> list[str]:
    """The gold answers as a flat list: a string alone, a list of lists flattened
    (official rule)."""
    if isinstance(ground_truths, str):
        return [ground_truths]
    if ground_truths and isinstance(ground_truths[0], list):
        return [g for group in ground_truths for g in group]
    return list(ground_truths)


def best_over(metric: Callable[[str, str], float], prediction: str, ground_truths: Any) -> float:
    """``drqa_metric_max_over_ground_truths``: the metric's maximum over the gold answers."""
    return max(float(metric(prediction, g)) for g in gold_list(ground_truths))


def parse_output(text: str) -> str:
    """``parse_output``: what follows ``Answer:`` on its line, else the first line; stripped, a
    repeated prefix removed."""
    for pattern in (_AFTER_PREFIX, _FIRST_LINE):
        match = pattern.search(text)
        if match:
            return _LEADING_PREFIX.sub("", match[1].strip()).strip()
    return text  # unreachable: the first-line pattern matches every string


def base_metrics(prediction: str, ground_truths: Any) -> dict[str, float]:
    """``calculate_metrics`` without ROUGE: exact match, F1 and substring exact match."""
    return {
        "exact_match": best_over(exact_match, prediction, ground_truths),
        "f1": best_over(hotpotqa_f1, prediction, ground_truths),
        "substring_exact_match": best_over(substring_exact_match, prediction, ground_truths),
    }


def best_of_raw_and_parsed(prediction: str, ground_truths: Any) -> dict[str, float]:
    """``default_post_process``: each metric's better value over the raw reply and its
    parsed line."""
    raw, parsed = (
        base_metrics(prediction, ground_truths),
        base_metrics(parse_output(prediction), ground_truths),
    )
    return {k: max(raw[k], parsed[k]) for k in raw}


def eventqa_metrics(prediction: str, ground_truths: Any) -> dict[str, float]:
    """``_process_eventqa_dataset``: the parsed line's metrics and ``eventqa_recall`` (1 iff every
    gold element is in the raw reply)."""
    found = sum(element.lower() in prediction.lower() for element in ground_truths) / len(
        ground_truths
    )
    return base_metrics(parse_output(prediction), ground_truths) | {
        "eventqa_recall": float(found == 1)
    }


def post_process(
    prediction: str,
    ground_truths: Any,
    source: str,
    *,
    movie_names: Mapping[int, str] | None = None,
) -> dict[str, float]:
    """The official per-dataset metrics of one reply, routed by the sub-dataset name as
    ``post_process`` routes it."""
    if "icl" in source:
        return base_metrics(parse_output(prediction), ground_truths)
    if "eventqa" in source:
        return eventqa_metrics(prediction, ground_truths)
    if "recsys" in source:
        if movie_names is None:
            raise ValueError(
                f"{source}: recall needs the movie names of entity2id.json (load() reads it "
                "beside the data)."
            )
        return recsys_recall(prediction, ground_truths, movie_names)
    return best_of_raw_and_parsed(prediction, ground_truths)


# --- ReDial recommendation recall -------------------------------------------------------------

_PARENTHESES = re.compile(r"\([^()]*\)")
_NUMBERING = re.compile(r"^(?:\d+[\.\)、]?\s*[\-\—\–]?\s*)?")
_SPACES = re.compile(r"\s+")


def movie_name(entity: str) -> str:
    """``extract_movie_name``: the last path part, ``_ - >`` as spaces, parentheses dropped,
    spaces collapsed."""
    name = entity.split("/")[-1].replace("_", " ").replace("-", " ").replace(">", " ")
    return _SPACES.sub(" ", _PARENTHESES.sub("", name)).strip()


def clean_item(text: str) -> str:
    """``clean_text_elements``: parentheses, a leading list number and extra spaces removed."""
    return _SPACES.sub(" ", _NUMBERING.sub("", _PARENTHESES.sub("", text))).strip()


def recommended_items(text: str) -> list[str]:
    """``extract_recommendation_list``: the lines after the first ``1.`` (else comma-separated
    items), cleaned."""
    head, sep, tail = text.partition("1.")
    body = tail if sep else text.replace(",", "\n")
    return [clean_item(item.strip()) for item in body.split("\n")]


def nearest_movie(name: str, candidates: Sequence[str], folded: Sequence[str] | None = None) -> str:
    """The candidate at the least edit distance from ``name`` (case-folded); ties go to the first of
    ``candidates``.

    ``candidates`` should be sorted and unique (``folded``: the same, lower-cased, to save
    folding them again). The official ``find_nearest_movie`` breaks ties by the order of
    ``list(set(...))``, which changes with Python's string hashing from run to run; ours is fixed.
    """
    from rapidfuzz.distance import Levenshtein

    target, lowered = (
        name.lower(),
        folded if folded is not None else [c.lower() for c in candidates],
    )
    best = min(range(len(lowered)), key=lambda i: Levenshtein.distance(target, lowered[i]))
    return candidates[best]


def recsys_recall(
    prediction: str, ground_truths: Sequence[Any], movie_names: Mapping[int, str]
) -> dict[str, float]:
    """``_process_recsys_dataset``: recall@1, @5, @10 of the gold movie ids among the
    nearest-matched recommendations."""
    candidates = sorted(set(movie_names.values()))
    folded = [c.lower() for c in candidates]
    predicted = [nearest_movie(item, candidates, folded) for item in recommended_items(prediction)]
    gold = [movie_names[int(str(i).strip())] for i in ground_truths]
    return {
        f"recsys_recall@{k}": sum(movie in predicted[:k] for movie in gold) / len(gold)
        for k in (1, 5, 10)
    }
