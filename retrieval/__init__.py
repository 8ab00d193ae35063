"""Corpora, token counting, chunking, retrievers and the on-disk index cache.

Nothing in this package calls a chat model.
"""

from retrieval.base import Hit, Retriever
from retrieval.chunking import Chunk, ChunkingConfig, chunk_corpus
from retrieval.contract import Corpus, CorpusError, Document, Registry
from retrieval.index import Index, build_index, default_cache_dir
from retrieval.embedders import EMBEDDERS
from retrieval.retrievers import RETRIEVERS, make_retriever
from retrieval.tokens import count_tokens, middle_truncate

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
