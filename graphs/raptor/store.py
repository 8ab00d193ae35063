"""Where a RAPTOR tree lives on disk: one folder per (corpus fingerprint, tree settings, embedder,
chat model and every setting its requests carry), the finished tree checksummed in ``meta.json``;
and, shared by every corpus, the log of finished summaries per (summary settings, prompts, model):
``<cache>/raptor/summaries/<key>.jsonl``, from which a killed build resumes and a grown or edited
corpus reuses every summary whose cluster's text is unchanged. The nodes' embeddings are in the
shared embedding store (:mod:`longctx.graphs.index.embedding_store`, namespace
:data:`NODE_NAMESPACE`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from longctx.graphs.plugin.api import (
    ArtifactStore,
    Checksums,
    digest_of,
    model_identity,
    read_checked,
    write_checked,
)
from longctx.graphs.raptor.clustering import SCALABLE_VERSION
from longctx.graphs.raptor.prompts import PROMPTS_VERSION
from longctx.graphs.raptor.tree import SummaryLog, Tree, tree_from_json, tree_to_json
from longctx.retrieval.contract import Corpus

#: The config fields that change the tree (the retrieval and answer fields do not).
TREE_FIELDS = (
    "chunk_tokens",
    "embedder",
    "embedder_model",
    "reduction_dimension",
    "cluster_threshold",
    "max_cluster_tokens",
    "num_layers",
    "summary_tokens",
    "summary_temperature",
    "seed",
    "clustering",
    "cluster_sample",
)
#: The config fields that change a summary request (besides its cluster's text).
SUMMARY_FIELDS = ("summary_tokens", "summary_temperature")
#: The embedding store's namespace of RAPTOR's nodes (leaves and summaries).
NODE_NAMESPACE = "raptor-nodes"
#: Bump when the folder's layout or the build changes (the summary log's move out of the folder left
#: finished trees as they were; an unfinished build's old log is not read).
STORE_VERSION = 1
_FILES = ("tree.json", "embeddings.npy")


def tree_key(corpus: Corpus, cfg: Any, llm: Any) -> str:
    """The digest naming a tree's folder: what the tree depends on, the summarising model's requests
    included."""
    parts = {
        "corpus": corpus.fingerprint,
        "settings": {f: getattr(cfg, f) for f in TREE_FIELDS},
        "prompts": PROMPTS_VERSION,
        "llm": model_identity(llm),
        "version": STORE_VERSION,
    }
    if official_openai(cfg)["raw"]:  # trees of other embedders keep their keys
        parts["openai"] = "vectors as returned, newlines as spaces"
    if cfg.clustering == "scalable":  # official trees keep their keys
        parts["scalable"] = {
            "version": SCALABLE_VERSION,
            "bic_patience": cfg.cluster_bic_patience,
            "recluster": cfg.cluster_recluster,
        }
    return digest_of(parts)


def official_openai(cfg: Any) -> dict[str, bool]:
    """How the ``openai`` embedder is used as the official ``OpenAIEmbeddingModel`` uses it: each
    text with its newlines as spaces, and the server's vectors as returned (float64, not normalised
    again: a 1-ulp change moves seeded UMAP, and the clusters with it); other embedders as they
    are."""
    official = cfg.embedder == "openai"
    return {"flatten": official, "raw": official}


def tree_folder(root: Path, key: str) -> Path:
    """``<cache>/raptor/<key>``."""
    return root / "raptor" / key[:32]


def load_tree(folder: Path) -> Tree | None:
    """The finished tree in ``folder``, or ``None`` when there is none; a file that fails its
    checksum is named in a warning and the tree is rebuilt (its summaries log is kept)."""
    return read_checked(folder, _FILES, _read_tree, what="RAPTOR tree")


def _read_tree(folder: Path) -> Tree:
    data = json.loads((folder / "tree.json").read_text(encoding="utf-8"))
    return tree_from_json(data, np.load(folder / "embeddings.npy", allow_pickle=False))


def save_tree(folder: Path, tree: Tree) -> None:
    """Write the tree's files with their checksums, ``meta.json`` last (its presence means
    finished)."""

    def write(sums: Checksums) -> None:
        with sums.open(folder / "tree.json", text=True) as f:
            f.write(json.dumps(tree_to_json(tree)))
        with sums.open(folder / "embeddings.npy") as f:
            np.save(f, tree.embeddings, allow_pickle=False)

    write_checked(folder, write, version=STORE_VERSION)


#: The tree's place in the cache, for
#: :meth:`longctx.graphs.index.index_artifact.LoadedArtifacts.obtain`.
TREE_STORE = ArtifactStore(
    what="a RAPTOR tree build", folder=tree_folder, load=load_tree, save=save_tree
)


def summary_key(cfg: Any, llm: Any) -> str:
    """The digest naming a summary log: what a summary request holds besides its cluster's text."""
    parts = {
        "settings": {f: getattr(cfg, f) for f in SUMMARY_FIELDS},
        "prompts": PROMPTS_VERSION,
        "llm": model_identity(llm),
        "version": STORE_VERSION,
    }
    return digest_of(parts)


def summary_log(root: Path | None, key: str) -> SummaryLog:
    """The log of finished summaries under the cache ``root`` for ``key`` (:func:`summary_key`; in
    memory when ``root`` is ``None``)."""
    if root is None:
        return SummaryLog(None)
    path = summary_log_path(root, key)
    path.parent.mkdir(parents=True, exist_ok=True)
    return SummaryLog(path)


def summary_log_path(root: Path, key: str) -> Path:
    """``<cache>/raptor/summaries/<key>.jsonl``."""
    return root / "raptor" / "summaries" / f"{key[:32]}.jsonl"
