"""The RAPTOR tree: leaves, then one summary per cluster per layer until a stop rule
(``ClusterTreeBuilder.construct_tree``, official code @ 2e3e83e), built once per corpus,
settings and model, and kept on disk.

Stop rules (the official ones): at most ``num_layers`` summary layers, and no layer is built over
``reduction_dimension + 1`` nodes or fewer. The summaries of a layer are asked with at most
``concurrency`` calls in flight, in cluster order; each finished summary is appended to a log
keyed by its cluster's text, so a build killed in the middle of a layer asks again only the
summaries it had not received.

A grown or edited corpus (``Corpus.add`` / ``update`` / ``remove``) is built the same way, and
reuses what did not change: the leaves are split per document (the same documents give the same
leaves), every node's embedding comes from the embedding store keyed by its text
(:mod:`longctx.graphs.index.embedding_store`), and the summary log is shared by every corpus under
the same summary settings and model, so only the summaries of clusters whose text is new are asked.
Every upper layer is clustered again over the new leaf set (same seed: the clusters of a fresh
build).
"""

from __future__ import annotations

import contextvars
import json
import logging
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from longctx.graphs.plugin.api import (
    EmbeddingStore,
    GrowingStage,
    count_tokens_batch,
    digest_bytes,
    digest_texts,
    report_progress,
)
from longctx.graphs.raptor.clustering import cluster_nodes
from longctx.graphs.raptor.prompts import node_context
from longctx.graphs.raptor.split import split_text
from longctx.retrieval.contract import Corpus

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TreeNode:
    """One node: a leaf chunk (layer 0) or a cluster's summary; ``cluster`` is its cluster's
    position in its layer."""

    index: int
    layer: int
    text: str
    children: tuple[int, ...] = ()
    docs: tuple[str, ...] = ()
    titles: tuple[str, ...] = ()
    cluster: int | None = None


@dataclass
class Tree:
    """All nodes in index order (``get_node_list``), one embedding row per node, and how the build
    went."""

    nodes: list[TreeNode]
    embeddings: np.ndarray
    num_layers: int
    stopped: str
    facts: dict[str, Any] = field(default_factory=dict)

    def layer(self, number: int) -> list[TreeNode]:
        """The nodes of layer ``number`` (0: the leaves), in index order."""
        return [n for n in self.nodes if n.layer == number]


class SummaryLog:
    """Finished summaries by the digest of their cluster's text, appended one JSON line each as they
    arrive (a torn or edited line fails its digest and is asked again)."""

    def __init__(self, path: Path | None):
        self.path = path
        self.lock = threading.Lock()
        self.done: dict[str, str] = {}
        if path is not None and path.exists():
            text = path.read_text(encoding="utf-8", errors="replace")
            for number, line in enumerate(text.splitlines(), 1):
                if not line.strip():
                    continue
                try:
                    rec = json.loads(line)
                    if rec["check"] == digest_bytes(f"{rec['key']}\n{rec['summary']}".encode()):
                        self.done[rec["key"]] = rec["summary"]
                        continue
                except (ValueError, KeyError, TypeError):
                    pass
                log.warning(
                    "RAPTOR summary log %s: line %d is torn or altered; its summary is asked again",
                    path,
                    number,
                )
            # a last line torn by a kill: end it, so the next record starts on its own line
            if text and not text.endswith("\n"):
                with open(path, "a", encoding="utf-8") as f:
                    f.write("\n")

    def put(self, key: str, summary: str) -> None:
        """Record one finished summary (flushed to disk before the next is recorded)."""
        with self.lock:
            self.done[key] = summary
            if self.path is not None:
                line = json.dumps(
                    {
                        "key": key,
                        "summary": summary,
                        "check": digest_bytes(f"{key}\n{summary}".encode()),
                    }
                )
                with open(self.path, "a", encoding="utf-8") as f:
                    f.write(line + "\n")


Summarize = Callable[[str], str]
#: ``(contexts, log) -> (summaries, asked)``: a layer's summaries asked elsewhere than
#: :func:`summarize_layer` (Ray tasks: :mod:`longctx.graphs.raptor.ray_summaries`), with the same
#: log.
LayerMap = Callable[[list[str], SummaryLog], tuple[list[str], int]]
#: The build's facts that count what it paid (zero on an answer that reused the tree).
PAID_FACTS = ("summaries_asked", "leaves_embedded", "embeddings_computed")


def leaves_of(corpus: Corpus, chunk_tokens: int) -> list[TreeNode]:
    """Layer 0: each document split by :func:`split_text` on its own (a leaf never spans two
    documents)."""
    out: list[TreeNode] = []
    for doc in corpus.documents:
        for chunk in split_text(doc.text, chunk_tokens):
            out.append(TreeNode(len(out), 0, chunk, docs=(doc.doc_id,), titles=(doc.title,)))
    return out


#: Leaves per (corpus fingerprint, chunk_tokens), counted once per process for the cost plan.
_LEAF_COUNTS: dict[tuple[str, int], int] = {}


def leaf_count(corpus: Corpus, chunk_tokens: int) -> int:
    """How many leaves :func:`leaves_of` makes of ``corpus`` (remembered: a budget's plan asks each
    call)."""
    key = (corpus.fingerprint, chunk_tokens)
    if key not in _LEAF_COUNTS:
        if len(_LEAF_COUNTS) >= 64:
            _LEAF_COUNTS.clear()
        _LEAF_COUNTS[key] = sum(len(split_text(d.text, chunk_tokens)) for d in corpus.documents)
    return _LEAF_COUNTS[key]


