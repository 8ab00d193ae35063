"""Where a HippoRAG graph lives on disk: one folder per (corpus fingerprint, graph settings,
embedder, chat model and every setting its requests carry), its files checksummed in ``meta.json``;
and, shared by every corpus, the record logs of finished OpenIE calls (``<cache>/hipporag/openie``),
from which a killed build resumes and another corpus reuses a passage's extraction."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from langchain_core.language_models import BaseChatModel

from longctx.graphs.hipporag.config import HippoRAGConfig
from longctx.graphs.hipporag.kg import KnowledgeGraph
from longctx.graphs.hipporag.prompts import PROMPTS_VERSION
from longctx.graphs.plugin.api import (
    ArtifactStore,
    Checksums,
    digest_of,
    model_identity,
    read_checked,
    write_checked,
)
from longctx.retrieval.contract import Corpus

#: The config fields that change the OpenIE requests (and so their stored replies).
OPENIE_FIELDS = ("openie_max_tokens", "temperature")
#: The config fields that change the graph (the retrieval and answer fields do not).
GRAPH_FIELDS = (
    "passage_tokens",
    "embedder",
    "embedder_model",
    "synonymy_threshold",
    "synonymy_top_k",
    "synonymy_knn",
    *OPENIE_FIELDS,
)
#: The embedding stores' namespaces (the official ``chunk``, ``entity`` and ``fact`` stores;
#: :mod:`longctx.graphs.index.embedding_store`).
NAMESPACES = ("passage", "entity", "fact")
#: Bump when the folder's layout or the build changes.
STORE_VERSION = 1
_FILES = ("graph.json", "facts.npy", "passages.npy")


def openie_key(cfg: HippoRAGConfig) -> str:
    """The digest of what an OpenIE request holds besides its passage: prompts and request
    settings."""
    return digest_of(
        {
            "settings": {f: getattr(cfg, f) for f in OPENIE_FIELDS},
            "prompts": PROMPTS_VERSION,
            "version": STORE_VERSION,
        }
    )


def model_key(llm: BaseChatModel) -> str:
    """The extracting model, with every setting its requests carry, not its server's address
    (:func:`longctx.graphs.calls.request_settings.model_identity`)."""
    return model_identity(llm)


def graph_key(corpus: Corpus, cfg: HippoRAGConfig, llm: BaseChatModel) -> str:
    """The digest naming a graph's folder: what the graph depends on, the extracting model's
    requests included."""
    parts = {
        "corpus": corpus.fingerprint,
        "settings": {f: getattr(cfg, f) for f in GRAPH_FIELDS},
        "prompts": PROMPTS_VERSION,
        "llm": model_key(llm),
        "version": STORE_VERSION,
    }
    if cfg.embedder == "openai":  # graphs of other embedders keep their keys
        parts["openai_inputs"] = "newlines as spaces"
    return digest_of(parts)


def graph_folder(root: Path, key: str) -> Path:
    """``<cache>/hipporag/graphs/<key>``."""
    return root / "hipporag" / "graphs" / key[:32]


def openie_root(root: Path) -> Path:
    """``<cache>/hipporag/openie``: the record logs of finished NER and triple calls."""
    return root / "hipporag" / "openie"


def load_graph(folder: Path) -> KnowledgeGraph | None:
    """The finished graph in ``folder``, or ``None`` when there is none; a file that fails its
    checksum is named in a warning and the graph is rebuilt (from the OpenIE logs: no call is asked
    again)."""
    return read_checked(folder, _FILES, _read_graph, what="HippoRAG graph")


def _read_graph(folder: Path) -> KnowledgeGraph:
    data = json.loads((folder / "graph.json").read_text(encoding="utf-8"))
    facts = [(str(s), str(p), str(o)) for s, p, o in data["facts"]]
    return KnowledgeGraph(
        data["phrases"],
        data["passages"],
        facts,
        np.load(folder / "facts.npy", allow_pickle=False),
        np.load(folder / "passages.npy", allow_pickle=False),
        data["phrase_passages"],
        [(int(a), int(b)) for a, b in data["edges"]],
        data["weights"],
        data["facts_of_build"],
    )


def save_graph(folder: Path, kg: KnowledgeGraph) -> None:
    """Write the graph's files with their checksums, ``meta.json`` last (its presence means
    finished)."""
    data = {
        "phrases": kg.phrases,
        "passages": kg.passages,
        "facts": kg.facts,
        "phrase_passages": kg.phrase_passages,
        "edges": kg.edges,
        "weights": kg.weights,
        "facts_of_build": kg.facts_of_build,
    }

    def write(sums: Checksums) -> None:
        with sums.open(folder / "graph.json", text=True) as f:
            f.write(json.dumps(data))
        with sums.open(folder / "facts.npy") as f:
            np.save(f, kg.fact_vectors, allow_pickle=False)
        with sums.open(folder / "passages.npy") as f:
            np.save(f, kg.passage_vectors, allow_pickle=False)

    write_checked(folder, write, version=STORE_VERSION)


#: The graph's place in the cache, for
#: :meth:`longctx.graphs.index.index_artifact.LoadedArtifacts.obtain`.
GRAPH_STORE = ArtifactStore(
    what="a HippoRAG graph build", folder=graph_folder, load=load_graph, save=save_graph
)
