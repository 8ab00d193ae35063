"""What a result row must hold to be read back: the fields the runner, the report, the
comparison and the export rely on, with their types and sane ranges.

Why: a row is read long after it was written, by code that sums, averages and ranks its numbers and
scores its text. A hand edit, an old writer or a plugin strategy can leave a row that is strict JSON
yet unusable (``"prompt_tokens": 1e308`` overflows every sum to ``inf``; ``"llm_calls": "many"``
fails a mean; a prediction that is a mapping cannot be scored). Such a row is refused where it is
read (:func:`longctx.experiments.runner.read_rows` names its file and line and skips it, so a rerun
answers that pair again) instead of failing a report far from it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from longctx.retrieval.reported_usage import MAX_COUNT

# Counts (tokens, calls) are whole numbers below ``MAX_COUNT`` (10**12): a trillion tokens is more
# than any answer spends, and sums of thousands of such counts stay exact. It is the bound a
# server's usage is checked against as its reply arrives (:mod:`longctx.retrieval.reported_usage`),
# so a paid answer's row is never one refused here.

#: Seconds are below this (about 31 years): more is a corrupt value, and sums stay finite.
MAX_SECONDS = 1e9
#: Seconds this far below zero are clock rounding (an answer's time less its
#: time queued), not corruption.
ROUNDING_SECONDS = 1e-3
#: Usage counts every ok row has, and those it may have.
REQUIRED_COUNTS = ("llm_calls", "prompt_tokens", "completion_tokens")
OPTIONAL_COUNTS = (
    "failed_calls",
    "cached_calls",
    "cached_prompt_tokens",
    "total_tokens",
    "index_llm_calls",
    "index_prompt_tokens",
    "index_completion_tokens",
    "rerank_calls",
    "rerank_failed_calls",
    "rerank_tokens",
)
#: Durations an ok row may have (``seconds`` itself is required).
OPTIONAL_SECONDS = ("index_seconds", "queued_seconds")


def row_problem(row: Any) -> str | None:
    """What makes ``row`` (parsed JSON) not a usable result row, or ``None``.

    Every row needs ``sample_id``, ``strategy``, ``status`` (``ok`` or ``failed``) and
    ``corpus_tokens``; an ok row also a text ``prediction``, ``seconds`` and ``usage`` whose
    counts are whole numbers in ``[0, MAX_COUNT)`` and durations finite in ``[0, MAX_SECONDS)``
    (less than a millisecond below zero is clock rounding, accepted).
    """
    if not isinstance(row, dict):
        return f"a JSON {type(row).__name__}, not a row object"
    missing = [k for k in ("sample_id", "strategy", "status", "corpus_tokens") if k not in row]
    if missing:
        return f"a JSON object without {', '.join(missing)}"
    if (
        not isinstance(row["sample_id"], (str, int))
        or isinstance(row["sample_id"], bool)
        or not isinstance(row["strategy"], str)
    ):
        return "sample_id or strategy is not a string"
    if row["status"] not in ("ok", "failed"):
        return f"status {str(row['status'])[:40]!r} is neither 'ok' nor 'failed'"
    problem = count_problem("corpus_tokens", row["corpus_tokens"]) or _text_problem(
        row, "error", required=False
    )
    if problem or row["status"] == "failed":
        return problem
    return ok_row_problem(row)


def ok_row_problem(row: Mapping[str, Any]) -> str | None:
    """What makes an ok row unusable: its text, its seconds and its usage (see
    :func:`row_problem`)."""
    problem = _text_problem(row, "prediction", required=True) or _text_problem(
        row, "answer", required=False
    )
    if problem:
        return problem
    usage = row.get("usage")
    if not isinstance(usage, Mapping) or "seconds" not in row:
        return "an ok row without usage or seconds"
    checks = [
        ("seconds", row["seconds"], seconds_problem),
        *((f"usage.{k}", usage.get(k), count_problem) for k in REQUIRED_COUNTS),
    ]
    checks += [(f"usage.{k}", usage[k], count_problem) for k in OPTIONAL_COUNTS if k in usage]
    checks += [
        (f"usage.{k}", usage[k], seconds_problem)
        for k in ("seconds", *OPTIONAL_SECONDS)
        if k in usage
    ]
    checks += [(k, row[k], seconds_problem) for k in OPTIONAL_SECONDS if k in row]
    return next((p for name, value, check in checks if (p := check(name, value))), None)


def count_problem(name: str, value: Any) -> str | None:
    """Why ``value`` is not a count (a whole number in ``[0, MAX_COUNT)``), or ``None``."""
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < MAX_COUNT:
        return None
    return f"{name} is {_shown(value)}, not a whole number from 0 to {MAX_COUNT:.0e}"


def seconds_problem(name: str, value: Any) -> str | None:
    """Why ``value`` is not a duration (a finite number of seconds in ``[0, MAX_SECONDS)``),
    or ``None``."""
    if (
        isinstance(value, (int, float))
        and not isinstance(value, bool)
        and math.isfinite(value)
        and -ROUNDING_SECONDS < value < MAX_SECONDS
    ):
        return None
    return f"{name} is {_shown(value)}, not a number of seconds from 0 to {MAX_SECONDS:.0e}"


def _text_problem(row: Mapping[str, Any], key: str, *, required: bool) -> str | None:
    value = row.get(key)
    if isinstance(value, str) or (value is None and not required):
        return None
    return f"{key} is {_shown(value)}, not text"


def _shown(value: Any) -> str:
    """``value`` as the message quotes it: a short repr, or its type for containers."""
    if isinstance(value, (dict, list)):
        return f"a JSON {'object' if isinstance(value, dict) else 'array'}"
    if value is None:
        return "null or missing"
    text = repr(value)
    return text if len(text) <= 40 else f"{text[:40]}..."
