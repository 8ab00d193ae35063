"""Usage counts a server reports, checked in one place as its reply arrives.

Why: a server's ``usage`` is untrusted input. A negative ``prompt_tokens`` let a run pass its
``max_cost_usd`` (the budget settled at the reported count); a count below zero, above a
trillion or fractional made an ok result row that the reader skips, so every rerun paid for it
again; a count that is not a number (``"many"``, ``[1, 2]``) failed a call that had succeeded.

Every path that reads a server's usage goes through here: chat replies, whole, streamed and posted
by the lean transport (:mod:`longctx.agents.openai_chat`, :func:`checked_chat_usage`), rerank
replies (:mod:`longctx.retrieval.rerank`, :func:`checked_rerank_tokens`), and, for any chat model,
the counters of a reply's ``usage_metadata`` (:func:`metadata_counts`:
``longctx.graphs.calls.llm.reply_usage``, the budget guard). Embedding replies' usage is not read.

The rule: a count is a whole number in ``[0, MAX_COUNT)`` (``12.0`` reads as 12). When the
prompt or completion count is not one, the reply's usage is dropped and the call is counted as
for a server that reports none: with our own tokenizer, marked ``estimated``, its budget
settled at the prompt tokens counted before it. An optional count (total, cached, a detail)
that is not one is dropped. The answer is always kept, and a warning names the server and the
field (once per server and field in a process).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from typing import Any

log = logging.getLogger(__name__)

#: Counts are whole numbers below this: a trillion tokens is more than any call reads, and the
#: result rows refuse more (``longctx.experiments.runner.row_schema``).
MAX_COUNT = 10**12
#: Counts a chat reply's usage must hold to be used; without them the call is counted by us.
REQUIRED = ("prompt_tokens", "completion_tokens")
#: Nested usage objects (each of their counts is checked; one that is not an object is dropped).
DETAILS = ("prompt_tokens_details", "completion_tokens_details")

_warned: set[tuple[str, str]] = set()
_warned_lock = threading.Lock()


def as_count(value: Any) -> int | None:
    """``value`` as a token count (a whole number in ``[0, MAX_COUNT)``; a whole float reads as
    its integer), or ``None`` when it is not one (negative, huge, fractional, not a number)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if 0 <= value < MAX_COUNT else None
    if isinstance(value, float) and value.is_integer() and 0 <= value < MAX_COUNT:
        return int(value)
    return None


def warn_unusable(server: str, field: str, value: Any, instead: str) -> None:
    """One warning naming ``server``, the ``field`` and its value, and what is used ``instead``
    (once per server and field in a process: a server wrong on every call warns once)."""
    with _warned_lock:
        if (server, field) in _warned:
            return
        _warned.add((server, field))
    shown = repr(value) if len(repr(value)) <= 40 else repr(value)[:40] + "..."
    log.warning(
        "%s reported usage %s = %s, not a token count from 0 to %.0e; %s",
        server,
        field,
        shown,
        MAX_COUNT,
        instead,
    )


def checked_chat_usage(usage: Any, server: str) -> dict[str, Any] | None:
    """A chat reply's ``usage`` with every count checked: ``None`` when it has none or its prompt
    or completion count is unusable (the call is then counted with our tokenizer), else a copy
    without the optional counts that are unusable (a warning names ``server`` and each field)."""
    if usage is None or (isinstance(usage, Mapping) and not usage):
        return None
    if not isinstance(usage, Mapping):
        warn_unusable(server, "usage", usage, "the call is counted with our own tokenizer")
        return None
    out = dict(usage)
    for field in REQUIRED:
        count = as_count(out.get(field))
        if count is None:
            warn_unusable(
                server, field, out.get(field), "the call is counted with our own tokenizer"
            )
            return None
        out[field] = count
    for field, value in usage.items():
        if field not in REQUIRED and value is not None:
            _check_optional(out, field, value, server)
    return out


def _check_optional(out: dict[str, Any], field: str, value: Any, server: str) -> None:
    """Keep in ``out`` an optional count (a details mapping or a ``*tokens`` field) checked, or
    drop it with a warning when it is unusable; any other field stays as it came."""
    if field in DETAILS:
        details = _checked_details(value, server, field)
        if details is None:
            del out[field]
        else:
            out[field] = details
    elif field.endswith("tokens"):
        count = as_count(value)
        if count is None:
            warn_unusable(server, field, value, "treated as not reported")
            del out[field]
        else:
            out[field] = count


def _checked_details(value: Any, server: str, name: str) -> dict[str, Any] | None:
    if not isinstance(value, Mapping):
        warn_unusable(server, name, value, "treated as not reported")
        return None
    out = {}
    for field, inner in value.items():
        count = as_count(inner)
        if count is None and inner is not None:
            warn_unusable(server, f"{name}.{field}", inner, "treated as not reported")
        elif count is not None:
            out[field] = count
    return out


def checked_rerank_tokens(usage: Any, server: str) -> int:
    """The tokens a rerank reply's ``usage`` reports (``total_tokens``, else ``prompt_tokens``), or
    0 when it reports none or an unusable count (a warning names ``server`` and the field): 0 leaves
    the budget's reservation (the query-document tokens counted before the call) standing."""
    if not isinstance(usage, Mapping):
        if usage:
            warn_unusable(server, "usage", usage, "its tokens are counted as not reported")
        return 0
    for field in ("total_tokens", "prompt_tokens"):
        value = usage.get(field)
        if value is None:
            continue
        count = as_count(value)
        if count is None:
            warn_unusable(server, field, value, "its tokens are counted as not reported")
            return 0
        if count:
            return count
    return 0


def metadata_counts(meta: Mapping[str, Any] | None) -> tuple[int, int, int] | None:
    """``(prompt, cached prompt, completion)`` tokens of a LangChain ``usage_metadata``, the
    cached ones bounded by the prompt's; ``None`` when it has none or its prompt or completion
    count is unusable (a chat model other than ours may report anything): the caller counts the
    call itself."""
    if not meta:
        return None
    prompt, completion = as_count(meta.get("input_tokens")), as_count(meta.get("output_tokens"))
    if prompt is None or completion is None:
        return None
    details = meta.get("input_token_details")
    cached = as_count(details.get("cache_read")) if isinstance(details, Mapping) else None
    return prompt, min(cached or 0, prompt), completion


__all__ = [
    "MAX_COUNT",
    "as_count",
    "checked_chat_usage",
    "checked_rerank_tokens",
    "metadata_counts",
    "warn_unusable",
]
