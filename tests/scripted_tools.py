"""A scripted chat model that answers with tool calls, for PAI's unit tests (never used outside tests)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import PrivateAttr

#: What ``reply_fn`` may return: text, a list of tool-call argument dicts, or a ready AIMessage.
Reply = str | list[dict[str, Any]] | AIMessage


class ToolScriptedChatModel(BaseChatModel):
    """Calls ``reply_fn(prompt, tools)`` and records every call (thread-safe).

    ``tools`` is the list of OpenAI-format functions bound with :meth:`bind_tools`, or
    ``None``. With ``supports_tools=False``, ``bind_tools`` raises ``NotImplementedError``
    like LangChain's base class (the embedded model's behaviour).
    """

    reply_fn: Callable[[str, list[dict] | None], Reply]
    supports_tools: bool = True
    _calls: list[dict[str, Any]] = PrivateAttr(default_factory=list)
    _lock: Any = PrivateAttr(default_factory=threading.Lock)

    @property
    def _llm_type(self) -> str:
        return "scripted-tools"

    @property
    def calls(self) -> list[dict[str, Any]]:
        """One dict per call: ``prompt``, ``tools``, ``tool_choice`` and the other keyword arguments."""
        return self._calls

    def bind_tools(self, tools: list[Any], *, tool_choice: Any = None, **kwargs: Any):
        """Bind OpenAI-format tools (or raise, when the model is scripted without tool support)."""
        if not self.supports_tools:
            raise NotImplementedError("this scripted model has no tool calling")
        return self.bind(
            tools=[convert_to_openai_tool(t) for t in tools], tool_choice=tool_choice, **kwargs
        )

    def _generate(
        self, messages: list[BaseMessage], stop=None, run_manager=None, **kwargs: Any
    ) -> ChatResult:
        prompt = "\n".join(str(m.content) for m in messages)
        with self._lock:
            self._calls.append({"prompt": prompt, "stop": stop, **kwargs})
        reply = self.reply_fn(prompt, kwargs.get("tools"))
        if isinstance(reply, AIMessage):
            message = reply
        elif isinstance(reply, str):
            message = AIMessage(content=reply)
        else:
            calls = [
                {"name": "Query", "args": args, "id": f"call_{i}", "type": "tool_call"}
                for i, args in enumerate(reply)
            ]
            message = AIMessage(content="", tool_calls=calls)
        text = str(message.content) + str([c["args"] for c in message.tool_calls])
        message.usage_metadata = {
            "input_tokens": len(prompt.split()),
            "output_tokens": len(text.split()),
            "total_tokens": 0,
        }
        return ChatResult(generations=[ChatGeneration(message=message)])


def malformed_tool_call(args: str = '{"metric": "revenue", ') -> AIMessage:
    """A reply whose tool-call arguments are not valid JSON (LangChain's ``invalid_tool_calls``)."""
    return AIMessage(
        content="",
        invalid_tool_calls=[
            {
                "name": "Query",
                "args": args,
                "id": "bad",
                "error": "bad json",
                "type": "invalid_tool_call",
            }
        ],
    )


class AsyncToolScriptedChatModel(ToolScriptedChatModel):
    """:class:`ToolScriptedChatModel` with a native ``_agenerate`` that waits ``delay`` seconds
    (without a thread) and tracks the most calls in flight at once (``max_in_flight``)."""

    delay: float = 0.0
    _in_flight: int = PrivateAttr(default=0)
    _max_in_flight: int = PrivateAttr(default=0)

    @property
    def max_in_flight(self) -> int:
        """The most async calls in flight at once so far."""
        return self._max_in_flight

    async def _agenerate(
        self, messages: list[BaseMessage], stop=None, run_manager=None, **kwargs: Any
    ) -> ChatResult:
        self._in_flight += 1
        self._max_in_flight = max(self._max_in_flight, self._in_flight)
        try:
            await asyncio.sleep(self.delay)
            return self._generate(messages, stop=stop, run_manager=None, **kwargs)
        finally:
            self._in_flight -= 1
