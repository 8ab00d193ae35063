"""MemAgent's evidence ceiling: whether the needed records fit its memory budget (LLM-free)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from graphs.ceiling import CeilingEnv, CeilingItem, EvidenceCeiling, Reach, SkipCeiling, render_records


@dataclass(frozen=True, kw_only=True)
class MemoryCeiling(EvidenceCeiling):
    """Whether the minimal rendering of the needed records (``entity | field | year | value``, one
    line each) fits the memory budget (``max_new_tokens``, 1,024) in the model's tokens (cl100k
    unless a tokenizer is given); the share is the share of records (in corpus order) that fit.
    Needs records: synthetic corpora only."""

    unit: str = "records"

    def reach(self, cfg: Any, item: CeilingItem, env: CeilingEnv) -> Reach:
        if item.records is None:
            raise SkipCeiling("needs the records each question reads (synthetic corpora)")
        records = list(item.records)
        budget = cfg.max_new_tokens
        if len(env.encode(render_records(records))) <= budget:
            return Reach(len(records), len(records))
        lo, hi = 0, len(records)  # largest prefix that fits
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if len(env.encode(render_records(records[:mid]))) <= budget:
                lo = mid
            else:
                hi = mid - 1
        return Reach(lo, len(records))

    def describe(self, cfg: Any, env: CeilingEnv, corpus_tokens: int | None = None) -> str:
        return f"needed records (entity|field|year|value) fit the {cfg.max_new_tokens}-token memory"


#: MemAgent's ceiling rule, on its registration.
MEMAGENT_CEILING = MemoryCeiling(rank=60)
