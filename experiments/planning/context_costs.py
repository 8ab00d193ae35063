"""Cost per context and per question: where index-time strategies win or lose as
questions accumulate.

A benchmark that asks many questions over one context (MemoryAgentBench: "inject once, ask
many") pays some work once per context (building or loading an index, a tree, an extraction)
and the rest per question. From a run's rows (each carries its corpus fingerprint, its
seconds and the part of them spent on the index, ``usage.index_seconds``) this splits each
strategy's cost into both, so a report shows what a context costs before its first question
and what each question adds.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any


def _usage(row: Mapping[str, Any], key: str) -> float:
    value = (row.get("usage") or {}).get(key)
    return float(value) if isinstance(value, (int, float)) else 0.0


def context_costs(strategy: str, rows: Iterable[Mapping[str, Any]]) -> dict[str, Any] | None:
    """One strategy's cost per context and per question over its answered rows (``None``
    without any).

    ``index_seconds_per_context`` is the index time summed over each context's questions
    (the runner shares one build out among the questions that used it), averaged over
    contexts; the ``per_question`` figures leave that time out; ``seconds_per_question_all_in``
    keeps it in (what a question costs when the context is asked only this many questions).
    """
    ok = [r for r in rows if r.get("status") == "ok"]
    if not ok:
        return None
    contexts = {str(r.get("corpus") or r.get("sample_id")) for r in ok}
    index_seconds = sum(_usage(r, "index_seconds") for r in ok)
    seconds = sum(float(r.get("seconds") or 0.0) for r in ok)
    n = len(ok)
    return {
        "strategy": strategy,
        "contexts": len(contexts),
        "questions": n,
        "questions_per_context": round(n / len(contexts), 2),
        "index_seconds_per_context": round(index_seconds / len(contexts), 3),
        "seconds_per_question": round((seconds - index_seconds) / n, 3),
        "seconds_per_question_all_in": round(seconds / n, 3),
        "llm_calls_per_question": round(sum(_usage(r, "llm_calls") for r in ok) / n, 2),
        "prompt_tokens_per_question": round(sum(_usage(r, "prompt_tokens") for r in ok) / n, 1),
        "completion_tokens_per_question": round(
            sum(_usage(r, "completion_tokens") for r in ok) / n, 1
        ),
    }


#: What each column of ``per_context.md`` (and the report page's per-context
#: table) counts, one line each.
COLUMNS = {
    "strategy": "the strategy (or variant) of the row",
    "contexts": "distinct contexts (corpora) it answered questions over",
    "questions": "questions it answered (ok rows)",
    "questions_per_context": "questions / contexts: how many questions shared each context",
    "index_seconds_per_context": (
        "seconds building or loading the index (tree, graph, records) "
        "per context, its questions' shares summed"
    ),
    "seconds_per_question": (
        "wall seconds per question without the index time: what one more question adds"
    ),
    "seconds_per_question_all_in": (
        "wall seconds per question with the index time shared out over this many questions"
    ),
    "llm_calls_per_question": (
        "model calls per question, index-time calls included (the "
        "question that built the index paid them)"
    ),
    "prompt_tokens_per_question": "prompt tokens per question, index-time tokens included",
    "completion_tokens_per_question": "completion tokens per question, index-time tokens included",
}


def legend(columns: Iterable[str]) -> list[str]:
    """A Markdown line per column of the per-context table: ``- `name`: what it counts``."""
    return [f"- `{c}`: {COLUMNS[c]}" for c in columns if c in COLUMNS]


def per_context_table(per_strategy: Mapping[str, Mapping[str, Any]]) -> list[dict[str, Any]]:
    """A row per strategy of a run (``score_run``'s ``per_strategy``), when some context was asked
    more than one question; else empty."""
    asked: dict[tuple[str, str], int] = {}
    for name, d in per_strategy.items():
        for r in d.get("rows", []):
            if r.get("corpus"):
                asked[(name, r["corpus"])] = asked.get((name, r["corpus"]), 0) + 1
    if (
        not asked or max(asked.values()) < 2
    ):  # every context asked one question: nothing to share out
        return []
    table = [context_costs(name, d.get("rows", [])) for name, d in per_strategy.items()]
    return [t for t in table if t is not None]
