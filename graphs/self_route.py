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

The fallback legs reuse the other strategies' code: ``full_context.build_prompt`` (its
template and middle truncation) and ``memagent``'s graph with ``prepare_context`` /
``initial_state`` / ``collect``. A batched fallback (memagent) is checkpointed on disk
like a direct memagent run, under its own thread key, so a crash in a 2,000-call
fallback resumes and a repeated question replays it without calls.
"""

from __future__ import annotations

import dataclasses
import operator
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal, TypedDict

from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime

from graphs import full_context
from graphs.batched import run_batched_graph
from graphs.full_context import FullContextConfig
from graphs.llm import prompt_codec
from graphs.nodes import generate
from graphs.prompts import DEFAULT_INSTRUCTION, RAG_TEMPLATE, fill, format_chunks
from graphs.rag import RetrievalSettings, order_hits, retrieve
from graphs.registry import STRATEGIES, Strategy, register_strategy
from graphs.types import Question, StrategyContext
from retrieval import Hit, default_cache_dir

PROMPTS_VERSION = 1

#: Li et al. 2024 (verbatim), appended after the answer-format instruction.
UNANSWERABLE_INSTRUCTION = """Write unanswerable if the query can not be answered based on the provided text."""

_DECLINE_WORD = re.compile(r"\bun-?answerable\b")
_NEGATIONS = {"not", "never", "isn't", "isnt", "no", "hardly"}
_MARKUP = re.compile(r"[*_`\"“”«»#>\[\]()]")


@dataclass(frozen=True, kw_only=True)
class SelfRouteConfig(RetrievalSettings):
    """Self-Route with Li et al.'s retrieval defaults and a fallback for corpora beyond the window.

    Attributes:
        order: Order of the retrieved chunks in the prompt (see ``rag``).
        max_new_tokens / temperature: Budget and sampling of every answer call.
        context_window / default_context_window / prompt_reserve_tokens: The full-context
            leg's window, as in :class:`~graphs.full_context.FullContextConfig`.
        fallback: Strategy for declined questions whose corpus exceeds the window.
        fallback_options: Config fields of the fallback strategy (e.g. ``{"chunk_tokens": 4000}``).
    """

    chunk_size: int = field(default=300, metadata={"source": "Li et al. 2024 (arXiv 2407.16833), setup: 300-word chunks"})
    top_k: int = field(default=5, metadata={"source": "Li et al. 2024 (arXiv 2407.16833), setup: top-5 chunks"})
    order: Literal["document", "rank"] = field(default="document", metadata={"source": "LongBench v2 pred.py --rag: sort by c_idx"})
    max_new_tokens: int = field(default=128, metadata={"source": "LongBench v2 pred.py max_tokens=128"})
    temperature: float = 0.0
    context_window: int | None = None
    default_context_window: int = field(default=128_000, metadata={"source": "LongBench v2 model2maxlen: 120000 for 128k models"})
    prompt_reserve_tokens: int = 64
    fallback: str = field(default="memagent", metadata={"source": "ours: full context is impossible at 4M-10M tokens"})
    fallback_options: Mapping[str, Any] = field(default_factory=dict)

    def full_context(self) -> FullContextConfig:
        """The config of the full-context leg (same window, answer budget and sampling)."""
        return FullContextConfig(
            context_window=self.context_window,
            default_context_window=self.default_context_window,
            max_new_tokens=self.max_new_tokens,
            prompt_reserve_tokens=self.prompt_reserve_tokens,
            temperature=self.temperature,
        )


class SelfRouteState(TypedDict, total=False):
    """What evolves during one Self-Route answer."""

    question: Question
    hits: list[Hit]
    prompt: str
    raw: str
    answer: str
    declined: bool
    fits: bool
    steps: Annotated[list[dict], operator.add]


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


def build_prompt(state: SelfRouteState, runtime: Runtime[StrategyContext]) -> dict:
    """The RAG prompt with the unanswerable instruction after the answer-format instruction."""
    cfg: SelfRouteConfig = runtime.context.config
    question = state["question"]
    instruction = f"{question.instruction or DEFAULT_INSTRUCTION}\n{UNANSWERABLE_INSTRUCTION}"
    chunks = [h.chunk for h in order_hits(state["hits"], cfg.order)]
    return {"prompt": fill(RAG_TEMPLATE, format_chunks(chunks), dataclasses.replace(question, instruction=instruction))}


def check_answer(state: SelfRouteState) -> dict:
    """Record whether the RAG reply declined; a declined reply's hits are no evidence."""
    reason = find_decline(state.get("raw", ""))
    if reason is None:
        return {"declined": False, "steps": [{"node": "route", "route": "rag", "reason": "RAG answered"}]}
    return {"declined": True, "hits": [], "steps": [{"node": "check_answer", "declined": True, "reason": reason}]}


def after_check(state: SelfRouteState) -> Literal["measure_context", "__end__"]:
    """Declined replies go on to the context check; answers are final."""
    return "measure_context" if state["declined"] else END


