"""Chunks that fit the embedder: a chunk longer than the embedder reads is split, not silently cut.

An embedder reads at most a fixed number of its own tokens per input (all-MiniLM-L6-v2: 256
word pieces, special tokens included) and drops the rest. The chunker counts words or cl100k
tokens, so a 200-word chunk can be 300 word pieces, and its last third is never embedded.
:func:`fit_chunks` counts every chunk in the embedder's own tokenizer and splits one that is
over the limit into consecutive pieces that each fit (at a space between tokens where one is
in the second half of the window, else at a token boundary), so every piece is an exact
substring of the document and the pieces together are the chunk. Chunks that fit are kept as
they are; ids and positions are renumbered as a chunking of the whole corpus numbers them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from longctx.retrieval.base import Retriever
from longctx.retrieval.chunking import Chunk, ChunkingConfig, chunk_corpus
from longctx.retrieval.contract.document import IndexableCorpus
from longctx.retrieval.tokens import count_tokens_batch, get_encoding


@dataclass(frozen=True)
class TokenLimit:
    """The most tokens of its own tokenizer that an embedder reads from one input.

    Attributes:
        what: What is counted, for messages (e.g. ``"all-MiniLM-L6-v2 word pieces"``).
        max_tokens: The input limit, special tokens included (the model's max sequence length).
        special_tokens: Tokens the embedder adds to every input ([CLS], [SEP]).
        count: Tokens of each text, special tokens excluded.
        spans: ``(start, end)`` character offsets of each token of one text, special
            tokens excluded.
    """

    what: str
    max_tokens: int
    special_tokens: int
    count: Callable[[list[str]], list[int]]
    spans: Callable[[str], list[tuple[int, int]]]

    @property
    def budget(self) -> int:
        """Tokens of text one input holds besides the special tokens."""
        return max(1, self.max_tokens - self.special_tokens)


def hf_token_limit(tokenizer: Any, max_tokens: int, what: str) -> TokenLimit:
    """The :class:`TokenLimit` of a Hugging Face fast tokenizer that truncates at ``max_tokens``
    (special tokens included)."""

    def count(texts: list[str]) -> list[int]:
        return [
            len(ids)
            for ids in tokenizer(texts, add_special_tokens=False, truncation=False, verbose=False)[
                "input_ids"
            ]
        ]

    def spans(text: str) -> list[tuple[int, int]]:
        found = tokenizer(
            text,
            add_special_tokens=False,
            truncation=False,
            return_offsets_mapping=True,
            verbose=False,
        )
        return [(int(a), int(b)) for a, b in found["offset_mapping"]]

    return TokenLimit(
        what, int(max_tokens), int(tokenizer.num_special_tokens_to_add(pair=False)), count, spans
    )


def cl100k_token_limit(max_tokens: int, what: str) -> TokenLimit:
    """A :class:`TokenLimit` counted in cl100k tokens (OpenAI's embedding models read
    8,191 of them)."""

    def spans(text: str) -> list[tuple[int, int]]:
        enc = get_encoding()
        ids = enc.encode(text, disallowed_special=())
        _, starts = enc.decode_with_offsets(ids)
        return [(a, b) for a, b in zip(starts, [*starts[1:], len(text)])]

    return TokenLimit(what, int(max_tokens), 0, lambda texts: count_tokens_batch(texts), spans)


def over_limit(texts: Sequence[str], limit: TokenLimit) -> list[int]:
    """The tokens beyond ``limit`` of each text (0 where it fits): what the embedder would cut."""
    return [max(0, n - limit.budget) for n in limit.count(list(texts))]


def split_to_fit(text: str, limit: TokenLimit) -> list[str]:
    """``text`` as consecutive pieces of at most ``limit.budget`` tokens each, concatenating
    to ``text``.

    A text of ``n`` tokens becomes ``ceil(n / budget)`` pieces of about equal length (300
    tokens against 254: two of 150, not 254 and 46). A piece ends before the first token of the
    next, at a space between two tokens when there is one in the window's second half. The
    pieces are counted again on their own (a word cut between two of its word pieces can
    tokenize differently alone), and one still over the limit is split again.
    """
    spans = limit.spans(text)
    if len(spans) <= limit.budget:
        return [text]
    pieces: list[str] = []
    start_char, i = 0, 0
    while i < len(spans):
        left = len(spans) - i
        target = -(
            -left // -(-left // limit.budget)
        )  # ceil(left / pieces), pieces = ceil(left / budget)
        j = min(i + target, len(spans))
        if j < len(spans):
            j = next(
                (k for k in range(j, i + max(1, target // 2), -1) if spans[k][0] > spans[k - 1][1]),
                j,
            )  # at a space
        end = spans[j][0] if j < len(spans) else len(text)
        pieces.append(text[start_char:end])
        start_char, i = end, j
    pieces[-1] += text[start_char:]  # characters after the last token (spaces)
    counts = limit.count(pieces)
    fitted = [
        p
        for piece, n in zip(pieces, counts)
        for p in ([piece] if n <= limit.budget or len(piece) < 2 else split_to_fit(piece, limit))
    ]
    return [p for p in fitted if p.strip()] or [text]


def fit_chunks(
    chunks: Sequence[Chunk], limit: TokenLimit, *, first_chunk_id: int = 0
) -> list[Chunk]:
    """``chunks`` (in document order) with every chunk over ``limit`` split into pieces that fit,
    renumbered from ``first_chunk_id``.

    Positions restart at 0 for each document, as :func:`longctx.retrieval.chunking.chunk_corpus`
    numbers them.
    """
    cut = over_limit([c.text for c in chunks], limit)
    out: list[Chunk] = []
    position, doc = 0, None
    for chunk, over in zip(chunks, cut):
        if chunk.doc_index != doc:
            position, doc = 0, chunk.doc_index
        pieces = split_to_fit(chunk.text, limit) if over else [chunk.text]
        counts = count_tokens_batch(pieces) if len(pieces) > 1 else [chunk.num_tokens]
        for piece, n in zip(pieces, counts):
            out.append(
                Chunk(
                    first_chunk_id + len(out),
                    chunk.doc_index,
                    chunk.doc_id,
                    chunk.title,
                    position,
                    piece,
                    n,
                )
            )
            position += 1
    return out


def chunks_for(
    corpus: IndexableCorpus,
    chunking: ChunkingConfig | None,
    retriever: Retriever,
    *,
    show_progress: bool = False,
    start: int = 0,
    first_chunk_id: int = 0,
) -> list[Chunk]:
    """The chunks ``retriever`` indexes of ``corpus`` (from document ``start`` on, numbered from
    ``first_chunk_id``).

    :func:`~retrieval.chunking.chunk_corpus`'s chunks, fitted (:func:`fit_chunks`) to the
    retriever's :class:`TokenLimit` when it has one (a dense retriever with ``fit_chunks``).
    """
    chunks = chunk_corpus(
        corpus, chunking, show_progress=show_progress, start=start, first_chunk_id=first_chunk_id
    )
    limit_of = getattr(retriever, "chunk_limit", None)
    limit = limit_of() if callable(limit_of) else None
    return (
        fit_chunks(chunks, limit, first_chunk_id=first_chunk_id)
        if limit is not None and chunks
        else chunks
    )
