"""BM25 over word tokens, with ``bm25s`` as the engine and ``rank_bm25`` as the reference.

The official LongBench v1 script hands raw strings to ``rank_bm25``, which then scores
*characters*. We tokenize into words (jieba for Chinese), drop English stopwords, and
score with BM25 using Lucene's idf ``log(1 + (N - df + 0.5) / (df + 0.5))`` (k1=1.5,
b=0.75). Lucene's idf is always positive; the Robertson idf of ``BM25Okapi`` is zero
or negative for any term in half the chunks or more, which on small corpora drops
the very terms a question hinges on. ``bm25s`` (method ``lucene``, the fast default)
and ``rank_bm25`` (the reference: its ``BM25Okapi`` loop with the same idf) compute the
same ranking; bm25s omits the constant ``k1 + 1`` factor, so its scores are
proportional (tests/test_bm25.py checks both).
"""

from __future__ import annotations

import functools
import importlib.abc
import json
import logging
import math
import re
import shutil
import sys
import tempfile
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Literal

import numpy as np
from rank_bm25 import BM25Okapi

from longctx.retrieval.checksums import Checksums
from longctx.retrieval.chunking import _CJK, Chunk
from longctx.retrieval.term_counting import count_terms
from longctx.retrieval.term_counts import TermCounts, bm25_scores, lucene_matrix
from longctx.retrieval.tombstones import Tombstones

_TOKEN = re.compile(rf"[{_CJK}]+|[^\W_{_CJK}]+")
_HAS_CJK = re.compile(rf"[{_CJK}]")
#: bm25s's file of the score matrix's values (``BM25.save``'s ``data_name``).
SCORES_FILE = "data.csc.index.npy"


def _bm25s() -> Any:
    """The ``bm25s`` module, loaded on first use (it brings scipy). Its import sets its own logger
    to DEBUG, which would print a line for every index build, so the level is set after it loads.

    bm25s imports numba when it is installed (the ``raptor`` extra brings it), for a backend we
    never select (scores come from its numpy path and from :func:`bm25_scores`): ~120 MiB of
    LLVM resident in every process that reads a BM25 index. It is loaded without it
    (:class:`_NoNumba`), unless numba is already loaded; later imports of numba are unaffected.
    """
    if "bm25s" not in sys.modules and "numba" not in sys.modules:
        guard = _NoNumba()
        sys.meta_path.insert(0, guard)
        try:
            import bm25s
        finally:
            sys.meta_path.remove(guard)
    import bm25s

    logging.getLogger("bm25s").setLevel(logging.WARNING)
    return bm25s


class _NoNumba(importlib.abc.MetaPathFinder):
    """Makes ``import numba`` fail in the thread that made it, while it is on ``sys.meta_path``."""

    def __init__(self) -> None:
        self.thread = threading.get_ident()

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> None:
        """Refuse numba and its submodules in this thread; leave every other import to the
        next finder."""
        if threading.get_ident() == self.thread and name.split(".")[0] == "numba":
            raise ModuleNotFoundError(f"numba is left out while bm25s loads ({name})", name=name)
        return None


@functools.cache
def stopwords() -> frozenset[str]:
    """bm25s's English stopwords, loaded on the first tokenization (bm25s brings scipy: ~80 ms)."""
    return frozenset(_bm25s().stopwords.STOPWORDS_EN)


def tokenize(text: str) -> list[str]:
    """Lowercased word tokens without English stopwords; CJK runs are segmented by jieba."""
    text = text.lower()
    stop = stopwords()
    if not _HAS_CJK.search(text):
        return [w for w in _TOKEN.findall(text) if w not in stop]
    import jieba

    jieba.setLogLevel(logging.WARNING)
    tokens: list[str] = []
    for run in _TOKEN.findall(text):
        if _HAS_CJK.match(run):
            tokens.extend(t for t in jieba.lcut(run) if t.strip())
        elif run not in stop:
            tokens.append(run)
    return tokens


