"""Usage accounting: a LangChain callback that counts every chat-model call of one answer."""

from __future__ import annotations

import threading
from typing import Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.outputs import LLMResult

from agents.types import Usage
from retrieval.tokens import count_tokens


class UsageTracker(BaseCallbackHandler):
    """Counts calls, failures and tokens across all chat-model calls of a run (thread-safe).

    Token counts come from the model's ``usage_metadata`` (OpenAI-compatible servers and
    the embedded model report it). A model that reports none is counted with cl100k and
    the usage is flagged ``estimated``.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._prompts: dict[UUID, str] = {}
        self.usage = Usage()
        self.errors: list[str] = []

    def on_chat_model_start(self, serialized: dict[str, Any], messages: list[list[Any]], *, run_id: UUID, **kwargs: Any) -> None:
        """Remember the prompt text in case the reply carries no usage."""
        text = "\n".join(str(m.content) for batch in messages for m in batch)
        with self._lock:
            self._prompts[run_id] = text

    def on_llm_end(self, response: LLMResult, *, run_id: UUID, **kwargs: Any) -> None:
        """Add one call and its tokens."""
        prompt_tokens = completion_tokens = 0
        estimated = cached = False
        for generations in response.generations:
            for gen in generations:
                message = getattr(gen, "message", None)
                meta = getattr(message, "usage_metadata", None)
                if getattr(message, "response_metadata", {}).get("cache_hit"):
                    cached = True
                elif meta:
                    prompt_tokens += meta.get("input_tokens", 0)
                    completion_tokens += meta.get("output_tokens", 0)
                else:
                    estimated = True
                    completion_tokens += count_tokens(gen.text)
        with self._lock:
            prompt = self._prompts.pop(run_id, "")
            if cached:
                self.usage.cached_calls += 1
                return
            if estimated:
                prompt_tokens += count_tokens(prompt)
            self.usage.llm_calls += 1
            self.usage.prompt_tokens += prompt_tokens
            self.usage.completion_tokens += completion_tokens
            self.usage.estimated = self.usage.estimated or estimated

    def on_llm_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        """Record a failed call; failures are never dropped silently."""
        with self._lock:
            self._prompts.pop(run_id, None)
            self.usage.failed_calls += 1
            self.errors.append(f"{type(error).__name__}: {error}")
