"""Recursive Language Models as a LangGraph graph: ``start`` opens the REPL with the corpus as
``context``, each ``turn`` node is one root turn (the model's reply, its ```repl``` blocks run, the
answer checked), ``default_answer`` asks once more when the turns run out, ``finish`` closes the
REPL. Sub-calls (``llm_query``, ``rlm_query`` children and their own turns) run inside a turn as
model calls named by depth and turn (``rlm llm_query depth=1 turn=3``), so a trace nests them.

The loop itself is :mod:`longctx.graphs.rlm.engine`; the REPL of a run lives here, by session id,
from ``start`` to ``finish`` (a run that fails or is stopped closes it on the way out).
"""

from __future__ import annotations

import dataclasses
import functools
import math
import threading
import uuid
from collections.abc import Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.runnables import RunnableConfig
from langgraph.config import get_config
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime

from longctx.graphs.plugin.api import (
    PLACEHOLDER_QUESTION,
    SEAM_TOKENS,
    STRATEGIES,
    AnswerState,
    Calls,
    CompiledGraph,
    CorpusShape,
    Costs,
    ExpectedCost,
    RetrievalService,
    SandboxLimits,
    StrategyContext,
    StrategyCosts,
    context_window,
    per_question_plan,
    prompt_tokens,
    repl_factory,
)
from longctx.graphs.rlm.ceiling import RLM_CEILING
from longctx.graphs.rlm.config import RlmConfig
from longctx.graphs.rlm.engine import Runner, Session, Settings
from longctx.graphs.rlm.presentation import PRESENTATION
from longctx.graphs.rlm.prompts import PROMPTS_VERSION
from longctx.graphs.rlm.protocol import first_messages, turn_prompt
from longctx.retrieval.contract import Corpus, Question, Step

#: The window a plan assumes for a model that reports none.
DEFAULT_WINDOW = 128_000
#: Characters per sub-call the official prompt suggests ("~100K characters per prompt").
SUB_CALL_CHARS = 100_000
#: Root turns a typical run takes (ours: probe, chunk, batch, aggregate, answer).
TYPICAL_TURNS = 5

SEARCH_DESCRIPTION = (
    "search(query: str, k: int = 5) -> list[dict]: the k best passages of the corpus for "
    "query, each {'doc_id', 'text', 'score'}"
)

_SESSIONS: dict[str, Session] = {}
_LOCK = threading.Lock()


class RlmState(AnswerState, total=False):
    """What evolves during one RLM answer: the session (its REPL held in this process) and
    whether the root has answered."""

    session: str
    final: str | None
    turns: int


def settings_of(cfg: RlmConfig) -> Settings:
    """The engine's settings of a config."""
    return Settings(
        protocol=cfg.protocol,
        max_iterations=cfg.max_iterations,
        max_depth=cfg.max_depth,
        max_concurrent_subcalls=cfg.max_concurrent_subcalls,
        batch_concurrency=cfg.batch_concurrency,
        orchestrator=cfg.orchestrator,
        sub_calls=cfg.sub_calls,
        max_sub_calls_per_turn=cfg.max_sub_calls_per_turn,
        max_new_tokens=cfg.max_new_tokens,
        sub_max_new_tokens=cfg.sub_max_new_tokens,
        temperature=cfg.temperature,
        limits=SandboxLimits(
            cpu_seconds=cfg.cpu_seconds,
            memory_bytes=cfg.memory_mb * 1024**2,
            output_chars=cfg.output_chars,
        ),
    )


def corpus_context(corpus: Corpus, form: str) -> str | list[str]:
    """The corpus as the REPL's ``context``: each document (its title line, then its text) in a
    list, or all of them as one string."""
    docs = [f"{d.title}\n{d.text}" if d.title else d.text for d in corpus.documents]
    return docs if form == "documents" else "\n\n".join(docs)


def root_prompt(question: Question) -> str:
    """What the root model is asked (the official ``root_prompt``): the question with its lettered
    choices, then the benchmark's output-format instruction when it sets one."""
    text = question.render()
    return f"{text}\n\n{question.instruction}" if question.instruction else text


def sub_model_of(llm: BaseChatModel, name: str | None) -> BaseChatModel | None:
    """The root model with another model name (the same server), or ``None`` for the root."""
    if name is None:
        return None
    for field in ("model_name", "model"):
        if field in type(llm).model_fields:
            return llm.model_copy(update={field: name})
    raise ValueError(f"sub_model={name!r}: {type(llm).__name__} has no model name to change")


