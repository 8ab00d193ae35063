"""A corpus's documents, and what the modules below :class:`~retrieval.contract.corpus.Corpus` read
of a corpus.

Part of the answer contract (:mod:`longctx.retrieval.contract`): standard library only. ``Document``
and ``CorpusError`` live here, under the corpus, because the modules that make documents
(:mod:`longctx.retrieval.readers`) and the ones that read a corpus (chunking, the index) sit below
``Corpus``, which calls them (``Corpus.from_path`` reads files, ``Corpus.as_retriever``
builds an index): they take an :class:`IndexableCorpus`, which ``Corpus`` is, so no module
they import imports the corpus back.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from longctx.retrieval.contract.errors import DataError


class CorpusError(DataError):
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


class IndexableCorpus(Protocol):
    """What chunking and the index cache read of a corpus
    (:class:`~retrieval.contract.corpus.Corpus` is one).

    The documents in order, and the digests that key an index and find the cached index an
    edited or grown corpus starts from (:mod:`longctx.retrieval.lineage`).
    """

    @property
    def documents(self) -> Sequence[Document]:
        """The documents, in order."""
        ...

    @property
    def fingerprint(self) -> str:
        """A digest of every document's id, title and text, in order."""
        ...

    @property
    def document_digests(self) -> tuple[str, ...]:
        """A digest of each document (id, title and text)."""
        ...

    def prefix_fingerprint(self, num_documents: int) -> str:
        """The :attr:`fingerprint` of the first ``num_documents`` documents."""
        ...

    def __len__(self) -> int:
        """The number of documents."""
        ...

    def __getitem__(self, i: int) -> Document:
        """The ``i``-th document."""
        ...


#: Characters encoded at a time when a text is hashed (a whole copy of a 200
#: MB text was 1x its size).
HASH_SLICE_CHARS = 1 << 20


def hash_text(h: Any, text: str, *, length_prefix: bool = False) -> None:
    """Feed ``text``'s UTF-8 bytes (lone surrogates passed through) to the hash ``h``, a slice at a
    time, so no whole encoded copy is made; ``length_prefix``: first its byte length as 8 bytes
    (little-endian). The digest equals hashing ``text.encode(...)`` at once (each code point
    encodes on its own)."""
    slices = range(0, len(text), HASH_SLICE_CHARS)
    if length_prefix:
        n = 0
        for i in slices:
            n += len(text[i : i + HASH_SLICE_CHARS].encode("utf-8", errors="surrogatepass"))
        h.update(n.to_bytes(8, "little"))
    for i in slices:
        h.update(text[i : i + HASH_SLICE_CHARS].encode("utf-8", errors="surrogatepass"))
