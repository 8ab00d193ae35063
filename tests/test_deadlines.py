"""A request's timeout is a deadline for the whole request (issue 46, item 7): a loopback server
that drips its reply one byte every 0.5 s (minutes for the whole reply) is cut once the 1 s
timeout has passed, on every client: rerank, embeddings, chat (sync, the lean async transport,
the SDK's async path in and out of a run). Each test waits on the server's events, not a clock:
the call fails with the timeout error, and the server sees its connection cut."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from longctx import make_chat_model
from longctx.agents.chat_errors import ChatModelError
from longctx.graphs.calls.llm import run_client
from longctx.graphs.tokenizers.tokenize_routes import ServerTokenizer, server_root
from longctx.retrieval.deadlines import DeadlineTransport
from longctx.retrieval.embedder_base import EmbedderError
from longctx.retrieval.embedders import OpenAIEmbedder
from longctx.retrieval.rerank import RerankError, ServerReranker
from tests.drip_server import DripServer

RERANKED = {"results": [{"index": 0, "relevance_score": 0.5}], "usage": {"total_tokens": 3}}
EMBEDDED = {"object": "list", "model": "m", "data": [{"index": 0, "embedding": [1.0, 0.0]}]}
COMPLETION = {
    "id": "drip",
    "object": "chat.completion",
    "created": 0,
    "model": "m",
    "choices": [
        {
            "index": 0,
            "message": {"role": "assistant", "content": "Paris"},
            "finish_reason": "stop",
        }
    ],
    "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4},
}


def assert_cut(server: DripServer) -> None:
    """The server got the request and then saw its client close the connection mid-reply."""
    assert server.received.is_set() and len(server.requests) == 1
    assert server.cut.wait(30), "the client never closed the dripping connection"


@pytest.mark.parametrize("body_only", [False, True], ids=["headers dripped", "body dripped"])
def test_a_rerank_call_is_cut_at_its_timeout(body_only):
    with DripServer(RERANKED, body_only=body_only) as server:
        reranker = ServerReranker(server.url, "m", timeout=1, max_retries=0, backoff=0.0)
        with pytest.raises(RerankError, match=r"failed after 0 retries \(no answer: ReadTimeout"):
            reranker.rerank("q", ["a"], 1)
        assert_cut(server)


def test_an_embeddings_call_is_cut_at_its_timeout():
    with DripServer(EMBEDDED) as server:
        embedder = OpenAIEmbedder("m", base_url=server.url, max_retries=0, timeout=1)
        with pytest.raises(EmbedderError, match="does not answer: Request timed out"):
            embedder.embed_documents(["a"])
        assert_cut(server)


def chat(server: DripServer):
    return make_chat_model("openai:m", base_url=server.url, max_retries=0, timeout=1)


@pytest.mark.parametrize("how", ["invoke", "stream"])
def test_a_sync_chat_call_is_cut_at_its_timeout(how):
    with DripServer(COMPLETION) as server:
        llm = chat(server)
        with pytest.raises(ChatModelError, match="did not answer after 0 retries.*timed out"):
            if how == "invoke":  # the lean request through the SDK's sync client
                llm.invoke("Capital of France?")
            else:  # ChatOpenAI's own path: the same error as a whole reply's
                list(llm.stream("Capital of France?"))
        assert_cut(server)


async def in_a_run(llm, how: str):
    async with run_client(llm) as run_llm:
        if how == "lean":  # the run's aiohttp session
            return await run_llm.ainvoke("Capital of France?")
        return [chunk async for chunk in run_llm.astream("Capital of France?")]  # the SDK's path


@pytest.mark.parametrize("how", ["lean", "sdk stream", "sdk outside a run"])
def test_an_async_chat_call_is_cut_at_its_timeout(how):
    with DripServer(COMPLETION) as server:
        llm = chat(server)
        call = (
            llm.ainvoke("Capital of France?") if how == "sdk outside a run" else in_a_run(llm, how)
        )
        with pytest.raises(ChatModelError, match="did not answer after 0 retries.*timed out"):
            asyncio.run(call)
        assert_cut(server)


def test_a_tokenize_request_is_cut_at_its_timeout():
    with DripServer({"tokens": [1, 2]}) as server:
        tokenizer = ServerTokenizer(server_root(server.url), "m", "llama.cpp", timeout=1)
        try:
            with pytest.raises(httpx.TimeoutException):
                tokenizer.encode_piece("Capital of France?")
        finally:
            tokenizer.close()
        assert_cut(server)


@pytest.mark.parametrize("flavour", ["httpx", "httpx2"])
def test_the_pool_the_deadline_bounds_is_where_it_was(flavour):
    """The sync deadline wraps httpcore's private network backend: pinned for both flavours."""
    module = pytest.importorskip(flavour)
    assert DeadlineTransport(module.HTTPTransport())._bounded
