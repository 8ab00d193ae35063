"""The indexes kept in this process: the last few looked up, one object per key,
shared by threads."""

from __future__ import annotations

import threading
from collections import OrderedDict

from longctx.retrieval.index.types import Index

_MEMORY_CACHE: OrderedDict[str, Index] = OrderedDict()
_MEMORY_CACHE_SIZE = 4
_MEMORY_LOCK = threading.Lock()


def clear_memory_cache() -> None:
    """Forget the indexes kept in this process (the next lookup loads from disk); for tests and
    long-lived services."""
    _MEMORY_CACHE.clear()


def remembered(key: str) -> Index | None:
    """The index of ``key`` kept in this process, if any (then the most recently used)."""
    with _MEMORY_LOCK:
        if key in _MEMORY_CACHE:
            _MEMORY_CACHE.move_to_end(key)
            return _MEMORY_CACHE[key]
    return None


def remember(key: str, index: Index) -> Index:
    """Keep ``index`` for ``key``, forgetting the least recently used beyond the cache's size; the
    object kept."""
    with _MEMORY_LOCK:
        index = _MEMORY_CACHE.setdefault(
            key, index
        )  # a concurrent loader's object wins: one per key
        _MEMORY_CACHE.move_to_end(key)
        while len(_MEMORY_CACHE) > _MEMORY_CACHE_SIZE:
            _MEMORY_CACHE.popitem(last=False)
    return index
