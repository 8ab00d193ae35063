"""HippoRAG 2 (Gutierrez et al., 2025): a graph of phrases and passages from OpenIE, searched by
Personalized PageRank seeded with the facts a recognition-memory call keeps.

START -> index -> recognize -> ppr -> build_prompt -> generate -> END

``index`` loads the corpus's graph from the cache or builds it (index-time work: its OpenIE calls
count in ``Usage.index_*`` of the answer that built it); ``recognize`` links the question to its
``linking_top_k`` nearest facts and asks the filter which of them matter; ``ppr`` ranks the passages
(PPR from the kept facts' phrases and every passage's dense score, or the dense ranking when no fact
is kept); the answer call reads the ``qa_top_k`` best passages in our RAG prompt, or with
``qa_prompt="paper"`` in the official QA request.
"""

from __future__ import annotations

import time
from typing import Any, cast

import numpy as np
from langgraph.runtime import Runtime

from longctx.graphs.hipporag import prompts as P
from longctx.graphs.hipporag.build import (
    build_facts,
    embedder_for,
    flattens,
    graph_for,
    index_calls_left,
    loaded,
)
from longctx.graphs.hipporag.ceiling import HIPPORAG_CEILING
from longctx.graphs.hipporag.config import HippoRAGConfig
from longctx.graphs.hipporag.cost_model import hipporag_costs
from longctx.graphs.hipporag.presentation import PRESENTATION
from longctx.graphs.hipporag.requests import (
    as_langchain,
    filter_messages,
    qa_answer,
    qa_turns,
    qa_user_turn,
)
from longctx.graphs.hipporag.retrieve import (
    candidate_facts,
    fact_scores,
    kept_facts,
    parse_filter,
    rank_passages,
)
from longctx.graphs.plugin.api import (
    MAP_ON_RAY,
    RAG_TEMPLATE,
    STRATEGIES,
    CompiledGraph,
    Hit,
    Need,
    PromptState,
    StrategyContext,
    StrategyCosts,
    budget_kwargs,
    dimension_error,
    embedder_needs,
    fill,
    format_chunks,
    generate,
    linear_graph,
    query_vector,
    report_index_seconds,
    source_of,
    text_of,
)
from longctx.retrieval.contract import Step

Ctx = Runtime[StrategyContext[HippoRAGConfig]]


class HippoRAGState(PromptState, total=False):
    """What evolves during one HippoRAG answer (the graph itself stays in the process's cache, by
    ``graph``)."""

    graph: str
    query: list[float]
    facts: list[list[str]]
    fact_scores: list[float]
    passages: list[int]


def index(state: HippoRAGState, runtime: Ctx) -> dict[str, Any]:
    """Load or build the graph (index-time work, paid by the first answer over the corpus: its
    wall seconds, OpenIE to the graph on disk, are that answer's ``Usage.index_seconds``)."""
    started = time.perf_counter()
    key, entry, source, asked = graph_for(runtime.context)
    if source == "built":
        report_index_seconds(time.perf_counter() - started)
    facts = build_facts(entry.kg, source, asked)
    return {"graph": key, "steps": [Step("index", source=source, key=key[:16], **facts)]}


def recognize(state: HippoRAGState, runtime: Ctx) -> dict[str, Any]:
    """The question's ``linking_top_k`` nearest facts, then the recognition-memory call's choice
    among them (no call without facts)."""
    cfg, llm = runtime.context.config, runtime.context.llm
    kg = loaded(state["graph"]).kg
    question = state["question"].render()
    emb = embedder_for(cfg)
    query = query_vector(emb, question, flatten=flattens(cfg)).astype(np.float32)
    stored = kg.passage_vectors.shape[-1] if kg.passage_vectors.size else query.size
    if query.shape != (stored,):
        raise dimension_error(source_of(emb), query.size, stored)
    query /= max(float(np.linalg.norm(query)), 1e-12)
    scores = fact_scores(kg, query)
    picked = candidate_facts(scores, cfg.linking_top_k) if len(scores) else []
    candidates = [kg.facts[i] for i in picked]
    kept: list[int] = []
    if candidates:
        turns = as_langchain(filter_messages(state["question"].render(), candidates))
        reply = text_of(
            llm.invoke(
                turns, **budget_kwargs(llm, cfg.filter_max_tokens), temperature=cfg.temperature
            )
        )
        kept = kept_facts(parse_filter(reply), candidates, cfg.linking_top_k)
    facts = [list(candidates[k]) for k in kept]
    step = Step("recognize", candidates=[list(f) for f in candidates], kept=facts)
    return {
        "query": query.tolist(),
        "facts": facts,
        "fact_scores": [float(scores[picked[k]]) for k in kept],
        "steps": [step],
    }


