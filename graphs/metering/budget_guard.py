"""The guard that stops a run at its :class:`~graphs.metering.budget.Budget`: a LangChain callback
that counts every chat-model call as it starts (and every rerank call as the rerank stage announces
it, :data:`RERANK_EVENT`) and raises :class:`~graphs.metering.budget.BudgetReached` before the call
that would pass a limit; the run path turns that into an answer marked ``stopped="budget"``."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.outputs import LLMResult

from longctx.graphs.calls.prompt_text import counted_prompt
from longctx.graphs.metering.budget import Budget, BudgetReached
from longctx.graphs.runtime.cancel import quiet_refused_starts
from longctx.retrieval.reported_usage import as_count, metadata_counts

#: Custom callback event a rerank call dispatches before its request,
#: ``{"query": str, "documents": [str, ...], "call": str}``: the :class:`BudgetGuard` counts it as a
#: model call (or stops it) as it counts a chat call when it starts.
RERANK_EVENT = "longctx.rerank"
#: Custom callback event a rerank call dispatches once its server answered,
#: ``{"call": str, "tokens": int}``: the :class:`BudgetGuard` settles the cost it reserved for the
#: call ``call`` (the ``call`` of its :data:`RERANK_EVENT`) at the ``tokens`` the reranker reported,
#: as a chat call is settled at its server's usage.
RERANK_END_EVENT = "longctx.rerank_end"


class BudgetGuard(BaseCallbackHandler):
    """Counts a run's chat-model calls as they start and stops the one that would pass the budget;
    rerank calls too, announced as a :data:`RERANK_EVENT` before their request.

    Thread-safe: a call's prompt tokens (and their cost) are reserved when it starts, so calls
    in flight together cannot overshoot. When a call ends its cost is settled at the usage its
    server reported (prompt tokens, cached prompt tokens at the cached rate, completion tokens),
    so :attr:`spent_usd` is what the report charges for the calls done. ``spent_usd`` says what
    was counted so far.
    """

    raise_error = True
    run_inline = True

    def __init__(self, budget: Budget, count: Callable[[str], int]) -> None:
        quiet_refused_starts()
        self.budget = budget
        self.count = count
        self._lock = threading.Lock()
        self.calls = 0
        self.prompt_tokens = 0
        self.completion_tokens = 0
        self.rerank_calls = 0  # of ``calls``
        self.rerank_tokens = 0  # besides ``prompt_tokens``
        #: Prompt tokens the servers said they read from their prompt cache (calls that ended;
        #: counted under a cost limit).
        self.cached_prompt_tokens = 0
        self.reached: str | None = None
        self._usd = 0.0  # every call's cost: reserved when it starts, settled when it ends
        self._reserved: dict[UUID, float] = {}  # USD reserved by each call in flight
        self._rerank_reserved: dict[
            str, tuple[int, float]
        ] = {}  # (tokens, USD) of each rerank call in flight

    @property
    def spent_usd(self) -> float:
        """USD counted so far at the budget's prices: each ended call at its server's usage (the
        report's price), each call in flight at its prompt's tokens counted before it, at the prompt
        rate; each rerank call at the tokens its reranker reported once answered (before that, and
        where none were reported, at its query-document tokens counted before it), at the reranker's
        prompt rate."""
        return self._usd

    def on_chat_model_start(
        self, serialized: dict[str, Any], messages: list[list[Any]], **kwargs: Any
    ) -> None:
        """Reserve this call (its messages, tool-call arguments and tool schemas:
        :func:`~graphs.calls.prompt_text.counted_prompt`), or raise :class:`BudgetReached` if it
        would pass a limit."""
        flat = [m for batch in messages for m in batch]
        self._start(counted_prompt(flat, kwargs.get("invocation_params")), kwargs.get("run_id"))

    def on_llm_start(self, serialized: dict[str, Any], prompts: list[str], **kwargs: Any) -> None:
        """The same for a completion model."""
        self._start("\n".join(prompts), kwargs.get("run_id"))

    def on_custom_event(self, name: str, data: Any, *, run_id: UUID, **kwargs: Any) -> None:
        """Reserve a rerank call announced as a :data:`RERANK_EVENT` (its tokens: the query with
        each document), or raise :class:`BudgetReached` before its request if it would pass a
        limit."""
        if name == RERANK_END_EVENT:
            self._settle_rerank(data["call"], data["tokens"])
            return
        if name != RERANK_EVENT:
            return
        b = self.budget
        tokens = 0
        if b.max_prompt_tokens is not None or b.max_cost_usd is not None:
            query = self.count(data["query"])
            tokens = sum(query + self.count(document) for document in data["documents"])
        usd = b.rerank_cost(tokens)
        self._reserve(tokens, usd, rerank=True)
        if data.get("call") is not None and b.max_cost_usd is not None:
            with self._lock:
                self._rerank_reserved[data["call"]] = (tokens, usd)

    def _settle_rerank(self, call: str, tokens: int) -> None:
        """Settle a rerank call's reserved cost at the ``tokens`` its reranker reported (the
        reservation stands where it reported none or no token count, or when the call failed and
        sent no end event)."""
        with self._lock:
            reserved = self._rerank_reserved.pop(call, None)
            reported = as_count(tokens)  # a plug-in reranker's figure is checked as a server's is
            if reserved is None or not reported:
                return
            self._usd += self.budget.rerank_cost(reported) - reserved[1]

    def _start(self, prompt: str, run_id: UUID | None) -> None:
        b = self.budget
        tokens = (
            self.count(prompt)
            if (b.max_prompt_tokens is not None or b.max_cost_usd is not None)
            else 0
        )
        self._reserve(tokens, b.cost(tokens, 0), rerank=False, run_id=run_id)

    def _reserve(
        self, tokens: int, usd: float, *, rerank: bool, run_id: UUID | None = None
    ) -> None:
        """Count one call of ``tokens`` prompt tokens costing ``usd``, or raise
        :class:`BudgetReached` (and refuse every later call)."""
        b = self.budget
        with self._lock:
            sent = self.prompt_tokens + self.rerank_tokens
            why = None
            if self.reached is not None:
                why = self.reached
            elif b.max_llm_calls is not None and self.calls + 1 > b.max_llm_calls:
                why = f"{b.max_llm_calls:,} calls"
            elif b.max_prompt_tokens is not None and sent + tokens > b.max_prompt_tokens:
                why = (
                    f"{b.max_prompt_tokens:,} prompt tokens ({sent:,} sent, the next "
                    f"{'rerank ' if rerank else ''}call has {tokens:,})"
                )
            elif b.max_cost_usd is not None and self._usd + usd > b.max_cost_usd:
                why = f"${b.max_cost_usd:,.2f} (${self._usd:,.4f} spent)"
            if why is not None:
                self.reached = why
                raise BudgetReached(f"budget reached: {why}; {self.calls:,} calls made")
            self.calls += 1
            self._usd += usd
            if rerank:
                self.rerank_calls += 1
                self.rerank_tokens += tokens
                return
            self.prompt_tokens += tokens
            # settled in on_llm_end, which only a cost limit needs
            if run_id is not None and b.max_cost_usd is not None:
                self._reserved[run_id] = usd

    def on_llm_end(self, response: LLMResult, *, run_id: UUID, **kwargs: Any) -> None:
        """Settle the call's cost at the usage its server reported (its reserved prompt cost where
        it reported none or counts that are not token counts, never below zero:
        :func:`~retrieval.reported_usage.metadata_counts`)."""
        if self.budget.max_cost_usd is None:
            return
        prompt, cached, completion, reported = 0, 0, 0, False
        for batch in response.generations:
            for gen in batch:
                # None where the reply has no usage or one no server can mean (a negative count):
                # our own count
                counts = metadata_counts(
                    getattr(getattr(gen, "message", None), "usage_metadata", None)
                )
                completion += (counts[2] if counts else 0) or self.count(gen.text)
                if counts is not None:
                    reported = True
                    prompt += counts[0]
                    cached += counts[1]
        with self._lock:
            reserved = self._reserved.pop(run_id, 0.0)
            settled = (
                self.budget.cost(prompt, completion, cached)
                if reported
                else reserved + self.budget.cost(0, completion)
            )
            self._usd += settled - reserved
            self.completion_tokens += completion
            self.cached_prompt_tokens += cached

    def on_llm_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        """A failed call keeps its reserved cost (its server may have read the prompt)."""
        with self._lock:
            self._reserved.pop(run_id, None)

    def reserve_outside(self, tokens: int, usd: float) -> None:
        """Count one call another process will send (:mod:`longctx.graphs.metering.budget_channel`):
        ``tokens`` prompt tokens and ``usd`` (its prompt and its answer budget at the most), or
        raise :class:`BudgetReached`."""
        self._reserve(tokens, usd, rerank=False)

    def settle_outside(self, reserved_usd: float, usd: float, completion: int, cached: int) -> None:
        """Settle a call reserved by :meth:`reserve_outside` at ``usd``, the cost of the usage its
        server reported (``completion`` and ``cached`` prompt tokens counted as a call ending
        here)."""
        with self._lock:
            self._usd += usd - reserved_usd
            self.completion_tokens += completion
            self.cached_prompt_tokens += cached


class _QuietBudgetStop(logging.Filter):
    """Drops LangChain's warning about a callback that raised when it is the guard's planned stop
    (the answer says ``stopped="budget"``; a warning per stopped run would read as a failure)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not any(
            isinstance(a, str) and a.startswith("BudgetReached(") for a in (record.args or ())
        )


logging.getLogger("langchain_core.callbacks.manager").addFilter(_QuietBudgetStop())
