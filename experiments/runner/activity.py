"""What a run is doing between finished answers: model calls, the step they serve, tokens read.

A strategy that reads a whole corpus (MemAgent's chunk updates, structured's extractions) can
take many minutes per answer; the overall progress bar of ``longctx run`` counts answers, so
without this it would stand still. The handler rides on the run's chat model and posts the
calls and the current step (strategy and graph node, e.g. ``memagent/update_memory``) as the
bar's postfix.
"""

from __future__ import annotations

import threading
import time
from typing import Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.outputs import LLMResult

from longctx.retrieval.reported_usage import metadata_counts


class RunActivity(BaseCallbackHandler):
    """Counts a run's model calls and posts them, with the step in flight, on a tqdm bar
    (thread-safe)."""

    run_inline = True

    def __init__(self, bar: Any) -> None:
        self.bar = bar
        self._lock = threading.Lock()
        self._running: dict[UUID, str] = {}
        self.calls = 0
        self.prompt_tokens = 0
        self.step = ""
        self._began = time.perf_counter()

    def on_chat_model_start(
        self,
        serialized: dict[str, Any],
        messages: list[list[Any]],
        *,
        run_id: UUID,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        """A call started: remember which strategy step it serves."""
        metadata = metadata or {}
        step = (
            "/".join(
                str(p) for p in (metadata.get("strategy"), metadata.get("langgraph_node")) if p
            )
            or "model call"
        )
        with self._lock:
            self._running[run_id] = step
            self.step = step
        self._show()

    def on_llm_end(self, response: LLMResult, *, run_id: UUID, **kwargs: Any) -> None:
        """A call returned: count it and the tokens it read."""
        message = (
            getattr(response.generations[0][0], "message", None)
            if response.generations and response.generations[0]
            else None
        )
        counts = metadata_counts(getattr(message, "usage_metadata", None))
        with self._lock:
            self._running.pop(run_id, None)
            self.calls += 1
            self.prompt_tokens += counts[0] if counts else 0
        self._show()

    def on_llm_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        """A call failed: it is no longer running."""
        with self._lock:
            self._running.pop(run_id, None)
        self._show()

    def postfix(self) -> str:
        """``calls 12 (2 running: memagent/update_memory), 30,200 tokens read at 85/s``."""
        with self._lock:
            rate = self.prompt_tokens / max(time.perf_counter() - self._began, 1e-9)
            running = f" ({len(self._running)} running: {self.step})" if self._running else ""
            return (
                f"calls {self.calls}{running}, {self.prompt_tokens:,} tokens read at {rate:,.0f}/s"
            )

    def _show(self) -> None:
        if not getattr(self.bar, "disable", True):
            self.bar.set_postfix_str(self.postfix(), refresh=True)
