"""PAI's (and PAI-'s) evidence ceiling: perfect judges over ``plan_judging``'s candidates, packed as
PAI packs (LLM-free)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from longctx.graphs.plugin.api import (
    CeilingEnv,
    CeilingItem,
    EvidenceCeiling,
    Reach,
    cached_index,
    chunk_regions,
    covered,
    node_runtime,
    queries,
    reach_of,
)


@dataclass(frozen=True, kw_only=True)
class JudgedChunksCeiling(EvidenceCeiling):
    """The judge candidates of PAI's own ``plan_judging`` node (every chunk when exhaustive,
    ``judge_mode`` auto switching at ``exhaustive_max_tokens``; else each sub-question's top-k);
    judges assumed perfect keep one chunk per evidence document among the candidates, and PAI's
    ``pack`` fits them into ``sub_answer_context_tokens``. Sub-questions: the question itself
    (PAI's degraded plan), or with ``gold_sub_questions`` the gold ones, at most ``max_items``.
    With evidence sentences (BABILong), perfect judges keep the candidates holding any part of a
    supporting fact, and the facts the packed chunks cover are counted.

    Attributes:
        choose_mode, plan_judging, pack: PAI's functions (passed in by its registration, which
            this module cannot import).
    """

    choose_mode: Callable[[Any, int], str]
    plan_judging: Callable[..., dict[str, Any]]
    pack: Callable[..., tuple[list[Any], int]]

    def reach(self, cfg: Any, item: CeilingItem, env: CeilingEnv) -> Reach:
        mode = self.choose_mode(cfg, item.corpus.num_tokens)
        index = cached_index(cfg, item.corpus, env) if mode == "prefilter" else None
        subs = [{"text": q} for q in queries(item, env, cfg.max_items)]
        plan = self.plan_judging({"sub_questions": subs}, node_runtime(cfg, item.corpus, index))
        if item.spans is not None:
            every = (
                index.chunks
                if index is not None
                else [h.chunk for c in plan["candidates"] for h in c]
            )
            return self._sentences(cfg, item, plan["candidates"], every)
        wanted = set(item.evidence)
        docs: set[str] = set()
        for candidates in plan["candidates"]:
            kept: dict[str, Any] = {}
            for hit in sorted(candidates, key=lambda h: (h.chunk.doc_index, h.chunk.position)):
                if hit.chunk.doc_id in wanted and hit.chunk.doc_id not in kept:
                    kept[hit.chunk.doc_id] = hit.chunk
            packed, _ = self.pack(list(kept.values()), cfg.sub_answer_context_tokens)
            docs.update(c.doc_id for c in packed)
        return reach_of(item.evidence, docs)

    def _sentences(
        self, cfg: Any, item: CeilingItem, candidates: Sequence[Sequence[Any]], every: Sequence[Any]
    ) -> Reach:
        """Perfect judges keep each sub-question's candidates that overlap a supporting fact; the
        facts the packed ones cover."""
        spans = item.spans or ()
        regions = chunk_regions(item.corpus, every)
        read: list[tuple[str, int, int]] = []

        def holds_a_fact(chunk: Any) -> bool:
            doc_id, start, end = regions[chunk.chunk_id]
            return any(s.doc_id == doc_id and s.start < end and start < s.end for s in spans)

        for hits in candidates:
            ordered = sorted((h.chunk for h in hits), key=lambda c: (c.doc_index, c.position))
            kept = [c for c in ordered if holds_a_fact(c)]
            packed, _ = self.pack(kept, cfg.sub_answer_context_tokens)
            read += [regions[c.chunk_id] for c in packed]
        return Reach(covered(spans, read), len(spans))

    def describe(self, cfg: Any, env: CeilingEnv, corpus_tokens: int | None = None) -> str:
        mode = self.choose_mode(cfg, corpus_tokens) if corpus_tokens is not None else cfg.judge_mode
        what = (
            "every chunk judged"
            if mode == "exhaustive"
            else f"top-{cfg.top_k} {cfg.retriever} candidates"
        )
        q = f"<= {cfg.max_items} gold sub-questions" if env.gold_sub_questions else "the question"
        return (
            f"{mode}: {what} for {q}; perfect judges; <= {cfg.sub_answer_context_tokens} tokens "
            "packed per sub-question"
        )

    def detail(
        self, cfg: Any, items: Sequence[CeilingItem], reaches: Sequence[Reach], env: CeilingEnv
    ) -> dict[str, Any]:
        """The judge modes that ran (``auto`` picks per corpus size)."""
        return {"judge_mode": sorted({self.choose_mode(cfg, i.corpus.num_tokens) for i in items})}