def ppr(state: HippoRAGState, runtime: Ctx) -> dict[str, Any]:
    """Passages ranked by PPR from the kept facts' phrases and the dense scores, or densely when no
    fact was kept; the best ``qa_top_k`` as hits."""
    cfg = runtime.context.config
    entry = loaded(state["graph"])
    kg, query = entry.kg, np.asarray(state["query"], dtype=np.float32)
    facts = [(f[0], f[1], f[2]) for f in state["facts"]]
    r = rank_passages(
        kg,
        entry.graph,
        query,
        facts,
        state["fact_scores"],
        link_top_k=cfg.linking_top_k,
        passage_node_weight=cfg.passage_node_weight,
        damping=cfg.damping,
    )
    order, ranked, linked, mode = r.order, r.scores, r.linked, r.mode
    order, ranked = order[: cfg.retrieval_top_k], ranked[: cfg.retrieval_top_k]
    hits = [
        Hit(entry.chunks[int(j)], float(score), rank)
        for rank, (j, score) in enumerate(zip(order[: cfg.qa_top_k], ranked))
    ]
    top = [
        {"passage": int(j), "doc_id": entry.chunks[int(j)].doc_id, "score": round(float(x), 6)}
        for j, x in zip(order[: cfg.qa_top_k], ranked)
    ]
    step = Step(
        "ppr", mode=mode, linked=[[p, round(w, 6)] for p, w in linked], top=top, ranked=len(order)
    )
    return {"hits": hits, "passages": [int(j) for j in order[: cfg.qa_top_k]], "steps": [step]}


def build_prompt(state: HippoRAGState, runtime: Ctx) -> dict[str, Any]:
    """The passages in our RAG prompt, or the official QA turn (``Wikipedia Title: `` passages, the
    question, ``Thought: ``)."""
    cfg = runtime.context.config
    chunks = [h.chunk for h in state["hits"]]
    if cfg.qa_prompt == "paper":
        texts = [loaded(state["graph"]).kg.passages[j] for j in state["passages"]]
        prompt = qa_user_turn(texts, state["question"].render())
    else:
        prompt = fill(RAG_TEMPLATE, format_chunks(chunks), state["question"])
    return {
        "prompt": prompt,
        "official_prompt": False,
        "steps": [Step("build_prompt", qa_prompt=cfg.qa_prompt, passages=len(chunks))],
    }


def answer(state: HippoRAGState, runtime: Ctx) -> dict[str, Any]:
    """The answer call: the shared ``generate`` for our prompt; for ``paper`` the official QA
    messages, the answer after ``Answer:``."""
    cfg, llm = runtime.context.config, runtime.context.llm
    if cfg.qa_prompt != "paper":
        return generate(state, cast(Runtime[StrategyContext[Any]], runtime))
    raw = text_of(
        llm.invoke(
            as_langchain(qa_turns(state["prompt"])),
            **budget_kwargs(llm, cfg.max_new_tokens),
            temperature=cfg.temperature,
        )
    )
    return {
        "raw": raw,
        "answer": qa_answer(raw),
        "steps": [Step("generate", max_new_tokens=cfg.max_new_tokens, temperature=cfg.temperature)],
    }


def needs(cfg: HippoRAGConfig) -> tuple[Need, ...]:
    """What a run imports from extras: its embedder's packages, igraph for PPR, FAISS for a FAISS
    synonymy search."""
    faiss = (Need("faiss", "dense", "HippoRAG's FAISS synonymy search"),)
    return (
        *embedder_needs(cfg.embedder),
        Need("igraph", "hipporag", "HippoRAG's Personalized PageRank"),
        *(faiss if cfg.synonymy_knn != "dense" else ()),
    )


@STRATEGIES.register(
    "hipporag",
    costs=StrategyCosts(hipporag_costs, always_bounded=True),
    ceiling=HIPPORAG_CEILING,
    config_cls=HippoRAGConfig,
    prompts_version=P.PROMPTS_VERSION,
    uses_index=False,
    presets={"paper": HippoRAGConfig(qa_prompt="paper")},
    presentation=PRESENTATION,
    ray_stage=MAP_ON_RAY,  # its OpenIE (map_executor="ray")
    needs=needs,
    index_calls=index_calls_left,
    description=(
        "HippoRAG 2: an OpenIE graph of phrases and passages built once per corpus, facts "
        "filtered by a recognition call, PPR, one answer call."
    ),
)
def build_graph(config: HippoRAGConfig | None = None) -> CompiledGraph:
    """START -> index -> recognize -> ppr -> build_prompt -> generate -> END."""
    return linear_graph(
        "hipporag",
        HippoRAGState,
        ("index", index),
        ("recognize", recognize),
        ("ppr", ppr),
        ("build_prompt", build_prompt),
        ("generate", answer),
    )
