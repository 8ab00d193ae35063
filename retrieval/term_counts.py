"""Raw term counts of one index segment, and BM25 scored over several segments with
corpus-wide statistics.

bm25s stores ``idf * tf-component`` per (chunk, term): both factors depend on the whole
corpus (the number of chunks, each term's document frequency, the average chunk length), so
its matrix cannot be extended by the chunks of new documents. A segment therefore also keeps
its raw counts (a term-major sparse matrix: term -> the chunks holding it and how often), and
:func:`bm25_scores` scores the union of segments at query time with the corpus-wide
statistics, in bm25s's own arithmetic (method ``lucene``: float32 idf, float64 term
component, float32 sums in query-token order), so the scores are bit-identical to a bm25s
index built over all chunks at once and the rankings equal a rebuild's, ties included.

Compaction folds the segments back into one: :meth:`TermCounts.concat` merges their counts
(the very arrays a build over all the chunks makes) and :func:`lucene_matrix` turns counts
into bm25s's score matrix in the same arithmetic, so no chunk is tokenized again.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import IO, Any

import numpy as np

from longctx.retrieval.checksums import Checksums

#: Files of one segment's counts, inside its folder.
TERMS_FILE = "bm25_terms.json"
ARRAYS = ("indptr", "rows", "counts", "lengths")


def _array_file(name: str) -> str:
    return f"bm25_{name}.npy"


#: How the counts are written (bm25s's dtype), whatever type holds them in memory.
SAVED_COUNTS_DTYPE = np.dtype("<f4")


def counts_dtype(max_count: int) -> np.dtype:
    """The smallest type holding every count up to ``max_count``: uint8, uint16, else float32
    (bm25s's; whole numbers exact to 2**24)."""
    for dtype in (np.uint8, np.uint16):
        if max_count <= np.iinfo(dtype).max:
            return np.dtype(dtype)
    return np.dtype(np.float32)


class TermCounts:
    """Term frequencies of the chunks of one segment, term-major (CSC by term).

    Attributes:
        terms: The segment's vocabulary, in column order.
        indptr: Column ``j`` (term ``terms[j]``) is ``rows[indptr[j]:indptr[j + 1]]``.
        rows: Chunk positions within the segment (ascending within a column).
        counts: How often the term occurs in that chunk: whole numbers, float32 on disk as bm25s
            counts them; counted by :mod:`longctx.retrieval.term_counting`, they are held in the
            smallest type that fits them (:func:`counts_dtype`: one byte for 200-word chunks).
        lengths: Tokens of each chunk of the segment.
    """

    def __init__(
        self,
        terms: list[str],
        indptr: np.ndarray,
        rows: np.ndarray,
        counts: np.ndarray,
        lengths: np.ndarray,
    ):
        if (
            len(indptr) != len(terms) + 1
            or len(rows) != len(counts)
            or int(indptr[-1]) != len(rows)
        ):
            raise ValueError(
                f"inconsistent term counts: {len(terms)} terms, {len(indptr)} pointers, "
                f"{len(rows)} rows, {len(counts)} counts"
            )
        self.terms = terms
        self.indptr = indptr
        self.rows = rows
        self.counts = counts
        self.lengths = lengths
        self._columns: dict[str, int] | None = None

    def __len__(self) -> int:
        """Chunks in the segment."""
        return len(self.lengths)

    @classmethod
    def concat(cls, segments: Sequence[TermCounts]) -> TermCounts:
        """One segment of the chunks of ``segments`` in order, equal array for array to
        :func:`longctx.retrieval.term_counting.count_terms` over them all.

        The vocabulary is the union in order of first appearance (segment by segment, which is the
        order over all chunks); a stable sort by term keeps each column's chunks ascending; the
        counts are held in the type :func:`longctx.retrieval.term_counting.count_terms` holds them
        in (:func:`counts_dtype`).
        """
        if not segments:
            raise ValueError("Nothing to concatenate: no segments")
        vocab: dict[str, int] = {}
        cols, rows, counts = [], [], []
        offset = 0
        for seg in segments:
            ids = np.fromiter(
                (vocab.setdefault(t, len(vocab)) for t in seg.terms),
                dtype=np.int64,
                count=len(seg.terms),
            )
            cols.append(np.repeat(ids, np.diff(np.asarray(seg.indptr))))
            rows.append(np.asarray(seg.rows, dtype=np.int64) + offset)
            counts.append(np.asarray(seg.counts, dtype=np.float32))
            offset += len(seg)
        col = np.concatenate(cols)
        order = np.argsort(
            col, kind="stable"
        )  # segments in order, each column's rows ascending: so stays every merged column
        indptr = np.zeros(len(vocab) + 1, dtype=np.int64)
        np.cumsum(np.bincount(col, minlength=len(vocab)), out=indptr[1:])
        merged_counts = np.concatenate(counts)
        largest = int(merged_counts.max()) if len(merged_counts) else 0
        return cls(
            list(vocab),
            indptr,
            np.concatenate(rows)[order].astype(np.int32),
            merged_counts[order].astype(
                counts_dtype(largest)
            ),  # the type a count of all the chunks holds them in
            np.concatenate([np.asarray(s.lengths, dtype=np.int64) for s in segments]),
        )

    def select(self, keep: np.ndarray) -> TermCounts:
        """The counts of the chunks whose rows ``keep`` (ascending) names, renumbered 0.., without
        terms none of them holds.

        What compaction makes of a segment with tombstones: the counts a build over the kept
        chunks makes, up to the order of the vocabulary (a term first seen in a dropped chunk
        keeps its place), which no score depends on.
        """
        keep = np.asarray(keep, dtype=np.int64)
        new_row = np.full(len(self), -1, dtype=np.int64)
        new_row[keep] = np.arange(len(keep))
        rows = new_row[np.asarray(self.rows, dtype=np.int64)]
        alive = rows >= 0
        column_of = np.repeat(np.arange(len(self.terms)), np.diff(np.asarray(self.indptr)))
        per_term = np.bincount(column_of[alive], minlength=len(self.terms))
        kept_terms = np.flatnonzero(per_term)
        indptr = np.zeros(len(kept_terms) + 1, dtype=np.int64)
        np.cumsum(per_term[kept_terms], out=indptr[1:])
        return TermCounts(
            [self.terms[j] for j in kept_terms.tolist()],
            indptr,
            rows[alive].astype(np.int32),
            np.asarray(self.counts, dtype=np.float32)[alive],
            np.asarray(self.lengths, dtype=np.int64)[keep],
        )

    def column(self, term: str) -> tuple[np.ndarray, np.ndarray] | None:
        """``(rows, counts)`` of the chunks holding ``term``, or None when none does."""
        if self._columns is None:
            self._columns = {t: j for j, t in enumerate(self.terms)}
        j = self._columns.get(term)
        if j is None:
            return None
        start, end = int(self.indptr[j]), int(self.indptr[j + 1])
        return self.rows[start:end], self.counts[start:end]

    def save(self, folder: Path, checksums: Checksums | None = None) -> None:
        """Write the counts into ``folder`` (JSON vocabulary, ``.npy`` arrays; hashed into
        ``checksums`` as written)."""
        folder.mkdir(parents=True, exist_ok=True)
        with _open(folder / TERMS_FILE, checksums, text=True) as f:
            json.dump(self.terms, f, ensure_ascii=False)
        for name in ARRAYS:
            with _open(folder / _array_file(name), checksums) as f:
                if name == "counts":
                    save_as(f, self.counts, SAVED_COUNTS_DTYPE)
                else:
                    np.save(f, getattr(self, name), allow_pickle=False)

    @classmethod
    def exists(cls, folder: Path) -> bool:
        """Whether ``folder`` holds saved counts (indexes built before segments existed do not)."""
        return (folder / TERMS_FILE).exists()

    @classmethod
    def load(cls, folder: Path) -> TermCounts:
        """Read counts written by :meth:`save` (arrays memory-mapped, pickles off)."""
        with open(folder / TERMS_FILE, encoding="utf-8") as f:
            terms = json.load(f)
        arrays = {
            name: np.load(folder / _array_file(name), mmap_mode="r", allow_pickle=False)
            for name in ARRAYS
        }
        return cls(terms, **arrays)


def _open(
    path: Path, checksums: Checksums | None, *, text: bool = False
) -> AbstractContextManager[Any]:
    if checksums is not None:
        return checksums.open(path, text=text)
    # the caller's with closes it
    return open(path, "w", encoding="utf-8") if text else open(path, "wb")  # noqa: SIM115


def save_as(f: IO[bytes], array: np.ndarray, dtype: np.dtype, *, block: int = 1 << 20) -> None:
    """Write the one-dimensional ``array`` as ``np.save(f, array.astype(dtype))`` does, converted a
    block at a time (no whole copy)."""
    np.lib.format.write_array_header_1_0(
        f,
        {
            "descr": np.lib.format.dtype_to_descr(dtype),
            "fortran_order": False,
            "shape": (len(array),),
        },
    )
    for start in range(0, len(array), block):
        f.write(np.asarray(array[start : start + block], dtype=dtype).tobytes())


def bm25_scores(
    segments: Sequence[TermCounts],
    query_tokens: Sequence[str],
    *,
    k1: float,
    b: float,
    live: np.ndarray | None = None,
) -> np.ndarray:
    """BM25 (Lucene idf) of every chunk of the concatenated ``segments`` for
    ``query_tokens``, float32.

    Bit-identical to bm25s ``method="lucene"`` over all the chunks: the idf
    ``log(1 + (N - df + 0.5) / (df + 0.5))`` rounded to float32, the term component
    ``tf / (k1 * (1 - b + b * dl / avgdl) + tf)`` in float64, their product rounded to
    float32 and summed in float32 over the query tokens in order (a repeated token counts
    again, as in bm25s).

    ``live``: the chunks (ascending positions) not deleted. The others (tombstones) count
    nowhere, neither in ``N``, ``df`` nor the average length, and the scores of the live
    chunks alone are returned, in order: bit-identical to bm25s over the live chunks only.
    """
    lengths = np.concatenate([s.lengths for s in segments])
    alive = None
    if live is not None:
        alive = np.zeros(len(lengths), dtype=bool)
        alive[live] = True
    n = len(lengths) if live is None else len(live)
    avgdl = (
        lengths if live is None else lengths[live]
    ).mean()  # bm25s: np.array(lengths).mean(), a float64 scalar
    offsets = np.cumsum([0] + [len(s) for s in segments[:-1]])
    scores = np.zeros(len(lengths), dtype=np.float32)
    for term in query_tokens:
        columns = []
        for off, seg in zip(offsets, segments):
            col = seg.column(term)
            if col is not None and alive is not None:
                keep = alive[int(off) + col[0]]
                col = (col[0][keep], col[1][keep])
            if col is not None and len(col[0]):
                columns.append((int(off), seg, col))
        df = sum(len(col[0]) for _, _, col in columns)
        if df == 0:
            continue
        idf = np.float32(math.log(1 + (n - df + 0.5) / (df + 0.5)))
        for offset, seg, (rows, tf) in columns:
            dl = seg.lengths[rows]
            tfc = tf / (k1 * ((1 - b) + b * dl / avgdl) + tf)
            scores[offset + rows] += (idf * tfc).astype(np.float32)
    return scores if live is None else scores[live]


#: Postings computed at once by :func:`lucene_matrix` (~60 bytes of temporaries each: ~4 MB).
MATRIX_BLOCK = 1 << 16


def lucene_matrix(
    counts: TermCounts, *, k1: float, b: float, out: IO[bytes] | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """bm25s's score matrix (method ``lucene``) of the chunks of ``counts``:
    ``(data, indices, indptr)``, term-major.

    Each entry is ``idf * tf-component`` in the arithmetic of :func:`bm25_scores` and of
    bm25s's own build (idf by ``math.log`` rounded to float32, term component in float64,
    the product rounded to float32), so a query sums the same float32 values in the same
    order as over a bm25s index built from the tokens: scores bit-identical. Vectorized
    over the postings, :data:`MATRIX_BLOCK` at a time (the float64 temporaries of all of them
    would be several times the matrix); ``indices`` and ``indptr`` are the counts' own
    arrays (no copy when they already have bm25s's dtypes), so only ``data`` is new memory;
    with ``out`` (an empty binary file, such as an unnamed temporary one), not even that: ``data``
    is written there as a ``.npy`` a block at a time and returned memory-mapped from it (pages
    not read are not resident: a huge build holds 4 bytes a posting less at its peak).
    """
    n = len(counts)
    lengths = np.asarray(counts.lengths)
    avgdl = lengths.mean()  # bm25s: np.array(lengths).mean(), a float64 scalar
    indptr = np.asarray(counts.indptr, dtype=np.int64)
    df = np.diff(indptr)
    idf = np.array([math.log(1 + (n - d + 0.5) / (d + 0.5)) for d in df.tolist()], dtype=np.float32)
    rows = np.asarray(counts.rows, dtype=np.int32)
    data = np.empty(len(rows) if out is None else 0, dtype=np.float32)
    if out is not None:
        descr = np.lib.format.dtype_to_descr(data.dtype)
        header = {"descr": descr, "fortran_order": False, "shape": (len(rows),)}
        np.lib.format.write_array_header_1_0(out, header)
    offset = out.tell() if out is not None else 0
    for start in range(0, len(rows), MATRIX_BLOCK):
        end = min(start + MATRIX_BLOCK, len(rows))
        terms = (
            np.searchsorted(indptr, np.arange(start, end), side="right") - 1
        )  # the column of each entry
        tf = np.asarray(counts.counts[start:end], dtype=np.float32)
        dl = lengths[rows[start:end]]
        tfc = tf / (k1 * ((1 - b) + b * dl / avgdl) + tf)
        if out is None:
            data[start:end] = idf[terms] * tfc
        else:  # the same rounding to float32 as the assignment's
            out.write(np.asarray(idf[terms] * tfc, dtype=np.float32).tobytes())
    if out is not None and len(rows):
        out.flush()
        data = np.memmap(out, dtype=data.dtype, mode="r", offset=offset, shape=(len(rows),))
    return data, rows, indptr
