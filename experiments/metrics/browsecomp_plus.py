"""BrowseComp-Plus's scoring as ``scripts_evaluation/evaluate_run.py`` scores a run
(texttron/BrowseComp-Plus @ 97c637c): the judge reply read into ``extracted_final_answer``,
``reasoning``, ``correct`` and ``confidence``; accuracy over every query; the RMS calibration error
over 100-answer bins (0 below 100 judged answers, as the script reports); evidence recall of the
documents a run retrieved against ``qrel_evidence.txt``; tool calls per query.

Pure functions over plain values; the judge call itself is
:func:`longctx.experiments.benchmarks.browsecomp_plus.judge_answer`. Each reproduces the official
figure to the rounding the summary JSON carries (``tests/test_browsecomp_plus.py`` compares them
with the official script's own output).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

VERSION = 1

#: The three spellings of a field label the official parser tries, in its order: ``**name:**``,
#: ``**name**:``, ``name:``.
_LABELS = (r"\*\*{0}:\*\*", r"\*\*{0}\*\*:", r"{0}:")
#: What follows a reasoning label up to (not including) the ``correct`` label, per spelling.
_REASONING_END = (
    r"(?=\n\*\*correct:\*\*|\n\*\*correct\*\*:|\ncorrect:|$)",
    r"(?=\n\*\*correct:\*\*|\n\*\*correct\*\*:|\ncorrect:|$)",
    r"(?=\ncorrect:|$)",
)
#: Calibration bins hold this many answers (``calib_err``'s ``beta``); fewer judged answers in all
#: and the official summary reports 0.
CALIBRATION_BIN = 100


def _first(patterns: Iterable[str], text: str, flags: int) -> re.Match[str] | None:
    for pattern in patterns:
        found = re.search(pattern, text, flags)
        if found:
            return found
    return None


def parse_judge_reply(reply: str | None) -> dict[str, Any]:
    """The official reading of a judge reply: ``extracted_final_answer``, ``reasoning``,
    ``correct`` (``True``/``False``/``None``), ``confidence`` (capped at 100) and ``parse_error``
    (no reply, or no ``correct: yes|no``)."""
    result: dict[str, Any] = {
        "extracted_final_answer": None,
        "reasoning": None,
        "correct": None,
        "confidence": None,
        "parse_error": False,
    }
    if not reply:
        result["parse_error"] = True
        return result
    dotall = re.IGNORECASE | re.DOTALL
    answer = _first(
        (f"{label.format('extracted_final_answer')}" + r"\s*(.*?)(?=\n|$)" for label in _LABELS),
        reply,
        dotall,
    )
    if answer:
        result["extracted_final_answer"] = answer.group(1).strip()
    reasoning = _first(
        (
            label.format("reasoning") + r"\s*(.*?)" + end
            for label, end in zip(_LABELS, _REASONING_END)
        ),
        reply,
        dotall,
    )
    if reasoning:
        result["reasoning"] = reasoning.group(1).strip()
    correct = _first(
        (label.format("correct") + r"\s*(yes|no)" for label in _LABELS), reply, re.IGNORECASE
    )
    if correct:
        result["correct"] = correct.group(1).lower() == "yes"
    confidence = _first(
        (label.format("confidence") + r"\s*(\d+(?:\.\d+)?)\s*%?" for label in _LABELS),
        reply,
        re.IGNORECASE,
    )
    if confidence:
        result["confidence"] = min(float(confidence.group(1)), 100)
    result["parse_error"] = result["correct"] is None
    return result


def calibration_error(
    confidences: Sequence[float], correct: Sequence[bool], bin_size: int = CALIBRATION_BIN
) -> float:
    """The official RMS calibration error in percent (``calculate_calibration_error``): answers
    sorted by confidence (numpy's default sort, ties as it leaves them) in bins of ``bin_size``, the
    remainder joining the last bin, which (as in ``calib_err``) is left out of the sum while its
    answers still count in the weights' denominator. 0 with fewer than ``bin_size`` answers (the
    summary's rule)."""
    if len(confidences) != len(correct):
        raise ValueError("calibration_error: one correctness per confidence")
    n = len(confidences)
    if n < bin_size:
        return 0.0
    conf = np.asarray(confidences, dtype=float) / 100.0
    hits = np.asarray(correct, dtype=float)
    order = np.argsort(conf)
    conf, hits = conf[order], hits[order]
    bins = n // bin_size
    total = 0.0
    for b in range(bins - 1):  # the last bin (with the remainder) is not summed
        lo, hi = b * bin_size, (b + 1) * bin_size
        gap = abs(np.nanmean(conf[lo:hi]) - np.nanmean(hits[lo:hi]))
        total += (hi - lo) / n * gap**2
    return float(np.sqrt(total) * 100)


def evidence_recall(read: Iterable[str], evidence: Iterable[str]) -> float | None:
    """Share of a query's evidence documents among the documents it read (``None``: the query has
    no evidence judgements)."""
    wanted = set(evidence)
    if not wanted:
        return None
    return len(set(read) & wanted) / len(wanted)


def mean_tool_calls(counts: Sequence[Mapping[str, int]]) -> dict[str, float]:
    """``avg_tool_stats``: per tool, its calls summed over every query divided by the number of
    queries (tools in first-seen order)."""
    totals: dict[str, float] = {}
    for per_query in counts:
        for tool, n in per_query.items():
            totals[tool] = totals.get(tool, 0) + n
    return {tool: n / len(counts) for tool, n in totals.items()} if counts else {}


def summary(
    correct: Sequence[bool | None],
    confidences: Sequence[float | None],
    recalls: Sequence[float | None],
    tool_calls: Sequence[Mapping[str, int]],
) -> dict[str, Any]:
    """The official summary's figures over a run's queries, each list one entry per query:
    ``Accuracy (%)`` (judged correct / all queries), ``Recall (%)`` (mean over queries with
    evidence), ``Calibration Error (%)`` (over queries with a verdict and a confidence),
    ``avg_tool_stats``; rounded to 2 places as the summary JSON is."""
    n = len(correct)
    hits = sum(1 for c in correct if c)
    judged = [(f, bool(c)) for c, f in zip(correct, confidences) if c is not None and f is not None]
    known = [r for r in recalls if r is not None]
    return {
        "Accuracy (%)": round(hits / n * 100.0, 2) if n else 0.0,
        "Recall (%)": round(float(np.mean(known)) * 100.0, 2) if known else None,
        "Calibration Error (%)": round(
            calibration_error([f for f, _ in judged], [c for _, c in judged]), 2
        ),
        "avg_tool_stats": mean_tool_calls(tool_calls),
    }
