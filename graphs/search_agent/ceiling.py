"""The search agent's evidence ceiling without a model: what its searches of the question's own
text (or, with ``gold_sub_questions``, of each gold sub-question, up to ``max_iterations``) return.

Which queries a model writes is the model's choice, so this is not a bound on what the agent can
reach (it may search other words, and open documents the snippets point to): it measures what the
search backend gives for the question as asked, the first search an agent usually makes. Evidence
documents count when among the ``k`` documents returned; evidence sentences (BABILong) when inside
a returned snippet (the document's first ``snippet_max_tokens`` tokens), or anywhere in a returned
document when ``get_document`` is offered.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from longctx.graphs.plugin.api import (
    CeilingEnv,
    CeilingItem,
    EvidenceCeiling,
    Reach,
    RetrievalService,
    cached_index,
    covered,
    queries,
    reach_of,
)
from longctx.graphs.search_agent.tools import CorpusSearcher, snippet, snippet_tokenizer


@dataclass(frozen=True, kw_only=True)
class SearchedDocumentsCeiling(EvidenceCeiling):
    """The evidence among the documents the agent's search tool returns for the question."""

    rank: int = 35

    def reach(self, cfg: Any, item: CeilingItem, env: CeilingEnv) -> Reach:
        index = cached_index(cfg, item.corpus, env)
        service = RetrievalService(settings=cfg, cache_dir=env.cache_dir)
        searcher = CorpusSearcher(index, item.corpus, service)
        found: dict[str, str] = {}
        for query in queries(item, env, cfg.max_iterations):
            for cand in searcher.search(query, cfg.k):
                found.setdefault(str(cand["docid"]), cand["text"])
        if item.spans:
            tokenizer = snippet_tokenizer(cfg.snippet_tokenizer)
            regions = [
                (
                    d,
                    0,
                    len(t if cfg.get_document else snippet(t, cfg.snippet_max_tokens, tokenizer)),
                )
                for d, t in found.items()
            ]
            return Reach(covered(item.spans, regions), len(item.spans))
        return reach_of(item.evidence, found)

    def describe(self, cfg: Any, env: CeilingEnv, corpus_tokens: int | None = None) -> str:
        asked = "each gold sub-question" if env.gold_sub_questions else "the question"
        return (
            f"{env.evidence} in the top-{cfg.k} {cfg.retriever} documents for {asked} "
            "(the agent's own queries may reach more)"
        )