def _search_of(ctx: StrategyContext[RlmConfig]) -> Any:
    cfg = ctx.config
    index = ctx.index or RetrievalService.of(ctx).build_index(ctx.corpus)

    def search(query: str, k: int = cfg.top_k) -> list[dict[str, Any]]:
        service = RetrievalService(
            settings=dataclasses.replace(cfg, top_k=max(1, int(k))), cache_dir=ctx.cache_dir
        )
        return [
            {"doc_id": h.chunk.doc_id, "text": h.chunk.text, "score": float(h.score)}
            for h in service.retrieve(index, str(query))
        ]

    return search


def _open(ctx: StrategyContext[RlmConfig], question: Question, config: RunnableConfig) -> Session:
    """A new RLM over the run's corpus: its runner (models, settings, tools) and REPL."""
    cfg = ctx.config
    runner = Runner(
        ctx.llm,
        settings_of(cfg),
        repl_factory(cfg.repl),
        sub_llm=sub_model_of(ctx.llm, cfg.sub_model),
        search=_search_of(ctx) if cfg.tools == "search" else None,
        search_description=SEARCH_DESCRIPTION,
        config=config,
    )
    return Session(runner, corpus_context(ctx.corpus, cfg.context_form), root_prompt(question))


def _session(state: RlmState, runtime: Runtime[StrategyContext[RlmConfig]]) -> Session:
    """The run's session; after a resume in a new process (or a stopped turn), a new one brought
    to the last finished turn by replaying the finished turns (:meth:`Session.replay`)."""
    config = get_config()
    with _LOCK:
        session = _SESSIONS.get(state["session"])
    if session is None:
        session = _open(runtime.context, state["question"], config)
        try:
            session.replay(
                [s for s in state.get("steps", []) if s.get("node") == "turn" and not s["depth"]]
            )
        except BaseException:
            session.close()
            raise
        with _LOCK:
            _SESSIONS[state["session"]] = session
    session.runner.config = config
    return session


def _close(session_id: str) -> None:
    with _LOCK:
        session = _SESSIONS.pop(session_id, None)
    if session is not None:
        session.close()


def start(state: RlmState, runtime: Runtime[StrategyContext[RlmConfig]]) -> dict[str, Any]:
    """Open the REPL with the corpus as ``context`` (loaded once) and the first messages."""
    cfg = runtime.context.config
    session = _open(runtime.context, state["question"], get_config())
    session_id = uuid.uuid4().hex
    with _LOCK:
        _SESSIONS[session_id] = session
    context = corpus_context(runtime.context.corpus, cfg.context_form)
    step = Step(
        "start",
        repl=cfg.repl,
        protocol=cfg.protocol,
        context_type="str" if isinstance(context, str) else "list",
        context_chars=sum(len(c) for c in context) if isinstance(context, list) else len(context),
        documents=len(runtime.context.corpus.documents),
    )
    return {"session": session_id, "final": None, "turns": 0, "steps": [step]}


def turn(state: RlmState, runtime: Runtime[StrategyContext[RlmConfig]]) -> dict[str, Any]:
    """One root turn: the reply, its blocks run in order, the answer checked."""
    try:
        facts = _session(state, runtime).step()
    except BaseException:
        _close(state["session"])
        raise
    step = Step("turn", **facts)  # streamed as the node's update (its sub-calls live, engine)
    return {"final": facts["final"], "turns": facts["turn"], "steps": [step]}


def default_answer(state: RlmState, runtime: Runtime[StrategyContext[RlmConfig]]) -> dict[str, Any]:
    """The turns ran out: ask for the answer from the history (``RLM._default_answer``)."""
    try:
        reply = _session(state, runtime).default_answer()
    except BaseException:
        _close(state["session"])
        raise
    return {"final": reply, "steps": [Step("default_answer", reply=reply)]}


def finish(state: RlmState) -> dict[str, Any]:
    """Close the REPL; the answer is the final answer's text."""
    _close(state["session"])
    final = state.get("final") or ""
    return {"answer": final, "raw": final, "steps": [Step("finish", turns=state.get("turns", 0))]}


def _after_turn(state: RlmState, runtime: Runtime[StrategyContext[RlmConfig]]) -> str:
    if state.get("final") is not None:
        return "finish"
    if state.get("turns", 0) >= runtime.context.config.max_iterations:
        return "default_answer"
    return "turn"


# -- cost model ----------------------------------------------------------------------------------


def most_calls(cfg: RlmConfig) -> int:
    """Requests of one RLM at most: each turn's reply and its sub-calls (each a child RLM at
    ``max_depth`` 2, itself bounded so), then the default answer."""
    child = most_calls(dataclasses.replace(cfg, max_depth=1)) if cfg.max_depth >= 2 else 1
    per_turn = 1 + (cfg.max_sub_calls_per_turn * child if cfg.sub_calls else 0)
    return cfg.max_iterations * per_turn + 1


