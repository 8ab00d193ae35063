"""The run context every strategy graph receives (LangGraph ``context_schema``)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel

from retrieval import Index
from retrieval.contract import Corpus


@dataclass(frozen=True)
class StrategyContext:
    """Immutable per-run dependencies injected into every node (LangGraph ``context_schema``).

    Attributes:
        llm: The chat model.
        config: The strategy's config object.
        corpus: The corpus being answered over.
        index: The retrieval index, for strategies that retrieve.
        cache_dir: Root of the on-disk cache (``None`` = ``$LONGCTX_CACHE_DIR`` or
            ``~/.cache/longctx``), for strategies that checkpoint a sub-run.
    """

    llm: BaseChatModel
    config: Any
    corpus: Corpus
    index: Index | None = None
    cache_dir: Path | None = None
