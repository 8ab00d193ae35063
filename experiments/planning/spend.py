"""What each answer of a run folder cost in all: the usage of every row of its (sample, strategy)
pair added up.

A row's ``usage`` counts what that call of ``answer`` sent
(:class:`longctx.retrieval.contract.Usage`: a resumed run's earlier calls are apart, in
``earlier_*``). A pair stopped by its budget and answered again by a rerun has one row per call,
each with its own requests; a report prices their sum, so every request the run sent for an answer
counts once, and none twice.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

#: The usage counts a pair's rows add up (each row's are the requests of its own call).
SPENT = (
    "llm_calls",
    "failed_calls",
    "cached_calls",
    "prompt_tokens",
    "cached_prompt_tokens",
    "completion_tokens",
)


def latest_with_spend(rows: Iterable[dict[str, Any]]) -> dict[tuple[str, str], dict[str, Any]]:
    """The last row of each (sample, strategy) pair, its ``usage`` counts the sum over all the
    pair's rows (``usage_rows``: how many rows had usage); a pair with one row keeps it as it is."""
    latest: dict[tuple[str, str], dict[str, Any]] = {}
    spent: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for row in rows:
        key = (row["sample_id"], row["strategy"])
        latest[key] = row
        if isinstance(row.get("usage"), dict):
            spent.setdefault(key, []).append(row["usage"])
    for key, row in latest.items():
        usages = spent.get(key, [])
        if len(usages) > 1 and isinstance(row.get("usage"), dict):
            total = {name: sum(int(u.get(name) or 0) for u in usages) for name in SPENT}
            latest[key] = {
                **row,
                "usage": {
                    **row["usage"],
                    **total,
                    "total_tokens": total["prompt_tokens"] + total["completion_tokens"],
                    "usage_rows": len(usages),
                },
            }
    return latest
