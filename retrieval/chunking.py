"""Splitting a corpus into chunks, by tokens (default) or by words the LongBench v1 way."""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from tqdm.auto import tqdm

from longctx.retrieval.contract.document import Document, IndexableCorpus
from longctx.retrieval.tokens import (
    SEGMENT_CHARS,
    count_tokens_batch,
    encode_segments,
    get_encoding,
)

#: LongBench v1 ``retrieval/splitter.py`` sentence delimiters (kept with their sentence).
SENTENCE_SPLIT = re.compile(r"([。？！；\n.!?;]\s*)")
_CJK = "\u4e00-\u9fff\u3400-\u4dbf\uf900-\ufaff"
#: A "word" as LongBench v1 counts it: one CJK character, or a run of other word characters.
WORD = re.compile(rf"[{_CJK}]|[^\W{_CJK}]+")


@dataclass(frozen=True, kw_only=True)
class ChunkingConfig:
    """How a corpus is cut into chunks.

    Attributes:
        unit: ``"tokens"`` (cl100k tokens) or ``"words"`` (LongBench v1: sentence split,
            greedy packing, one CJK character = one word).
        size: Maximum chunk length in ``unit``s.
        overlap: Units shared by consecutive chunks of a document.
    """

    unit: Literal["tokens", "words"] = field(
        default="tokens", metadata={"source": "token chunks: LongBench v2 RAG"}
    )
    size: int = field(default=512, metadata={"source": "LongBench v2 paper: 512-token chunks"})
    overlap: int = 0

    def __post_init__(self) -> None:
        if self.unit not in ("tokens", "words"):
            raise ValueError(f"chunk unit must be 'tokens' or 'words', got {self.unit!r}")
        if self.size <= 0:
            raise ValueError(f"chunk size must be positive, got {self.size}")
        if not 0 <= self.overlap < self.size:
            raise ValueError(
                f"chunk overlap must be in [0, size), got {self.overlap} for size {self.size}"
            )

    def as_dict(self) -> dict[str, Any]:
        """Plain-dict form, used in cache keys and result manifests."""
        return asdict(self)


@dataclass(frozen=True)
class Chunk:
    """A contiguous span of one document.

    Attributes:
        chunk_id: Position in the corpus-wide chunk list (document order).
        doc_index: Position of the document in the corpus.
        doc_id: Id of the document.
        title: Title of the document.
        position: Index of this chunk within its document.
        text: The chunk's text, an exact substring of the document.
        num_tokens: cl100k tokens in ``text``.
    """

    chunk_id: int
    doc_index: int
    doc_id: str
    title: str
    position: int
    text: str
    num_tokens: int


def chunk_corpus(
    corpus: IndexableCorpus,
    config: ChunkingConfig | None = None,
    *,
    show_progress: bool = False,
    start: int = 0,
    first_chunk_id: int = 0,
) -> list[Chunk]:
    """All chunks of ``corpus`` in document order, numbered from 0.

    ``start`` / ``first_chunk_id``: only the documents from ``start`` on, their chunks numbered
    from ``first_chunk_id`` (the chunk count of the first ``start`` documents): the new segment
    of a grown corpus, numbered as a chunking of the whole corpus numbers it (each document is
    chunked on its own).
    """
    config = config or ChunkingConfig()
    chunks: list[Chunk] = []
    bar = tqdm(
        total=len(corpus) - start, desc="Indexing: chunking", unit="doc", disable=not show_progress
    )
    for doc_index in range(start, len(corpus)):
        doc = corpus[doc_index]
        if config.unit == "tokens":
            spans = list(split_tokens(doc.text, config.size, config.overlap))
        else:
            texts = list(split_words(doc.text, config.size, config.overlap))
            spans = list(zip(texts, count_tokens_batch(texts)))
        base = first_chunk_id + len(chunks)
        chunks.extend(
            _make_chunk(base + pos, doc_index, doc, pos, text, n)
            for pos, (text, n) in enumerate(spans)
        )
        bar.update()
    bar.close()
    return chunks


def _make_chunk(
    chunk_id: int, doc_index: int, doc: Document, position: int, text: str, num_tokens: int
) -> Chunk:
    return Chunk(chunk_id, doc_index, doc.doc_id, doc.title, position, text, num_tokens)


#: Tokens read past a window's end: a UTF-8 character (at most 4 bytes) cut there ends within them.
_LOOKAHEAD = 3


