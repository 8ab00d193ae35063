"""The corpus every strategy answers over: ``Corpus``, an ordered list of documents.

Part of the answer contract (:mod:`longctx.retrieval.contract`): standard library only at import;
the heavy helpers (file readers, the tokenizer, the index) load where they are used. They
sit below the corpus: they take :class:`~retrieval.contract.document.Document` and
:class:`~retrieval.contract.document.IndexableCorpus` (:mod:`longctx.retrieval.contract.document`),
never this module.
"""

from __future__ import annotations

import hashlib
import itertools
import logging
from collections.abc import Iterable, Iterator, Sequence
from functools import cached_property
from pathlib import Path
from typing import Any

from longctx.retrieval.contract.document import CorpusError, Document, hash_text
from longctx.retrieval.contract.errors import ConfigError
from longctx.retrieval.duplicates import checked_duplicates, without_duplicates

log = logging.getLogger(__name__)


class Corpus:
    """An ordered list of documents, the unit every strategy answers over.

    Build one with :meth:`from_texts`, :meth:`from_path` or :meth:`from_documents`.
    The :attr:`fingerprint` depends only on ids, titles and texts in order, so it keys
    the on-disk index cache and checkpoints across processes.
    """

    def __init__(self, documents: Sequence[Document]):
        docs = tuple(documents)
        if not docs:
            raise CorpusError("The corpus is empty: give at least one document with text.")
        empty = [d.doc_id for d in docs if not d.text.strip()]
        if len(empty) == len(docs):
            raise CorpusError(f"The corpus is empty: all {len(docs)} documents have no text.")
        ids = [d.doc_id for d in docs]
        if len(set(ids)) != len(ids):
            dup = sorted({i for i in ids if ids.count(i) > 1})[:5]
            raise CorpusError(f"Document ids must be unique; repeated: {dup}")
        self.documents: tuple[Document, ...] = docs

    @classmethod
    def from_texts(
        cls, texts: Iterable[str], titles: Iterable[str] | None = None, *, duplicates: str = "drop"
    ) -> Corpus:
        """Corpus from plain strings; titles default to ``"Document {i}"``.

        ``duplicates``: ``"drop"`` (default) leaves out a text equal to an earlier one, with a
        warning naming it; ``"keep"`` keeps every copy (:mod:`longctx.retrieval.duplicates`).
        """
        checked_duplicates(duplicates)
        texts = list(texts)
        titles = (
            list(titles) if titles is not None else [f"Document {i + 1}" for i in range(len(texts))]
        )
        if len(titles) != len(texts):
            raise CorpusError(f"Got {len(texts)} texts but {len(titles)} titles.")
        for i, text in enumerate(texts):
            if not isinstance(text, str):
                raise CorpusError(f"Text {i} is a {type(text).__name__}, expected str.")
        docs = [
            Document(doc_id=str(i), text=t, title=ti)
            for i, (t, ti) in enumerate(zip(texts, titles))
        ]
        return cls(without_duplicates(docs, duplicates, where="Corpus.from_texts"))

    @classmethod
    def from_documents(cls, documents: Iterable[Any]) -> Corpus:
        """Corpus from :class:`Document` objects, or LlamaIndex / LangChain documents.

        Foreign documents are converted at this boundary: the text comes from ``.text``
        (LlamaIndex) or ``.page_content`` (LangChain), the title from ``metadata["title"]``
        or ``metadata["file_name"]``.
        """
        return cls([_as_document(d, i) for i, d in enumerate(documents)])

    @classmethod
    def from_path(
        cls, path: str | Path, *, show_progress: bool = False, duplicates: str = "drop"
    ) -> Corpus:
        """Corpus from a file or a folder (read recursively, in sorted path order).

        Supported: ``.txt``, ``.md``, ``.json``, ``.jsonl``, and ``.pdf`` / ``.html``
        through LlamaIndex readers. Text files must be UTF-8; a file that is not raises
        :class:`CorpusError` naming it. ``duplicates``: ``"drop"`` (default) leaves out a
        document whose text equals an earlier one's (in path order), with a warning naming
        both; ``"keep"`` keeps every copy (:mod:`longctx.retrieval.duplicates`).
        """
        from longctx.retrieval.readers import read_path  # heavy: LlamaIndex's file readers

        checked_duplicates(duplicates)
        docs = read_path(Path(path), show_progress=show_progress)
        return cls(without_duplicates(docs, duplicates, where=str(path)))

    def as_retriever(
        self,
        retriever: str = "bm25",
        *,
        k: int = 7,
        chunk_size: int = 200,
        chunk_unit: str = "words",
        cache_dir: str | Path | None = None,
        show_progress: bool = False,
        **retriever_options: Any,
    ) -> Any:
        """This corpus as a LangChain ``BaseRetriever`` over its cached index: the top ``k``
        chunks per query.

        Defaults are LongBench v1's RAG setting (200-word chunks, top-7, BM25); ``retriever`` is any
        registered retriever (``dense``, ``contriever``, ``openai``) with its options. The index is
        built once and shared with every strategy that asks for the same chunking and retriever.
        """
        from longctx.retrieval.chunking import ChunkingConfig
        from longctx.retrieval.index import build_index  # heavy: the retrievers and their engines

        index = build_index(
            self,
            retriever,
            chunking=ChunkingConfig(unit=chunk_unit, size=chunk_size),  # type: ignore[arg-type]
            cache_dir=cache_dir,
            show_progress=show_progress,
            **retriever_options,
        )
        return index.as_retriever(k=k)

    def __len__(self) -> int:
        return len(self.documents)

    def __iter__(self) -> Iterator[Document]:
        return iter(self.documents)

    def __getitem__(self, i: int) -> Document:
        return self.documents[i]

    def __repr__(self) -> str:
        return f"Corpus({len(self)} documents, fingerprint={self.fingerprint[:12]})"

    @cached_property
    def num_tokens(self) -> int:
        """Total cl100k tokens over all document texts."""
        return sum(self.token_counts)

    @cached_property
    def token_counts(self) -> tuple[int, ...]:
        """cl100k tokens of each document's text, counted once per corpus object."""
        from longctx.retrieval.tokens import count_tokens_batch  # heavy: loads the BPE ranks

        return tuple(count_tokens_batch([d.text for d in self.documents]))

    @cached_property
    def num_words(self) -> int:
        """Total whitespace-separated words (LongBench-style lengths are in words)."""
        return sum(len(d.text.split()) for d in self.documents)

    @cached_property
    def fingerprint(self) -> str:
        """SHA-256 over ids, titles and texts in order; equal corpora share it across runs."""
        return self._hash_prefix(len(self))

    def prefix_fingerprint(self, num_documents: int) -> str:
        """The :attr:`fingerprint` of the corpus made of the first ``num_documents`` documents.

        What a grown corpus (:meth:`add`) looks its shorter self's cached index up by.
        """
        if not 1 <= num_documents <= len(self):
            raise ConfigError(f"A prefix holds 1 to {len(self)} documents, got {num_documents}")
        if num_documents == len(self):
            return self.fingerprint
        return self._hash_prefix(num_documents)

    def prefix_fingerprints(self) -> Iterator[str]:
        """The fingerprint of the first 1, 2, ..., ``len(self)`` documents, in one pass."""
        h = hashlib.sha256()
        for d in self.documents:
            _hash_document(h, d)
            yield h.copy().hexdigest()

    @cached_property
    def document_digests(self) -> tuple[str, ...]:
        """A digest of each document (id, title and text): what an index records of the
        documents it holds, so that the index of an edited corpus (:meth:`update`,
        :meth:`remove`) starts from it."""
        digests = []
        for d in self.documents:
            h = hashlib.sha256()
            _hash_document(h, d)
            digests.append(h.hexdigest()[:32])
        return tuple(digests)

    def _hash_prefix(self, num_documents: int) -> str:
        fingerprint = ""
        for fingerprint, _ in zip(self.prefix_fingerprints(), range(num_documents)):
            pass
        return fingerprint

    def extends(self, other: Corpus) -> bool:
        """Whether ``other``'s documents are this corpus's first documents, in order (``other``
        may equal it)."""
        return len(other) <= len(self) and self.prefix_fingerprint(len(other)) == other.fingerprint

    def add(self, documents: Iterable[Any]) -> Corpus:
        """A new corpus: these documents, then ``documents`` (a corpus is immutable, so its
        fingerprint stays valid).

        ``documents`` are taken as :meth:`from_documents` takes them (plain strings get the ids
        ``len(self)``, ``len(self) + 1``, ..., skipping ids in use). Indexes of the grown corpus
        reuse this corpus's cached index and add a segment holding only the new documents' chunks.
        """
        taken = {d.doc_id for d in self.documents}
        free = (
            i for i in itertools.count(len(self)) if str(i) not in taken
        )  # after a removal, len(self) may be taken
        added = [_as_document(d, next(free)) for d in documents]
        if not added:
            raise CorpusError("Nothing to add: give at least one document.")
        return Corpus(self.documents + tuple(added))

    def remove(self, *doc_ids: str) -> Corpus:
        """A new corpus without the documents ``doc_ids`` (the others keep their order).

        Its indexes start from this corpus's cached ones: the removed documents' chunks are
        tombstones, filtered out at search time and dropped at compaction
        (:mod:`longctx.retrieval.index`).
        """
        gone = set(doc_ids)
        unknown = sorted(gone - {d.doc_id for d in self.documents})
        if not gone or unknown:
            raise CorpusError(
                f"Nothing to remove: no document with id {unknown[:5]}"
                if unknown
                else "Nothing to remove: give a document id."
            )
        return Corpus([d for d in self.documents if d.doc_id not in gone])

    def update(self, *documents: Any) -> Corpus:
        """A new corpus with ``documents`` replacing the documents of the same ids: delete + add.

        As in Lucene's ``updateDocument``, an edited document leaves its place and is appended
        (the others keep their order), so the index of the result is this corpus's, with the
        old version's chunks as tombstones and one segment of the new version's. A document
        unchanged (same id, title and text) stays where it is; a new id raises (use :meth:`add`).
        """
        edits = [_as_document(d, len(self) + i) for i, d in enumerate(documents)]
        current = {d.doc_id: d for d in self.documents}
        unknown = [d.doc_id for d in edits if d.doc_id not in current]
        if not edits or unknown:
            raise CorpusError(
                f"No document to update with id {unknown[:5]}; use add()"
                if unknown
                else "Nothing to update: give a document."
            )
        changed = {
            d.doc_id: d
            for d in edits
            if (d.title, d.text) != (current[d.doc_id].title, current[d.doc_id].text)
        }
        if not changed:
            return self
        return Corpus(
            [d for d in self.documents if d.doc_id not in changed] + list(changed.values())
        )

    def rescan(
        self, path: str | Path, *, show_progress: bool = False, duplicates: str = "drop"
    ) -> Corpus:
        """The folder ``path`` read again against this corpus: new files appended, edited ones
        updated, deleted ones removed.

        Unchanged documents keep their order; edited files (other title or text) then new
        ones follow in the folder's sorted path order, as :meth:`update` and :meth:`add` place
        them, so the result's indexes start from this corpus's (tombstones for the removed and
        edited documents' old chunks, one segment of the rest). Returns this corpus when
        nothing changed. ``duplicates`` as :meth:`from_path` takes it.
        """
        from longctx.retrieval.readers import read_path  # heavy: LlamaIndex's file readers

        checked_duplicates(duplicates)
        fresh = without_duplicates(
            read_path(Path(path), show_progress=show_progress), duplicates, where=str(path)
        )
        by_id = {d.doc_id: d for d in fresh}
        kept = [
            d
            for d in self.documents
            if d.doc_id in by_id
            and (by_id[d.doc_id].title, by_id[d.doc_id].text) == (d.title, d.text)
        ]
        if len(kept) == len(self.documents) == len(fresh):
            return self
        same = {d.doc_id for d in kept}
        changed = [d for d in fresh if d.doc_id not in same]
        log.info(
            "%s: %d documents removed or edited, %d new or edited",
            path,
            len(self.documents) - len(kept),
            len(changed),
        )
        return Corpus(kept + changed)


def _hash_document(h: Any, d: Document) -> None:
    """Feed ``d``'s id, title and text to the hash ``h``, each prefixed by its length."""
    for part in (d.doc_id, d.title, d.text):
        hash_text(h, part, length_prefix=True)


def _as_document(obj: Any, index: int) -> Document:
    if isinstance(obj, Document):
        return obj
    if isinstance(obj, str):
        return Document(doc_id=str(index), text=obj, title=f"Document {index + 1}")
    meta = dict(getattr(obj, "metadata", None) or {})
    if isinstance(getattr(obj, "page_content", None), str):
        text = obj.page_content
    elif isinstance(getattr(obj, "text", None), str):
        text = obj.text
    else:
        raise CorpusError(
            f"Document {index} is a {type(obj).__name__}; expected retrieval.Document, a str, "
            "or an object with .text (LlamaIndex) or .page_content (LangChain)."
        )
    title = str(meta.get("title") or meta.get("file_name") or f"Document {index + 1}")
    doc_id = str(
        getattr(obj, "id_", None) or getattr(obj, "id", None) or meta.get("doc_id") or index
    )
    return Document(doc_id=doc_id, text=text, title=title, metadata=meta)
