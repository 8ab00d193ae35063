"""HippoRAG 2's settings: the official code's defaults (OSU-NLP-Group/HippoRAG @ c617143), each
cited by file and line (``config_utils.py`` is ``src/hipporag/utils/config_utils.py``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from longctx.graphs.plugin.api import ConfigError, RayMapOptions, option


@dataclass(frozen=True, kw_only=True)
class HippoRAGConfig(RayMapOptions):
    """Passages, OpenIE, the graph's synonymy edges, retrieval (fact linking, the recognition
    filter, PPR) and the answer call.

    The official embedder is NV-Embed-v2 (``config_utils.py:137``) with a task instruction per query
    kind; ours is the dense retriever's embedder (all-MiniLM-L6-v2 offline, no instruction), any
    registered one by ``embedder`` (docs/protocols.md). ``qa_prompt="paper"`` sends the official QA
    request (``rag_qa_musique``); ``"ours"`` (default) our RAG prompt with the benchmark's
    instruction.
    """

    passage_tokens: int | None = option(
        None,
        min=1,
        source="None: one passage per document, as TextPreprocessor (preprocessing.py:15-26); "
        "main.py:81 passes 'title\\ntext'; a size cuts documents into passages of that many "
        "cl100k tokens",
    )
    embedder: str = option(
        "sentence-transformers",
        help="a registered embedder (official default: nvidia/NV-Embed-v2, config_utils.py:137)",
    )
    embedder_model: str | None = option(
        None, help="the embedder's model (default: its own; MiniLM for sentence-transformers)"
    )
    openie_max_tokens: int = option(
        2048, min=1, source="config_utils.py:39 max_new_tokens=2048 (every OpenIE call)"
    )
    concurrency: int = option(
        8,
        min=1,
        max=1024,
        help=(
            "passages in OpenIE at once (official: ThreadPoolExecutor()'s default, "
            "openie_openai.py:157)"
        ),
    )
    synonymy_threshold: float = option(
        0.8, min=-1.0, max=1.0, source="config_utils.py:173 synonymy_edge_sim_threshold=0.8"
    )
    synonymy_top_k: int = option(
        2047,
        min=1,
        source="config_utils.py:161 synonymy_edge_topk=2047 (at most 101 kept, HippoRAG.py:1007)",
    )
    synonymy_knn: Literal["dense", "faiss", "faiss-ivf"] = option(
        "dense",
        source="dense: embed_utils.retrieve_knn (every phrase against every phrase); faiss: the "
        "same neighbours by an exact FAISS range search; faiss-ivf: approximate (IVF), for "
        "millions of phrases (ours, docs/scale.md)",
    )
    linking_top_k: int = option(
        5, min=1, source="config_utils.py:185 linking_top_k=5 (facts to the filter, phrases seeded)"
    )
    filter_max_tokens: int = option(512, min=1, source="rerank.py:93 max_completion_tokens=512")
    passage_node_weight: float = option(
        0.05, min=0.0, source="config_utils.py:92 passage_node_weight=0.05"
    )
    damping: float = option(0.5, min=0.0, max=1.0, source="config_utils.py:193 damping=0.5")
    retrieval_top_k: int = option(
        200, min=1, source="config_utils.py:189 retrieval_top_k=200 (main.py:101)"
    )
    qa_top_k: int = option(5, min=1, source="config_utils.py:204 qa_top_k=5 (main.py:103)")
    qa_prompt: Literal["ours", "paper"] = option(
        "ours", source="paper: rag_qa_musique, HippoRAG.qa (HippoRAG.py:829-847)"
    )
    max_new_tokens: int = option(
        2048, min=1, source="config_utils.py:39 max_new_tokens=2048 (the QA call)"
    )
    temperature: float = option(
        0.0, min=0.0, source="config_utils.py:51 temperature=0 (every call)"
    )
    cache: bool = option(
        True, help="keep the graph on disk (checksummed) and every finished OpenIE call"
    )
    ray_batch_passages: int = option(
        16,
        min=1,
        source=(
            "ours: as structured's ray_batch_documents, two rounds of `concurrency` passages per "
            "task"
        ),
    )

    def check(self) -> None:
        """The answer reads at most what retrieval returns; the Ray options need
        map_executor='ray'."""
        super().check()
        if self.qa_top_k > self.retrieval_top_k:
            raise ConfigError(
                f"Option 'qa_top_k' ({self.qa_top_k}) must be at most 'retrieval_top_k' "
                f"({self.retrieval_top_k})"
            )