def measure_context(state: SelfRouteState, runtime: Runtime[StrategyContext]) -> dict:
    """Build the full-context prompt with ``full_context``'s own code and see whether it was cut."""
    ctx = runtime.context
    cfg: SelfRouteConfig = ctx.config
    leg = full_context.build_prompt(state, Runtime(context=dataclasses.replace(ctx, config=cfg.full_context())))
    fc = leg["steps"][0]
    fits = not fc["truncated"]
    budget = fc["max_input_tokens"]
    if fits:
        tokens = len(prompt_codec(ctx.llm)[0](leg["prompt"]))
        why = f"RAG declined; the full-context prompt ({tokens} tokens) fits the {budget}-token input budget"
        step = {"node": "route", "route": "full_context", "reason": why, "prompt_tokens": tokens}
        return {"fits": True, "prompt": leg["prompt"], "steps": [{**step, "context_window": fc["context_window"], "max_input_tokens": budget}]}
    why = f"RAG declined; the corpus exceeds the {budget}-token input budget, so {cfg.fallback} answers"
    step = {"node": "route", "route": cfg.fallback, "reason": why, "context_window": fc["context_window"], "max_input_tokens": budget}
    return {"fits": False, "steps": [step]}


def after_measure(state: SelfRouteState) -> Literal["full_context", "fallback"]:
    """The whole corpus when it fits the window, else the fallback strategy."""
    return "full_context" if state["fits"] else "fallback"


def fallback(state: SelfRouteState, runtime: Runtime[StrategyContext], config: RunnableConfig) -> dict:
    """Answer with the fallback strategy's own graph, under this run's callbacks (usage counts)."""
    ctx = runtime.context
    cfg: SelfRouteConfig = ctx.config
    spec = STRATEGIES.get(cfg.fallback)
    sub_cfg = spec.make_config(**dict(cfg.fallback_options))
    if spec.batched:
        fields, steps = _run_batched_leg(spec, sub_cfg, state["question"], ctx, config)
    else:
        index = _index_for(spec, sub_cfg, ctx)
        sub_ctx = StrategyContext(llm=ctx.llm, config=sub_cfg, corpus=ctx.corpus, index=index, cache_dir=ctx.cache_dir)
        fields = spec.build_graph(sub_cfg).invoke({"question": state["question"], "steps": []}, context=sub_ctx, config=config)
        steps = fields.get("steps", [])
    return {"raw": fields["raw"], "answer": fields["answer"], "steps": [{**s, "leg": spec.name} for s in steps]}


def _index_for(spec: Strategy, sub_cfg: Any, ctx: StrategyContext):
    """The fallback's index: ours when its retrieval settings match, else built (and cached)."""
    if not spec.uses_index:
        return None
    if ctx.index is not None and sub_cfg.retriever == ctx.config.retriever and sub_cfg.chunking() == ctx.config.chunking():
        if dict(sub_cfg.retriever_options) == dict(ctx.config.retriever_options):
            return ctx.index
    return sub_cfg.build_index(ctx.corpus, cache_dir=ctx.cache_dir)


def _run_batched_leg(spec: Strategy, sub_cfg: Any, question: Question, ctx: StrategyContext, config: RunnableConfig):
    """Run a batched strategy (memagent) for one question, checkpointed as a direct run would be.

    The sub-run has a thread id of its own, so LangGraph treats it as a root run with its
    own checkpointer rather than a checkpoint-less child of ours, and it keeps our
    callbacks, so the usage tracker of ``answer()`` counts every call.
    """
    run = run_batched_graph(
        spec,
        sub_cfg,
        [question],
        ctx.llm,
        ctx.corpus,
        folder=(ctx.cache_dir or default_cache_dir()) / "self_route",
        key_prefix=f"self_route>{spec.name}",
        callbacks=config.get("callbacks"),
    )
    fields = run.module.collect(run.final, 0)
    head = {"node": "fallback", "strategy": spec.name, "chunks": run.final.get("n_chunks"), "resumed_from": run.resumed_from, "replayed": run.replayed}
    return fields, [head, *run.steps[0], {"node": "final_answer", "memory_cuts": fields.get("memory_cuts", 0)}]


def build_graph(config: SelfRouteConfig | None = None):
    """The Self-Route graph (module docstring); checks the fallback strategy and its options first."""
    cfg = config or SelfRouteConfig()
    if cfg.fallback == "self_route":
        raise ValueError("self_route cannot be its own fallback; use 'memagent' or 'full_context'")
    STRATEGIES.get(cfg.fallback).make_config(**dict(cfg.fallback_options))  # unknown names raise before any call
    graph = StateGraph(SelfRouteState, context_schema=StrategyContext)
    graph.add_node("retrieve", retrieve)
    graph.add_node("build_prompt", build_prompt)
    graph.add_node("generate", generate)
    graph.add_node("check_answer", check_answer)
    graph.add_node("measure_context", measure_context)
    graph.add_node("full_context", generate)
    graph.add_node("fallback", fallback)
    graph.add_edge(START, "retrieve")
    graph.add_edge("retrieve", "build_prompt")
    graph.add_edge("build_prompt", "generate")
    graph.add_edge("generate", "check_answer")
    graph.add_conditional_edges("check_answer", after_check)
    graph.add_conditional_edges("measure_context", after_measure)
    graph.add_edge("full_context", END)
    graph.add_edge("fallback", END)
    return graph.compile(name="self_route")


register_strategy(
    Strategy(
        name="self_route",
        config_cls=SelfRouteConfig,
        build_graph=build_graph,
        uses_index=True,
        description="RAG that may answer 'unanswerable'; declined questions get the full context, or memagent beyond the window.",
    )
)
