"""The corpus: an ordered, immutable collection of titled documents with a stable fingerprint."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from retrieval.tokens import count_tokens_batch


class CorpusError(ValueError):
    """A corpus cannot be built from the given input (empty, missing or unreadable)."""


@dataclass(frozen=True)
class Document:
    """One document of a corpus.

    Attributes:
        doc_id: Stable identifier, unique within the corpus (a file path or an index).
        text: Full text.
        title: Human-readable title shown in prompts and evidence.
        metadata: Free-form fields carried through to evidence (source, date, ...).
    """

    doc_id: str
    text: str
    title: str = ""
    metadata: Mapping[str, Any] = field(default_factory=dict)


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

    # -- construction -------------------------------------------------------------
    @classmethod
    def from_texts(cls, texts: Iterable[str], titles: Iterable[str] | None = None) -> Corpus:
        """Corpus from plain strings; titles default to ``"Document {i}"``."""
        texts = list(texts)
        titles = list(titles) if titles is not None else [f"Document {i + 1}" for i in range(len(texts))]
        if len(titles) != len(texts):
            raise CorpusError(f"Got {len(texts)} texts but {len(titles)} titles.")
        for i, text in enumerate(texts):
            if not isinstance(text, str):
                raise CorpusError(f"Text {i} is a {type(text).__name__}, expected str.")
        return cls([Document(doc_id=str(i), text=t, title=ti) for i, (t, ti) in enumerate(zip(texts, titles))])

    @classmethod
    def from_documents(cls, documents: Iterable[Any]) -> Corpus:
        """Corpus from :class:`Document` objects, or LlamaIndex / LangChain documents.

        Foreign documents are converted at this boundary: the text comes from ``.text``
        (LlamaIndex) or ``.page_content`` (LangChain), the title from ``metadata["title"]``
        or ``metadata["file_name"]``.
        """
        return cls([_as_document(d, i) for i, d in enumerate(documents)])

    @classmethod
    def from_path(cls, path: str | Path, *, show_progress: bool = False) -> Corpus:
        """Corpus from a file or a folder (read recursively, in sorted path order).

        Supported: ``.txt``, ``.md``, ``.json``, ``.jsonl``, and ``.pdf`` / ``.html``
        through LlamaIndex readers. Text files must be UTF-8; a file that is not raises
        :class:`CorpusError` naming it.
        """
        from retrieval.readers import read_path

        return cls(read_path(Path(path), show_progress=show_progress))

    # -- properties ---------------------------------------------------------------
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
        return sum(count_tokens_batch([d.text for d in self.documents]))

    @cached_property
    def num_words(self) -> int:
        """Total whitespace-separated words (LongBench-style lengths are in words)."""
        return sum(len(d.text.split()) for d in self.documents)

    @cached_property
    def fingerprint(self) -> str:
        """SHA-256 over ids, titles and texts in order; equal corpora share it across runs."""
        h = hashlib.sha256()
        for d in self.documents:
            for part in (d.doc_id, d.title, d.text):
                data = part.encode("utf-8", errors="surrogatepass")
                h.update(len(data).to_bytes(8, "little"))
                h.update(data)
        return h.hexdigest()


def _as_document(obj: Any, index: int) -> Document:
    if isinstance(obj, Document):
        return obj
    if isinstance(obj, str):
        return Document(doc_id=str(index), text=obj, title=f"Document {index + 1}")
    metadata = dict(getattr(obj, "metadata", None) or {})
    if isinstance(getattr(obj, "page_content", None), str):
        text = obj.page_content
    elif isinstance(getattr(obj, "text", None), str):
        text = obj.text
    else:
        raise CorpusError(
            f"Document {index} is a {type(obj).__name__}; expected retrieval.Document, a str, "
            "or an object with .text (LlamaIndex) or .page_content (LangChain)."
        )
    title = str(metadata.get("title") or metadata.get("file_name") or f"Document {index + 1}")
    doc_id = str(getattr(obj, "id_", None) or getattr(obj, "id", None) or metadata.get("doc_id") or index)
    return Document(doc_id=doc_id, text=text, title=title, metadata=metadata)
