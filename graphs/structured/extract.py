"""Plan and Map calls: a schema, and zero or more records per document window, validated and retried.

PAI's pieces are reused (tool-mode detection, JSON-in-text parsing, the retry note);
the loop is our own because a document may state no row: an empty ``records`` list is a
valid reply here, where PAI's ``call_structured`` treats "no item" as malformed.
"""

from __future__ import annotations

import contextlib
import functools
import json
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from pydantic import BaseModel, ValidationError

from graphs.budget_field import budget_kwargs
from graphs.pai.calls import MalformedOutput, ainvoke_model, first_json, text_of
from graphs.pai.prompts import RETRY_NOTE
from graphs.structured.normalize import ValueNotUnderstood, normalize_value
from graphs.structured.schema import TableSchema
from graphs.twins import blocking, run_blocking


@dataclass
class Outcome:
    """A validated reply (``value``), or why none came: every error in order."""

    value: Any = None
    attempts: int = 0
    errors: list[str] = field(default_factory=list)
    ok: bool = False
    usage: dict[str, int] = field(default_factory=lambda: {"prompt_tokens": 0, "cached_prompt_tokens": 0, "completion_tokens": 0})


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
        raise MalformedOutput(f"tool call arguments are not valid JSON: {str(invalid[0].get('args'))[:200]!r}")
    return [first_json(text_of(message))]


def _errors(exc: ValidationError) -> str:
    return "; ".join(f"{'.'.join(map(str, e['loc'])) or 'reply'}: {e['msg']}" for e in exc.errors()[:8])


def bound_model(llm: BaseChatModel, mode: str, function: Mapping[str, Any] | None) -> Any:
    """``llm`` with ``function`` bound as the forced tool (tools mode), else ``llm`` itself."""
    if mode == "tools" and function:
        return llm.bind_tools([dict(function)], tool_choice=function["function"]["name"])
    return llm


def _take(out: Outcome, message: AIMessage, parse: Callable[[list[Any]], Any], attempt: int) -> bool:
    """Count one reply into ``out``; whether ``parse`` accepted it (else its error is noted)."""
    meta = getattr(message, "usage_metadata", None) or {}
    out.usage["prompt_tokens"] += meta.get("input_tokens", 0)
    out.usage["cached_prompt_tokens"] += (meta.get("input_token_details") or {}).get("cache_read") or 0
    out.usage["completion_tokens"] += meta.get("output_tokens", 0)
    out.attempts = attempt
    try:
        out.value = parse(reply_arguments(message))
        out.ok = True
        return True
    except MalformedOutput as exc:
        out.errors.append(str(exc))
    except ValidationError as exc:
        out.errors.append(f"invalid arguments: {_errors(exc)}")
    except ValueError as exc:
        out.errors.append(str(exc))
    return False


def _text(prompt: str, out: Outcome) -> str:
    return prompt if not out.errors else prompt + RETRY_NOTE.format(error=out.errors[-1])


def call_validated(
    llm: BaseChatModel,
    prompt: str,
    parse: Callable[[list[Any]], Any],
    *,
    mode: str,
    function: Mapping[str, Any] | None,
    retries: int,
    max_tokens: int,
    temperature: float,
    model: Any = None,
) -> Outcome:
    """Call until ``parse(arguments)`` accepts the reply, at most ``1 + retries`` times; each
    retry carries the previous error (PAI's retry note). ``model``: ``bound_model(llm, mode,
    function)`` made once by the caller (bound here when not given)."""
    model = model if model is not None else bound_model(llm, mode, function)
    invoke = blocking(functools.partial(model.invoke, **budget_kwargs(llm, max_tokens), temperature=temperature))
    return run_blocking(_attempts(prompt, parse, retries, invoke))


