"""``answer`` inside LangChain: as a Runnable for LCEL chains, and as a tool for agents.

    chain = RunnableLambda(lambda x: x["question"]) | as_runnable(corpus, strategy="rag", llm=llm)
    tool = as_tool(corpus, strategy="memagent", name="ask_reports")   # bind to an agent's model

A retriever over the same cached index is ``corpus.as_retriever()`` / ``index.as_retriever()``
(:mod:`longctx.retrieval.langchain_retriever`). Callbacks and tags of the calling chain reach the
strategy's graph, so LangSmith shows the strategy's run nested under the chain's.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.runnables import Runnable, RunnableConfig, RunnableLambda
from langchain_core.tools import StructuredTool
from pydantic import BaseModel, Field

from longctx.agents.api import aanswer, answer
from longctx.graphs import STRATEGIES
from longctx.graphs.plugin.strategy_registry import one_answer_strategy
from longctx.retrieval.contract import Answer, Corpus, Question

#: What a Runnable returns: the answer text (for chains), or the whole Answer (evidence, usage,
#: steps).
OUTPUTS = ("answer", "full")


def _question_and_corpus(value: Any, corpus: Corpus | None) -> tuple[Question | str, Corpus]:
    if isinstance(value, dict):
        question = value.get("question")
        corpus = value.get("corpus", corpus)
    else:
        question = value
    if not isinstance(question, (str, Question)) or (
        isinstance(question, str) and not question.strip()
    ):
        raise ValueError(
            "the input must be a question (a non-empty string or Question) or a dict with "
            f"'question'; got {value!r:.200}"
        )
    if corpus is None:
        raise ValueError(
            "no corpus: bind one with as_runnable(corpus, ...) or pass {'question': ..., "
            "'corpus': Corpus}"
        )
    return question, corpus


def as_runnable(
    corpus: Corpus | None = None,
    *,
    strategy: str = "rag",
    llm: str | BaseChatModel | None = None,
    output: str = "answer",
    cache_dir: str | Path | None = None,
    **options: Any,
) -> Runnable:
    """``answer`` as a LangChain Runnable (sync and async).

    Args:
        corpus: The corpus to answer over; or ``None`` and pass ``{"question": ..., "corpus": ...}``
            as input.
        strategy: A registered strategy (``rag``, ``memagent``, ``pai``, ...), validated now.
        llm: The strategy's chat model (a model or a spec such as ``"openai:gpt-4o-mini"``).
        output: ``"answer"`` (the answer text, for chains) or ``"full"`` (the :class:`Answer`).
        **options: The strategy's config fields (``top_k=5``); validated now, not at the first call.

    Input: a question (str or :class:`Question`) or a dict with ``question`` (and ``corpus``).
    """
    if output not in OUTPUTS:
        raise ValueError(f"output must be one of {OUTPUTS}, got {output!r}")
    # a wrong option fails here, before any chain runs
    STRATEGIES.get(one_answer_strategy(strategy)).make_config(**options)

    def shape(result: Answer) -> Any:
        return result.answer if output == "answer" else result

    def run(
        value: Any, config: RunnableConfig
    ) -> Any:  # LangChain passes the run's config to a parameter named so
        question, bound = _question_and_corpus(value, corpus)
        return shape(
            answer(
                bound,
                question,
                strategy=strategy,
                llm=llm,
                cache_dir=cache_dir,
                callbacks=config.get("callbacks"),
                **options,
            )
        )

    async def arun(value: Any, config: RunnableConfig) -> Any:
        question, bound = _question_and_corpus(value, corpus)
        return shape(
            await aanswer(
                bound,
                question,
                strategy=strategy,
                llm=llm,
                cache_dir=cache_dir,
                callbacks=config.get("callbacks"),
                **options,
            )
        )

    return RunnableLambda(run, afunc=arun, name=f"longctx.answer.{strategy}")


class _ToolInput(BaseModel):
    question: str = Field(description="The question to answer from the documents, self-contained.")


def as_tool(
    corpus: Corpus,
    *,
    strategy: str = "rag",
    llm: str | BaseChatModel | None = None,
    name: str | None = None,
    description: str | None = None,
    cache_dir: str | Path | None = None,
    **options: Any,
) -> StructuredTool:
    """``answer`` over ``corpus`` as a LangChain tool an agent can call with a question.

    The tool returns the answer text followed by the titles of the evidence it cited, so the
    agent can say where an answer came from.
    """
    runnable = as_runnable(
        corpus, strategy=strategy, llm=llm, output="full", cache_dir=cache_dir, **options
    )

    def render(result: Answer) -> str:
        titles = list(dict.fromkeys(e.title for e in result.evidence if e.title))
        return result.answer + (f"\n\nSources: {'; '.join(titles[:10])}" if titles else "")

    def call(question: str) -> str:
        return render(runnable.invoke(question))

    async def acall(question: str) -> str:
        return render(await runnable.ainvoke(question))

    return StructuredTool.from_function(
        func=call,
        coroutine=acall,
        name=name or f"ask_documents_{strategy}",
        args_schema=_ToolInput,
        description=description
        or f"Answer a question from a collection of {len(corpus)} documents ({strategy} strategy).",
    )
