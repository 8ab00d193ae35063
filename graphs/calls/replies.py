"""The arguments of a structured reply: each tool call's, or the JSON object in its text.

A model asked to call a function answers with tool calls (tools mode) or, where it cannot
bind tools, with JSON in its text (json mode); both are read here as a list of argument
objects. What cannot be read raises :class:`MalformedOutput`, whose message goes back to the
model when the call is retried (:mod:`longctx.graphs.calls.validated_call`).
"""

from __future__ import annotations

import json
import re
from typing import Any

from langchain_core.messages import AIMessage


class MalformedOutput(ValueError):
    """A reply that does not carry valid arguments for the requested function."""


def text_of(message: AIMessage) -> str:
    """A reply's text content (list-of-parts content joined)."""
    content = message.content
    if isinstance(content, str):
        return content
    return "".join(
        part.get("text", "") if isinstance(part, dict) else str(part) for part in content
    )


_FENCE = re.compile(r"```(?:json)?")


def first_json(text: str) -> Any:
    """The first JSON object or array in ``text`` (code fences ignored).

    Raises:
        MalformedOutput: The text holds none.
    """
    cleaned = _FENCE.sub("", text)
    decoder = json.JSONDecoder()
    for match in re.finditer(r"[{\[]", cleaned):
        try:
            return decoder.raw_decode(cleaned, match.start())[0]
        except json.JSONDecodeError:
            continue
    raise MalformedOutput(f"no JSON object in the reply: {text.strip()[:120]!r}")


def reply_arguments(message: AIMessage) -> list[Any]:
    """The argument objects of a reply: each tool call's, or the JSON object in its text.

    Raises:
        MalformedOutput: tool-call arguments that are not JSON, or text without JSON.
    """
    calls = list(getattr(message, "tool_calls", None) or [])
    invalid = list(getattr(message, "invalid_tool_calls", None) or [])
    if calls:
        return [c.get("args") or {} for c in calls]
    if invalid:
        raise MalformedOutput(
            f"tool call arguments are not valid JSON: {str(invalid[0].get('args'))[:200]!r}"
        )
    return [first_json(text_of(message))]


__all__ = ["MalformedOutput", "first_json", "reply_arguments", "text_of"]