def summarize_layer(
    contexts: list[str], summarize: Summarize, log: SummaryLog, concurrency: int
) -> tuple[list[str], int]:
    """The summary of each context, in order: from the log where it holds one, else asked with at
    most ``concurrency`` calls in flight (each recorded as it arrives); and how many were asked."""
    keys = [digest_texts([c]) for c in contexts]
    todo = [i for i, k in enumerate(keys) if k not in log.done]

    def ask(i: int) -> None:
        log.put(keys[i], summarize(contexts[i]))
        report_progress("summarize", advance=1)

    if todo:
        with ThreadPoolExecutor(max_workers=max(1, min(concurrency, len(todo)))) as pool:
            # each call sees this run's callbacks
            futures = [pool.submit(contextvars.copy_context().run, ask, i) for i in todo]
            try:
                for future in futures:
                    future.result()
            except BaseException:
                # a failed call ends the build: nothing more is asked, what finished is in the log
                pool.shutdown(wait=True, cancel_futures=True)
                raise
    return [log.done[k] for k in keys], len(todo)


def build_tree(
    corpus: Corpus,
    cfg: Any,
    summarize: Summarize,
    store: EmbeddingStore,
    log: SummaryLog,
    layer_map: LayerMap | None = None,
) -> Tree:
    """The tree over ``corpus`` (``cfg``: a :class:`~graphs.raptor.config.RaptorConfig`), every node
    embedded through ``store``; a layer's summaries by ``layer_map`` when given, else by
    :func:`summarize_layer` with ``summarize``; its facts say what was reused and what was computed
    or asked."""
    embed, summarized = GrowingStage("embed").wrap(store.embed_texts), GrowingStage("summarize")
    nodes = leaves_of(corpus, cfg.chunk_tokens)
    vectors = [embed([n.text for n in nodes])] if nodes else []
    leaves_new = store.computed
    current = list(range(len(nodes)))
    layers, stopped, asked, per_layer = 0, f"num_layers={cfg.num_layers} reached", 0, []
    for layer in range(cfg.num_layers):
        if len(current) <= cfg.reduction_dimension + 1:
            stopped = (
                f"layer {layer} has {len(current)} nodes, at most reduction_dimension + 1 = "
                f"{cfg.reduction_dimension + 1}"
            )
            break
        emb = np.concatenate(vectors)[current]
        tokens = count_tokens_batch([nodes[i].text for i in current])
        clusters = cluster_nodes(
            emb,
            tokens,
            dim=cfg.reduction_dimension,
            threshold=cfg.cluster_threshold,
            max_cluster_tokens=cfg.max_cluster_tokens,
            seed=cfg.seed,
            method=cfg.clustering,
            sample=cfg.cluster_sample,
            patience=cfg.cluster_bic_patience,
            recluster=cfg.cluster_recluster if cfg.clustering == "scalable" else "fresh",
            workers=cfg.cluster_workers,
        )
        members = [[current[k] for k in c] for c in clusters]
        contexts = [node_context([nodes[i].text for i in m]) for m in members]
        logged = sum(1 for c in contexts if digest_texts([c]) in log.done)
        summarized.add(len(contexts), done=logged)  # then one event per summary (or Ray batch)
        summaries, n_asked = (
            layer_map(contexts, log)
            if layer_map is not None
            else summarize_layer(contexts, summarize, log, cfg.concurrency)
        )
        asked += n_asked
        start = len(nodes)
        for pos, (m, text) in enumerate(zip(members, summaries)):
            docs = tuple(dict.fromkeys(d for i in m for d in nodes[i].docs))
            titles = tuple(dict.fromkeys(t for i in m for t in nodes[i].titles))
            nodes.append(TreeNode(start + pos, layer + 1, text, tuple(m), docs, titles, pos))
        vectors.append(embed(summaries))
        current = list(range(start, len(nodes)))
        layers = layer + 1
        per_layer.append(
            {
                "layer": layer + 1,
                "clusters": len(members),
                "nodes_below": len(tokens),
                "summaries_asked": n_asked,
            }
        )
    emb_all = np.concatenate(vectors) if vectors else np.zeros((0, 0), dtype=np.float32)
    leaves = sum(1 for n in nodes if n.layer == 0)
    facts = {
        "leaves": leaves,
        "layers": per_layer,
        "summaries_asked": asked,
        "summaries_reused": len(nodes) - leaves - asked,
        "leaves_embedded": leaves_new,
        "embeddings_computed": store.computed,
        "layers_rebuilt": layers,
    }
    # float64 as the server returned them (store.official_openai), else float32
    kept = emb_all if emb_all.dtype == np.float64 else emb_all.astype(np.float32)
    return Tree(nodes, kept, layers, stopped, facts)


def tree_to_json(tree: Tree) -> dict[str, Any]:
    """The tree's nodes and facts as JSON (its embeddings are stored apart)."""
    return {
        "num_layers": tree.num_layers,
        "stopped": tree.stopped,
        "facts": tree.facts,
        "nodes": [
            [n.index, n.layer, n.text, list(n.children), list(n.docs), list(n.titles), n.cluster]
            for n in tree.nodes
        ],
    }


def tree_from_json(data: dict[str, Any], embeddings: np.ndarray) -> Tree:
    """The inverse of :func:`tree_to_json`."""
    nodes = [
        TreeNode(i, layer, text, tuple(ch), tuple(docs), tuple(titles), cl)
        for i, layer, text, ch, docs, titles, cl in data["nodes"]
    ]
    return Tree(nodes, embeddings, data["num_layers"], data["stopped"], data["facts"])
