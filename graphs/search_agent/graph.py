"""BrowseComp-Plus's search agent (texttron/BrowseComp-Plus @ 97c637c
``search_agent/openai_client.py``): the question in the official template, then model turns with
the ``search`` (and ``get_document``) tools until a reply calls none, at most ``max_iterations``
calls, each capped at the conversation's output-token budget less what the replies so far used;
the answer is the reply's "Exact Answer:" line, the documents cited in brackets its evidence.

``START -> ask -> agent -> (tools -> agent)* -> finish -> END``: each model call is an ``agent``
node and each tool round a ``tools`` node, so a checkpointed run resumes at its last finished
round. Requests go through the chat model's tool calling (``bind_tools``; the embedded model's
through llama.cpp's function-calling chat format; the JSON-in-text adapter for a model without
any); docs/protocols.md maps them onto the official
Responses requests.
"""

from __future__ import annotations

import json
import operator
import re
from collections.abc import Mapping, Sequence
from typing import Annotated, Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AnyMessage, BaseMessage, HumanMessage, ToolMessage
from langgraph.graph import END, START, StateGraph, add_messages
from langgraph.runtime import Runtime

from longctx.graphs.plugin.api import (
    STRATEGIES,
    AnswerState,
    BudgetReached,
    CompiledGraph,
    Evidence,
    RetrievalService,
    SingleRun,
    Step,
    StrategyContext,
    StrategyCosts,
    as_text_history,
    chat,
    context_window,
    counted_prompt,
    emit_calls,
    emit_results,
    native_tools_model,
    resolve_tool_mode,
    tokenizer_for,
    with_json_calls,
)
from longctx.graphs.search_agent.ceiling import SearchedDocumentsCeiling
from longctx.graphs.search_agent.config import SearchAgentConfig
from longctx.graphs.search_agent.cost_model import search_agent_costs
from longctx.graphs.search_agent.presentation import PRESENTATION
from longctx.graphs.search_agent.prompts import PROMPTS_VERSION, format_query
from longctx.graphs.search_agent.tools import (
    CorpusSearcher,
    SearchTools,
    SnippetTokenizer,
    snippet_tokenizer,
    texts_of,
)

_TOKENIZERS: dict[str, SnippetTokenizer] = {}


class SearchAgentState(AnswerState, total=False):
    """One question's conversation: the messages, the model calls made, the output tokens they
    used, and what the tools did (queries searched, documents returned and opened)."""

    messages: Annotated[list[AnyMessage], add_messages]
    turns: int
    output_tokens: int
    searched: Annotated[list[str], operator.add]
    retrieved: Annotated[list[str], operator.add]
    opened: Annotated[list[str], operator.add]


Context = Runtime[StrategyContext[SearchAgentConfig]]


def tools_of(context: StrategyContext[SearchAgentConfig]) -> SearchTools:
    """The two tools over the run's index and corpus, as the config sets them."""
    cfg = context.config
    if cfg.snippet_tokenizer not in _TOKENIZERS:
        _TOKENIZERS[cfg.snippet_tokenizer] = snippet_tokenizer(cfg.snippet_tokenizer)
    searcher = CorpusSearcher(context.require_index(), context.corpus, RetrievalService.of(context))
    return SearchTools(
        searcher,
        k=cfg.k,
        snippet_max_tokens=cfg.snippet_max_tokens,
        tokenizer=_TOKENIZERS[cfg.snippet_tokenizer],
        include_get_document=cfg.get_document,
    )


def ask(state: SearchAgentState, runtime: Context) -> dict[str, Any]:
    """The first user turn: the question in the official template."""
    cfg = runtime.context.config
    prompt = format_query(state["question"].render(), cfg.query_template)
    return {
        "messages": [HumanMessage(content=prompt)],
        "turns": 0,
        "output_tokens": 0,
        "steps": [Step("ask", template=cfg.query_template, chars=len(prompt))],
    }


def agent(state: SearchAgentState, runtime: Context) -> dict[str, Any]:
    """One model call with the tools, capped at the output tokens the conversation has left."""
    ctx = runtime.context
    cfg = ctx.config
    turn = state.get("turns", 0) + 1
    cap = cfg.max_tokens - state.get("output_tokens", 0)
    tools = tools_of(ctx).definitions()
    reply, mode, cap = call_model(ctx.llm, list(state.get("messages", [])), tools, cfg, turn, cap)
    used = reply.usage_metadata["output_tokens"] if reply.usage_metadata else 0
    calls = len(reply.tool_calls) + len(reply.invalid_tool_calls)
    emit_calls(reply)
    step = Step(
        "agent", turn=turn, mode=mode, max_tokens=cap, tool_calls=calls, chars=len(reply.text)
    )
    return {
        "messages": [reply],
        "turns": turn,
        "output_tokens": state.get("output_tokens", 0) + used,
        "steps": [step],
    }


