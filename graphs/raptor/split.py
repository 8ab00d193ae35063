"""RAPTOR's leaves: ``utils.split_text`` (official code @ 2e3e83e), sentence-aware chunks of at most
``max_tokens`` cl100k tokens (no overlap, its default)."""

from __future__ import annotations

import re

from longctx.graphs.plugin.api import count_tokens_batch

_SENTENCE = re.compile(r"[.!?\n]")
_CLAUSE = re.compile(r"[,;:]")


def split_text(text: str, max_tokens: int) -> list[str]:
    """Chunks of ``text``: sentences (cut at ``. ! ? newline``, which are dropped) joined by spaces
    while they fit ``max_tokens`` (each counted as ``" " + sentence``); a sentence over the limit is
    cut at ``, ; :`` into chunks of its own, emitted before the chunk being filled, as the
    official code does. Unlike it, no empty chunk is emitted (its clause path can emit one)."""
    sentences = _SENTENCE.split(text)
    counts = count_tokens_batch([" " + s for s in sentences])
    chunks: list[str] = []
    current: list[str] = []
    length = 0
    for sentence, n in zip(sentences, counts):
        if not sentence.strip():
            continue
        if n > max_tokens:
            chunks.extend(_clauses(sentence, max_tokens))
        elif length + n > max_tokens:
            chunks.append(" ".join(current))
            current, length = [sentence], n
        else:
            current.append(sentence)
            length += n
    if current:
        chunks.append(" ".join(current))
    return [c for c in chunks if c]


def _clauses(sentence: str, max_tokens: int) -> list[str]:
    """A long sentence cut at ``, ; :`` into runs of clauses of at most ``max_tokens`` (a clause
    over it stays whole)."""
    parts = _CLAUSE.split(sentence)
    out: list[str] = []
    run: list[str] = []
    length = 0
    for part, n in zip(parts, count_tokens_batch([" " + p for p in parts])):
        if length + n > max_tokens:
            out.append(" ".join(run))
            run, length = [], 0
        run.append(part)
        length += n
    if run:
        out.append(" ".join(run))
    return out
