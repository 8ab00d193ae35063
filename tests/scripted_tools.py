"""A scripted chat model that answers with tool calls, for graph tests (never used outside tests).

``reply_fn(prompt, tools)`` returns text, an AIMessage, or a list of tool calls, each either
the arguments of a call of the model's ``tool_name`` (``"Query"``, PAI's, by default), a
named call (:func:`named_call`: ``{"name", "args"}``) or a call in OpenAI's format
(``{"id", "type": "function", "function": {"name", "arguments": "<json>"}}``). Streamed
(``.stream`` on a model made with ``disable_streaming=False``), the reply comes as chunks: its text
word by word, then each tool call as ``tool_call_chunks`` (name and id, then the arguments in
pieces), as a streamed OpenAI reply does.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Callable, Iterator
from typing import Any, Literal

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.messages.tool import tool_call_chunk
from langchain_core.output_parsers.openai_tools import parse_tool_call
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import PrivateAttr

#: What ``reply_fn`` may return: text, a list of tool calls (see the module's doc), or a
#: ready AIMessage.
Reply = str | list[dict[str, Any]] | AIMessage


def named_call(name: str, **args: Any) -> dict[str, Any]:
    """A scripted call of tool ``name`` with ``args``, for a ``reply_fn``'s list."""
    return {"name": name, "args": args, "type": "tool_call"}


def as_tool_call(item: dict[str, Any], index: int, default_name: str) -> dict[str, Any]:
    """One item of a scripted list as a LangChain tool call (id ``call_<index>`` unless it
    has one)."""
    if "function" in item:  # OpenAI's format
        parsed = parse_tool_call(item, return_id=True)
        assert parsed is not None, f"not a tool call: {item!r}"
        return parsed | {"id": parsed.get("id") or f"call_{index}"}
    if item.get("type") == "tool_call":
        return {**item, "id": item.get("id") or f"call_{index}"}
    return {"name": default_name, "args": item, "id": f"call_{index}", "type": "tool_call"}


class ToolScriptedChatModel(BaseChatModel):
    """Calls ``reply_fn(prompt, tools)`` and records every call (thread-safe).

    ``tools`` is the list of OpenAI-format functions bound with :meth:`bind_tools`, or
    ``None``. With ``supports_tools=False``, ``bind_tools`` raises ``NotImplementedError``
    like LangChain's base class (the embedded model's behaviour).
    """

    reply_fn: Callable[[str, list[dict] | None], Reply]
    supports_tools: bool = True
    #: The tool a list of bare argument dicts calls (PAI's by default).
    tool_name: str = "Query"
    #: ``False``: replies carry no ``usage_metadata`` (a server that reports none: the
    #: tracker estimates).
    report_usage: bool = True
    #: LangChain's switch, on by default here: graphs streamed in ``messages`` mode get whole
    #: replies, as before the model could stream; ``disable_streaming=False`` streams its chunks.
    disable_streaming: bool | Literal["tool_calling"] = True
    _calls: list[dict[str, Any]] = PrivateAttr(default_factory=list)
    _lock: Any = PrivateAttr(default_factory=threading.Lock)

    @property
    def _llm_type(self) -> str:
        return "scripted-tools"

    @property
    def calls(self) -> list[dict[str, Any]]:
        """One dict per call: ``prompt``, ``messages``, ``tools``, ``tool_choice`` and the other
        keyword arguments."""
        return self._calls

    def bind_tools(self, tools: list[Any], *, tool_choice: Any = None, **kwargs: Any):
        """Bind OpenAI-format tools (or raise, when the model is scripted without tool support)."""
        if not self.supports_tools:
            raise NotImplementedError("this scripted model has no tool calling")
        return self.bind(
            tools=[convert_to_openai_tool(t) for t in tools], tool_choice=tool_choice, **kwargs
        )

    def _reply(self, messages: list[BaseMessage], stop: Any, kwargs: dict[str, Any]) -> AIMessage:
        """Record the call and make its scripted reply (with whitespace-word usage)."""
        prompt = "\n".join(str(m.content) for m in messages)
        with self._lock:
            self._calls.append({"prompt": prompt, "stop": stop, "messages": messages, **kwargs})
        reply = self.reply_fn(prompt, kwargs.get("tools"))
        if isinstance(reply, AIMessage):
            message = reply
        elif isinstance(reply, str):
            message = AIMessage(content=reply)
        else:
            calls = [as_tool_call(item, i, self.tool_name) for i, item in enumerate(reply)]
            message = AIMessage(content="", tool_calls=calls)
        text = str(message.content) + str([c["args"] for c in message.tool_calls])
        if self.report_usage:
            message.usage_metadata = {
                "input_tokens": len(prompt.split()),
                "output_tokens": len(text.split()),
                "total_tokens": 0,
            }
        return message

    def _generate(
        self, messages: list[BaseMessage], stop=None, run_manager=None, **kwargs: Any
    ) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=self._reply(messages, stop, kwargs))])

    def _stream(
        self, messages: list[BaseMessage], stop=None, run_manager=None, **kwargs: Any
    ) -> Iterator[ChatGenerationChunk]:
        """The scripted reply as chunks: text word by word, then each tool call's name and id
        followed by its JSON arguments in pieces of 8 characters; the usage on the last chunk."""
        message = self._reply(messages, stop, kwargs)
        text = str(message.content)
        words = text.split(" ") if text else []
        chunks = [AIMessageChunk(content=w if i == 0 else " " + w) for i, w in enumerate(words)]
        calls = [(c["name"], json.dumps(c["args"]), c["id"]) for c in message.tool_calls]
        # a malformed call streams its raw arguments: merged, they fail to parse again
        calls += [(c["name"], c["args"] or "", c["id"]) for c in message.invalid_tool_calls]
        for i, (name, args, call_id) in enumerate(calls):
            chunks.append(
                AIMessageChunk(
                    content="",
                    tool_call_chunks=[tool_call_chunk(name=name, args="", id=call_id, index=i)],
                )
            )
            chunks += [
                AIMessageChunk(
                    content="",
                    tool_call_chunks=[tool_call_chunk(args=args[k : k + 8], index=i)],
                )
                for k in range(0, len(args), 8)
            ]
        chunks.append(AIMessageChunk(content="", usage_metadata=message.usage_metadata))
        for chunk in chunks:
            yield ChatGenerationChunk(message=chunk)


def malformed_tool_call(args: str = '{"metric": "revenue", ', name: str = "Query") -> AIMessage:
    """A reply whose tool-call arguments are not valid JSON (LangChain's ``invalid_tool_calls``)."""
    return AIMessage(
        content="",
        invalid_tool_calls=[
            {
                "name": name,
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
