"""RAG's prompt, in LongBench v2's ``0shot_rag.txt`` frame: instructions, the retrieved text
in ``<text>`` tags, then the question and the output-format instruction last. Self-Route,
Self-Ask's reader, RAPTOR and HippoRAG use it too, so its text lives in
``longctx.graphs.index.retrieved`` (reached through ``longctx.graphs.plugin.api``); it is versioned
here. Bump ``PROMPTS_VERSION`` on any edit."""

from __future__ import annotations

from longctx.graphs.plugin.api import RAG_TEMPLATE

PROMPTS_VERSION = 1

__all__ = ["PROMPTS_VERSION", "RAG_TEMPLATE"]
