"""Timing the calls one graph node makes, for the fan-out benchmarks (PAI's judges, structured's
extraction)."""

from __future__ import annotations

import math
import threading
import time
from typing import Any

from langchain_core.callbacks import BaseCallbackHandler


class NodeTimer(BaseCallbackHandler):
    """First start, last end, call count and prompt tokens of the chat calls made by
    one graph node."""

    run_inline = (
        True  # thread-safe: on the async path, called on the loop rather than through its executor
    )

    def __init__(self, node: str) -> None:
        self.node = node
        self.lock = threading.Lock()
        self.reset()

    def reset(self) -> None:
        """Forget what was measured."""
        self.runs: set = set()
        self.first, self.last, self.calls, self.prompt_tokens = math.inf, 0.0, 0, 0

    def on_chat_model_start(
        self, serialized, messages, *, run_id, metadata: dict | None = None, **kwargs: Any
    ) -> None:
        """Note the start of one of the node's calls."""
        if (metadata or {}).get("langgraph_node") == self.node:
            with self.lock:
                self.runs.add(run_id)
                self.first = min(self.first, time.perf_counter())

    def on_llm_end(self, response, *, run_id, **kwargs: Any) -> None:
        """Note the end and the prompt tokens of one of the node's calls."""
        with self.lock:
            if run_id not in self.runs:
                return
            self.last = max(self.last, time.perf_counter())
            self.calls += 1
            meta = response.generations[0][0].message.usage_metadata or {}
            self.prompt_tokens += meta.get("input_tokens", 0)
