"""The rerank calls of a retrieving strategy's cost: one per retrieval when its config's ``rerank``
names a reranker, each sending the first stage's ``max(top_k, rerank_candidates)`` candidates (at
most the corpus's chunks) with the query.

A retrieving strategy's cost model ends with :func:`with_rerank`, saying how many retrievals a
question makes (at least, at most, typically): the bounds get a
:class:`~graphs.metering.budget.RerankPlan` (what ``longctx.agents.estimate`` shows and a budget
counts as model calls), the typical cost its :class:`~graphs.metering.costs.RerankCalls` (what the
run plan prints). Tokens are estimates as a plan's: per call, the query (the question, standing in
for a follow-up or sub-question) once per candidate, and the candidates' text, counted with the
tokenizer the budget guard counts a rerank call with.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

from langchain_core.language_models import BaseChatModel

from longctx.graphs.index.retrieval_settings import RetrievalSettings
from longctx.graphs.metering import costs
from longctx.graphs.metering.rerank_plan import RerankPlan
from longctx.retrieval.contract import Question


@dataclasses.dataclass(frozen=True, kw_only=True)
class Retrievals:
    """The retrievals one question makes: at least, at most, and typically (each reranked when a
    reranker is set)."""

    least: int
    most: int
    typical: float


def candidates(cfg: RetrievalSettings, shape: costs.CorpusShape) -> int:
    """Documents one rerank call sends: the first stage's ``max(top_k, rerank_candidates)``, at most
    the corpus's chunks."""
    chunk = costs.tokens_of(cfg.chunk_size, cfg.chunk_unit)
    chunks = max(1, sum(math.ceil(n / chunk) for n in shape.token_counts))
    return min(max(cfg.top_k, cfg.rerank_candidates), chunks)


def with_rerank(
    found: costs.Costs,
    cfg: RetrievalSettings,
    shape: costs.CorpusShape,
    questions: Sequence[Question],
    *,
    retrievals: Retrievals,
    llm: BaseChatModel | None = None,
) -> costs.Costs:
    """``found`` with the rerank calls of ``retrievals`` per question where ``cfg`` reranks
    (unchanged where it does not)."""
    if cfg.rerank is None:
        return found
    documents = candidates(cfg, shape)
    text = min(shape.tokens, documents * costs.tokens_of(cfg.chunk_size, cfg.chunk_unit))
    _, count = costs.counter(llm)
    queries = [count(q.render()) for q in questions or [costs.PLACEHOLDER_QUESTION]]
    least, most = documents * min(queries) + text, documents * max(queries) + text
    one = RerankPlan(
        calls=retrievals.least,
        max_calls=retrievals.most,
        documents=retrievals.least * documents,
        max_documents=retrievals.most * documents,
        tokens=retrievals.least * least,
        max_tokens=retrievals.most * most,
    )
    typical = costs.RerankCalls(
        retrievals.typical, retrievals.typical * documents, retrievals.typical * (least + most) / 2
    )
    return costs.Costs(
        dataclasses.replace(found.bounds, rerank=one.scaled(found.bounds.questions)),
        dataclasses.replace(found.typical, rerank=typical),
    )


def with_sometimes(
    found: costs.Costs, *, most: RerankPlan | None, usual: costs.RerankCalls | None, share: float
) -> costs.Costs:
    """``found`` plus the rerank calls of a part that runs for some questions only (Self-Route's
    fallback on the questions it declines): ``most`` its rerank bounds for one question (at least
    none: the part may not run), ``usual`` its typical rerank calls per question, run on ``share``
    of the questions."""
    bounds, typical = found.bounds, found.typical
    if most is not None and most.max_calls:
        extra = RerankPlan(
            calls=0,
            max_calls=most.max_calls,
            documents=0,
            max_documents=most.max_documents,
            tokens=0,
            max_tokens=most.max_tokens,
        ).scaled(bounds.questions)
        own = bounds.rerank
        summed = (
            extra
            if own is None
            else RerankPlan(**{k: v + getattr(own, k) for k, v in extra.to_dict().items()})
        )
        bounds = dataclasses.replace(bounds, rerank=summed)
    if usual is not None and usual.calls:
        r = typical.rerank
        typical = dataclasses.replace(
            typical,
            rerank=costs.RerankCalls(
                r.calls + share * usual.calls,
                r.documents + share * usual.documents,
                r.tokens + share * usual.tokens,
            ),
        )
    return costs.Costs(bounds, typical)


__all__ = ["Retrievals", "candidates", "with_rerank", "with_sometimes"]