def top_k(scores: np.ndarray, k: int) -> list[tuple[int, float]]:
    """The ``min(k, len(scores))`` best ``(index, score)`` pairs, zero scores included; ties by
    lower index.

    As ``rank_bm25``'s ``get_top_n`` (LongBench v1) and FlashRAG's retrievers, every chunk is
    ranked: a chunk sharing no word with the query still fills one of the ``k`` places.
    Ties (zero scores above all) come in chunk order; ``get_top_n`` reverses numpy's
    ``argsort`` and so puts them last chunk first. Dropping zero scores is a strategy option
    (``RetrievalSettings.drop_zero_scores``).
    """
    n = int(scores.size)
    if k <= 0 or n == 0:
        return []
    candidates = np.arange(n)
    if n > k:
        kth_best = np.partition(scores, n - k)[n - k]
        candidates = np.flatnonzero(scores >= kth_best)  # keeps every tie of the k-th score
    order = candidates[np.lexsort((candidates, -scores[candidates]))][
        :k
    ]  # score descending, then chunk order
    return [(int(i), float(scores[i])) for i in order]


class LuceneOkapi(BM25Okapi):  # type: ignore[misc]  # rank_bm25 ships no types: its classes are Any
    """rank_bm25's Okapi scoring loop with Lucene's always-positive idf (the reference engine)."""

    def _calc_idf(self, nd: dict[str, int]) -> None:
        for word, freq in nd.items():
            self.idf[word] = math.log(1 + (self.corpus_size - freq + 0.5) / (freq + 0.5))