def call_model(
    llm: BaseChatModel,
    history: list[BaseMessage],
    tools: list[dict[str, Any]],
    cfg: SearchAgentConfig,
    turn: int,
    cap: int,
) -> tuple[AIMessage, str, int]:
    """One request with ``cap`` output tokens (less where the model's window has less room):
    native tool calls (``tool_choice="auto"``, as the official request; the embedded model's
    through llama.cpp's function-calling chat format), or the tools in the text for a model
    without them. Returns the reply, the mode and the cap sent."""
    native = native_tools_model(llm) if cfg.tool_mode != "json" else None
    mode = "tools" if native is not None else resolve_tool_mode(llm, cfg.tool_mode)
    model = native or llm
    # forced "tools" on a model without tool calling: its error says so
    sent, schemas = (history, tools) if mode == "tools" else (as_text_history(history, tools), [])
    cap = within_window(model, sent, schemas, cap, cfg.context_window)
    reply = chat(
        model,
        sent,
        tools=schemas or None,
        tool_choice="auto" if schemas else None,
        max_tokens=cap,
        temperature=cfg.temperature,
    )
    return (reply if mode == "tools" else with_json_calls(reply, turn)), mode, cap


#: Tokens a chat template adds around each message (role markers), and once (llama.cpp's
#: function-calling preamble, ~110 tokens), beyond what the budget guard counts.
MESSAGE_TOKENS = 8
TEMPLATE_TOKENS = 128


def within_window(
    llm: BaseChatModel,
    messages: list[BaseMessage],
    tools: list[dict[str, Any]],
    cap: int,
    configured: int | None,
) -> int:
    """The output cap the next request may have inside the model's window (``configured``, else
    the one the model reports; none known: ``cap`` unchecked); a request whose prompt alone
    leaves no room (the whole documents ``get_document`` returned) is refused here, before it is
    sent, as a budget stop (:class:`BudgetReached`), not by the server."""
    window = configured or context_window(llm, 0)
    if not window:
        return cap
    text = counted_prompt(messages, {"tools": tools} if tools else None)
    prompt = tokenizer_for(llm).count(text) + MESSAGE_TOKENS * len(messages) + TEMPLATE_TOKENS
    if prompt >= window:
        raise BudgetReached(
            f"budget reached: the model's window of {window:,} tokens (the next request's prompt "
            f"has about {prompt:,})"
        )
    return min(cap, window - prompt)


def _raw_arguments(call: Mapping[str, Any]) -> str:
    """A call's arguments as the model wrote them (a valid call's re-serialised; an invalid one's
    text as sent)."""
    args = call.get("args")
    return args if isinstance(args, str) else json.dumps(args if args is not None else {})


def run_tools(state: SearchAgentState, runtime: Context) -> dict[str, Any]:
    """Run every call of the last reply in order, as the official loop (no bound on calls or
    result length); a failing call answers the official error text."""
    tools = tools_of(runtime.context)
    last = state["messages"][-1]
    assert isinstance(last, AIMessage)
    messages: list[ToolMessage] = []
    steps: list[Step] = []
    found: dict[str, list[str]] = {"searched": [], "retrieved": [], "opened": []}
    # LangChain keeps unreadable calls apart from the readable ones and sends them after them
    # (docs/protocols.md), so they are answered in that order too
    for call in [*last.tool_calls, *last.invalid_tool_calls]:
        name = str(call.get("name") or "")
        result, ok = tools.run(name, _raw_arguments(call))
        status = "success" if ok else "error"
        messages.append(
            ToolMessage(content=result, tool_call_id=str(call["id"]), name=name, status=status)
        )
        noted = _note(name, call.get("args"), result, found) if ok else {}
        steps.append(
            Step(
                "tools",
                turn=state.get("turns", 0),
                tool=name,
                call_id=call["id"],
                args=call.get("args"),
                status=status,
                chars=len(result),
                **noted,
            )
        )
    emit_results(messages)
    return {"messages": messages, "steps": steps, **found}


def _note(name: str, args: Any, result: str, found: dict[str, list[str]]) -> dict[str, Any]:
    """What a call did: the query searched and the documents it returned (the step's
    ``doc_ids``, what the official client records as ``retrieved_docids``), or the one opened
    (the step's ``opened``: the official records no id of a ``get_document``)."""
    args = args if isinstance(args, Mapping) else {}
    if name == "search":
        ids = [str(r["docid"]) for r in json.loads(result)]
        found["searched"].append(str(args.get("query", "")))
        found["retrieved"] += ids
        return {"doc_ids": ids}
    if name == "get_document" and "error" not in json.loads(result):
        found["opened"].append(str(args.get("docid", "")))
        return {"opened": str(args.get("docid", ""))}
    return {}


