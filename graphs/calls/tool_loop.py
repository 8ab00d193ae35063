"""One reusable tool loop for agentic strategies: a LangGraph subgraph that calls the model
(:func:`longctx.graphs.calls.llm.chat`), runs the tools it asks for and feeds the results back,
until it answers.

``ToolLoop(tools, max_turns=6).build()`` compiles ``START -> agent -> (tools -> agent)* -> END``:

- **agent** sends the history with the tools (natively, or described in the system text for a
  model without tool calling: :mod:`longctx.graphs.calls.tool_json`) and appends the reply;
- **routing**: LangGraph's ``tools_condition`` (to ``tools`` when the reply calls one), and to
  ``tools`` too when its only calls are malformed, so their error goes back to the model;
- **tools** runs the calls with LangGraph's ``ToolNode``: at most ``max_calls_per_turn`` of a turn,
  each result cut to ``max_result_chars``; a tool that raises, an unknown tool, invalid arguments
  and calls over the bound come back to the model as ``ToolMessage`` errors (``status="error"``),
  never raised; a budget stop (:class:`~graphs.metering.budget.BudgetReached`) raised inside a tool
  is not a tool error and stops the run;
- **max_turns**: the model calls that may call tools; when the last of them still calls one,
  the tools run and one more call, without tools and with :data:`FINAL_TURN_PROMPT`, makes the
  answer (smolagents' final answer after ``max_steps``). A loop makes at most ``max_turns + 1``
  model calls.

Every model turn writes a ``Step("agent", turn, mode, final, tool_calls, chars)`` and every tool
call a ``Step("tools", turn, tool, call_id, args, status, chars)``, in the state's ``steps`` (the
strategy's :class:`~graphs.plugin.answer_state.AnswerState` reducer), and every call and result is
an event (:mod:`longctx.graphs.calls.tool_events`: LangGraph's custom stream and
``astream_answer``). The model is ``llm`` when given, else the run's (``runtime.context.llm``): the
subgraph is a node of a strategy's graph.
"""

from __future__ import annotations

import operator
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Literal, TypedDict

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AnyMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph, add_messages
from langgraph.prebuilt import ToolNode, tools_condition
from langgraph.runtime import Runtime

from longctx.graphs.calls.llm import chat
from longctx.graphs.calls.tool_events import cut, emit_calls, emit_results
from longctx.graphs.calls.tool_json import as_text_history, with_json_calls
from longctx.graphs.calls.validated_call import resolve_tool_mode
from longctx.graphs.metering.budget import BudgetReached
from longctx.graphs.plugin.context import StrategyContext
from longctx.graphs.plugin.nodes import CompiledGraph
from longctx.retrieval.contract.answer import Step

#: The user turn added to the forced final call (sent, not kept in the history).
FINAL_TURN_PROMPT = (
    "You have no tool calls left. Answer now with what you have found; do not call a tool."
)


class ToolLoopInput(TypedDict, total=False):
    """What the loop reads of its caller's state: the conversation and the turns made. Not the
    caller's ``steps``: the loop returns only its own, which the caller's reducer appends
    (given them, it would return them again and the caller would hold them twice)."""

    messages: Annotated[list[AnyMessage], add_messages]
    turns: int


class ToolLoopState(ToolLoopInput, total=False):
    """The loop's state: the conversation (LangGraph's ``add_messages``), the model turns made,
    and the steps (appended, as every strategy's ``steps``)."""

    steps: Annotated[list[Step], operator.add]


def tool_error(error: Exception) -> str:
    """The ``ToolMessage`` text of a tool that raised (``ToolNode``'s handler); a budget stop is
    re-raised."""
    if isinstance(error, BudgetReached):
        raise error
    return f"Error: {type(error).__name__}: {error}"


