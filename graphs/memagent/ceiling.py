"""MemAgent's evidence ceiling: whether the needed records fit its memory budget (LLM-free)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from longctx.graphs.plugin.api import (
    CeilingEnv,
    CeilingItem,
    EvidenceCeiling,
    Reach,
    SkipCeiling,
    render_records,
)


@dataclass(frozen=True, kw_only=True)
class MemoryCeiling(EvidenceCeiling):
    """Whether the minimal rendering of the needed records (``entity | field | year | value``, one
    line each) fits the memory budget (``max_new_tokens``, 1,024) in the model's tokens (cl100k
    unless a tokenizer is given); the share is the share of records (in corpus order) that fit.
    With evidence sentences (BABILong), the supporting facts are the records: MemAgent reads
    every chunk, so each fact passes through; whether they fit its memory, one line each.
    Needs records or sentences: synthetic corpora and generated BABILong only."""

    unit: str = "records"

    def reach(self, cfg: Any, item: CeilingItem, env: CeilingEnv) -> Reach:
        if item.spans is not None:
            facts = item.facts
            return Reach(
                fitting_prefix(
                    facts, lambda n: len(env.encode("\n".join(facts[:n]))), cfg.max_new_tokens
                ),
                len(facts),
            )
        if item.records is None:
            raise SkipCeiling(
                "needs the records each question reads (synthetic corpora) or its supporting "
                "facts (generated BABILong)"
            )
        records = list(item.records)
        return Reach(
            fitting_prefix(
                records, lambda n: len(env.encode(render_records(records[:n]))), cfg.max_new_tokens
            ),
            len(records),
        )

    def describe(self, cfg: Any, env: CeilingEnv, corpus_tokens: int | None = None) -> str:
        what = (
            "supporting facts (one line each)"
            if env.sentences
            else "needed records (entity|field|year|value)"
        )
        return f"{what} fit the {cfg.max_new_tokens}-token memory"


def fitting_prefix(
    items: Sequence[Any], tokens_of_prefix: Callable[[int], int], budget: int
) -> int:
    """The length of the longest prefix of ``items`` whose rendering (``tokens_of_prefix(n)``
    tokens) fits ``budget``."""
    if tokens_of_prefix(len(items)) <= budget:
        return len(items)
    lo, hi = 0, len(items)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if tokens_of_prefix(mid) <= budget:
            lo = mid
        else:
            hi = mid - 1
    return lo


#: MemAgent's ceiling rule, on its registration.
MEMAGENT_CEILING = MemoryCeiling(rank=60)
