"""A scripted chat model for unit tests of graph logic (never used outside tests)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import PrivateAttr


class ScriptedChatModel(BaseChatModel):
    """Replays ``replies`` in order (or calls ``reply_fn(prompt)``) and records every call.

    A reply is text, or a ready ``AIMessage`` (one with ``tool_calls``: an agent's turn; for a
    model that binds tools, :class:`tests.scripted_tools.ToolScriptedChatModel`). Usage is
    reported as whitespace-word counts so tests can check the accounting.
    """

    replies: list[str | AIMessage] = []
    reply_fn: Callable[[str], str | AIMessage] | None = None
    report_usage: bool = True
    context_window: int | None = None
    _calls: list[dict[str, Any]] = PrivateAttr(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "scripted"

    @property
    def calls(self) -> list[dict[str, Any]]:
        """One dict per call: ``prompt`` and the call's keyword arguments."""
        return self._calls

    def _generate(
        self, messages: list[BaseMessage], stop=None, run_manager=None, **kwargs: Any
    ) -> ChatResult:
        prompt = "\n".join(str(m.content) for m in messages)
        self._calls.append({"prompt": prompt, "stop": stop, **kwargs})
        if self.reply_fn is not None:
            text = self.reply_fn(prompt)
        else:
            if len(self._calls) > len(self.replies):
                raise AssertionError(
                    f"Scripted model ran out of replies after {len(self.replies)} calls"
                )
            text = self.replies[len(self._calls) - 1]
        message = text if isinstance(text, AIMessage) else AIMessage(content=text)
        if isinstance(text, AIMessage):
            text = str(text.content) + str([c["args"] for c in text.tool_calls])
        usage = None
        if self.report_usage:
            usage = {
                "input_tokens": len(prompt.split()),
                "output_tokens": len(text.split()),
                "total_tokens": 0,
            }
        message.usage_metadata = usage
        return ChatResult(generations=[ChatGeneration(message=message)])
