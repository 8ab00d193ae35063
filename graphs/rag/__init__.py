"""Chunked top-N RAG (LongBench v1 200x7 / 500x3): retrieve, order the chunks, generate."""

from longctx.graphs.plugin.api import order_hits, retrieve
from longctx.graphs.rag.config import RagConfig
from longctx.graphs.rag.graph import RagState, build_graph
from longctx.graphs.rag.prompts import PROMPTS_VERSION, RAG_TEMPLATE

__all__ = [
    "PROMPTS_VERSION",
    "RAG_TEMPLATE",
    "RagConfig",
    "RagState",
    "build_graph",
    "order_hits",
    "retrieve",
]
