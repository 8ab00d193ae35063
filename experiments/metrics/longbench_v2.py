"""LongBench v2 answer extraction and accuracy, as the official ``pred.py``/``result.py``.

Quirk and fix: the official ``pred.py`` never writes a sample whose API call failed,
so ``result.py`` divides by the answered samples only. We count failed calls as
invalid answers (score 0, or 0.25 compensated) and report how many there were; the
official number is kept too, labelled ``official_drops_failed``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from longctx.experiments.metrics.registry import METRICS

VERSION = 1

_PRIMARY = re.compile(r"The correct answer is \(([A-D])\)")
_FALLBACK = re.compile(r"The correct answer is ([A-D])")

#: Score of an unparsable answer under the compensated protocol (chance on 4 choices).
COMPENSATED_INVALID = 0.25


def extract_choice(response: str) -> str | None:
    """The chosen letter A-D, or ``None`` when the response follows neither pattern.

    ``*`` is removed first (markdown bold), then ``The correct answer is (X)`` is
    searched, falling back to ``The correct answer is X``.
    """
    text = response.replace("*", "")
    match = _PRIMARY.search(text) or _FALLBACK.search(text)
    return match.group(1) if match else None


@METRICS.register("longbench_v2_choice")
def choice_accuracy(prediction: str, ground_truth: str, **_: object) -> float:
    """1.0 when the extracted letter is the gold letter, else 0.0."""
    return float(extract_choice(prediction) == ground_truth)


@dataclass(frozen=True)
class JudgedAnswer:
    """One sample's outcome: its buckets, the extracted letter and whether the call failed."""

    difficulty: str
    length: str
    gold: str
    choice: str | None
    failed: bool = False


def _acc(item: JudgedAnswer, compensated: bool) -> float:
    if item.choice is None:
        return COMPENSATED_INVALID if compensated else 0.0
    return float(item.choice == item.gold)


def accuracy_table(
    items: Iterable[JudgedAnswer], *, compensated: bool = False, drop_failed: bool = False
) -> dict:
    """Overall / Easy / Hard / Short / Medium / Long accuracy x 100, rounded to 1 decimal.

    As in ``result.py``: difficulty ``easy`` or anything else (hard); length ``short``,
    ``medium`` or anything else (long). An empty bucket is ``None`` (the official
    script would divide by zero).

    Args:
        items: The judged samples.
        compensated: Score unparsable answers 0.25 instead of 0.
        drop_failed: Leave failed calls out of every denominator (the official behaviour).
    """
    buckets: dict[str, list[float]] = {
        k: [] for k in ("overall", "easy", "hard", "short", "medium", "long")
    }
    for item in items:
        if drop_failed and item.failed:
            continue
        acc = _acc(item, compensated)
        buckets["overall"].append(acc)
        buckets["easy" if item.difficulty == "easy" else "hard"].append(acc)
        length = item.length if item.length in ("short", "medium") else "long"
        buckets[length].append(acc)
    return {k: (round(100 * sum(v) / len(v), 1) if v else None) for k, v in buckets.items()} | {
        "n": len(buckets["overall"])
    }
