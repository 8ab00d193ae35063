"""RAPTOR's settings: the official code's defaults (parthsarthi03/raptor @ 2e3e83e), each cited."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from longctx.graphs.plugin.api import ConfigError, RayMapOptions, option


@dataclass(frozen=True, kw_only=True)
class RaptorConfig(RayMapOptions):
    """The tree (leaves, clustering, summaries, layers), its retrieval and the answer call.

    The official default embedder is OpenAI's text-embedding-ada-002 (``OpenAIEmbeddingModel``);
    ours is the dense retriever's embedder (all-MiniLM-L6-v2 offline), any registered one by
    ``embedder``. ``qa_prompt="paper"`` sends the official ``GPT3TurboQAModel`` request;
    ``"ours"`` (default) our RAG prompt with the benchmark's instruction.
    """

    chunk_tokens: int = option(
        100, min=1, source="TreeBuilderConfig max_tokens=100 (split_text, cl100k_base)"
    )
    embedder: str = option(
        "sentence-transformers",
        help="a registered embedder (official default: OpenAI text-embedding-ada-002)",
    )
    embedder_model: str | None = option(
        None, help="the embedder's model (default: its own; MiniLM for sentence-transformers)"
    )
    reduction_dimension: int = option(10, min=1, source="ClusterTreeConfig reduction_dimension=10")
    cluster_threshold: float = option(
        0.1, min=0.0, max=1.0, source="RAPTOR_Clustering threshold=0.1 (soft GMM membership)"
    )
    max_cluster_tokens: int = option(
        3500, min=1, source="RAPTOR_Clustering max_length_in_cluster=3500"
    )
    clustering: Literal["official", "scalable"] = option(
        "official",
        source="official: RAPTOR_Clustering (UMAP, BIC over every node); scalable: UMAP and "
        "mixtures fitted on samples of cluster_sample nodes, the others placed by their "
        "nearest sample nodes (ours, docs/scale.md: for 1M+ token corpora)",
    )
    cluster_sample: int = option(
        2000, min=10, help="nodes each UMAP and mixture is fitted on (clustering='scalable' only)"
    )
    cluster_bic_patience: int = option(
        0,
        min=0,
        help="clustering='scalable' only: stop each BIC search after this many component counts in "
        "a row without a lower BIC (0: the whole range, as the official code; docs/scale.md)",
    )
    cluster_recluster: Literal["fresh", "reuse"] = option(
        "reuse",
        help="clustering='scalable' only: an over-long cluster is clustered again on the positions "
        "its nodes have in the reduction it was found in, with no new UMAP (reuse: ours, "
        "docs/scale.md), or with new UMAPs as the official code (fresh)",
    )
    cluster_workers: int = option(
        1,
        min=1,
        max=256,
        help="processes a layer's over-long clusters are clustered again in (1: this one); the "
        "tree is the same for any number (with cluster_recluster='fresh', where seeded UMAP "
        "is deterministic: not on near-duplicate nodes)",
    )
    num_layers: int = option(5, min=1, source="TreeBuilderConfig num_layers=5")
    summary_tokens: int = option(
        100,
        min=1,
        source="TreeBuilderConfig summarization_length=100 (the summary call's max_tokens)",
    )
    summary_temperature: float | None = option(
        None, help="None: not sent, as GPT3TurboSummarizationModel (the server's default)"
    )
    seed: int = option(
        224, source="cluster_utils RANDOM_SEED=224 (UMAP left unseeded there: docs/protocols.md)"
    )
    concurrency: int = option(
        8, min=1, max=1024, help="summary calls in flight while a layer is built"
    )
    retrieval: Literal["collapsed", "traversal"] = option(
        "collapsed",
        source="RetrievalAugmentation.retrieve collapse_tree=True; paper §4: collapsed tree",
    )
    top_k: int = option(
        10, min=1, source="RetrievalAugmentation.answer_question top_k=10 (collapsed tree)"
    )
    context_tokens: int = option(
        3500,
        min=1,
        source="RetrievalAugmentation.answer_question max_tokens=3500 (the paper's runs: 2,000)",
    )
    traversal_top_k: int = option(5, min=1, source="TreeRetrieverConfig top_k=5 (tree traversal)")
    qa_prompt: Literal["ours", "paper"] = option(
        "ours", source="paper: GPT3TurboQAModel's system and user turns"
    )
    max_new_tokens: int = option(128, min=1, help="answer budget (GPT3TurboQAModel sends none)")
    temperature: float = option(0.0, min=0.0, source="GPT3TurboQAModel temperature=0")
    cache: bool = option(
        True,
        help=(
            "keep the tree on disk (checksummed) and the finished summaries of an unfinished build"
        ),
    )
    ray_batch_clusters: int = option(
        16,
        min=1,
        source=(
            "ours: as structured's ray_batch_documents, two rounds of `concurrency` calls per task"
        ),
    )

    def check(self) -> None:
        """The answer's context budget must hold at least one leaf; the Ray options need
        map_executor='ray'."""
        super().check()
        if self.context_tokens < self.chunk_tokens:
            raise ConfigError(
                f"Option 'context_tokens' ({self.context_tokens}) must hold one leaf "
                f"('chunk_tokens' {self.chunk_tokens})"
            )
