"""Self-Route (Li et al., EMNLP 2024): answer with RAG, and only when the model declines, read more.

The RAG prompt carries one extra instruction, "Write unanswerable if the query can not be
answered based on the provided text", so routing costs no extra call. A reply that
declines goes to the full-context strategy when the whole corpus fits the model window
(Li et al.'s route). On 4M-10M-token corpora nothing fits: a middle-truncated 128k prompt
keeps about 3% of 4M tokens, so the declined question goes to a configurable
fallback strategy instead (default ``memagent``, which reads every token); set
``fallback="full_context"`` for the paper's truncate-anyway behaviour.

Graph::

    START -> retrieve -> build_prompt -> generate -> check_answer
        check_answer --answered--> END
        check_answer --declined--> measure_context
        measure_context --fits--> full_context -> END
        measure_context --too big--> fallback -> END

The legs reuse the other strategies' code, reached through the registry: full context's
``parts["prompt"]`` (its template and middle truncation) for the full-context leg, RAG's
``retrieve`` node (on the plug-in surface), and the fallback strategy's own compiled
graph, composed as a subgraph (:mod:`longctx.graphs.self_route.fallback`). A batched fallback
(memagent) is checkpointed on disk like a direct memagent run, under its own thread key,
so a crash in a 2,000-call fallback resumes and a repeated question replays it without calls.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Sequence
from typing import Any, Literal

from langchain_core.language_models import BaseChatModel
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import Runtime

from longctx.graphs.plugin.api import (
    DEFAULT_INSTRUCTION,
    PLACEHOLDER_QUESTION,
    RAG_TEMPLATE,
    STRATEGIES,
    Calls,
    Chunk,
    CorpusShape,
    Costs,
    ExpectedCost,
    PromptSharing,
    Retrievals,
    StrategyContext,
    StrategyCosts,
    fill,
    format_chunks,
    generate,
    order_hits,
    per_question_plan,
    prompt_codec,
    reply_tokens,
    retrieve,
    retrieved_prompt,
    tokens_of,
    with_rerank,
    with_sometimes,
)
from longctx.graphs.self_route.ceiling import SELF_ROUTE_CEILING
from longctx.graphs.self_route.config import SelfRouteConfig
from longctx.graphs.self_route.fallback import fallback_node
from longctx.graphs.self_route.presentation import PRESENTATION
from longctx.graphs.self_route.prompts import PROMPTS_VERSION, UNANSWERABLE_INSTRUCTION
from longctx.graphs.self_route.state import SelfRouteState
from longctx.retrieval.contract import Question, Step

_DECLINE_WORD = re.compile(r"\bun-?answerable\b")
_NEGATIONS = {"not", "never", "isn't", "isnt", "no", "hardly"}
_MARKUP = re.compile(r"[*_`\"“”«»#>\[\]()]")


def find_decline(reply: str) -> str | None:
    """Why ``reply`` counts as declining, or ``None`` when it answers.

    Tolerant of case, markup and punctuation, and of the word inside a sentence ("The
    query is unanswerable from the text."); "not unanswerable" is no decline. An empty
    reply declines too: it answers nothing.
    """
    text = _MARKUP.sub(" ", reply.lower())
    if not text.strip():
        return "empty reply"
    for match in _DECLINE_WORD.finditer(text):
        before = re.findall(r"[a-z']+", text[: match.start()])[-2:]
        if not _NEGATIONS.intersection(before):
            return f"reply says {match.group(0)!r}"
    return None


def build_prompt(
    state: SelfRouteState, runtime: Runtime[StrategyContext[SelfRouteConfig]]
) -> dict[str, Any]:
    """The RAG prompt with the unanswerable instruction after the answer-format instruction."""
    cfg: SelfRouteConfig = runtime.context.config
    return {
        "prompt": route_prompt(
            state["question"], [h.chunk for h in order_hits(state["hits"], cfg.order)]
        )
    }


def route_prompt(question: Question, chunks: Sequence[Chunk]) -> str:
    """RAG's template around ``chunks`` (in order), the unanswerable instruction after the
    answer-format one."""
    instruction = f"{question.instruction or DEFAULT_INSTRUCTION}\n{UNANSWERABLE_INSTRUCTION}"
    return fill(
        RAG_TEMPLATE, format_chunks(chunks), dataclasses.replace(question, instruction=instruction)
    )


def check_answer(state: SelfRouteState) -> dict[str, Any]:
    """Record whether the RAG reply declined; a declined reply's hits are no evidence."""
    reason = find_decline(state.get("raw", ""))
    if reason is None:
        return {
            "declined": False,
            "steps": [Step("check_answer", route="rag", reason="RAG answered")],
        }
    return {
        "declined": True,
        "hits": [],
        "steps": [Step("check_answer", declined=True, reason=reason)],
    }


def after_check(state: SelfRouteState) -> Literal["measure_context", "__end__"]:
    """Declined replies go on to the context check; answers are final."""
    # LangGraph declares END as str, not Literal.
    return "measure_context" if state["declined"] else END  # type: ignore[return-value]


def measure_context(
    state: SelfRouteState, runtime: Runtime[StrategyContext[SelfRouteConfig]]
) -> dict[str, Any]:
    """Build the full-context prompt with ``full_context``'s own function and see whether it was
    cut."""
    ctx = runtime.context
    cfg: SelfRouteConfig = ctx.config
    # full_context's own prompt, lent through the registry
    full_context_prompt = STRATEGIES.get("full_context").parts["prompt"]
    leg = full_context_prompt(ctx.corpus, state["question"], ctx.llm, cfg.full_context())
    window = {"context_window": leg.context_window, "max_input_tokens": leg.max_input_tokens}
    if not leg.truncated:
        tokens = len(prompt_codec(ctx.llm)[0](leg.text))
        why = (
            f"RAG declined; the full-context prompt ({tokens} tokens) fits the "
            f"{leg.max_input_tokens}-token input budget"
        )
        return {
            "fits": True,
            "prompt": leg.text,
            "official_prompt": leg.official,
            "steps": [
                Step(
                    "measure_context",
                    route="full_context",
                    reason=why,
                    prompt_tokens=tokens,
                    **window,
                )
            ],
        }
    why = (
        f"RAG declined; the corpus exceeds the {leg.max_input_tokens}-token input budget, so "
        f"{cfg.fallback} answers"
    )
    return {
        "fits": False,
        "steps": [Step("measure_context", route=cfg.fallback, reason=why, **window)],
    }


def after_measure(state: SelfRouteState) -> Literal["full_context", "fallback"]:
    """The whole corpus when it fits the window, else the fallback strategy."""
    return "full_context" if state["fits"] else "fallback"


#: Self-Route's compiled graph.
SelfRouteGraph = CompiledStateGraph[
    SelfRouteState, StrategyContext[Any], SelfRouteState, SelfRouteState
]

#: The share of questions RAG typically declines (the run plan's assumption: about half).
TYPICAL_DECLINED = 0.5


def self_route_costs(
    cfg: SelfRouteConfig,
    shape: CorpusShape,
    questions: Sequence[Question],
    *,
    llm: BaseChatModel | None = None,
    window: int | None = None,
) -> Costs:
    """1 RAG call; a declined question adds its fallback's cost (full context: 1 call; memagent:
    ceil(T/5000) + 1).

    Typically about half the questions are declined (:data:`TYPICAL_DECLINED`), each running the
    fallback's typical cost.
    """
    rag = retrieved_prompt(
        lambda q: route_prompt(q, []),
        strategy="self_route",
        template="route",
        questions=questions,
        shape=shape,
        top_k=cfg.top_k,
        chunk_tokens=tokens_of(cfg.chunk_size, "words"),
        llm=llm,
    )
    spec = STRATEGIES.get(cfg.fallback)
    sub_cfg = spec.make_config(**dict(cfg.fallback_options))
    one = questions[:1] or [PLACEHOLDER_QUESTION]
    most, usual = (
        spec.costs.halves(sub_cfg, shape=shape, questions=one, llm=llm, window=window)
        if spec.costs is not None
        else (None, None)
    )
    # a budget needs the fallback's bounds, a run plan one half
    if most is None and (usual is None or shape.corpus is not None):
        half = (
            "cost plan"
            if shape.corpus is not None
            else "cost model (its bounds need the corpus, its typical cost is not declared)"
        )
        raise ValueError(
            f"Self-Route's fallback {cfg.fallback!r} has no {half}: costs= on its registration"
        )
    # a plug-in fallback with one half: its typical cost stands in for the bounds the run plan
    # discards, and the other way round
    if usual is not None:
        each = usual.per_question
    else:
        assert most is not None
        each = Calls(most.calls, most.prompt_tokens, most.completion_tokens)
    most_calls = most.max_calls if most is not None else math.ceil(each.calls)
    most_prompt = most.max_prompt_tokens if most is not None else math.ceil(each.prompt_tokens)
    # an agent's plan may have no most
    fallback = "unbounded" if most_calls is None else f"{most_calls:,}"
    bounds = per_question_plan(
        "self_route",
        questions,
        calls=1,
        max_calls=None if most_calls is None else 1 + most_calls,
        prompt_tokens=rag.least,
        max_prompt_tokens=None if most_prompt is None else rag.most + most_prompt,
        completion_tokens=cfg.max_new_tokens,
        formula=f"1 call when RAG answers; + {cfg.fallback} ({fallback}) when it declines",
    )
    typical = Calls(
        1 + TYPICAL_DECLINED * each.calls,
        (rag.least + rag.most) / 2 + TYPICAL_DECLINED * each.prompt_tokens,
        reply_tokens(cfg) + TYPICAL_DECLINED * each.completion_tokens,
    )
    own = with_rerank(
        Costs(bounds, ExpectedCost(typical)),
        cfg,
        shape,
        questions,
        retrievals=Retrievals(least=1, most=1, typical=1),
        llm=llm,
    )
    # the fallback's own rerank calls (a reranking rag / self_ask / pai fallback), on the questions
    # it answers
    return with_sometimes(
        own,
        most=most.rerank if most is not None else None,
        usual=usual.rerank if usual is not None else None,
        share=TYPICAL_DECLINED,
    )


def fallback_shares_corpus(cfg: Any) -> float:
    """The share of questions whose calls start with the corpus: the declined ones (typically
    :data:`TYPICAL_DECLINED`), when the fallback is a strategy that puts the corpus first."""
    spec = STRATEGIES.get(cfg.fallback)
    return (
        TYPICAL_DECLINED * spec.prompt_sharing.share(spec.make_config(**dict(cfg.fallback_options)))
        if spec.prompt_sharing
        else 0.0
    )


def build_graph(config: SelfRouteConfig | None = None) -> SelfRouteGraph:
    """The Self-Route graph (module docstring); the config has checked the fallback and its
    options."""
    graph = StateGraph(SelfRouteState, context_schema=StrategyContext)
    graph.add_node("retrieve", retrieve)
    graph.add_node("build_prompt", build_prompt)
    # generate is typed for any state (a dict), as is full_context below.
    graph.add_node("generate", generate)  # type: ignore[call-overload, unused-ignore]
    graph.add_node("check_answer", check_answer)
    graph.add_node("measure_context", measure_context)
    graph.add_node("full_context", generate)  # type: ignore[call-overload, unused-ignore]
    # a subgraph, or a batched strategy's checkpointed run
    graph.add_node("fallback", fallback_node(config or SelfRouteConfig()))
    graph.add_edge(START, "retrieve")
    graph.add_edge("retrieve", "build_prompt")
    graph.add_edge("build_prompt", "generate")
    graph.add_edge("generate", "check_answer")
    graph.add_conditional_edges("check_answer", after_check)
    graph.add_conditional_edges("measure_context", after_measure)
    graph.add_edge("full_context", END)
    graph.add_edge("fallback", END)
    return graph.compile(name="self_route")


STRATEGIES.register(
    "self_route",
    build_graph,
    costs=StrategyCosts(self_route_costs),
    ceiling=SELF_ROUTE_CEILING,
    config_cls=SelfRouteConfig,
    prompts_version=PROMPTS_VERSION,
    uses_index=True,
    presets={
        "paper": SelfRouteConfig(retriever="contriever"),
        "beyond-window": SelfRouteConfig(fallback="memagent", order="document"),
    },
    presentation=PRESENTATION,
    prompt_sharing=PromptSharing(
        "the corpus text, in the full-context fallback of a declined question",
        share=fallback_shares_corpus,
    ),
    description=(
        "RAG that may answer 'unanswerable'; declined questions get the full context (or "
        "memagent beyond the window, preset beyond-window)."
    ),
)
