"""HippoRAG's index-time work: the corpus's passages, their OpenIE (mapped with bounded concurrency,
each finished call logged), the graph and its embeddings, built once per corpus, settings and model,
kept on disk and in this process (the last few graphs)."""

from __future__ import annotations

import functools
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langchain_core.messages import BaseMessage

from longctx.graphs.hipporag.config import HippoRAGConfig
from longctx.graphs.hipporag.cost_model import openie_tokens_left
from longctx.graphs.hipporag.kg import KnowledgeGraph, build_graph
from longctx.graphs.hipporag.openie import Ask, OpenIELog, calls_left, extract_all
from longctx.graphs.hipporag.ppr import igraph_of
from longctx.graphs.hipporag.ray_openie import extract_on_ray
from longctx.graphs.hipporag.requests import Messages, as_langchain
from longctx.graphs.hipporag.store import (
    GRAPH_STORE,
    NAMESPACES,
    graph_key,
    model_key,
    openie_key,
    openie_root,
)
from longctx.graphs.plugin.api import (
    Chunk,
    ChunkingConfig,
    GrowingStage,
    LoadedArtifacts,
    Source,
    StrategyContext,
    budget_kwargs,
    cache_root,
    chunk_corpus,
    index_time,
    open_store,
    root_of,
    text_of,
)
from longctx.retrieval.contract import Corpus


@dataclass
class LoadedGraph:
    """A graph ready to search: its data, the ``igraph`` graph, and each passage's first chunk (its
    document, for evidence)."""

    kg: KnowledgeGraph
    graph: Any
    chunks: list[Chunk]


_logger = logging.getLogger(__name__)

#: Graphs loaded or built in this process, by key (the last few).
_LOADED: LoadedArtifacts[LoadedGraph] = LoadedArtifacts()


def flattens(cfg: HippoRAGConfig) -> bool:
    """Whether texts go to the embedder as the official ``OpenAIEmbeddingModel.encode`` sends them
    (newlines as spaces, an empty text as a space): with the ``openai`` embedder."""
    return cfg.embedder == "openai"


def embedder_for(cfg: HippoRAGConfig) -> Any:
    """The configured embedder, loaded once per process."""
    return _LOADED.embedder(cfg)


def passage_text(chunk: Chunk) -> str:
    """What OpenIE reads and the graph holds: ``title\\ntext`` as the official ``main.py`` builds
    its documents (the text alone without a title)."""
    return f"{chunk.title}\n{chunk.text}" if chunk.title else chunk.text


def passages_of(corpus: Corpus, cfg: HippoRAGConfig) -> tuple[list[str], list[Chunk]]:
    """The distinct passage texts in corpus order (the official chunk store keeps one of equal
    texts) and each one's first chunk."""
    if cfg.passage_tokens is None:
        chunks = [
            Chunk(i, i, d.doc_id, d.title, 0, d.text, 0) for i, d in enumerate(corpus.documents)
        ]
    else:
        chunks = chunk_corpus(corpus, ChunkingConfig(unit="tokens", size=cfg.passage_tokens))
    first: dict[str, Chunk] = {}
    for c in chunks:
        first.setdefault(passage_text(c), c)
    return list(first), list(first.values())


def asker(ctx: StrategyContext[HippoRAGConfig]) -> Ask:
    """One OpenIE call (``CacheOpenAI.infer``): the messages, ``openie_max_tokens``,
    ``temperature``; the reply and whether it stopped at its budget (``finish_reason == "length"``:
    the official parser closes its JSON first)."""
    cfg, llm = ctx.config, ctx.llm
    extra: dict[str, Any] = {
        **budget_kwargs(llm, cfg.openie_max_tokens),
        "temperature": cfg.temperature,
    }

    def ask(messages: Messages) -> tuple[str, bool]:
        turns: list[BaseMessage] = as_langchain(messages)
        message = llm.invoke(turns, **extra)
        return text_of(message), (message.response_metadata or {}).get("finish_reason") == "length"

    return ask