def split_tokens(
    text: str, size: int, overlap: int = 0, *, segment_chars: int = SEGMENT_CHARS
) -> Iterator[tuple[str, int]]:
    """Windows of ``size`` tokens (stride ``size - overlap``) as ``(text, n_tokens)``.

    Window edges are moved forward to the next UTF-8 character start, so a character
    split across tokens (common in CJK) is never cut in half and every chunk is an
    exact substring of ``text``. The text is encoded ``segment_chars`` at a time
    (:func:`longctx.retrieval.tokens.encode_segments`) and only the ids of the current window are
    kept, so a huge single-line file never has all its token ids in memory at once.
    """
    if not text.strip():
        return
    enc = get_encoding()
    stride = size - overlap
    segments = encode_segments(text, segment_chars)
    buf: list[int] = []  # token ids from index ``first`` on
    first, start, exhausted = 0, 0, False
    while True:
        while not exhausted and first + len(buf) < start + size + _LOOKAHEAD:
            ids = next(segments, None)
            if ids is None:
                exhausted = True
            else:
                buf.extend(ids)
        known = first + len(buf)  # the text's token count once ``exhausted``
        if start > 0 and exhausted and start >= known - overlap:
            return  # windows start at 0, stride, ... below max(n - overlap, 1)
        end = min(start + size, known)
        window = enc.decode_bytes(buf[start - first : end - first])
        after = enc.decode_bytes(buf[end - first : end - first + _LOOKAHEAD])
        raw = window + after[: _continuation(after, 0)]  # the rest of a character cut at the end
        piece = raw[_continuation(raw, 0) :].decode(
            "utf-8", errors="surrogatepass"
        )  # minus one cut at the start
        if piece.strip():
            yield piece, end - start
        start += stride
        if start - first > len(buf) // 2:  # drop what no later window reads (amortized)
            del buf[: start - first]
            first = start


def _continuation(raw: bytes, pos: int) -> int:
    """Smallest offset >= pos that starts a UTF-8 character (skips continuation bytes)."""
    while pos < len(raw) and (raw[pos] & 0xC0) == 0x80:
        pos += 1
    return pos


def word_len(text: str) -> int:
    """Words in ``text`` counted the LongBench v1 way (a CJK character is one word)."""
    return len(WORD.findall(text))


def split_sentences(text: str) -> list[str]:
    """Sentences with their trailing delimiter, as LongBench v1's splitter cuts them."""
    return list(iter_sentences(text))


def iter_sentences(text: str) -> Iterator[str]:
    """:func:`split_sentences` one at a time (a huge text is not split into a list at once)."""
    pos = 0
    for m in SENTENCE_SPLIT.finditer(text):
        if m.end() > pos:
            yield text[pos : m.end()]
        pos = m.end()
    if pos < len(text):
        yield text[pos:]


def split_words(text: str, size: int, overlap: int = 0) -> Iterator[str]:
    """Chunks of at most ``size`` words, packed greedily from whole sentences.

    Follows LongBench v1 ``split_long_sentence``. One deliberate difference: a single
    sentence longer than ``size`` is cut at word boundaries instead of becoming an
    over-long chunk, so every chunk honours the cap (embedders truncate silently).
    ``overlap`` carries whole trailing sentences of up to that many words forward.
    """
    current: list[tuple[str, int]] = []
    total = 0
    for sentence in _bounded_sentences(text, size):
        n = word_len(sentence)
        if current and total + n > size:
            chunk = "".join(s for s, _ in current)
            if chunk.strip():
                yield chunk
            current, total = _tail(current, overlap, room=size - n)
        current.append((sentence, n))
        total += n
    chunk = "".join(s for s, _ in current)
    if chunk.strip():
        yield chunk


def _bounded_sentences(text: str, size: int) -> Iterator[str]:
    """Sentences, a longer-than-``size`` one cut before every ``size``-th word (found lazily:
    a single-line file of one "sentence" never has all its word offsets in a list)."""
    for sentence in iter_sentences(text):
        if sum(1 for _ in itertools.islice(WORD.finditer(sentence), size + 1)) <= size:
            yield sentence
            continue
        a = 0
        for i, m in enumerate(WORD.finditer(sentence)):
            if i and i % size == 0:
                yield sentence[a : m.start()]
                a = m.start()
        yield sentence[a:]


def _tail(
    items: list[tuple[str, int]], overlap: int, room: int
) -> tuple[list[tuple[str, int]], int]:
    """The longest suffix of ``items`` with at most ``min(overlap, room)`` words."""
    budget = min(overlap, room)
    kept: list[tuple[str, int]] = []
    total = 0
    for sentence, n in reversed(items):
        if total + n > budget:
            break
        kept.insert(0, (sentence, n))
        total += n
    return kept, total
