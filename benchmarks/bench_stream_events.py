"""What streaming an answer's events costs: ``stream_answer`` against ``answer`` for a one-node
strategy whose model streams a reply of ``--tokens`` words, per run and per event.

    python -m benchmarks.bench_stream_events --tokens 200 --runs 25

A single run streamed takes its events from LangGraph's stream (``updates``, ``custom``,
``messages``, ``subgraphs=True``: :mod:`longctx.agents.streaming`); ``answer`` streams ``values``
alone. Prints the best and median seconds of each over ``--runs`` runs (one warm-up first); the
model is a local fake that costs nothing, so the figures are the library's and LangGraph's. Run it
on the tree before and after a change to the event path to compare them side by side.
"""

from __future__ import annotations

import argparse
import operator
import statistics
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Annotated, Any, TypedDict

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langgraph.graph import END, START, StateGraph

from longctx import answer, stream_answer
from longctx.graphs import STRATEGIES, StrategyConfig
from longctx.graphs.plugin.context import StrategyContext
from longctx.graphs.plugin.registry import Strategy
from longctx.retrieval.contract import Corpus, Question, Step


class WordModel(BaseChatModel):
    """Replies ``words`` words, streamed a word a chunk when ``streaming``."""

    words: int = 200
    streaming: bool = False

    @property
    def _llm_type(self) -> str:
        return "words"

    def _text(self) -> str:
        return " ".join(["word"] * self.words)

    def _generate(self, messages: list[BaseMessage], stop: Any = None, **kw: Any) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=self._text()))])

    def _stream(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any
    ) -> Iterator[ChatGenerationChunk]:
        for i, word in enumerate(self._text().split(" ")):
            piece = word if i == 0 else " " + word
            chunk = ChatGenerationChunk(message=AIMessageChunk(content=piece))
            if run_manager is not None:
                run_manager.on_llm_new_token(piece, chunk=chunk)
            yield chunk


class State(TypedDict, total=False):
    """The strategy's state."""

    question: Question
    steps: Annotated[list, operator.add]
    answer: str
    raw: str


@dataclass(frozen=True, kw_only=True)
class NoConfig(StrategyConfig):
    """No options."""


def build(config: Any = None) -> Any:
    """One node, ``generate``, that calls the run's model."""

    def generate(state: State, runtime: Any) -> dict[str, Any]:
        text = runtime.context.llm.invoke(state["question"].render()).text
        return {"answer": text, "raw": text, "steps": [Step("generate", chars=len(text))]}

    graph: Any = StateGraph(State, context_schema=StrategyContext)
    graph.add_node("generate", generate)
    graph.add_edge(START, "generate")
    graph.add_edge("generate", END)
    return graph.compile(name="bench_words")


def timed(run: Callable[[], int], runs: int) -> tuple[float, float, int]:
    """Best and median seconds of ``runs`` runs of ``run`` (after one), and what it returned."""
    run()
    seconds, count = [], 0
    for _ in range(runs):
        started = time.perf_counter()
        count = run()
        seconds.append(time.perf_counter() - started)
    return min(seconds), statistics.median(seconds), count


def main(argv: list[str] | None = None) -> None:
    """Print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=200)
    parser.add_argument("--runs", type=int, default=25)
    args = parser.parse_args(argv)
    STRATEGIES._entries["bench_words"] = Strategy(
        name="bench_words", build_graph=build, config_cls=NoConfig
    )
    corpus, question = Corpus.from_texts(["A text."]), "Say the words."
    plain, streams = WordModel(words=args.tokens), WordModel(words=args.tokens, streaming=True)

    def events(llm: WordModel) -> Callable[[], int]:
        return lambda: len(list(stream_answer(corpus, question, strategy="bench_words", llm=llm)))

    rows = {
        "answer (no events)": lambda: len(
            answer(corpus, question, strategy="bench_words", llm=plain).steps
        ),
        "stream_answer, model not streaming": events(plain),
        "stream_answer, model streaming": events(streams),
    }
    print(f"{'':38} {'best ms':>8} {'median ms':>10} {'events':>7} {'best us/event':>14}")
    for label, run in rows.items():
        best, median, count = timed(run, args.runs)
        per_event = best * 1e6 / count
        print(f"{label:38} {best * 1e3:8.2f} {median * 1e3:10.2f} {count:7} {per_event:14.0f}")


if __name__ == "__main__":
    main()