async def acall_validated(
    llm: BaseChatModel,
    prompt: str,
    parse: Callable[[list[Any]], Any],
    *,
    mode: str,
    function: Mapping[str, Any] | None,
    retries: int,
    max_tokens: int,
    temperature: float,
    model: Any = None,
    gate: Any = None,
) -> Outcome:
    """:func:`call_validated` through the model's async interface (PAI's ``ainvoke_model``:
    a sync-only model runs in a thread of PAI's pool); ``gate``: a semaphore held around each call."""
    model = model if model is not None else bound_model(llm, mode, function)
    held = gate if gate is not None else contextlib.nullcontext()

    async def invoke(messages: list[BaseMessage]) -> AIMessage:
        async with held:
            return await ainvoke_model(llm, model, messages, **budget_kwargs(llm, max_tokens), temperature=temperature)

    return await _attempts(prompt, parse, retries, invoke)


async def _attempts(prompt: str, parse: Callable[[list[Any]], Any], retries: int, invoke: Callable[[list[BaseMessage]], Awaitable[AIMessage]]) -> Outcome:
    """The policy both twins share: call through ``invoke`` until ``parse`` accepts a reply, at
    most ``1 + retries`` times, each retry carrying the previous error (:mod:`graphs.twins`)."""
    out = Outcome()
    for attempt in range(1, retries + 2):
        if _take(out, await invoke([HumanMessage(content=_text(prompt, out))]), parse, attempt):
            return out
    return out


def parse_records(schema: TableSchema, model: type[BaseModel]) -> Callable[[list[Any]], list[dict]]:
    """A parser of extraction replies: every call's ``records`` validated, numbers readable."""
    kinds = {a.name: a for a in schema.attributes}

    def parse(arguments: list[Any]) -> list[dict]:
        records: list[dict] = []
        for args in arguments:
            if isinstance(args, list):
                args = {"records": args}
            if isinstance(args, dict) and "records" not in args and "entity" in args:
                args = {"records": [args]}
            validated = model.model_validate(args).model_dump()
            records.extend(validated["records"])
        unreadable = []
        for rec in records:
            rec["values"] = {k: v for k, v in rec["values"].items() if v is not None and v.get("value") is not None}
            for attr, cell in rec["values"].items():
                a = kinds[attr]
                try:
                    normalize_value(cell["value"], a.type, a.unit)
                except ValueNotUnderstood as exc:
                    unreadable.append(f"{rec['entity']}.{attr}: {exc}")
        if unreadable:
            raise ValueError("values with no number readable in their unit (give the value as written, e.g. '$12.3 million'): " + "; ".join(unreadable[:5]))
        return records

    return parse


def fits_untokenized(text: str, size: int) -> bool:
    """Whether ``text`` surely fits ``size`` tokens, told without tokenizing: a token of a
    byte-level tokenizer is at least one UTF-8 byte (a character of CJK text may take
    several tokens, so characters alone are no bound)."""
    return len(text) <= size and (text.isascii() or len(text.encode("utf-8", errors="surrogatepass")) <= size)


def windows(text: str, size: int, overlap: int, encode: Callable[[str], list[int]], decode: Callable[[list[int]], str]) -> list[str]:
    """``text`` in windows of at most ``size`` tokens overlapping by ``overlap`` (one window when it fits)."""
    if fits_untokenized(text, size):
        return [text]
    ids = encode(text)
    if len(ids) <= size:
        return [text]
    step = size - overlap
    return [decode(ids[i : i + size]) for i in range(0, max(1, len(ids) - overlap), step)]


def squeeze(text: str) -> str:
    """``text`` with whitespace runs as one space, lower case: what quotes are matched in."""
    return " ".join(text.split()).lower()


def quote_found(quote: str, text: str, *, squeezed: str | None = None) -> bool:
    """Whether a value's quote occurs in the text read (whitespace and case ignored);
    ``squeezed``: ``squeeze(text)`` when the caller checks several quotes in one text."""
    q = squeeze(quote)
    return bool(q) and q in (squeezed if squeezed is not None else squeeze(text))


def dumps(value: Any) -> str:
    """Compact JSON for prompts and steps."""
    return json.dumps(value, ensure_ascii=False, default=str)


__all__ = [
    "Outcome",
    "acall_validated",
    "bound_model",
    "call_validated",
    "dumps",
    "fits_untokenized",
    "parse_records",
    "quote_found",
    "reply_arguments",
    "squeeze",
    "windows",
]
