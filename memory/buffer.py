"""The streaming agent's memory: overwritten each step, bounded in tokens by the buffer itself."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from longctx.retrieval.tokenizers import decode_prefix

#: MemAgent's initial memory (``taskutils/memory_eval``: ``NO_MEMORY``).
NO_MEMORY = "No previous memory"


@dataclass(frozen=True)
class MemoryUpdate:
    """The memory after one step.

    Attributes:
        text: The new memory (replaces the old one entirely).
        tokens: Its length in the model's tokens.
        cut: True when the model wrote more than the budget and the buffer cut it.
        written_tokens: What the model wrote, in tokens, before any cut.
    """

    text: str
    tokens: int
    cut: bool
    written_tokens: int


def strip_think(text: str) -> str:
    """Drop everything up to the last ``</think>`` (MemAgent's ``extract_solution``)."""
    return text.rsplit("</think>", 1)[-1] if "</think>" in text else text


def bound_memory(
    text: str,
    max_tokens: int,
    encode: Callable[[str], list[int]],
    decode: Callable[[list[int]], str],
) -> MemoryUpdate:
    """The memory a step leaves: reasoning stripped, then at most ``max_tokens`` tokens.

    A backend that honours ``max_tokens`` never needs the cut; one that ignores it (some
    servers do) would let the memory grow without bound, so the buffer keeps the first
    ``max_tokens`` tokens, as a compliant backend would have stopped there, and says so.
    ``encode`` / ``decode`` must be the model's own tokenizer: counted in another (cl100k),
    a memory the model wrote within its budget can look longer and be cut wrongly. The
    cut never splits a character (it moves back to the last whole one).
    """
    if max_tokens <= 0:
        raise ValueError(f"memory budget must be positive, got {max_tokens}")
    memory = strip_think(text).strip()
    ids = encode(memory)
    if len(ids) <= max_tokens:
        return MemoryUpdate(memory, len(ids), False, len(ids))
    kept, cut = decode_prefix(ids, 0, max_tokens, decode)
    return MemoryUpdate(kept, cut, True, len(ids))