def _build(
    ctx: StrategyContext[HippoRAGConfig], texts: list[str], root: Path | None
) -> tuple[KnowledgeGraph, int]:
    """OpenIE over every passage (index-time calls), then the graph; a passage, phrase or fact
    embedded before (any corpus) is read from its embedding store (``HippoRAG.index``'s
    ``insert_strings``)."""
    cfg = ctx.config
    log = OpenIELog(
        openie_root(root) if root is not None else None, openie_key(cfg), model_key(ctx.llm)
    )
    with index_time():
        extractions, asked = (
            extract_on_ray(texts, ctx, asker, log)
            if cfg.map_executor == "ray"
            else extract_all(texts, asker(ctx), log, cfg.concurrency, cfg.openie_max_tokens)
        )
    emb = embedder_for(cfg)
    flat = flattens(cfg)
    stores = {ns: open_store(root, cfg.embedder, emb, ns, flatten=flat) for ns in NAMESPACES}
    embedding = GrowingStage("embed")  # progress events, as the graph learns what it embeds
    embed = {ns: embedding.wrap(s.embed_texts) for ns, s in stores.items()}
    kg = build_graph(
        texts,
        extractions,
        embed["entity"],
        threshold=cfg.synonymy_threshold,
        top_k=cfg.synonymy_top_k,
        knn=cfg.synonymy_knn,
        embed_facts=embed["fact"],
        embed_passages=embed["passage"],
    )
    kg.facts_of_build["openie_calls_asked"] = asked
    kg.facts_of_build["openie_unreadable"] = sum(e.unreadable for e in extractions)
    kg.facts_of_build["openie_capped"] = sum(e.capped for e in extractions)
    if (why := degraded(kg.facts_of_build)) is not None:
        _logger.warning("HippoRAG graph built degraded: %s", why)
    kg.facts_of_build["embedded"] = {ns: s.computed for ns, s in stores.items()}
    kg.facts_of_build["embeddings_reused"] = {ns: s.reused for ns, s in stores.items()}
    return kg, asked


def graph_for(ctx: StrategyContext[HippoRAGConfig]) -> tuple[str, LoadedGraph, Source, int]:
    """The corpus's graph: its key, the graph, where it came from (``memory``, ``disk`` or
    ``built``) and the OpenIE calls this build asked."""
    cfg = ctx.config
    key = graph_key(ctx.corpus, cfg, ctx.llm)
    root = cache_root(ctx, cfg.cache)
    passages = functools.cache(lambda: passages_of(ctx.corpus, cfg))  # once, when not held
    asked = 0

    def build(folder: Path | None) -> KnowledgeGraph:
        nonlocal asked
        kg, asked = _build(ctx, passages()[0], root)
        return kg

    def hold(kg: KnowledgeGraph) -> LoadedGraph:
        return LoadedGraph(kg, igraph_of(kg), passages()[1])

    entry, source = _LOADED.obtain(key, root, GRAPH_STORE, build, hold)
    return key, entry, source, asked


def index_calls_left(
    cfg: HippoRAGConfig, corpus: Corpus, llm: Any, cache_dir: str | Path | None
) -> tuple[int, int] | None:
    """The OpenIE calls an answer over ``corpus`` would still make, and the prompt tokens they send
    at least: two per passage, less those the OpenIE log holds (a budget's up-front check counts
    them); ``None`` when its graph is held or on disk (nothing to build)."""
    key, root = graph_key(corpus, cfg, llm), root_of(cache_dir, cfg.cache)
    if _LOADED.held(key, root, GRAPH_STORE):
        return None
    texts = passages_of(corpus, cfg)[0]
    if root is None:
        left = [(text, 2) for text in texts]
    else:
        log = OpenIELog(openie_root(root), openie_key(cfg), model_key(llm))
        left = [(text, calls_left(text, log, cfg.openie_max_tokens)) for text in texts]
    return sum(n for _, n in left), openie_tokens_left(left, llm)


def build_facts(kg: KnowledgeGraph, source: Source, asked: int) -> dict[str, Any]:
    """The ``index`` step's facts: the graph's, with what this answer paid (OpenIE calls, texts
    embedded per store) set to zero when it did not build the graph."""
    facts = {**kg.facts_of_build, "openie_calls_asked": asked}
    if source != "built":
        facts["embedded"] = dict.fromkeys(NAMESPACES, 0)
    if (why := degraded(kg.facts_of_build)) is not None:
        facts["degraded"] = why if source == "built" else f"{why} (a graph built earlier)"
    return facts


def degraded(facts: dict[str, Any]) -> str | None:
    """Why a graph's build ran degraded (OpenIE replies it could not read, or cut: a server that
    ignored the budget), as the answers over it say it; ``None`` when it did not."""
    bad, cut = facts.get("openie_unreadable", 0), facts.get("openie_capped", 0)
    if not bad and not cut:
        return None
    replies = 2 * facts.get("passages", 0)
    parts = (
        [f"{bad} of {replies} OpenIE replies could not be read (nothing kept of them)"]
        if bad
        else []
    )
    parts += (
        [f"{cut} OpenIE replies over their budget cut (the server ignored max_tokens)"]
        if cut
        else []
    )
    empty = " (an empty graph: passages are ranked densely)" if not facts.get("facts") else ""
    return (
        f"{'; '.join(parts)}; the graph has {facts.get('phrases', 0)} phrases and "
        f"{facts.get('facts', 0)} facts{empty}"
    )


def loaded(key: str) -> LoadedGraph:
    """A graph :func:`graph_for` loaded in this process."""
    return _LOADED[key]


def forget_graphs() -> None:
    """Drop the graphs held in this process (tests; a later question loads from disk)."""
    _LOADED.clear()