def after_agent(state: SearchAgentState) -> str:
    """To ``tools`` when the reply calls one (or tried to), else the end."""
    last = state["messages"][-1]
    if isinstance(last, AIMessage) and (last.tool_calls or last.invalid_tool_calls):
        return "tools"
    return "finish"


def after_tools(state: SearchAgentState, runtime: Context) -> str:
    """Back to the model unless the turn limit or the output-token budget is spent."""
    cfg = runtime.context.config
    if state.get("turns", 0) >= cfg.max_iterations:
        return "finish"
    if cfg.max_tokens - state.get("output_tokens", 0) <= 0:
        return "finish"
    return "agent"


_EXACT = re.compile(r"Exact Answer:[ \t]*(.*)", re.IGNORECASE)
_CITED = re.compile(r"\[([^\[\]]*?)\]|【([^【】]*?)】")


def exact_answer(text: str) -> str:
    """The answer on the template's "Exact Answer:" line (the last one; markdown bold around the
    label tolerated), else the whole reply stripped."""
    found = _EXACT.findall(text.replace("**", ""))
    return found[-1].strip() if found else text.strip()


def cited_docids(text: str, known: Sequence[str]) -> list[str]:
    """Document ids cited in brackets (``[12]``, ``[12, 40]``, ``【12】``), as BrowseComp-Plus's
    ``extract_citations_from_response`` reads them, kept when the run saw them (any id, not only
    digits: ours may be names), in order of first citation."""
    seen = set(known)
    cited: list[str] = []
    for a, b in _CITED.findall(text):
        for part in re.split(r"[,;\s]+", a or b):
            if part in seen and part not in cited:
                cited.append(part)
    return cited


def finish(state: SearchAgentState, runtime: Context) -> dict[str, Any]:
    """The answer from the last reply; the cited documents as evidence."""
    cfg = runtime.context.config
    replies = [m for m in state.get("messages", []) if isinstance(m, AIMessage)]
    last = replies[-1] if replies else None
    text = last.text if last is not None else ""
    if last is not None and (last.tool_calls or last.invalid_tool_calls):
        status = "max_iterations" if state.get("turns", 0) >= cfg.max_iterations else "max_tokens"
        text = ""
    else:
        status = "completed"
    texts = texts_of(runtime.context.corpus)
    known = [*state.get("retrieved", []), *state.get("opened", [])]
    cited = cited_docids(text, [d for d in known if d in texts] or list(texts))
    evidence = [Evidence(doc_id=d, title="", text=texts[d]) for d in cited]
    step = Step(
        "finish",
        status=status,
        turns=state.get("turns", 0),
        searched=list(state.get("searched", [])),
        opened=list(state.get("opened", [])),
        cited=cited,
        evidence_read=False,  # the evidence is what it cites; what it read is the tools' doc_ids
    )
    return {"answer": exact_answer(text), "raw": text, "evidence": evidence, "steps": [step]}


def answer_so_far(state: Mapping[str, Any]) -> dict[str, Any]:
    """After a budget stop: the last reply that called no tool, read as :func:`finish` reads it;
    no model call."""
    answers = [
        m for m in state.get("messages", []) if isinstance(m, AIMessage) and not m.tool_calls
    ]
    text = answers[-1].text if answers else ""
    return {"answer": exact_answer(text) if text else "", "raw": text}


def build_graph(config: SearchAgentConfig | None = None) -> CompiledGraph:
    """``START -> ask -> agent -> (tools -> agent)* -> finish -> END``."""
    graph: StateGraph[Any, StrategyContext[Any], Any, Any] = StateGraph(
        SearchAgentState, context_schema=StrategyContext
    )
    graph.add_node("ask", ask)
    graph.add_node("agent", agent)
    graph.add_node("tools", run_tools)
    graph.add_node("finish", finish)
    graph.add_edge(START, "ask")
    graph.add_edge("ask", "agent")
    graph.add_conditional_edges("agent", after_agent, ["tools", "finish"])
    graph.add_conditional_edges("tools", after_tools, ["agent", "finish"])
    graph.add_edge("finish", END)
    return graph.compile(name="search_agent")


STRATEGIES.register(
    "search_agent",
    build_graph,
    costs=StrategyCosts(search_agent_costs, always_bounded=True),
    ceiling=SearchedDocumentsCeiling(),
    presentation=PRESENTATION,
    config_cls=SearchAgentConfig,
    prompts_version=PROMPTS_VERSION,
    uses_index=True,
    run_mode=SingleRun(on_stop=answer_so_far),
    presets={
        "paper": SearchAgentConfig(),
        "get-document": SearchAgentConfig(get_document=True, query_template="QUERY_TEMPLATE"),
    },
    description=(
        "BrowseComp-Plus's search agent: search (k=5, 512-token snippets) and get_document tool "
        "calls until it answers (100 calls at most)."
    ),
)
