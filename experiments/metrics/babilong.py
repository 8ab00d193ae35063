"""BABILong's answer check: ``compare_answers`` with ``TASK_LABELS`` (booydar/babilong
``babilong/metrics.py``).

A reply is right when, in its first sentence, the only task labels it mentions (labels
named in the question left aside) are the target: one label for most tasks, every
sub-target and nothing else for qa8's ``apple,milk``. The reply is lower-cased, cut at
its first ``.``, then at ``<context>`` and ``<example>`` (the official cut at ``Question``
runs after lower-casing, so it never fires; kept as is). Labels are found as substrings,
so ``no`` is found in ``nothing`` and ``not``, as officially.

The leaderboard's numbers come from CSV files that pandas writes and reads back
(``collect_results.py``): a reply that pandas reads as missing (``None``, ``NA``, ``null``,
``nan``... :data:`PANDAS_MISSING`) is scored as the empty reply there; :func:`as_read_back`
gives that text.
"""

from __future__ import annotations

from collections.abc import Iterable

from longctx.experiments.metrics.registry import METRICS

VERSION = 1

#: The answer labels of each bAbI task, as ``TASK_LABELS`` lists them.
_ROOMS = ("bathroom", "bedroom", "garden", "hallway", "kitchen", "office")
_YES_NO = ("no", "yes")
TASK_LABELS: dict[str, tuple[str, ...]] = {
    "qa1": _ROOMS,
    "qa2": _ROOMS,
    "qa3": _ROOMS,
    "qa4": _ROOMS,
    "qa5": ("Bill", "Fred", "Jeff", "Mary", "apple", "football", "milk"),
    "qa6": _YES_NO,
    "qa7": ("none", "one", "three", "two"),
    "qa8": ("apple", "football", "milk", "nothing"),
    "qa9": _YES_NO,
    "qa10": ("maybe", "no", "yes"),
    "qa11": _ROOMS,
    "qa12": _ROOMS,
    "qa13": _ROOMS,
    "qa14": ("bedroom", "cinema", "kitchen", "office", "park", "school"),
    "qa15": ("cat", "mouse", "sheep", "wolf"),
    "qa16": ("gray", "green", "white", "yellow"),
    "qa17": _YES_NO,
    "qa18": _YES_NO,
    "qa19": ("e,e", "e,n", "e,s", "n,e", "n,n", "n,w", "s,e", "s,s", "s,w", "w,n", "w,s", "w,w"),
    "qa20": ("bedroom", "bored", "garden", "hungry", "kitchen", "thirsty", "tired"),
}

#: Strings ``pandas.read_csv`` reads as missing by default (its ``STR_NA_VALUES``); the
#: official table then scores "".
PANDAS_MISSING = frozenset(
    {
        "",
        "#N/A",
        "#N/A N/A",
        "#NA",
        "-1.#IND",
        "-1.#QNAN",
        "-NaN",
        "-nan",
        "1.#IND",
        "1.#QNAN",
        "<NA>",
        "N/A",
        "NA",
        "NULL",
        "NaN",
        "None",
        "n/a",
        "nan",
        "null",
    }
)


def first_sentence(output: str) -> str:
    """``preprocess_output``: lower case, up to the first ``.``, before any ``<context>`` /
    ``<example>``."""
    text = output.lower().split(".")[0]
    text = text.split("<context>")[0].split("<example>")[0]
    return text.split("Question")[
        0
    ]  # after lower-casing this never cuts; the official order is kept


def labels_in(text: str, labels: Iterable[str]) -> set[str]:
    """The labels found in ``text`` as substrings."""
    return {label for label in labels if label in text}


def compare_answers(target: str, output: str, question: str, task_labels: Iterable[str]) -> bool:
    """The official verdict: the reply names the target, and only it, among the labels the question
    does not name."""
    said = first_sentence(output)
    target = target.lower()
    labels = {label.lower() for label in task_labels}
    named = labels_in(said, labels) - labels_in(question.lower(), labels)
    if (
        "," in target and len(target) > 3
    ):  # qa8's several objects ("apple,milk"); qa19's "n,w" is one label
        parts = target.split(",")
        return all(p in named for p in parts) and len(named) == len(parts)
    return target in named and len(named) == 1


def as_read_back(output: str) -> str:
    """The reply as the official table reads it from its CSV: stripped (as the run script stores
    it), "" where pandas reads it as missing."""
    text = output.strip()
    return "" if text in PANDAS_MISSING else text


@METRICS.register("babilong_match")
def babilong_match(
    prediction: str, ground_truth: str, *, task: str, question: str, **_: object
) -> float:
    """1.0 when :func:`compare_answers` accepts ``prediction`` for ``task``'s labels, else 0.0."""
    return float(compare_answers(ground_truth, prediction, question, TASK_LABELS[task]))
