"""Tool calling for models without it: the tools described in the system text, and the
```json {"tool": ..., "arguments": ...}``` blocks of a reply read back as tool calls.

The tool loop (:mod:`longctx.graphs.calls.tool_loop`) keeps its history in LangChain's native form
(assistant turns with ``tool_calls``, ``ToolMessage`` results) whatever the model; for a model
without native tool calling it sends that history through :func:`as_text_history` (results as user
turns) after :func:`tools_prompt`, and reads the reply with :func:`with_json_calls`. The block
form is the one ReAct-style prompts and smolagents' JSON agents use.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.utils.function_calling import convert_to_openai_tool

#: A fenced block, ``json`` or unlabelled: the calls a model without native tools writes.
_BLOCK = re.compile(r"```(?:json)?[ \t]*\n?(.*?)```", re.DOTALL)


def tools_prompt(tools: Sequence[Any]) -> str:
    """The system text that offers ``tools`` (anything ``bind_tools`` takes) to a model without
    native tool calling: each tool's name, description and JSON-schema parameters, and the
    block to write to call one."""
    lines = ["You can call these tools:"]
    for tool in tools:
        function = convert_to_openai_tool(tool)["function"]
        lines.append(
            f"- {function['name']}: {function.get('description', '').strip()}\n"
            f"  parameters (JSON schema): {json.dumps(function.get('parameters', {}))}"
        )
    lines.append(
        "To call a tool, reply with one block per call and nothing after it:\n"
        '```json\n{"tool": "<tool name>", "arguments": {<the parameters>}}\n```\n'
        "The results come back in the next message. When you can answer, reply with the answer "
        "and no json block."
    )
    return "\n".join(lines)


def parse_json_calls(text: str, turn: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """``(tool_calls, invalid_tool_calls)`` of the json blocks of ``text`` that name a ``tool``,
    as LangChain's message fields hold them (ids ``json_<turn>_<n>``). A block that is not valid
    JSON or whose ``arguments`` is no object is an invalid call (its error goes back to the model);
    a block without a ``tool`` key is text, not a call."""
    calls: list[dict[str, Any]] = []
    invalid: list[dict[str, Any]] = []
    for n, match in enumerate(_BLOCK.finditer(text)):
        block, call_id = match.group(1).strip(), f"json_{turn}_{n}"
        try:
            data = json.loads(block)
        except json.JSONDecodeError as exc:
            if '"tool"' in block:
                invalid.append(_invalid(None, block, call_id, f"not valid JSON: {exc}"))
            continue
        if not isinstance(data, dict) or "tool" not in data:
            continue
        name, args = data["tool"], data.get("arguments", {})
        if not isinstance(name, str) or not isinstance(args, dict):
            invalid.append(_invalid(str(name), block, call_id, "arguments must be a JSON object"))
            continue
        calls.append({"name": name, "args": args, "id": call_id, "type": "tool_call"})
    return calls, invalid


def _invalid(name: str | None, args: str, call_id: str, error: str) -> dict[str, Any]:
    return {"name": name, "args": args, "id": call_id, "error": error, "type": "invalid_tool_call"}


def with_json_calls(reply: AIMessage, turn: int) -> AIMessage:
    """``reply`` with the calls its json blocks make (:func:`parse_json_calls`) as its tool
    calls."""
    calls, invalid = parse_json_calls(reply.text, turn)
    if not calls and not invalid:
        return reply
    return reply.model_copy(update={"tool_calls": calls, "invalid_tool_calls": invalid})


def as_text_history(messages: Sequence[BaseMessage], tools: Sequence[Any]) -> list[BaseMessage]:
    """``messages`` as a model without native tools reads them: :func:`tools_prompt` in the system
    turn (the first one's text before it, when there is one), each assistant turn as its text
    (its json blocks are its calls), each tool result as a user turn naming the call."""
    out: list[BaseMessage] = []
    system = tools_prompt(tools) if tools else None
    rest = list(messages)
    if rest and isinstance(rest[0], SystemMessage):
        head = rest.pop(0).text
        system = f"{head}\n\n{system}" if system else head
    if system is not None:
        out.append(SystemMessage(content=system))
    for m in rest:
        if isinstance(m, ToolMessage):
            out.append(
                HumanMessage(content=f"Result of tool {m.name} ({m.tool_call_id}):\n{m.text}")
            )
        elif isinstance(m, AIMessage):
            out.append(AIMessage(content=m.text))
        else:
            out.append(m)
    return out
