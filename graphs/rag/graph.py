"""Chunked top-N RAG: retrieve, order the chunks, generate.

Defaults are LongBench v1's best retrieval setting (200-word chunks x top-7, about 1,400
words of context; seed 001, Table 5); ``longbench-500x3`` is its other preset. Chunks go
into the prompt in rank order by default (LongBench v1 ``retrieval/pred.py``);
``order="document"`` keeps corpus order (the stronger DOS-RAG baseline), and the
``benchmark`` assembly follows a benchmark's official order where it has one (LongBench
v2 ``--rag`` re-sorts by chunk index).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from langchain_core.language_models import BaseChatModel
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import Runtime

from longctx.graphs.plugin.api import (
    STRATEGIES,
    Calls,
    Chunk,
    CorpusShape,
    Costs,
    ExpectedCost,
    PromptState,
    Retrievals,
    StrategyContext,
    StrategyCosts,
    fill,
    format_chunks,
    generate,
    linear_graph,
    order_hits,
    per_question_plan,
    reply_tokens,
    retrieve,
    retrieved_prompt,
    tokens_of,
    with_rerank,
)
from longctx.graphs.rag.ceiling import RetrievedChunksCeiling
from longctx.graphs.rag.config import RagConfig
from longctx.graphs.rag.presentation import PRESENTATION
from longctx.graphs.rag.prompts import PROMPTS_VERSION, RAG_TEMPLATE
from longctx.retrieval.contract import Question, Step


class RagState(PromptState, total=False):
    """What evolves during one RAG answer."""


#: RAG's compiled graph.
RagGraph = CompiledStateGraph[RagState, StrategyContext[Any], RagState, RagState]


def rag_prompt(question: Question, chunks: list[Chunk], assembly: str) -> tuple[str, str]:
    """The prompt around ``chunks`` (already ordered), and which assembly made it.

    ``assembly="benchmark"`` with a benchmark protocol: its official RAG prompt, or its
    official prompt around the chunk texts joined with nothing (LongBench v1
    ``retrieval/pred.py``: ``"".join(retrieved[:top_k])``). Otherwise our template.
    """
    protocol = question.protocol
    if assembly == "benchmark" and protocol is not None:
        if protocol.rag_prompt is not None:
            return protocol.rag_prompt([c.text for c in chunks]), "benchmark-rag"
        if protocol.prompt is not None:
            return protocol.prompt("".join(c.text for c in chunks)), "benchmark"
    return fill(RAG_TEMPLATE, format_chunks(chunks), question), "ours"


def chunk_order(
    question: Question, order: Literal["document", "rank"], assembly: str
) -> Literal["document", "rank"]:
    """The order chunks go into the prompt: the benchmark's official one under
    ``assembly="benchmark"`` when its protocol names one (LongBench v2: document order, ``c_idx``),
    else ``order``."""
    protocol = question.protocol
    if assembly == "benchmark" and protocol is not None and protocol.rag_order:
        return protocol.rag_order
    return order


def build_prompt(state: RagState, runtime: Runtime[StrategyContext[RagConfig]]) -> dict[str, Any]:
    """Fill the prompt with the hits in the configured (or the benchmark's official) order."""
    cfg = runtime.context.config
    order = chunk_order(state["question"], cfg.order, cfg.assembly)
    ordered = order_hits(state["hits"], order)
    prompt, assembly = rag_prompt(state["question"], [h.chunk for h in ordered], cfg.assembly)
    return {
        "prompt": prompt,
        "official_prompt": assembly != "ours",
        "steps": [Step("build_prompt", order=order, assembly=assembly)],
    }


def rag_costs(
    cfg: RagConfig,
    shape: CorpusShape,
    questions: Sequence[Question],
    *,
    llm: BaseChatModel | None = None,
    window: int | None = None,
) -> Costs:
    """1 call with ``top_k`` chunks (at most the corpus), its template counted from
    :func:`rag_prompt`; typically a short answer."""

    def headed(q: Question) -> bool:  # the benchmark's own prompts join bare chunk texts
        return not (
            cfg.assembly == "benchmark"
            and q.protocol is not None
            and (q.protocol.rag_prompt or q.protocol.prompt) is not None
        )

    span = retrieved_prompt(
        lambda q: rag_prompt(q, [], cfg.assembly)[0],
        strategy="rag",
        template=cfg.assembly,
        questions=questions,
        shape=shape,
        top_k=cfg.top_k,
        chunk_tokens=tokens_of(cfg.chunk_size, cfg.chunk_unit),
        llm=llm,
        headed=headed,
    )
    budget = max(
        (x.answer_budget(cfg.max_new_tokens) for x in questions), default=cfg.max_new_tokens
    )
    bounds = per_question_plan(
        "rag",
        questions,
        calls=1,
        max_calls=1,
        prompt_tokens=span.least,
        max_prompt_tokens=span.most,
        completion_tokens=budget,
        formula="1 call of top_k chunks",
    )
    found = Costs(
        bounds,
        ExpectedCost(Calls(1, (span.least + span.most) / 2, reply_tokens(cfg))),
    )
    # one retrieval a question
    return with_rerank(
        found, cfg, shape, questions, retrievals=Retrievals(least=1, most=1, typical=1), llm=llm
    )


def build_graph(config: RagConfig | None = None) -> RagGraph:
    """START -> retrieve -> build_prompt -> generate -> END."""
    graph: RagGraph
    graph = linear_graph(
        "rag",
        RagState,
        ("retrieve", retrieve),
        ("build_prompt", build_prompt),
        ("generate", generate),
    )
    return graph


STRATEGIES.register(
    "rag",
    build_graph,
    costs=StrategyCosts(rag_costs, always_bounded=True),
    ceiling=RetrievedChunksCeiling(rank=10, retrieve=retrieve, order_hits=order_hits),
    config_cls=RagConfig,
    prompts_version=PROMPTS_VERSION,
    uses_index=True,
    presets={
        "paper": RagConfig(),
        "longbench-200x7": RagConfig(),
        "longbench-500x3": RagConfig(chunk_size=500, top_k=3),
        # seed 000 §4.2: 512-token chunks, query = question + choices, top-N in document order;
        # N=64 (32K tokens of context), where Qwen2.5 and GLM-4-Plus peak in its Fig. 4
        "longbench-v2": RagConfig(chunk_unit="tokens", chunk_size=512, top_k=64, order="document"),
        "document-order": RagConfig(order="document"),
    },
    presentation=PRESENTATION,
    description="Chunked top-N retrieval, then one answer call (LongBench v1: 200 words x 7).",
)
