"""An on-disk LLM response cache (SQLite), so a rerun replays exactly and costs nothing.

Keyed by the model's identity and parameters (LangChain's ``llm_string``, which holds the
model, its settings and the call's kwargs such as ``temperature`` and ``max_tokens``) and
the serialized messages. Only deterministic calls (temperature 0) are cached by default:
replaying a sampled reply would hide the variance a rerun is meant to show. Entries are
LangChain's JSON serialization, never pickles. Hits are marked in
``response_metadata["cache_hit"]`` so usage accounting can report them as free.
"""

from __future__ import annotations

import hashlib
import re
import sqlite3
import threading
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from langchain_core._api.beta_decorator import LangChainBetaWarning
from langchain_core.caches import RETURN_VAL_TYPE, BaseCache
from langchain_core.load import dumps, loads
from langchain_core.messages import AIMessage
from langchain_core.outputs import ChatGeneration, Generation

from longctx.memory.sqlite_wal import enable_wal

_TEMPERATURE_ZERO = re.compile(r"['\"]temperature['\"][:,]\s*0(\.0+)?\b")


def is_deterministic(llm_string: str) -> bool:
    """Whether the call was made at temperature 0 (greedy, hence worth replaying)."""
    return bool(_TEMPERATURE_ZERO.search(llm_string))


class SQLiteLLMCache(BaseCache):
    """LangChain ``BaseCache`` on SQLite; thread-safe; temperature-0 calls only unless
    ``all_calls``."""

    def __init__(self, path: str | Path, *, all_calls: bool = False):
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        self.path = Path(path)
        self.all_calls = all_calls
        self._conn = sqlite3.connect(str(path), check_same_thread=False)
        self._lock = threading.Lock()
        with self._lock:
            enable_wal(self._conn)  # several processes may open one new cache at once
            self._conn.execute("PRAGMA synchronous=NORMAL")
            self._conn.execute(
                "CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, generations TEXT "
                "NOT NULL)"
            )
            self._conn.commit()
        self.hits = 0
        self.misses = 0

    @staticmethod
    def _key(prompt: str, llm_string: str) -> str:
        return hashlib.sha256(f"{llm_string}\x00{prompt}".encode()).hexdigest()

    def _cacheable(self, llm_string: str) -> bool:
        return self.all_calls or is_deterministic(llm_string)

    def lookup(self, prompt: str, llm_string: str) -> RETURN_VAL_TYPE | None:
        """Stored generations for this exact call, marked as cache hits."""
        if not self._cacheable(llm_string):
            return None
        with self._lock:
            row = self._conn.execute(
                "SELECT generations FROM responses WHERE key = ?", (self._key(prompt, llm_string),)
            ).fetchone()
            if row is None:
                self.misses += 1
                return None
            self.hits += 1
        # langchain_core marks loads() beta; the format is stable JSON
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", LangChainBetaWarning)
            generations = loads(row[0], allowed_objects=[ChatGeneration, Generation, AIMessage])
        for gen in generations:
            message = getattr(gen, "message", None)
            if message is not None:
                message.response_metadata = {**message.response_metadata, "cache_hit": True}
        return generations

    def update(self, prompt: str, llm_string: str, return_val: Sequence[Any]) -> None:
        """Store the generations of a deterministic call."""
        if not self._cacheable(llm_string):
            return
        with self._lock:
            self._conn.execute(
                "INSERT OR REPLACE INTO responses VALUES (?, ?)",
                (self._key(prompt, llm_string), dumps(list(return_val))),
            )
            self._conn.commit()

    def clear(self, **kwargs: Any) -> None:
        """Remove every entry."""
        with self._lock:
            self._conn.execute("DELETE FROM responses")
            self._conn.commit()

    def refreshing(self) -> RefreshingCache:
        """A view of this cache that replays nothing and stores every reply (for retries)."""
        return RefreshingCache(self)


class RefreshingCache(BaseCache):
    """Writes through to a :class:`SQLiteLLMCache` but never replays it: a retried answer
    makes its calls afresh, and their replies replace the entries a failed attempt used
    (a cached reply that failed a row is not replayed blindly)."""

    def __init__(self, cache: SQLiteLLMCache):
        self.cache = cache

    def lookup(self, prompt: str, llm_string: str) -> RETURN_VAL_TYPE | None:
        """Always a miss."""
        return None

    def update(self, prompt: str, llm_string: str, return_val: Sequence[Any]) -> None:
        """Store (replace) the fresh generations in the underlying cache."""
        self.cache.update(prompt, llm_string, return_val)

    def clear(self, **kwargs: Any) -> None:
        """Remove every entry of the underlying cache."""
        self.cache.clear(**kwargs)