@dataclass(kw_only=True)
class BM25Retriever:
    """Okapi BM25 over word tokens.

    Attributes:
        engine: ``"bm25s"`` (sparse matrix, fast) or ``"rank_bm25"`` (the reference).
        k1: Term-frequency saturation (textbook default).
        b: Length normalization (textbook default).
    """

    engine: Literal["bm25s", "rank_bm25"] = "bm25s"
    k1: float = field(
        default=1.5, metadata={"source": "Robertson & Zaragoza; rank_bm25 and bm25s default"}
    )
    b: float = field(
        default=0.75, metadata={"source": "Robertson & Zaragoza; rank_bm25 and bm25s default"}
    )
    name: str = "bm25"

    def __post_init__(self) -> None:
        if self.engine not in ("bm25s", "rank_bm25"):
            raise ValueError(f"BM25 engine must be 'bm25s' or 'rank_bm25', got {self.engine!r}")
        self._model: Any = None
        self._counts: list[TermCounts] | None = (
            None  # raw counts per segment (engine bm25s): what growing needs
        )
        self._counts_folder: Path | None = (
            None  # a loaded one-segment index reads its counts on first need
        )
        self._tokens: list[list[str]] = []  # every chunk's tokens (engine rank_bm25 only)
        #: The unnamed file a build's score values are mapped from, and that mapping.
        self._scores: tuple[IO[bytes], np.ndarray] | None = None
        self._dead = Tombstones(
            0
        )  # deleted chunks (stored ids): scored from the counts without them

    def cache_params(self) -> dict[str, Any]:
        """Engine and parameters; the tokenizer is versioned by the cache's format version."""
        return {"retriever": self.name, "engine": self.engine, "k1": self.k1, "b": self.b}

    def build(
        self, chunks: Sequence[Chunk], *, work_dir: Path | None = None, show_progress: bool = False
    ) -> None:
        """Tokenize every chunk and build the engine's index.

        Engine bm25s: each chunk's tokens are counted and dropped
        (:mod:`longctx.retrieval.term_counting`, blocks of counts spilled into ``work_dir``) and the
        model is made from the counts (:func:`bm25s_model`, scores bit-identical to
        ``bm25s.BM25.index`` over the token lists), so no chunk's tokens outlive it. Engine
        rank_bm25 keeps every token list: it is the reference, for small corpora.
        """
        if self.engine == "bm25s":
            counts = count_terms(self._token_lists(chunks, show_progress), spill_dir=work_dir)
            # the score values go to an unnamed file in work_dir, memory-mapped
            # (copied into place by save)
            spill = None if work_dir is None else tempfile.TemporaryFile(dir=work_dir)
            self._model = bm25s_model(counts, k1=self.k1, b=self.b, out=spill)
            self._scores = None if spill is None else (spill, self._model.scores["data"])
            self._counts, self._counts_folder, self._dead = [counts], None, Tombstones(0)
            return
        # interned: a word repeated across chunks is one string object (a 20 MB
        # corpus: 300 against 520 MB peak)
        self._tokens = [
            list(map(sys.intern, tokens)) for tokens in self._token_lists(chunks, show_progress)
        ]
        self._fit(self._tokens)
        self._counts, self._dead = None, Tombstones(0)

    @staticmethod
    def _token_lists(chunks: Sequence[Chunk], show_progress: bool) -> Iterator[list[str]]:
        """Each chunk's tokens, one chunk at a time (with a progress bar)."""
        from tqdm.auto import tqdm

        for chunk in tqdm(
            chunks, desc="Indexing: BM25 tokenizing", unit="chunk", disable=not show_progress
        ):
            yield tokenize(chunk.text)

    def _fit(self, tokens: list[list[str]]) -> None:
        """The reference engine over ``tokens`` (rank_bm25 divides by zero on an all-empty corpus; a
        placeholder token avoids it)."""
        self._model = LuceneOkapi([t or [""] for t in tokens], k1=self.k1, b=self.b)

    def scores(self, query: str) -> np.ndarray:
        """BM25 score of every chunk for ``query``."""
        if self._model is None and not self._counts:
            raise RuntimeError("BM25 index is not built; call build() or load() first")
        q = tokenize(query)
        if (
            self._model is None
        ):  # several segments, or tombstones: scored with the statistics of the live chunks
            live = (
                self._dead.live if self._dead else None
            )  # kept at the stored count by delete() and extend()
            return bm25_scores(self._counts or [], q, k1=self.k1, b=self.b, live=live)
        if self.engine == "bm25s":
            q = [t for t in q if t in self._model.vocab_dict]
            if not q:
                return np.zeros(self._model.scores["num_docs"], dtype=np.float32)
        return np.asarray(self._model.get_scores(q), dtype=np.float32)

    def search(self, query: str, k: int) -> list[tuple[int, float]]:
        """The ``min(k, chunks)`` best chunks (zero scores included, ties in chunk order)."""
        return top_k(self.scores(query), k)

    def save(self, folder: Path, checksums: Checksums | None = None) -> None:
        """bm25s writes its sparse matrix as .npy and vocabulary as JSON; rank_bm25 keeps
        tokens as JSON.

        rank_bm25's tokens are hashed into ``checksums`` as they are written; bm25s opens
        its own files, so the index hashes them once they are written (page cache, ~ms).
        """
        if self.engine == "bm25s":
            data = self._model.scores["data"]
            spilled = self._scores is not None and self._scores[1] is data
            if spilled:  # bm25s writes the rest; the values, on disk already, are copied below
                self._model.scores["data"] = np.empty(0, dtype=data.dtype)
            try:
                self._model.save(str(folder / "bm25s"), allow_pickle=False, show_progress=False)
            finally:
                self._model.scores["data"] = data
            if spilled and self._scores is not None:  # through a small buffer, not this memory
                self._scores[0].seek(0)
                with open(folder / "bm25s" / SCORES_FILE, "wb") as f:
                    shutil.copyfileobj(self._scores[0], f)
            if self._counts:
                self._counts[0].save(folder, checksums)
        else:
            path = folder / "bm25_tokens.json"
            with (
                checksums.open(path, text=True)
                if checksums
                else open(path, "w", encoding="utf-8") as f
            ):
                json.dump(self._tokens, f, ensure_ascii=False)

    def load(self, folder: Path) -> None:
        """bm25s memory-maps its arrays (fast at 10M tokens); rank_bm25 is rebuilt from tokens."""
        if self.engine == "bm25s":
            self._model = _bm25s().BM25.load(
                str(folder / "bm25s"), mmap=True, allow_pickle=False, show_progress=False
            )
            self._counts, self._counts_folder = None, folder
            self._dead = Tombstones(0)
        else:
            with open(folder / "bm25_tokens.json", encoding="utf-8") as f:
                self._tokens = json.load(f)
            self._fit(self._tokens)

    # -- growing by segments (engine bm25s) -------------------------------------------------
    @property
    def stored_chunks(self) -> int | None:
        """Chunks stored, deleted ones included (None before build/load)."""
        if self._counts:
            return sum(len(c) for c in self._counts)
        if self._model is not None and self.engine == "bm25s":
            return int(self._model.scores["num_docs"])
        return len(self._tokens) if self._model is not None else None

    @property
    def num_chunks(self) -> int | None:
        """Live chunks indexed (None before build/load)."""
        stored = self.stored_chunks
        return None if stored is None else stored - len(self._dead.dead)

    def delete(self, chunk_ids: Sequence[int] | np.ndarray) -> None:
        """Mark the stored chunks ``chunk_ids`` deleted: no longer scored, and out of ``N``, ``df``
        and the average length.

        Scores then come from the raw counts (:func:`longctx.retrieval.term_counts.bm25_scores` with
        the live chunks), bit-identical to a bm25s index built over the live chunks alone;
        search returns live chunks numbered by their place among them.
        """
        if not self.extensible():
            raise RuntimeError(
                "This BM25 index cannot delete chunks (rank_bm25 engine, or built before "
                "segments existed)"
            )
        self._dead = self._dead.grown(self.stored_chunks or 0).plus(
            np.asarray(chunk_ids, dtype=np.int64)
        )
        self._model = None

    def extensible(self) -> bool:
        """Whether :meth:`extend` can add chunks: engine bm25s with the raw counts of every
        segment saved."""
        if self.engine != "bm25s":
            return False
        if (
            self._counts is None
            and self._counts_folder is not None
            and TermCounts.exists(self._counts_folder)
        ):
            self._counts = [TermCounts.load(self._counts_folder)]
        return bool(self._counts)

    def extend(
        self, chunks: Sequence[Chunk], *, work_dir: Path | None = None, show_progress: bool = False
    ) -> None:
        """Add a segment of new chunks (their ids follow the indexed ones); only they are tokenized.

        Scores are then computed from the raw counts of all segments with the corpus-wide
        statistics (:func:`longctx.retrieval.term_counts.bm25_scores`), identical to a rebuild's.
        """
        if not self.extensible():
            raise RuntimeError(
                "This BM25 index cannot grow (rank_bm25 engine, or built before segments existed)"
            )
        counts = count_terms(self._token_lists(chunks, show_progress), spill_dir=work_dir)
        self._counts = [*(self._counts or []), counts]
        self._model = None
        self._dead = self._dead.grown(self.stored_chunks or 0)

    def save_segment(self, folder: Path, start: int, checksums: Checksums | None = None) -> None:
        """Write the last segment (the chunks from ``start`` on) into ``folder``."""
        if not self._counts or (self.stored_chunks or 0) - len(self._counts[-1]) != start:
            raise ValueError(f"The last BM25 segment does not start at chunk {start}")
        self._counts[-1].save(folder, checksums)

    def compact(self) -> None:
        """Fold the segments into one, scored by a bm25s model again (a build's speed), made from
        the raw counts.

        Nothing is tokenized again: the merged counts are those a build over all the live chunks
        makes (deleted chunks are dropped here), and the model's matrix is computed from them in
        bm25s's arithmetic (:func:`longctx.retrieval.term_counts.lucene_matrix`), so scores equal a
        fresh build's bit for bit. :meth:`save` then writes the index of one segment.
        """
        if not self.extensible():
            raise RuntimeError(
                "This BM25 index has no raw counts to compact (rank_bm25 engine, or built before "
                "segments existed)"
            )
        merged = TermCounts.concat(self._counts or [])
        if self._dead:  # tombstones folded: the counts of the live chunks only
            merged = merged.select(self._dead.grown(len(merged)).live)
        self._model = bm25s_model(merged, k1=self.k1, b=self.b)
        self._counts, self._counts_folder, self._dead = [merged], None, Tombstones(0)

    def load_segments(self, folders: Sequence[Path]) -> None:
        """Read an index saved as segments: the first folder's counts, then each later segment's."""
        if len(folders) == 1:
            self.load(folders[0])
            return
        if self.engine != "bm25s":
            raise ValueError("Only the bm25s engine reads an index of several segments")
        self._counts = [TermCounts.load(f) for f in folders]
        self._model, self._counts_folder, self._dead = None, None, Tombstones(0)


def bm25s_model(counts: TermCounts, *, k1: float, b: float, out: IO[bytes] | None = None) -> Any:
    """A bm25s ``BM25`` (method ``lucene``) over the chunks of ``counts``, as ``BM25.index`` would
    set it up from their tokens.

    Its vocabulary is the counts' term order, with bm25s's empty token ``""`` appended as
    ``index`` does (bm25s's own order is a set's, so only the column order differs). With ``out``,
    the score matrix's values are written there and memory-mapped (:func:`lucene_matrix`).
    """
    data, indices, indptr = lucene_matrix(counts, k1=k1, b=b, out=out)
    model = _bm25s().BM25(method="lucene", k1=k1, b=b)
    model.scores = {"data": data, "indices": indices, "indptr": indptr, "num_docs": len(counts)}
    vocab = {term: j for j, term in enumerate(counts.terms)}
    vocab.setdefault("", len(vocab))
    model.vocab_dict = vocab
    # the ids are 0..n-1: a range answers bm25s's membership test as the set of them would, in O(1)
    # memory (a set of a 3M-term vocabulary's ids was ~150 MB at the build's peak)
    model.unique_token_ids_set = range(len(vocab))
    model.nonoccurrence_array = None
    return model
