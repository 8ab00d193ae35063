"""A tool-loop strategy for tests (never registered outside them): ``ToolLoop`` over two
deterministic tools, as a plug-in author would write it, and the stub's scripted replies that walk
it through :data:`TURNS` turns (each but the last calls a tool; the last answers).

Run as a script (``python -m tests.loop_strategy JOB.json``) it answers one question through
``answer(..., checkpoint=True)`` (or ``aanswer``) against the stub at the job's ``url``,
and writes the answer as JSON to the job's ``out``: the child process a kill test kills.
"""

from __future__ import annotations

import json
import operator
import sys
from dataclasses import dataclass
from typing import Annotated, Any

from langchain_core.messages import AnyMessage, HumanMessage
from langchain_core.tools import tool
from langgraph.graph import END, START, StateGraph, add_messages

from longctx.graphs.calls.tool_loop import ToolLoop, final_text
from longctx.graphs.plugin.answer_state import AnswerState
from longctx.graphs.plugin.config import StrategyConfig
from longctx.graphs.plugin.context import StrategyContext
from longctx.retrieval.contract import Step
from tests.recording_server import tool_call, tool_reply

NAME = "test_loop"
#: Model turns of the scripted run: ``TURNS - 1`` call a tool, the last answers.
TURNS = 6
CITIES = {"arden": 410, "belmont": 1215, "corvin": 77, "dunmore": 3020, "elston": 958}


@tool
def population(city: str) -> str:
    """The population of a city (a fixed table)."""
    return f"{city}: {CITIES.get(city.lower(), 0)} people"


@tool
def add(a: int, b: int) -> int:
    """The sum of two integers."""
    return a + b


class LoopState(AnswerState, total=False):
    """The strategy's state: the answer contract and the loop's conversation."""

    messages: Annotated[list[AnyMessage], add_messages]
    turns: int
    steps: Annotated[list[Step], operator.add]


@dataclass(frozen=True)
class LoopConfig(StrategyConfig):
    """The loop's bound (the run key holds it, as every config field)."""

    max_turns: int = TURNS


def build_graph(config: LoopConfig | None = None) -> Any:
    """``ask -> loop -> answer``: the question as the first user turn, the shared tool loop, its
    last reply."""
    cfg = config or LoopConfig()

    def ask(state: LoopState) -> dict[str, Any]:
        return {"messages": [HumanMessage(content=state["question"].render())]}

    def answer(state: LoopState) -> dict[str, Any]:
        text = final_text(state)
        return {"answer": text, "raw": text, "steps": [Step("answer", chars=len(text))]}

    graph: StateGraph[Any, StrategyContext[Any], Any, Any] = StateGraph(
        LoopState, context_schema=StrategyContext
    )
    graph.add_node("ask", ask)
    graph.add_node("loop", ToolLoop([population, add], max_turns=cfg.max_turns).build())
    graph.add_node("answer", answer)
    graph.add_edge(START, "ask")
    graph.add_edge("ask", "loop")
    graph.add_edge("loop", "answer")
    graph.add_edge("answer", END)
    return graph.compile(name=NAME)


def register() -> None:
    """Register the strategy (once per process)."""
    from longctx.graphs import STRATEGIES

    if NAME not in STRATEGIES:
        STRATEGIES.register(
            NAME, build_graph, config_cls=LoopConfig, description="a test tool loop"
        )


def scripted_reply(request: dict[str, Any]) -> str | dict[str, Any]:
    """The stub's reply at the request's turn (its assistant turns so far, plus one): a tool call
    that reads the last tool result, so each turn depends on the one before; the answer at
    the last."""
    messages = request.get("messages", [])
    turn = sum(1 for m in messages if m.get("role") == "assistant") + 1
    results = [str(m.get("content")) for m in messages if m.get("role") == "tool"]
    if turn >= TURNS or not request.get("tools"):
        return "The total is " + " / ".join(results)
    cities = list(CITIES)
    if turn % 2:
        return tool_reply(tool_call("population", {"city": cities[turn // 2]}, f"call_t{turn}"))
    last = int(results[-1].split(": ")[1].split()[0]) if results else 0
    return tool_reply(tool_call("add", {"a": last, "b": turn}, f"call_t{turn}"))


def main(job_path: str) -> None:
    """Answer the job's question with ``checkpoint=True`` (``answer``, or ``aanswer`` when the job
    says ``async``) and write the answer's JSON to ``out``."""
    import asyncio

    from longctx import aanswer, answer, make_chat_model
    from longctx.retrieval import Corpus

    job = json.loads(open(job_path).read())
    register()
    llm = make_chat_model("openai:loop-test", base_url=job["url"], max_retries=0)
    args = (Corpus.from_texts(["unused"]), job["question"])
    options = dict(strategy=NAME, llm=llm, cache_dir=job["cache"], show_progress=False)
    if job.get("async"):
        done = asyncio.run(aanswer(*args, **options, checkpoint=True))
    else:
        done = answer(*args, **options, checkpoint=True)
    with open(job["out"], "w") as f:
        json.dump(done.to_dict(), f)


if __name__ == "__main__":
    main(sys.argv[1])
