"""Counting the terms of chunks one chunk at a time, into
:class:`~retrieval.term_counts.TermCounts`, in bounded memory.

A BM25 build used to keep every chunk's token list (a 200 MB file: ~30M tokens, several GB
as Python lists) and then three Python lists of (chunk, term, count) triples. Here each
chunk's tokens are counted and dropped: its (term id, count) pairs go to a buffer of
:data:`BLOCK_ENTRIES` pairs, and a full buffer is written to an unnamed temporary file.
:meth:`TermCountsBuilder.finish` allocates the term-major arrays once (their sizes are
known from the document frequencies) and reads the pairs back a block at a time, placing
each at its term's column by a stable counting sort, so apart from the result only one
block is ever in memory. The arrays equal those of counting all the token lists at once:
terms in order of first appearance, each column's chunks ascending; the counts are held in
the smallest type that fits them (:func:`~retrieval.term_counts.counts_dtype`).
"""

from __future__ import annotations

import tempfile
from array import array
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import IO

import numpy as np

from longctx.retrieval.term_counts import TermCounts, counts_dtype

#: (chunk, term, count) entries buffered before they are written out, and read back at once
#: (12 bytes each on disk; placing a block takes ~6x that in temporaries: ~10 MB).
BLOCK_ENTRIES = 1 << 17


class TermCountsBuilder:
    """Term counts of chunks added one at a time with :meth:`add`; :meth:`finish` returns the
    :class:`TermCounts`.

    Args:
        spill_dir: Where the temporary file of full blocks is made (default: the system's
            temporary folder); it has no name and is gone when closed, even after a crash.
        block_entries: Entries per block (what bounds the memory besides the result; default
            :data:`BLOCK_ENTRIES`).
    """

    def __init__(self, *, spill_dir: Path | None = None, block_entries: int | None = None):
        block_entries = BLOCK_ENTRIES if block_entries is None else block_entries
        if block_entries < 1:
            raise ValueError(f"block_entries must be positive, got {block_entries}")
        self.vocab: dict[str, int] = {}
        self._spill_dir = spill_dir
        self._block_entries = block_entries
        self._lengths = array("q")  # tokens of each chunk
        self._cols = array("i")  # the buffered block: term ids, counts, and pairs per chunk
        self._counts = array("I")
        self._sizes = array("i")
        self._df = np.zeros(
            0, dtype=np.int64
        )  # chunks holding each term, over the blocks written out
        self._spill: IO[bytes] | None = None
        self._spilled: list[int] = []  # entries of each block in the spill file, in order
        self._first_buffered_row = 0
        self._max_count = 0

    def __len__(self) -> int:
        """Chunks added so far."""
        return len(self._lengths)

    def add(self, tokens: Sequence[str]) -> None:
        """Count one chunk's tokens (its row is the number of chunks added before it)."""
        counts = Counter(tokens)
        vocab = self.vocab
        self._cols.extend([vocab.setdefault(term, len(vocab)) for term in counts])
        self._counts.extend(counts.values())
        if counts:
            self._max_count = max(self._max_count, max(counts.values()))
        self._sizes.append(len(counts))
        self._lengths.append(len(tokens))
        if len(self._cols) >= self._block_entries:
            self._write_block()

    def _buffered(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The buffered block as ``(rows, cols, counts)`` arrays, and the buffer emptied."""
        rows = np.repeat(
            np.arange(self._first_buffered_row, len(self._lengths), dtype=np.int32),
            np.frombuffer(self._sizes, dtype=np.int32),
        )
        cols = np.frombuffer(
            self._cols, dtype=np.int32
        )  # views: the arrays live on in them, and new ones buffer
        counts = np.frombuffer(self._counts, dtype=np.uint32)
        self._cols, self._counts, self._sizes = array("i"), array("I"), array("i")
        self._first_buffered_row = len(self._lengths)
        return rows, cols, counts

    def _write_block(self) -> None:
        rows, cols, counts = self._buffered()
        self._count_df(cols)
        if self._spill is None:
            self._spill = tempfile.TemporaryFile(dir=self._spill_dir, prefix="bm25-counts-")
        for part in (rows, cols, counts):
            part.tofile(self._spill)
        self._spilled.append(len(cols))

    def _count_df(self, cols: np.ndarray) -> None:
        if len(self._df) < len(self.vocab):
            self._df = np.concatenate(
                [self._df, np.zeros(len(self.vocab) - len(self._df), dtype=np.int64)]
            )
        self._df += np.bincount(cols, minlength=len(self._df))

    def _blocks(
        self, last: tuple[np.ndarray, np.ndarray, np.ndarray]
    ) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """Every block in chunk order: those of the spill file, read back one at a time,
        then ``last``."""
        if self._spill is not None:
            self._spill.seek(0)
            for n in self._spilled:
                yield (
                    np.fromfile(self._spill, dtype=np.int32, count=n),
                    np.fromfile(self._spill, dtype=np.int32, count=n),
                    np.fromfile(self._spill, dtype=np.uint32, count=n),
                )
        yield last

    def finish(self) -> TermCounts:
        """The counts of every chunk added, term-major (the builder is spent: the spill
        file is closed)."""
        last = self._buffered()
        self._count_df(last[1])
        num_terms = len(self.vocab)
        indptr = np.zeros(num_terms + 1, dtype=np.int64)
        np.cumsum(self._df, out=indptr[1:])
        rows = np.empty(int(indptr[-1]), dtype=np.int32)
        counts = np.empty(int(indptr[-1]), dtype=counts_dtype(self._max_count))
        free = indptr[:-1].copy()  # the next free place in each term's column
        try:
            for block_rows, block_cols, block_counts in self._blocks(last):
                _place(block_rows, block_cols, block_counts, free, rows, counts)
        finally:
            if self._spill is not None:
                self._spill.close()
                self._spill = None
        return TermCounts(
            list(self.vocab),
            indptr,
            rows,
            counts,
            np.frombuffer(self._lengths, dtype=np.int64).copy(),
        )


def _place(
    block_rows: np.ndarray,
    block_cols: np.ndarray,
    block_counts: np.ndarray,
    free: np.ndarray,
    rows: np.ndarray,
    counts: np.ndarray,
) -> None:
    """Put one block's entries (in chunk order) at the next free places of their terms' columns, and
    advance those."""
    if not len(block_cols):
        return
    order = np.argsort(block_cols, kind="stable")  # chunk order kept within a term
    sorted_cols = block_cols[order]
    rank = np.arange(len(sorted_cols)) - np.searchsorted(
        sorted_cols, sorted_cols, side="left"
    )  # place within the term's run
    dest = free[sorted_cols] + rank
    rows[dest] = block_rows[order]
    counts[dest] = block_counts[order]
    free += np.bincount(block_cols, minlength=len(free))


def count_terms(
    token_lists: Iterable[Sequence[str]],
    *,
    spill_dir: Path | None = None,
    block_entries: int | None = None,
) -> TermCounts:
    """:class:`TermCounts` of the chunks whose tokens ``token_lists`` yields, one list in
    memory at a time."""
    builder = TermCountsBuilder(spill_dir=spill_dir, block_entries=block_entries)
    for tokens in token_lists:
        builder.add(tokens)
    return builder.finish()
