"""The optional second retrieval stage of every retrieving strategy: rerank the first stage's
candidates.

:meth:`longctx.graphs.index.retrieval_service.RetrievalService.retrieve` calls :func:`rerank` when a
strategy's ``rerank`` option names a reranker (:data:`longctx.retrieval.rerank.RERANKERS`). What
each rerank call cost reaches the answer's ``Usage`` (``rerank_calls``, ``rerank_failed_calls``,
``rerank_tokens``) as a :data:`~graphs.metering.usage.USAGE_EVENT`, as the calls made on a Ray
worker do; a call that fails for good raises :class:`~retrieval.rerank.RerankError`, failing the
answer (the runner records it as a failed row, which the next run answers again). Before its request
a call is announced as a :data:`~graphs.metering.budget_guard.RERANK_EVENT`, so the run's budget
counts it as a model call or stops it (:class:`~graphs.metering.budget.BudgetReached`, no request
sent); once answered, a :data:`~graphs.metering.budget_guard.RERANK_END_EVENT` settles its cost at
the tokens the reranker reported.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any
from uuid import uuid4

from langchain_core.callbacks import dispatch_custom_event
from langchain_core.runnables.config import var_child_runnable_config

from longctx.graphs.metering.budget_guard import RERANK_END_EVENT, RERANK_EVENT
from longctx.graphs.metering.usage import USAGE_EVENT
from longctx.retrieval.base import Hit
from longctx.retrieval.contract import Usage
from longctx.retrieval.rerank import RerankError, get_reranker, rerank_hits


def rerank(
    hits: Sequence[Hit],
    query: str,
    *,
    name: str,
    options: Mapping[str, Any],
    top_n: int,
    stage: str,
) -> list[Hit]:
    """The ``top_n`` of ``hits`` the reranker ``name`` (with ``options``) puts first; the call's
    usage reported.

    Raises:
        BudgetReached: The run's budget refuses the call (no request is sent).
        RerankError: The call failed for good.
    """
    if not hits:  # nothing to rerank: no call
        return []
    reranker = get_reranker(name, options)
    call = announce(query, [h.chunk.text for h in hits])
    try:
        reranked, result = rerank_hits(hits, query, reranker, top_n, stage=stage)
    except RerankError as exc:
        report(Usage(rerank_failed_calls=exc.retries + 1))
        raise
    # the guard settles the call's reserved cost at the tokens the reranker reported
    if call is not None:
        dispatch_custom_event(RERANK_END_EVENT, {"call": call, "tokens": result.tokens})
    report(
        Usage(
            rerank_calls=result.calls,
            rerank_failed_calls=result.failed_calls,
            rerank_tokens=result.tokens,
        )
    )
    return reranked


def announce(query: str, documents: list[str]) -> str | None:
    """Tell the running answer's callbacks (its budget guard) a rerank call of ``documents`` is
    about to be sent; the call's id for its end event (``None`` outside a run: nothing to tell)."""
    if var_child_runnable_config.get() is None:
        return None
    call = uuid4().hex
    dispatch_custom_event(RERANK_EVENT, {"query": query, "documents": documents, "call": call})
    return call


def report(usage: Usage) -> None:
    """Add ``usage`` to the running answer's usage (nothing to add to outside a run: a ceiling's
    retrieval)."""
    if var_child_runnable_config.get() is not None and (
        usage.rerank_calls or usage.rerank_failed_calls
    ):
        dispatch_custom_event(USAGE_EVENT, usage.to_dict())
