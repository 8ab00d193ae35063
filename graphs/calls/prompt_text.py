"""The text of a chat call's prompt as the budget guard and the usage tracker count it.

A server reads more than the messages' text: the ``tools`` schemas sent with every request of a
tool loop, and the name and arguments of each tool call an assistant turn of the history made.
Both are counted here, so a ``max_prompt_tokens`` or ``max_cost_usd`` budget holds inside a
tool loop, and a model that reports no usage is estimated at what it was sent. ``tool_choice``
is a few tokens and left out.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any


def tool_call_text(message: Any) -> list[str]:
    """``name {json arguments}`` of each tool call ``message`` makes (valid or not), as sent."""
    parts = []
    for call in getattr(message, "tool_calls", None) or []:
        parts.append(f"{call.get('name', '')} {json.dumps(call.get('args', {}))}")
    for call in getattr(message, "invalid_tool_calls", None) or []:
        parts.append(f"{call.get('name') or ''} {call.get('args') or ''}")
    return parts


def counted_prompt(messages: Iterable[Any], invocation_params: Mapping[str, Any] | None) -> str:
    """What a chat call's prompt tokens are counted on: every message's content (one a line, as
    before tools were counted), then each assistant tool call's name and arguments, then the
    ``tools`` schemas of ``invocation_params`` (LangChain's callback argument) as JSON."""
    messages = list(messages)
    parts = ["\n".join(str(m.content) for m in messages)]
    for m in messages:
        parts.extend(tool_call_text(m))
    tools = (invocation_params or {}).get("tools")
    if tools:
        parts.append(json.dumps(tools))
    return "\n".join(parts)
