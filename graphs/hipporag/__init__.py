"""HippoRAG 2: an OpenIE graph of phrases and passages searched by Personalized PageRank (Gutierrez
et al., 2025)."""

from longctx.graphs.hipporag.config import HippoRAGConfig
from longctx.graphs.hipporag.graph import build_graph
from longctx.graphs.hipporag.prompts import PROMPTS_VERSION

__all__ = ["PROMPTS_VERSION", "HippoRAGConfig", "build_graph"]