def _first_prompt(cfg: RlmConfig, question: Question, documents: int, chars: int) -> str:
    context: Any = [""] * max(documents, 1) if cfg.context_form == "documents" else ""
    tools = {"search": SEARCH_DESCRIPTION} if cfg.tools == "search" else {}
    messages = first_messages(
        cfg.protocol, context, root_prompt(question), tools=tools, orchestrator=cfg.orchestrator
    )
    messages.append(turn_prompt(cfg.protocol, 0, root_prompt(question), cfg.max_iterations))
    return "\n".join(m["content"] for m in messages) + str(chars)


def rlm_costs(
    cfg: RlmConfig,
    shape: CorpusShape,
    questions: Sequence[Question],
    *,
    llm: BaseChatModel | None = None,
    window: int | None = None,
) -> Costs:
    """1 to ``max_iterations x (1 + max_sub_calls_per_turn x child) + 1`` calls; each prompt at
    most the window (the root's history grows by a reply and its REPL output per turn; a
    sub-call's prompt is what the code writes). The least: the first turn answers, its prompt
    the system prompt, the context's metadata and the question. Typically ``TYPICAL_TURNS``
    root turns and one sub-call per ~100K characters of the corpus."""
    window = window or (context_window(llm, DEFAULT_WINDOW) if llm is not None else DEFAULT_WINDOW)
    chars = shape.tokens * 4
    bases = [
        prompt_tokens(
            "rlm",
            f"{cfg.protocol}:{cfg.orchestrator}:{cfg.tools}:{cfg.context_form}",
            functools.partial(_first_prompt, cfg, q, shape.documents, chars),
            llm,
            q,
        )
        for q in questions or [PLACEHOLDER_QUESTION]
    ]
    least = max(0, min(bases) - 4 * SEAM_TOKENS)
    most = most_calls(cfg)
    bounds = per_question_plan(
        "rlm",
        questions,
        calls=1,
        max_calls=most,
        prompt_tokens=least,
        max_prompt_tokens=most * window,
        # no answer budget sent (the official's): a reply is bounded by the window only
        completion_tokens=cfg.max_new_tokens or window,
        formula=(
            f"1 to {most} calls: max_iterations {cfg.max_iterations} x (1 + "
            f"{cfg.max_sub_calls_per_turn} sub-calls, depth {cfg.max_depth}) + 1; each <= window"
        ),
    )
    subs = min(math.ceil(chars / SUB_CALL_CHARS), most - 1) if cfg.sub_calls else 0
    turns = min(TYPICAL_TURNS, cfg.max_iterations, most - subs)
    history = sum(range(turns)) * 2 * SEAM_TOKENS * 8
    typical = Calls(
        turns + subs,
        min(turns * max(bases) + history + shape.tokens, (turns + subs) * window),
        turns * 256 + subs * 64,
    )
    return Costs(bounds, ExpectedCost(typical))


@STRATEGIES.register(
    "rlm",
    costs=StrategyCosts(rlm_costs, always_bounded=True),
    ceiling=RLM_CEILING,
    config_cls=RlmConfig,
    prompts_version=PROMPTS_VERSION,
    uses_index=False,
    presets={
        "paper": RlmConfig(protocol="final"),
        "codeact_bm25": RlmConfig(sub_calls=False, tools="search", retriever="bm25"),
    },
    presentation=PRESENTATION,
    description=(
        "Recursive Language Models (alexzhang13/rlm): the corpus is a variable in a Python REPL; "
        "the root model writes code that reads it and makes sub-calls (llm_query, rlm_query), "
        "turn by turn, up to 30 turns."
    ),
)
def build_graph(config: RlmConfig | None = None) -> CompiledGraph:
    """``start`` -> ``turn`` (repeated until an answer or ``max_iterations``) ->
    [``default_answer``] -> ``finish``."""
    cfg = config or RlmConfig()
    graph = StateGraph(RlmState, context_schema=StrategyContext)
    graph.add_node("start", start)
    graph.add_node("turn", turn)
    graph.add_node("default_answer", default_answer)
    graph.add_node("finish", finish)
    graph.add_edge(START, "start")
    graph.add_edge("start", "turn")
    graph.add_conditional_edges("turn", _after_turn, ["turn", "default_answer", "finish"])
    graph.add_edge("default_answer", "finish")
    graph.add_edge("finish", END)
    return graph.compile(name="rlm").with_config(recursion_limit=2 * cfg.max_iterations + 10)
