"""Corpora, token counting, chunking, retrievers and the on-disk index cache.

Nothing in this package calls a chat model. The answer contract every package shares (``Corpus``,
``Question``, ``Answer``, ``Usage``, ``Step``, ``Registry``...) lives in
:mod:`longctx.retrieval.contract` (gathered from ``registry``, ``document``, ``corpus``,
``question`` and ``answer``), the bottom of the import graph. The names below load their module on
first use, so importing the contract does not load the retrievers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from longctx.retrieval.lazy import lazy_attributes

if TYPE_CHECKING:  # the lazy names below, for type checkers (nothing is imported at run time)
    from longctx.retrieval.base import Hit, Retriever
    from longctx.retrieval.chunking import Chunk, ChunkingConfig, chunk_corpus
    from longctx.retrieval.contract.corpus import Corpus
    from longctx.retrieval.contract.document import CorpusError, Document
    from longctx.retrieval.contract.registry import Registry
    from longctx.retrieval.embedders import EMBEDDERS
    from longctx.retrieval.index import Index, build_index
    from longctx.retrieval.paths import default_cache_dir
    from longctx.retrieval.retrievers import RETRIEVERS, make_retriever
    from longctx.retrieval.tokens import count_tokens, middle_truncate

_EXPORTS = {
    "Hit": "longctx.retrieval.base",
    "Retriever": "longctx.retrieval.base",
    "Chunk": "longctx.retrieval.chunking",
    "ChunkingConfig": "longctx.retrieval.chunking",
    "chunk_corpus": "longctx.retrieval.chunking",
    "Corpus": "longctx.retrieval.contract.corpus",
    "CorpusError": "longctx.retrieval.contract.document",
    "Document": "longctx.retrieval.contract.document",
    "Registry": "longctx.retrieval.contract.registry",
    "EMBEDDERS": "longctx.retrieval.embedders",
    "Index": "longctx.retrieval.index",
    "build_index": "longctx.retrieval.index",
    "default_cache_dir": "longctx.retrieval.paths",
    "RETRIEVERS": "longctx.retrieval.retrievers",
    "make_retriever": "longctx.retrieval.retrievers",
    "count_tokens": "longctx.retrieval.tokens",
    "middle_truncate": "longctx.retrieval.tokens",
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


__getattr__, __dir__ = lazy_attributes("longctx.retrieval", _EXPORTS, globals())
