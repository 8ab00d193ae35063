"""PAI's structured calls: tool calling when the model supports it, validated JSON text otherwise.

Every reply is validated against a pydantic model of the function's arguments. A reply
that fails (no call, arguments that do not parse or validate, no JSON object, no item) is
retried with the error appended to the prompt (:mod:`longctx.graphs.calls.validated_call`, the loop
the structured strategy's calls share); after the last retry the caller receives a failed
:class:`CallOutcome` carrying every error, and records it: nothing is dropped silently.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from langchain_core.language_models import BaseChatModel
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from longctx.graphs.plugin.api import (
    MalformedOutput,
    Outcome,
    ToolMode,
    acall_validated,
    bind_function,
    call_validated,
)


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
    model = bind_function(llm, mode, function, tool_choice)
    out = call_validated(
        llm,
        model,
        prompt,
        items_parser(item_model),
        retries=retries,
        max_tokens=max_tokens,
        temperature=temperature,
    )
    return _call_outcome(out, mode)


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
    prompts, validation and retries, without holding a thread per call in flight (a sync-only
    model runs in :data:`longctx.graphs.calls.validated_call.SYNC_MODEL_POOL`)."""
    model = bind_function(llm, mode, function, tool_choice)
    out = await acall_validated(
        llm,
        model,
        prompt,
        items_parser(item_model),
        retries=retries,
        max_tokens=max_tokens,
        temperature=temperature,
    )
    return _call_outcome(out, mode)


def _call_outcome(out: Outcome[list[dict[str, Any]]], mode: ToolMode) -> CallOutcome:
    """PAI's record of a validated call: its items (none when it failed), attempts, errors and
    mode."""
    return CallOutcome(
        out.value if out.ok and out.value is not None else [], out.attempts, out.errors, mode
    )


def items_parser(item_model: type[BaseModel]) -> Callable[[list[Any]], list[dict[str, Any]]]:
    """A parser of a reply's argument objects into validated items (:func:`parse_items`)."""
    return lambda arguments: parse_items(arguments, item_model)


def parse_items(arguments: list[Any], item_model: type[BaseModel]) -> list[dict[str, Any]]:
    """Validated items from a reply's argument objects (each tool call's, or the JSON in its text),
    a list-valued object giving one item per element.

    Raises:
        MalformedOutput: No item, or an item fails validation.
    """
    raw = [item for args in arguments for item in unwrap(args)]
    if not raw:
        raise MalformedOutput("the reply holds no item")
    items = []
    for item in raw:
        try:
            items.append(item_model.model_validate(item).model_dump())
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(map(str, e['loc'])) or 'item'}: {e['msg']}" for e in exc.errors()
            )
            raise MalformedOutput(
                f"invalid arguments {json.dumps(item)[:200]}: {problems}"
            ) from exc
    return items


def unwrap(obj: Any) -> list[Any]:
    """Items of a list-valued reply (``{"items": [...]}``, any single list-valued key, or a bare
    list), else ``[obj]``."""
    if isinstance(obj, list):
        return obj
    if isinstance(obj, dict) and len(obj) == 1:
        (value,) = obj.values()
        if isinstance(value, list):
            return value
    return [obj]
