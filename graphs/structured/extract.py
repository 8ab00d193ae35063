"""The structured strategy's Plan and Map replies: the record parser, document windows, quote
checks.

The calls themselves go through :mod:`longctx.graphs.calls.validated_call` (the loop PAI's calls
share); what is the structured strategy's own is what a valid reply is: a document may state no
row, so an empty ``records`` list is valid here, where PAI's calls treat "no item" as
malformed, and every value must read as a number in its unit.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from langchain_core.language_models import BaseChatModel
from pydantic import BaseModel

from longctx.graphs.plugin.api import (
    TableSchema,
    ValueNotUnderstood,
    bind_function,
    normalize_value,
)


def bound_model(llm: BaseChatModel, mode: str, function: Mapping[str, Any] | None) -> Any:
    """``llm`` with ``function`` bound as the forced tool (tools mode), else ``llm`` itself."""
    return bind_function(llm, mode, function, function["function"]["name"] if function else None)


def parse_records(
    schema: TableSchema, model: type[BaseModel]
) -> Callable[[list[Any]], list[dict[str, Any]]]:
    """A parser of extraction replies: every call's ``records`` validated, numbers readable."""
    kinds = {a.name: a for a in schema.attributes}

    def parse(arguments: list[Any]) -> list[dict[str, Any]]:
        records: list[dict[str, Any]] = []
        for args in arguments:
            if isinstance(args, list):
                args = {"records": args}
            if isinstance(args, dict) and "records" not in args and "entity" in args:
                args = {"records": [args]}
            validated = model.model_validate(args).model_dump()
            records.extend(validated["records"])
        unreadable = []
        for rec in records:
            rec["values"] = {
                k: v
                for k, v in rec["values"].items()
                if v is not None and v.get("value") is not None
            }
            for attr, cell in rec["values"].items():
                a = kinds[attr]
                try:
                    normalize_value(cell["value"], a.type, a.unit)
                except ValueNotUnderstood as exc:
                    unreadable.append(f"{rec['entity']}.{attr}: {exc}")
        if unreadable:
            raise ValueError(
                "values with no number readable in their unit (give the value as written, e.g. "
                "'$12.3 million'): " + "; ".join(unreadable[:5])
            )
        return records

    return parse


def fits_untokenized(text: str, size: int) -> bool:
    """Whether ``text`` surely fits ``size`` tokens, told without tokenizing: a token of a
    byte-level tokenizer is at least one UTF-8 byte (a character of CJK text may take
    several tokens, so characters alone are no bound)."""
    return len(text) <= size and (
        text.isascii() or len(text.encode("utf-8", errors="surrogatepass")) <= size
    )


def windows(
    text: str,
    size: int,
    overlap: int,
    encode: Callable[[str], list[int]],
    decode: Callable[[list[int]], str],
) -> list[str]:
    """``text`` in windows of at most ``size`` tokens overlapping by ``overlap`` (one window when it
    fits)."""
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
    "bound_model",
    "dumps",
    "fits_untokenized",
    "parse_records",
    "quote_found",
    "squeeze",
    "windows",
]
