"""Corpora, token counting, chunking, retrievers and the on-disk index cache.

Nothing in this package calls a chat model. The answer contract every package shares
(``Corpus``, ``Question``, ``Answer``, ``Usage``, ``Step``, ``Registry``...) lives in
:mod:`retrieval.contract`, the bottom of the import graph. The names below load their
module on first use, so importing the contract does not load the retrievers.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "Hit": "retrieval.base",
    "Retriever": "retrieval.base",
    "Chunk": "retrieval.chunking",
    "ChunkingConfig": "retrieval.chunking",
    "chunk_corpus": "retrieval.chunking",
    "Corpus": "retrieval.contract",
    "CorpusError": "retrieval.contract",
    "Document": "retrieval.contract",
    "Registry": "retrieval.contract",
    "EMBEDDERS": "retrieval.embedders",
    "Index": "retrieval.index",
    "build_index": "retrieval.index",
    "default_cache_dir": "retrieval.paths",
    "RETRIEVERS": "retrieval.retrievers",
    "make_retriever": "retrieval.retrievers",
    "count_tokens": "retrieval.tokens",
    "middle_truncate": "retrieval.tokens",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    """Load an exported name from its module on first use (PEP 562)."""
    if name not in _EXPORTS:
        raise AttributeError(f"module 'retrieval' has no attribute {name!r}")
    value = getattr(importlib.import_module(_EXPORTS[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])
