"""A tool loop's tool-call and tool-result events, written where they happen.

Each event is a dict (``{"kind": "tool_call", ...}`` / ``{"kind": "tool_result", ...}``, the
``to_dict()`` form of :class:`longctx.agents.events.ToolCallEvent` / ``ToolResultEvent``) written
at the point it happens to LangGraph's custom stream (``graph.stream(..., stream_mode="custom")``
yields it): a single run streamed by :func:`longctx.agents.astream_answer` takes its events from
there, in the order of the graph's other chunks, so a call's event follows the tokens of the reply
that asked for it and its result precedes the next turn's tokens. It is also written to the run's
report sink (:mod:`longctx.graphs.runtime.events`), for a loop run where the graph is not streamed
(inside a batched run); ``astream_answer`` ignores that copy once the graph streams.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.messages import AIMessage, ToolMessage
from langgraph.config import get_config, get_stream_writer

from longctx.graphs.runtime.events import report_tool_event

#: Characters of a tool result an event carries (cut in the middle beyond, with a marker; the
#: model reads up to the loop's ``max_result_chars``).
EVENT_RESULT_CHARS = 2_000


def cut(text: str, limit: int) -> str:
    """``text`` cut in the middle beyond ``limit`` characters, saying how many were left out."""
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n[... {len(text) - 2 * half:,} characters cut ...]\n{text[-half:]}"


def _node() -> str | None:
    """The graph node running now (LangGraph's ``langgraph_node``), or ``None`` outside one."""
    try:
        node = get_config().get("metadata", {}).get("langgraph_node")
    except RuntimeError:
        return None
    return None if node is None else str(node)


def _emit(payload: dict[str, Any]) -> None:
    """``payload`` to the custom stream (when the graph is streamed so) and to the report sink."""
    try:
        get_stream_writer()(payload)
    except RuntimeError:  # outside a graph: nobody streams it
        pass
    report_tool_event(payload)


def emit_calls(reply: AIMessage) -> None:
    """A ``tool_call`` event per call of ``reply`` (its unreadable calls with their raw
    arguments)."""
    node = _node()
    for call in reply.tool_calls:
        _emit(
            {
                "kind": "tool_call",
                "name": call["name"],
                "arguments": dict(call["args"]),
                "call_id": str(call["id"]),
                "node": node,
            }
        )
    for bad in reply.invalid_tool_calls:
        _emit(
            {
                "kind": "tool_call",
                "name": bad.get("name"),
                "arguments": bad.get("args") or "",
                "call_id": str(bad.get("id")),
                "node": node,
            }
        )


def emit_results(results: Sequence[ToolMessage]) -> None:
    """A ``tool_result`` event per result, in order, each cut to :data:`EVENT_RESULT_CHARS`."""
    node = _node()
    for message in results:
        text = message.text
        _emit(
            {
                "kind": "tool_result",
                "call_id": str(message.tool_call_id),
                "name": message.name,
                "result": cut(text, EVENT_RESULT_CHARS),
                "status": "error" if message.status == "error" else "ok",
                "chars": len(text),
                "node": node,
            }
        )
