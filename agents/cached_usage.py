"""The cached prompt tokens an OpenAI-compatible reply reports, under each vendor's name.

Providers bill a prompt prefix they have seen recently at a fraction of the input price and say
how many prompt tokens it covered. LangChain reads OpenAI's name only
(``usage.prompt_tokens_details.cached_tokens`` ->
``usage_metadata.input_token_details.cache_read``); the OpenAI-compatible servers of other vendors
use their own:

| where in the reply | who |
|---|---|
| ``usage.prompt_tokens_details.cached_tokens`` | OpenAI, vLLM (its flag below) |
| ``usage.prompt_cache_hit_tokens`` | DeepSeek |
| ``usage.cached_tokens`` | Moonshot (Kimi) |
| ``usage.cache_read_input_tokens`` | Anthropic's name, as some proxies pass it on |
| ``timings.cache_n`` | llama.cpp's ``llama-server`` (its own timings block) |

vLLM reports its cached tokens only when started with ``--enable-prompt-tokens-details``.

A streamed reply carries its usage (and llama.cpp's timings) in its last chunk; both paths of
:class:`longctx.agents.openai_chat.RetryingChatOpenAI` read it here, so streaming changes no count.

llama-cpp-python's server (``python -m llama_cpp.server``) reuses the prefix of the previous
request but reports none of these (``tests/test_cached_tokens.py`` checks what it sends back).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from longctx.retrieval.reported_usage import as_count

#: Keys of ``usage`` (dotted for nested) holding cached prompt tokens, first found wins.
USAGE_KEYS = (
    "prompt_tokens_details.cached_tokens",
    "prompt_cache_hit_tokens",
    "cached_tokens",
    "cache_read_input_tokens",
)


def _dig(data: Any, dotted: str) -> Any:
    for part in dotted.split("."):
        if not isinstance(data, Mapping):
            return None
        data = data.get(part)
    return data


def reported_cached_tokens(
    usage: Mapping[str, Any] | None, timings: Mapping[str, Any] | None = None
) -> int | None:
    """Cached prompt tokens a reply reports (its ``usage`` and llama.cpp's ``timings``), or ``None``
    when it reports none. Values that are not token counts are ignored (an untrusted reply; see
    :func:`longctx.retrieval.reported_usage.as_count`)."""
    candidates = [_dig(usage, key) for key in USAGE_KEYS] + [_dig(timings, "cache_n")]
    for value in candidates:
        count = as_count(value)
        if count is not None:
            return count
    return None


def with_cached_tokens(
    message: Any, usage: Mapping[str, Any] | None, timings: Mapping[str, Any] | None = None
) -> None:
    """Put the reply's cached prompt tokens into ``message.usage_metadata`` as LangChain names them
    (``input_token_details.cache_read``) where LangChain did not (a vendor's own name), bounded by
    the prompt tokens; a message without usage is left as it is."""
    meta = getattr(message, "usage_metadata", None)
    if not meta:
        return
    details = dict(meta.get("input_token_details") or {})
    if details.get("cache_read") is not None:
        return
    cached = reported_cached_tokens(usage, timings)
    if cached is None:
        return
    details["cache_read"] = min(cached, int(meta.get("input_tokens") or 0))
    message.usage_metadata = {**meta, "input_token_details": details}


def reused_prefix(kept: Sequence[int], prompt: Sequence[int]) -> int:
    """Prompt tokens llama.cpp (llama-cpp-python's ``Llama.generate``) skips because the model's
    context still holds them from the previous call: the common prefix of ``kept`` (the tokens in
    the context before the call) and ``prompt``, less the one token it evaluates again when the
    whole prompt is held (to get fresh logits to sample from)."""
    common = 0
    for a, b in zip(kept, prompt):
        if a != b:
            break
        common += 1
    return common - 1 if common and common == len(prompt) else common
