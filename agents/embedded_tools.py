"""Native tool calling for the embedded model: llama.cpp's function-calling chat format
(llama-cpp-python's ``chatml-function-calling`` chat handler), so an agent's tools reach the local
GGUF as schemas and its replies come back as tool calls, offline.

What the handler does (llama-cpp-python 0.3): it renders the conversation in ChatML with the
tools' names and JSON-schema parameters in the system turn, then lets a grammar choose between
``message:`` (a text reply) and ``functions.<name>:`` (a call), and writes each call's arguments
under the grammar of its parameters' schema: every call it returns names a bound tool and parses.
What we do around it, here:

- the request (:func:`function_calling_messages`): its template shows the tools only inside a
  system turn and renders no ``tool`` role, so a conversation without a system turn gets an empty
  one, and a tool result is sent as a user turn naming the call (as the JSON-in-text adapter
  does); an assistant turn keeps its calls (``functions.<name>:`` and the arguments); texts go
  unescaped (the template escapes HTML: a JSON result's quotes reached the model as ``&#34;``,
  and SmolLM2 wrote them back into its arguments);
- ``tool_choice`` (:func:`handler_tool_choice`): ``"auto"``/``None`` as auto; a tool's name (or
  ``"any"``/``"required"`` with one tool) forces that tool; ``"none"`` sends no tools;
- the output cap (:class:`CappedLlama`): the handler writes a call's arguments and a text reply
  with no token limit; every completion it makes is capped at what the request's ``max_tokens``
  has left, and one that has nothing left is not run;
- the reply (:func:`reply_message`): calls as LangChain tool calls (unparseable arguments, cut by
  the cap, as invalid ones), usage as the completions it made reported it.

Available where the installed llama-cpp-python has the handler and the GGUF's chat template is
ChatML (SmolLM2's is); elsewhere the model has no native tools and agents use the JSON-in-text
adapter (:mod:`longctx.graphs.calls.tool_json`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.utils.function_calling import convert_to_openai_tool

#: The llama-cpp-python chat handler used.
FORMAT = "chatml-function-calling"
_ROLES = {"human": "user", "ai": "assistant", "system": "system", "tool": "user"}


def function_calling_handler() -> Any:
    """The installed llama-cpp-python's ``chatml-function-calling`` handler, or ``None`` where
    it has none (or llama-cpp-python is not installed)."""
    try:
        from llama_cpp import llama_chat_format
    except ImportError:
        return None
    try:
        return llama_chat_format.get_chat_completion_handler(FORMAT)
    except (KeyError, ValueError):
        return None


def is_chatml(template: str | None) -> bool:
    """Whether a GGUF's chat template (``tokenizer.chat_template``) is ChatML, the format the
    handler renders."""
    return bool(template) and "<|im_start|>" in str(template)


def openai_tools(tools: Sequence[Any]) -> list[dict[str, Any]]:
    """Tools in any form ``bind_tools`` takes, as OpenAI tool schemas."""
    return [convert_to_openai_tool(t) for t in tools]


def handler_tool_choice(choice: Any, tools: Sequence[Mapping[str, Any]]) -> Any:
    """``tool_choice`` as the handler takes it: ``"auto"``, ``"none"`` or
    ``{"type": "function", "function": {"name": ...}}`` (a forced call)."""
    names = [t["function"]["name"] for t in tools]
    if choice is None or choice == "auto":
        return "auto"
    if choice == "none" or choice is False:
        return "none"
    if isinstance(choice, Mapping):
        name = choice.get("function", {}).get("name") or choice.get("name")
        return {"type": "function", "function": {"name": name}}
    if choice in ("any", "required") or choice is True:
        if len(names) == 1:
            return {"type": "function", "function": {"name": names[0]}}
        return "auto"  # the handler cannot force one call among several tools
    if isinstance(choice, str) and choice in names:
        return {"type": "function", "function": {"name": choice}}
    raise ValueError(f"tool_choice {choice!r} names no bound tool ({', '.join(names)})")


def _calls(message: AIMessage) -> list[dict[str, Any]]:
    calls = [(c["name"], json.dumps(c["args"])) for c in message.tool_calls]
    calls += [(c["name"] or "", c["args"] or "") for c in message.invalid_tool_calls]
    return [
        {"type": "function", "function": {"name": name, "arguments": _verbatim(args)}}
        for name, args in calls
    ]


def function_calling_messages(messages: Sequence[BaseMessage]) -> list[dict[str, Any]]:
    """The conversation as the handler's template renders it: a system turn first (empty when
    there is none: the tools are shown in it), tool results as user turns naming the call, an
    assistant turn's calls under ``tool_calls``. Texts are marked safe: the handler's template
    escapes HTML (a JSON result's quotes would reach the model as ``&#34;``)."""
    out: list[dict[str, Any]] = []
    if not messages or messages[0].type != "system":
        out.append({"role": "system", "content": _verbatim("")})
    for m in messages:
        if isinstance(m, ToolMessage):
            content = f"Result of tool {m.name} ({m.tool_call_id}):\n{m.text}"
            out.append({"role": "user", "content": _verbatim(content)})
            continue
        entry: dict[str, Any] = {"role": _ROLES.get(m.type, "user"), "content": _verbatim(m.text)}
        if isinstance(m, AIMessage) and (m.tool_calls or m.invalid_tool_calls):
            entry["tool_calls"] = _calls(m)
        out.append(entry)
    return out


def _verbatim(text: str) -> str:
    """``text`` as a string the template does not escape (``markupsafe.Markup``, a ``str``)."""
    from markupsafe import Markup  # jinja2's, which the handler renders with

    return Markup(text)


class CappedLlama:
    """A llama.cpp instance whose completions share one output cap: each is capped at what is
    left of ``cap`` (the handler asks for no limit when it writes arguments or a text reply), one
    with nothing left is answered empty without running, and their usage is kept."""

    def __init__(self, llama: Any, cap: int) -> None:
        self._llama = llama
        self.cap = cap
        self.output_tokens = 0
        self.prompt_tokens: list[int] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._llama, name)

    def create_completion(self, **kwargs: Any) -> Any:
        """One completion of the handler, capped; its usage counted."""
        left = self.cap - self.output_tokens
        if left <= 0:
            return _empty_completion()
        asked = kwargs.get("max_tokens")
        kwargs["max_tokens"] = left if asked is None or asked <= 0 else min(asked, left)
        out = self._llama.create_completion(**kwargs)
        usage = out.get("usage") or {}
        self.output_tokens += int(usage.get("completion_tokens", 0))
        self.prompt_tokens.append(int(usage.get("prompt_tokens", 0)))
        return out


def _empty_completion() -> dict[str, Any]:
    return {
        "id": "cmpl-capped",
        "object": "text_completion",
        "created": 0,
        "model": "capped",
        "choices": [{"text": "", "index": 0, "logprobs": None, "finish_reason": "length"}],
        "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
    }


def reply_message(out: Mapping[str, Any]) -> tuple[str, list[dict[str, Any]], list[dict[str, Any]]]:
    """A handler's reply as ``(text, tool_calls, invalid_tool_calls)`` in LangChain's shapes."""
    message = out["choices"][0]["message"]
    calls: list[dict[str, Any]] = []
    invalid: list[dict[str, Any]] = []
    for call in message.get("tool_calls") or []:
        name, raw, call_id = call["function"]["name"], call["function"]["arguments"], call["id"]
        try:
            args = json.loads(raw)
            if not isinstance(args, dict):
                raise ValueError(f"arguments are not an object: {raw}")
        except ValueError as error:  # JSONDecodeError too: arguments cut by the cap
            invalid.append(
                {"name": name, "args": raw, "id": call_id, "error": str(error), "type": "invalid"}
            )
            continue
        calls.append({"name": name, "args": args, "id": call_id, "type": "tool_call"})
    return message.get("content") or "", calls, invalid
