"""Calling a chat model from a node, and the model facts nodes need (tokenizer, window)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage

from retrieval import tokens
from retrieval.contract import Usage


def complete(
    llm: BaseChatModel, prompt: str, *, max_tokens: int, temperature: float = 0.0, stop: Sequence[str] | None = None
) -> str:
    """One user-turn chat call; returns the reply text (greedy by default, as LongBench)."""
    return complete_with_usage(llm, prompt, max_tokens=max_tokens, temperature=temperature, stop=stop)[0]


def complete_with_usage(
    llm: BaseChatModel, prompt: str, *, max_tokens: int, temperature: float = 0.0, stop: Sequence[str] | None = None, **kwargs
) -> tuple[str, dict]:
    """One call, returning the reply and its usage ``{calls, cached_calls, prompt_tokens, completion_tokens, estimated}``.

    Strategies that checkpoint keep usage in their state so it survives a resume; a model
    that reports no usage is counted with cl100k and marked ``estimated``.
    """
    message = llm.invoke([HumanMessage(content=prompt)], max_tokens=max_tokens, temperature=temperature, stop=stop, **kwargs)
    content = message.content
    if not isinstance(content, str):
        content = "".join(part.get("text", "") if isinstance(part, dict) else str(part) for part in content)
    return content, reply_usage(message, prompt, content)


def reply_usage(message: Any, prompt: str, text: str) -> dict:
    """What one reply cost, as :class:`~retrieval.contract.Usage` fields: free when replayed
    from the LLM cache, the model's own counts when it reports them, else cl100k counts of
    ``prompt`` and ``text`` marked ``estimated``."""
    meta = getattr(message, "usage_metadata", None)
    if getattr(message, "response_metadata", {}).get("cache_hit"):
        return {"llm_calls": 0, "cached_calls": 1, "prompt_tokens": 0, "completion_tokens": 0, "estimated": False}
    if meta:
        return {"llm_calls": 1, "prompt_tokens": meta.get("input_tokens", 0), "completion_tokens": meta.get("output_tokens", 0), "estimated": False}
    return {"llm_calls": 1, "prompt_tokens": tokens.count_tokens(prompt), "completion_tokens": tokens.count_tokens(text), "estimated": True}


def add_usage(a: dict[str, dict] | None, b: dict[str, dict] | None) -> dict[str, dict]:
    """Reducer summing per-question usage dicts (question key -> :class:`Usage` fields)."""
    out = {k: dict(v) for k, v in (a or {}).items()}
    for key, u in (b or {}).items():
        out[key] = asdict(Usage.from_dict(out.get(key)) + Usage.from_dict(u))
    return out


def prompt_codec(llm: BaseChatModel) -> tuple[Callable[[str], list[int]], Callable[[list[int]], str]]:
    """``(encode, decode)`` in the model's own tokens when it exposes them, else cl100k (see :func:`tokenizer_id`).

    Truncating by the serving model's tokenizer matters for small windows (the embedded
    model's 8k); for remote models cl100k is what LongBench v2 uses for GPT models.
    """
    encode = getattr(llm, "tokenize", None)
    decode = getattr(llm, "detokenize", None)
    if callable(encode) and callable(decode):
        return encode, decode
    return tokens.encode, tokens.decode


def tokenizer_id(llm: BaseChatModel) -> str:
    """Which tokenizer :func:`prompt_codec` counts in for ``llm``, recorded with every answer."""
    if callable(getattr(llm, "tokenize", None)) and callable(getattr(llm, "detokenize", None)):
        return f"model:{model_id(llm)}"
    return f"tiktoken:{tokens.get_encoding().name}"


def context_window(llm: BaseChatModel, default: int) -> int:
    """The model's context window in tokens when it reports one, else ``default``."""
    window = getattr(llm, "context_window", None)
    return int(window) if window else default


def model_id(llm: BaseChatModel) -> str:
    """Model name and server (``name @ url``), for run keys and manifests: runs of different models never mix."""
    name = getattr(llm, "model_name", None) or getattr(llm, "model", None) or type(llm).__name__
    url = getattr(llm, "openai_api_base", None)
    return f"{name} @ {url}" if url else str(name)