@dataclass(frozen=True)
class ToolLoop:
    """The settings of a tool loop; :meth:`build` compiles it (see the module's doc).

    Attributes:
        tools: LangChain tools or functions (``ToolNode`` runs them; ``bind_tools`` sends them).
        max_turns: Model calls that may call tools (then one forced final call without them).
        max_tokens: The answer budget of each model call.
        mode: ``"tools"`` (native), ``"json"`` (the JSON-in-text adapter) or ``"auto"``
            (native when the model implements ``bind_tools``).
        max_calls_per_turn: Calls of one turn that run; the others get an error result.
        max_result_chars: A tool result's characters kept (cut in the middle beyond).
        temperature: Of each model call.
        llm: The model; ``None``: the run context's.
    """

    tools: Sequence[Any]
    max_turns: int = 8
    max_tokens: int = 1024
    mode: Literal["auto", "tools", "json"] = "auto"
    max_calls_per_turn: int = 8
    max_result_chars: int = 16_000
    temperature: float = 0.0
    llm: BaseChatModel | None = None

    def __post_init__(self) -> None:
        if self.max_turns < 1 or self.max_calls_per_turn < 1:
            raise ValueError("max_turns and max_calls_per_turn must be at least 1")

    def _model(self, runtime: Runtime[Any] | None) -> BaseChatModel:
        if self.llm is not None:
            return self.llm
        context = getattr(runtime, "context", None)
        if context is None or getattr(context, "llm", None) is None:
            raise ValueError(
                "a ToolLoop without llm= runs in a strategy's graph (its context's llm)"
            )
        llm: BaseChatModel = context.llm
        return llm

    def agent(self, state: ToolLoopState, runtime: Runtime[Any]) -> dict[str, Any]:
        """One model turn: with the tools while turns are left, else the forced final call."""
        llm = self._model(runtime)
        turn = state.get("turns", 0) + 1
        final = turn > self.max_turns
        mode = resolve_tool_mode(llm, self.mode)
        history: list[BaseMessage] = list(state.get("messages", []))
        ending: list[BaseMessage] = [HumanMessage(content=FINAL_TURN_PROMPT)] if final else []
        tools = None if final else list(self.tools)
        if mode == "tools":
            reply = chat(
                llm,
                history + ending,
                tools=tools,
                max_tokens=self.max_tokens,
                temperature=self.temperature,
            )
        else:
            sent = as_text_history(history, tools or []) + ending
            reply = chat(llm, sent, max_tokens=self.max_tokens, temperature=self.temperature)
            reply = reply if final else with_json_calls(reply, turn)
        step = Step(
            "agent",
            turn=turn,
            mode=mode,
            final=final,
            tool_calls=len(reply.tool_calls) + len(reply.invalid_tool_calls),
            chars=len(reply.text),
        )
        if not final:  # a forced final turn's calls never run
            emit_calls(reply)
        return {"messages": [reply], "turns": turn, "steps": [step]}

    def route(self, state: ToolLoopState) -> str:
        """``tools`` when the last reply calls a tool (or only tried to, malformed), else the end;
        always the end after the forced final turn."""
        if state.get("turns", 0) > self.max_turns:
            return END
        last = state["messages"][-1]
        if isinstance(last, AIMessage) and last.invalid_tool_calls and not last.tool_calls:
            return "tools"
        return tools_condition(dict(state))

    def run_tools(self, state: ToolLoopState, config: RunnableConfig) -> dict[str, Any]:
        """Run the last reply's tool calls (bounded) with ``ToolNode``; every call gets a result."""
        last = state["messages"][-1]
        assert isinstance(last, AIMessage)
        calls, over = (
            last.tool_calls[: self.max_calls_per_turn],
            last.tool_calls[self.max_calls_per_turn :],
        )
        results: dict[str, ToolMessage] = {}
        if calls:
            node = ToolNode(list(self.tools), handle_tool_errors=tool_error)
            ran = node.invoke({"messages": [AIMessage(content="", tool_calls=calls)]}, config)
            results = {m.tool_call_id: m for m in ran["messages"]}
        for call in over:
            results[str(call["id"])] = ToolMessage(
                content=f"Error: not run: at most {self.max_calls_per_turn} tool calls a turn",
                tool_call_id=str(call["id"]),
                name=call["name"],
                status="error",
            )
        for bad in last.invalid_tool_calls:
            results[str(bad["id"])] = ToolMessage(
                content=f"Error: the call could not be read ({bad.get('error')}); "
                "send its arguments again as one JSON object",
                tool_call_id=str(bad["id"]),
                name=bad.get("name") or "unknown",
                status="error",
            )
        order: list[Mapping[str, Any]] = [*last.tool_calls, *last.invalid_tool_calls]
        messages, steps = [], []
        for asked in order:
            message = results[str(asked["id"])]
            message.content = cut(message.text, self.max_result_chars)
            messages.append(message)
            steps.append(
                Step(
                    "tools",
                    turn=state.get("turns", 0),
                    tool=asked.get("name"),
                    call_id=asked["id"],
                    args=asked.get("args"),
                    status=message.status,
                    chars=len(message.text),
                )
            )
        emit_results(messages)
        return {"messages": messages, "steps": steps}

    def build(self, name: str = "tool_loop") -> CompiledGraph:
        """The compiled subgraph (state :class:`ToolLoopState`; a strategy adds it as a node)."""
        graph: StateGraph[Any, StrategyContext[Any], Any, Any] = StateGraph(
            ToolLoopState, context_schema=StrategyContext, input_schema=ToolLoopInput
        )
        graph.add_node("agent", self.agent)
        graph.add_node("tools", self.run_tools)
        graph.add_edge(START, "agent")
        graph.add_conditional_edges("agent", self.route, ["tools", END])
        graph.add_edge("tools", "agent")
        return graph.compile(name=name)


def final_text(state: Mapping[str, Any]) -> str:
    """The loop's answer: the text of its last model reply (empty when it made none)."""
    replies = [m for m in state.get("messages", []) if isinstance(m, AIMessage)]
    return replies[-1].text if replies else ""


def answer_so_far(state: Mapping[str, Any]) -> dict[str, str]:
    """A tool loop's final node after a budget stop
    (:attr:`longctx.graphs.plugin.registry.SingleRun.on_stop`): the text of its last reply that
    called no tool (an answer), else an empty answer; no model call."""
    answers = [
        m for m in state.get("messages", []) if isinstance(m, AIMessage) and not m.tool_calls
    ]
    text = answers[-1].text if answers else ""
    return {"answer": text.strip(), "raw": text}
