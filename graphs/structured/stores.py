"""Where a structured answer keeps what it reads: the record cache and the schema store of
:mod:`longctx.memory.records.cache`, in the folder ``<cache folder>/structured``."""

from __future__ import annotations

import functools
from pathlib import Path

from longctx.graphs.plugin.api import RecordCache, SchemaStore, StrategyContext, default_cache_dir
from longctx.graphs.structured.config import StructuredConfig
from longctx.graphs.structured.mapping import extraction_model

#: The stores' folder under the cache folder.
STORE_FOLDER = "structured"


def cache_root(ctx: StrategyContext[StructuredConfig]) -> Path:
    """The cache folder of the run (``cache_dir``, else ``$LONGCTX_CACHE_DIR`` or
    ``~/.cache/longctx``)."""
    return Path(ctx.cache_dir) if ctx.cache_dir is not None else default_cache_dir()


def store_root(cache_dir: str | Path) -> Path:
    """The folder of the record logs and schema lists under the cache folder ``cache_dir``."""
    return Path(cache_dir) / STORE_FOLDER


def schema_store(ctx: StrategyContext[StructuredConfig]) -> SchemaStore:
    """The schemas used on the run's corpus."""
    return SchemaStore(store_root(cache_root(ctx)), ctx.corpus.fingerprint)


def record_cache(ctx: StrategyContext[StructuredConfig], key: str) -> RecordCache:
    """The record cache of (schema key, model and its request settings) under the run's cache
    folder."""
    return _record_cache(str(store_root(cache_root(ctx))), key, extraction_model(ctx.llm))


@functools.lru_cache(maxsize=64)
def _record_cache(root: str, key: str, model: str) -> RecordCache:
    return RecordCache(root, key, model)  # made once per run, not per document


__all__ = ["STORE_FOLDER", "cache_root", "record_cache", "schema_store", "store_root"]
