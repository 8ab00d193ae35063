"""One model call whose reply is validated, and retried with the error until it validates.

Why one helper: PAI's structured calls (:mod:`longctx.graphs.pai.calls`) and the structured
strategy's Plan and Map calls (:mod:`longctx.graphs.structured.plan`,
:mod:`longctx.graphs.structured.mapping`) both ask a model for a function's arguments, check them,
and after a malformed reply call again with the error appended
(:data:`longctx.graphs.prompts.RETRY_NOTE`). The loop, its sync and async twins
(:mod:`longctx.graphs.runtime.twins`), the tool binding, the tool-mode choice and the usage count
live here once. What a valid reply is stays with the caller: ``parse`` takes the reply's argument
objects (:func:`longctx.graphs.calls.replies.reply_arguments`) and raises ``ValueError`` (a
:class:`~graphs.calls.replies.MalformedOutput`, a pydantic ``ValidationError``) when they are not
usable; the error's text is what the next attempt shows the model.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
from collections.abc import Awaitable, Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, TypeVar

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from pydantic import ValidationError

from longctx.graphs.calls.llm import has_native_async
from longctx.graphs.calls.replies import MalformedOutput, reply_arguments
from longctx.graphs.metering.budget_field import budget_kwargs
from longctx.graphs.prompts import RETRY_NOTE
from longctx.graphs.runtime.twins import blocking, run_blocking
from longctx.retrieval.reported_usage import metadata_counts

T = TypeVar("T")
ToolMode = Literal["tools", "json"]

#: Bound once to learn whether a chat model implements tool calling; the binding is never called.
PROBE_FUNCTION: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "probe",
        "description": "Tells whether tools can be bound.",
        "parameters": {"type": "object", "properties": {}},
    },
}


def resolve_tool_mode(llm: BaseChatModel, requested: Literal["auto", "tools", "json"]) -> ToolMode:
    """``"tools"`` when the chat model implements ``bind_tools`` (or it is forced), else ``"json"``.

    LangChain's base class raises ``NotImplementedError`` from ``bind_tools``; that is how
    the embedded llama.cpp model and plain-text test models are recognised.
    """
    if requested != "auto":
        return requested
    try:
        llm.bind_tools([dict(PROBE_FUNCTION)])
    except NotImplementedError:
        return "json"
    return "tools"


def native_tools_model(llm: BaseChatModel) -> BaseChatModel | None:
    """``llm`` when it binds tools, else its native-tool-calling variant where it offers one
    (``with_function_calling()``: the embedded model through llama.cpp's function-calling chat
    format), else ``None`` (the JSON-in-text adapter is for it)."""
    try:
        llm.bind_tools([dict(PROBE_FUNCTION)])
        return llm
    except NotImplementedError:
        pass
    upgrade = getattr(llm, "with_function_calling", None)
    native = upgrade() if callable(upgrade) else None
    return native if isinstance(native, BaseChatModel) else None


def bind_function(
    llm: BaseChatModel, mode: str, function: Mapping[str, Any] | None, tool_choice: str | None
) -> Any:
    """``llm`` with ``function`` bound (``tool_choice`` passed to ``bind_tools``) in tools mode,
    else ``llm`` itself."""
    return (
        llm.bind_tools([dict(function)], tool_choice=tool_choice)
        if mode == "tools" and function
        else llm
    )


@dataclass
class Outcome(Generic[T]):
    """A validated reply (``value``, when ``ok``), or why none came: every error in order.

    Attributes:
        value: What ``parse`` returned for the accepted reply (``None`` when none was).
        attempts: Calls made (1 + retries used).
        errors: One message per unusable reply, in order.
        ok: Whether a reply was accepted.
        usage: Prompt, cached prompt and completion tokens of every attempt, as the replies report
            them.
    """

    value: T | None = None
    attempts: int = 0
    errors: list[str] = field(default_factory=list)
    ok: bool = False
    usage: dict[str, int] = field(
        default_factory=lambda: {
            "prompt_tokens": 0,
            "cached_prompt_tokens": 0,
            "completion_tokens": 0,
        }
    )


#: Threads for the async calls of models that only implement the sync interface.
SYNC_MODEL_POOL = ThreadPoolExecutor(max_workers=64, thread_name_prefix="longctx-sync-model")


async def ainvoke_model(
    llm: BaseChatModel, model: Any, messages: list[BaseMessage], **kwargs: Any
) -> AIMessage:
    """``await model.ainvoke(messages, **kwargs)`` (``model``: ``llm`` or a binding of it);
    a sync-only ``llm`` runs in :data:`SYNC_MODEL_POOL` with the caller's context (callbacks,
    tracing).

    A model with no async implementation of its own (LangChain would run its sync call in the
    event loop's default executor, a handful of threads) runs in that pool instead, so the
    graph's ``max_concurrency`` still bounds it.
    """
    if has_native_async(llm):
        reply: AIMessage = await model.ainvoke(messages, **kwargs)
        return reply
    call = functools.partial(contextvars.copy_context().run, model.invoke, messages, **kwargs)
    sync_reply: AIMessage = await asyncio.get_running_loop().run_in_executor(SYNC_MODEL_POOL, call)
    return sync_reply


def call_validated(
    llm: BaseChatModel,
    model: Any,
    prompt: str,
    parse: Callable[[list[Any]], T],
    *,
    retries: int,
    max_tokens: int,
    temperature: float,
) -> Outcome[T]:
    """Call ``model`` (``llm`` or a binding of it: :func:`bind_function`) until ``parse`` accepts
    the reply's arguments, at most ``1 + retries`` times; each retry carries the previous error."""
    invoke = blocking(
        functools.partial(model.invoke, **budget_kwargs(llm, max_tokens), temperature=temperature)
    )
    return run_blocking(_attempts(prompt, parse, retries, invoke))


async def acall_validated(
    llm: BaseChatModel,
    model: Any,
    prompt: str,
    parse: Callable[[list[Any]], T],
    *,
    retries: int,
    max_tokens: int,
    temperature: float,
    gate: contextlib.AbstractAsyncContextManager[Any] | None = None,
) -> Outcome[T]:
    """:func:`call_validated` through the model's async interface (:func:`ainvoke_model`), without
    holding a thread per call in flight; ``gate``: held around each call (an
    ``asyncio.Semaphore``)."""
    held: contextlib.AbstractAsyncContextManager[Any] = (
        gate if gate is not None else contextlib.nullcontext()
    )

    async def invoke(messages: list[BaseMessage]) -> AIMessage:
        async with held:
            return await ainvoke_model(
                llm, model, messages, **budget_kwargs(llm, max_tokens), temperature=temperature
            )

    return await _attempts(prompt, parse, retries, invoke)


async def _attempts(
    prompt: str,
    parse: Callable[[list[Any]], T],
    retries: int,
    invoke: Callable[[list[BaseMessage]], Awaitable[AIMessage]],
) -> Outcome[T]:
    """The policy both twins share: call through ``invoke`` until ``parse`` accepts a reply, at
    most ``1 + retries`` times, each retry carrying the previous error
    (:mod:`longctx.graphs.runtime.twins`)."""
    out: Outcome[T] = Outcome()
    for attempt in range(1, retries + 2):
        text = prompt if not out.errors else prompt + RETRY_NOTE.format(error=out.errors[-1])
        if _take(out, await invoke([HumanMessage(content=text)]), parse, attempt):
            return out
    return out


def _take(
    out: Outcome[T], message: AIMessage, parse: Callable[[list[Any]], T], attempt: int
) -> bool:
    """Count one reply into ``out``; whether ``parse`` accepted it (else its error is noted)."""
    # (0, 0, 0) where the reply reports none or counts no server can mean (a negative count)
    prompt, cached, completion = metadata_counts(getattr(message, "usage_metadata", None)) or (
        0,
        0,
        0,
    )
    out.usage["prompt_tokens"] += prompt
    out.usage["cached_prompt_tokens"] += cached
    out.usage["completion_tokens"] += completion
    out.attempts = attempt
    try:
        out.value = parse(reply_arguments(message))
    except MalformedOutput as exc:
        out.errors.append(str(exc))
        return False
    except ValidationError as exc:
        out.errors.append(f"invalid arguments: {_validation_errors(exc)}")
        return False
    except ValueError as exc:
        out.errors.append(str(exc))
        return False
    out.ok = True
    return True


def _validation_errors(exc: ValidationError) -> str:
    """The first errors of a validation, one ``location: message`` each."""
    return "; ".join(
        f"{'.'.join(map(str, e['loc'])) or 'reply'}: {e['msg']}" for e in exc.errors()[:8]
    )


__all__ = [
    "PROBE_FUNCTION",
    "SYNC_MODEL_POOL",
    "Outcome",
    "ToolMode",
    "acall_validated",
    "ainvoke_model",
    "bind_function",
    "call_validated",
    "resolve_tool_mode",
]
