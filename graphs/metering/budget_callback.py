"""A LangChain callback that puts a chat model's calls in a child process (a Ray worker, a sandbox)
through the parent's budget channel (:mod:`longctx.graphs.metering.budget_channel`): each call is
reserved before its request is sent (its prompt as the parent's guard counts it, and its answer
budget) and settled at the usage its reply carries; a refused call raises
:class:`~graphs.metering.budget.BudgetReached`."""

from __future__ import annotations

import threading
from typing import Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.outputs import LLMResult

from longctx.graphs.calls.prompt_text import counted_prompt
from longctx.graphs.metering.budget_client import BudgetClient, Grant
from longctx.retrieval.reported_usage import as_count, metadata_counts


def answer_budget(params: dict[str, Any] | None) -> int:
    """The answer budget a call's ``invocation_params`` send (0 where none: its completion is then
    paid when it is settled, as an in-process call's is)."""
    params = params or {}
    for name in ("max_completion_tokens", "max_tokens", "max_new_tokens"):
        count = as_count(params.get(name))
        if count is not None:
            return count
    return 0


class ChannelGuard(BaseCallbackHandler):
    """Reserves each call of the model it is given to with ``client`` as it starts; settles it when
    it ends."""

    raise_error = True
    run_inline = True

    def __init__(self, client: BudgetClient) -> None:
        self.client = client
        self._lock = threading.Lock()
        self._grants: dict[UUID, Grant] = {}

    def _start(self, prompt: str, run_id: UUID, params: dict[str, Any] | None) -> None:
        grant = self.client.reserve(prompt, max_completion_tokens=answer_budget(params))
        with self._lock:
            self._grants[run_id] = grant

    def on_chat_model_start(
        self, serialized: dict[str, Any], messages: list[list[Any]], *, run_id: UUID, **kwargs: Any
    ) -> None:
        """Reserve the call (its prompt as :func:`~graphs.calls.prompt_text.counted_prompt` writes
        it), or raise."""
        params = kwargs.get("invocation_params")
        self._start(counted_prompt([m for b in messages for m in b], params), run_id, params)

    def on_llm_start(
        self, serialized: dict[str, Any], prompts: list[str], *, run_id: UUID, **kwargs: Any
    ) -> None:
        """The same for a completion model."""
        self._start("\n".join(prompts), run_id, kwargs.get("invocation_params"))

    def on_llm_end(self, response: LLMResult, *, run_id: UUID, **kwargs: Any) -> None:
        """Settle at the reply's ``usage_metadata`` (none usable: the reservation stands)."""
        with self._lock:
            grant = self._grants.pop(run_id, None)
        if grant is None:
            return
        counts = [
            metadata_counts(getattr(getattr(g, "message", None), "usage_metadata", None))
            for batch in response.generations
            for g in batch
        ]
        if not counts or any(c is None for c in counts):
            grant.settle(None)
            return
        prompt, cached, completion = (sum(c[i] for c in counts if c) for i in range(3))
        grant.settle(
            {
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "prompt_tokens_details": {"cached_tokens": cached},
            }
        )

    def on_llm_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        """A failed call: its reservation stands."""
        with self._lock:
            grant = self._grants.pop(run_id, None)
        if grant is not None:
            grant.fail(f"{type(error).__name__}: {error}"[:500])


__all__ = ["ChannelGuard", "answer_budget"]
