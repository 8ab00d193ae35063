"""longctx inside LangChain: a corpus as a retriever in an LCEL chain, ``answer`` as a Runnable
and as a tool in a LangChain agent (``create_agent``), against a real local OpenAI-compatible
server (recording)."""

from __future__ import annotations

import asyncio
import importlib
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import AIMessage
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import RunnableLambda, RunnablePassthrough
from langchain_openai import ChatOpenAI

from longctx import ConfigError, Corpus, as_runnable, as_tool
from tests.recording_server import RecordingServer, prompt_of
from tests.scripted_tools import ToolScriptedChatModel

ROOT = Path(__file__).resolve().parent.parent
FILLER = (
    "The harbour committee met on Tuesday and discussed parking, ferries and the winter timetable. "
)


@pytest.fixture
def corpus() -> Corpus:
    return Corpus.from_texts(
        [
            FILLER * 30,
            FILLER * 10 + "The secret code of the museum vault is 7421. " + FILLER * 10,
            FILLER * 30,
        ],
        titles=["Minutes", "Vault", "More minutes"],
    )


def vault_reply(request: dict) -> str:
    return "7421" if "7421" in prompt_of(request) else "I do not know."


def test_corpus_as_retriever_in_an_lcel_chain(corpus, tmp_path):
    retriever = corpus.as_retriever(k=2, chunk_size=60, cache_dir=tmp_path)
    docs = retriever.invoke("secret code of the museum vault")
    assert (
        len(docs) == 2
        and "7421" in docs[0].page_content
        and docs[0].metadata["title"] == "Vault"
        and docs[0].metadata["rank"] == 0
    )
    prompt = ChatPromptTemplate.from_template(
        "Context:\n{context}\n\nQuestion: {question}\nAnswer with the code only."
    )
    with RecordingServer(vault_reply) as server:
        llm = ChatOpenAI(model="rec", base_url=server.url, api_key="sk-test", max_retries=0)
        context = retriever | (lambda ds: "\n\n".join(d.page_content for d in ds))
        chain = (
            {"context": context, "question": RunnablePassthrough()}
            | prompt
            | llm
            | StrOutputParser()
        )
        assert chain.invoke("What is the secret code of the museum vault?") == "7421"
    assert "7421" in prompt_of(server.requests[0])
    assert (
        asyncio.run(retriever.ainvoke("museum vault code"))[0].metadata["doc_id"]
        == docs[0].metadata["doc_id"]
    )


def test_index_as_llama_index_retriever(corpus, tmp_path):
    from longctx.retrieval.chunking import ChunkingConfig
    from longctx.retrieval.index import build_index

    index = build_index(
        corpus, "bm25", chunking=ChunkingConfig(unit="words", size=60), cache_dir=tmp_path
    )
    nodes = index.as_llama_index_retriever(k=3).retrieve("secret code of the museum vault")
    assert (
        len(nodes) == 3
        and "7421" in nodes[0].node.get_content()
        and nodes[0].node.metadata["title"] == "Vault"
    )


class _Runs(BaseCallbackHandler):
    def __init__(self) -> None:
        self.names: list[str] = []

    def on_chain_start(self, serialized, inputs, *, run_id, parent_run_id=None, **kwargs):
        self.names.append(kwargs.get("name") or (serialized or {}).get("name", ""))


def test_answer_as_a_runnable_in_a_chain_sync_and_async(corpus, tmp_path, monkeypatch):
    with RecordingServer(vault_reply) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        ask = as_runnable(
            corpus,
            strategy="rag",
            llm="openai:rec",
            cache_dir=tmp_path,
            top_k=2,
            chunk_size=60,
            chunk_unit="words",
        )
        chain = RunnableLambda(lambda x: x["q"]) | ask | RunnableLambda(lambda text: f"code={text}")
        runs = _Runs()
        assert (
            chain.invoke(
                {"q": "What is the secret code of the museum vault?"}, config={"callbacks": [runs]}
            )
            == "code=7421"
        )
        assert "longctx.rag" in runs.names  # the strategy's graph is traced under the chain's run
        full = as_runnable(
            strategy="rag",
            llm="openai:rec",
            output="full",
            cache_dir=tmp_path,
            top_k=2,
            chunk_size=60,
            chunk_unit="words",
        )
        result = asyncio.run(
            full.ainvoke(
                {"question": "What is the secret code of the museum vault?", "corpus": corpus}
            )
        )
        assert result.answer == "7421" and result.evidence and result.usage.llm_calls == 1
    with pytest.raises(ValueError, match="no corpus"):
        as_runnable(strategy="rag", llm="openai:rec").invoke("a question")
    with pytest.raises((TypeError, ConfigError)):
        as_runnable(corpus, strategy="rag", top_k=-3)  # validated when made, before any chain runs


def readme_agent() -> Callable[..., Any]:
    """The agent factory the README names for ``as_tool`` (the dotted path in that line's
    comment), imported."""
    line = next(
        text for text in (ROOT / "README.md").read_text().splitlines() if "as_tool(corpus" in text
    )
    found = re.search(r"a tool for ([\w.]+)", line)
    assert found, line
    module, _, name = found[1].rpartition(".")
    assert module, f"name the module: {found[1]}"
    return getattr(importlib.import_module(module), name)


@pytest.mark.filterwarnings(
    "error::DeprecationWarning"
)  # LangGraph 1.0 deprecated create_react_agent for langchain.agents.create_agent
def test_answer_as_a_tool_in_the_readmes_agent(corpus, tmp_path, monkeypatch):
    create_agent = readme_agent()

    def agent_brain(prompt: str, tools):
        if "7421" in prompt:  # the tool's result is in the conversation: answer
            return AIMessage(content="The vault code is 7421.")
        return AIMessage(
            content="",
            tool_calls=[
                {
                    "name": "ask_reports",
                    "args": {"question": "What is the secret code of the museum vault?"},
                    "id": "call_1",
                    "type": "tool_call",
                }
            ],
        )

    with RecordingServer(vault_reply) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        tool = as_tool(
            corpus,
            strategy="rag",
            llm="openai:rec",
            name="ask_reports",
            cache_dir=tmp_path,
            top_k=2,
            chunk_size=60,
            chunk_unit="words",
        )
        agent = create_agent(ToolScriptedChatModel(reply_fn=agent_brain), tools=[tool])
        final = agent.invoke({"messages": [("user", "Find the museum vault code.")]})
    tool_messages = [m for m in final["messages"] if m.type == "tool"]
    assert (
        tool_messages
        and tool_messages[0].content.startswith("7421")
        and "Sources: Vault" in tool_messages[0].content
    )
    assert final["messages"][-1].content == "The vault code is 7421." and len(server.requests) == 1
    assert tool.args_schema.model_json_schema()["required"] == ["question"]
