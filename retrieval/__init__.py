"""Corpora, token counting, chunking, retrievers and the on-disk index cache.

Nothing in this package calls a chat model. The answer contract every package shares
(``Corpus``, ``Question``, ``Answer``, ``Usage``, ``Step``, ``Registry``...) lives in
:mod:`retrieval.contract` (gathered from ``registry``, ``document``, ``corpus``, ``question`` and ``answer``),
the bottom of the import graph. The names below load their module on first use, so importing
the contract does not load the retrievers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from retrieval.lazy import lazy_attributes

if TYPE_CHECKING:  # the lazy names below, for type checkers (nothing is imported at run time)
    from retrieval.base import Hit, Retriever
    from retrieval.chunking import Chunk, ChunkingConfig, chunk_corpus
    from retrieval.corpus import Corpus
    from retrieval.document import CorpusError, Document
    from retrieval.embedders import EMBEDDERS
    from retrieval.index import Index, build_index
    from retrieval.paths import default_cache_dir
    from retrieval.registry import Registry
    from retrieval.retrievers import RETRIEVERS, make_retriever
    from retrieval.tokens import count_tokens, middle_truncate

_EXPORTS = {
    "Hit": "retrieval.base",
    "Retriever": "retrieval.base",
    "Chunk": "retrieval.chunking",
    "ChunkingConfig": "retrieval.chunking",
    "chunk_corpus": "retrieval.chunking",
    "Corpus": "retrieval.corpus",
    "CorpusError": "retrieval.document",
    "Document": "retrieval.document",
    "Registry": "retrieval.registry",
    "EMBEDDERS": "retrieval.embedders",
    "Index": "retrieval.index",
    "build_index": "retrieval.index",
    "default_cache_dir": "retrieval.paths",
    "RETRIEVERS": "retrieval.retrievers",
    "make_retriever": "retrieval.retrievers",
    "count_tokens": "retrieval.tokens",
    "middle_truncate": "retrieval.tokens",
}

__all__ = [
    "Chunk",
    "ChunkingConfig",
    "Corpus",
    "CorpusError",
    "Document",
    "EMBEDDERS",
    "Hit",
    "Index",
    "RETRIEVERS",
    "Registry",
    "Retriever",
    "build_index",
    "chunk_corpus",
    "count_tokens",
    "default_cache_dir",
    "make_retriever",
    "middle_truncate",
]


__getattr__, __dir__ = lazy_attributes("retrieval", _EXPORTS, globals())
