"""Calling a chat model from a node, and the model facts nodes need (tokenizer, window)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage

from retrieval import tokens


def complete(
    llm: BaseChatModel, prompt: str, *, max_tokens: int, temperature: float = 0.0, stop: Sequence[str] | None = None
) -> str:
    """One user-turn chat call; returns the reply text (greedy by default, as LongBench)."""
    message = llm.invoke([HumanMessage(content=prompt)], max_tokens=max_tokens, temperature=temperature, stop=stop)
    content = message.content
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") if isinstance(part, dict) else str(part) for part in content)


def prompt_codec(llm: BaseChatModel) -> tuple[Callable[[str], list[int]], Callable[[list[int]], str]]:
    """``(encode, decode)`` in the model's own tokens when it exposes them, else cl100k.

    Truncating by the serving model's tokenizer matters for small windows (the embedded
    model's 8k); for remote models cl100k is what LongBench v2 uses for GPT models.
    """
    encode = getattr(llm, "tokenize", None)
    decode = getattr(llm, "detokenize", None)
    if callable(encode) and callable(decode):
        return encode, decode
    return tokens.encode, tokens.decode


def context_window(llm: BaseChatModel, default: int) -> int:
    """The model's context window in tokens when it reports one, else ``default``."""
    window = getattr(llm, "context_window", None)
    return int(window) if window else default
