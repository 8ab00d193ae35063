"""PAI's structured calls: tool calling when the model supports it, validated JSON text otherwise.

Every reply is validated against a pydantic model of the function's arguments. A reply
that fails (no call, arguments that do not parse or validate, no JSON object) is retried
with the error appended to the prompt; after the last retry the caller receives a failed
:class:`CallOutcome` carrying every error, and records it: nothing is dropped silently.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import json
import re
from collections.abc import Awaitable, Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Literal

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from graphs.budget_field import budget_kwargs
from graphs.llm import has_native_async
from graphs.pai.prompts import KEEP_CONTEXT_FUNCTION, RETRY_NOTE
from graphs.twins import blocking, run_blocking

ToolMode = Literal["tools", "json"]


class PropertyArgs(BaseModel):
    """One property (Fig. 4 top): a metric and its subject, both non-empty."""

    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)
    metric: str = Field(min_length=1)
    subject: str = Field(min_length=1)


class SubQuestionArgs(BaseModel):
    """One PAI- sub-question."""

    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)
    sub_question: str = Field(min_length=1)


class KeepContextArgs(BaseModel):
    """The relevance verdict (Fig. 4 bottom); "true"/"false" strings are accepted as booleans."""

    model_config = ConfigDict(extra="forbid")
    keep_context: bool


class MalformedOutput(ValueError):
    """A reply that does not carry valid arguments for the requested function."""


@dataclass(frozen=True)
class CallOutcome:
    """The validated items of a structured call, or why it failed.

    Attributes:
        items: Validated argument dicts, one per item (empty when ``ok`` is false).
        attempts: Calls made (1 + retries used).
        errors: One message per malformed reply, in order.
        mode: ``"tools"`` or ``"json"``.
    """

    items: list[dict[str, Any]]
    attempts: int
    errors: list[str] = field(default_factory=list)
    mode: ToolMode = "tools"

    @property
    def ok(self) -> bool:
        """Whether a valid reply arrived."""
        return bool(self.items)


def resolve_tool_mode(llm: BaseChatModel, requested: Literal["auto", "tools", "json"]) -> ToolMode:
    """``"tools"`` when the chat model implements ``bind_tools`` (or it is forced), else ``"json"``.

    LangChain's base class raises ``NotImplementedError`` from ``bind_tools``; that is how
    the embedded llama.cpp model and plain-text test models are recognised.
    """
    if requested != "auto":
        return requested
    try:
        llm.bind_tools([dict(KEEP_CONTEXT_FUNCTION)])
    except NotImplementedError:
        return "json"
    return "tools"


def call_structured(
    llm: BaseChatModel,
    prompt: str,
    *,
    item_model: type[BaseModel],
    mode: ToolMode,
    function: Mapping[str, Any] | None = None,
    tool_choice: str | None = None,
    retries: int = 2,
    max_tokens: int = 256,
    temperature: float = 0.0,
) -> CallOutcome:
    """Call until a reply validates against ``item_model``, at most ``1 + retries`` times.

    Args:
        llm: The chat model.
        prompt: The user message (already in the form ``mode`` needs).
        item_model: Validator of one item's arguments.
        mode: ``"tools"`` binds ``function``; ``"json"`` reads a JSON object from the text.
        function: The OpenAI-format function schema (tools mode).
        tool_choice: Passed to ``bind_tools`` (e.g. ``"any"`` or the function's name).
        retries: Extra calls after a malformed reply; each carries the previous error.
        max_tokens: Completion budget per call.
        temperature: Sampling temperature (0 = greedy).
    """
    model = _structured_model(llm, mode, function, tool_choice)
    invoke = blocking(functools.partial(model.invoke, **budget_kwargs(llm, max_tokens), temperature=temperature))
    return run_blocking(_attempts(prompt, item_model, mode, retries, invoke))


async def acall_structured(
    llm: BaseChatModel,
    prompt: str,
    *,
    item_model: type[BaseModel],
    mode: ToolMode,
    function: Mapping[str, Any] | None = None,
    tool_choice: str | None = None,
    retries: int = 2,
    max_tokens: int = 256,
    temperature: float = 0.0,
) -> CallOutcome:
    """:func:`call_structured` through the model's async interface (``ainvoke``): the same
    prompts, validation and retries, without holding a thread per call in flight.

    A model with no async implementation of its own (LangChain would run its sync call in
    the event loop's default executor, a handful of threads) is called in a thread of
    :data:`SYNC_MODEL_POOL` instead, so the graph's ``max_concurrency`` still bounds it.
    """
    model = _structured_model(llm, mode, function, tool_choice)
    invoke = functools.partial(ainvoke_model, llm, model, **budget_kwargs(llm, max_tokens), temperature=temperature)
    return await _attempts(prompt, item_model, mode, retries, invoke)


async def _attempts(
    prompt: str, item_model: type[BaseModel], mode: ToolMode, retries: int, invoke: Callable[[list[BaseMessage]], Awaitable[AIMessage]]
) -> CallOutcome:
    """The policy both twins share: call through ``invoke`` until a reply validates, at most
    ``1 + retries`` times, each retry carrying the previous error (:mod:`graphs.twins`)."""
    errors: list[str] = []
    for attempt in range(1, retries + 2):
        message = await invoke([HumanMessage(content=_attempt_text(prompt, errors))])
        try:
            return CallOutcome(parse_items(message, item_model), attempt, errors, mode)
        except MalformedOutput as exc:
            errors.append(str(exc))
    return CallOutcome([], retries + 1, errors, mode)


#: Threads for the async calls of models that only implement the sync interface.
SYNC_MODEL_POOL = ThreadPoolExecutor(max_workers=64, thread_name_prefix="longctx-sync-model")


async def ainvoke_model(llm: BaseChatModel, model: Any, messages: list, **kwargs: Any) -> AIMessage:
    """``await model.ainvoke(messages, **kwargs)`` (``model``: ``llm`` or a binding of it);
    a sync-only ``llm`` runs in :data:`SYNC_MODEL_POOL` with the caller's context (callbacks, tracing)."""
    if has_native_async(llm):
        return await model.ainvoke(messages, **kwargs)
    call = functools.partial(contextvars.copy_context().run, model.invoke, messages, **kwargs)
    return await asyncio.get_running_loop().run_in_executor(SYNC_MODEL_POOL, call)


def _structured_model(llm: BaseChatModel, mode: ToolMode, function: Mapping[str, Any] | None, tool_choice: str | None) -> Any:
    """``llm`` with ``function`` bound in tools mode, else ``llm`` itself."""
    return llm.bind_tools([dict(function)], tool_choice=tool_choice) if mode == "tools" and function else llm


def _attempt_text(prompt: str, errors: list[str]) -> str:
    """The prompt of the next attempt: the original, with the last error appended after a malformed reply."""
    return prompt if not errors else prompt + RETRY_NOTE.format(error=errors[-1])


def parse_items(message: AIMessage, item_model: type[BaseModel]) -> list[dict[str, Any]]:
    """Validated items from a reply's tool calls, or from the JSON in its text when it made none.

    Raises:
        MalformedOutput: No usable call or JSON, or an item fails validation.
    """
    calls = list(getattr(message, "tool_calls", None) or [])
    invalid = list(getattr(message, "invalid_tool_calls", None) or [])
    if calls:
        raw = [item for call in calls for item in unwrap(call.get("args") or {})]
    elif invalid:
        raise MalformedOutput(f"tool call arguments are not valid JSON: {str(invalid[0].get('args'))[:200]!r}")
    else:
        raw = unwrap(first_json(text_of(message)))
    if not raw:
        raise MalformedOutput("the reply holds no item")
    items = []
    for item in raw:
        try:
            items.append(item_model.model_validate(item).model_dump())
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'item'}: {e['msg']}" for e in exc.errors())
            raise MalformedOutput(f"invalid arguments {json.dumps(item)[:200]}: {problems}") from exc
    return items


def unwrap(obj: Any) -> list[Any]:
    """Items of a list-valued reply (``{"items": [...]}``, any single list-valued key, or a bare list), else ``[obj]``."""
    if isinstance(obj, list):
        return obj
    if isinstance(obj, dict) and len(obj) == 1:
        (value,) = obj.values()
        if isinstance(value, list):
            return value
    return [obj]


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


def text_of(message: AIMessage) -> str:
    """A reply's text content (list-of-parts content joined)."""
    content = message.content
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") if isinstance(part, dict) else str(part) for part in content)
