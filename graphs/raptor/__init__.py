"""RAPTOR: a tree of cluster summaries over the corpus, retrieved as a collapsed tree (Sarthi et
al., ICLR 2024)."""

from longctx.graphs.raptor.config import RaptorConfig
from longctx.graphs.raptor.graph import build_graph
from longctx.graphs.raptor.prompts import PROMPTS_VERSION

__all__ = ["PROMPTS_VERSION", "RaptorConfig", "build_graph"]
