"""Provider failures after retries: one ChatModelError naming server, HTTP status and retries.

Against a real loopback OpenAI-compatible stub server that injects 500s, 429s, empty
``choices`` and malformed JSON bodies.
"""

import json
import urllib.request

import pytest

from benchmarks.stub_server import stub_server
from longctx import ChatModelError, answer
from longctx.agents import lean_transport, openai_chat
from longctx.agents.chat_errors import as_chat_model_error
from longctx.agents.chat_models import make_chat_model
from longctx.retrieval import Corpus


def chat_requests(url: str) -> int:
    with urllib.request.urlopen(f"{url}/stats", timeout=5) as resp:
        return json.load(resp)["chat_requests"]


@pytest.fixture(autouse=True)
def two_retries(monkeypatch):
    """Two retries, without the backoff's pauses (0.5 s, 1 s: 1.5 s a test; the schedule itself is
    tested in test_transport_parity and test_twins)."""
    monkeypatch.setenv("LONGCTX_MAX_RETRIES", "2")
    monkeypatch.setattr(lean_transport, "retry_delay", lambda retry: 0.0)
    monkeypatch.setattr(openai_chat, "retry_delay", lambda retry: 0.0)


@pytest.mark.parametrize(
    "fault,status", [("500", 500), ("429", 429), ("empty_choices", 200), ("malformed", 200)]
)
def test_every_failure_after_retries_is_a_chat_model_error(fault, status):
    with stub_server(latency=0.0, fault=fault) as url:
        llm = make_chat_model("openai:stub", base_url=url)
        with pytest.raises(ChatModelError) as info:
            llm.invoke("What is the vault code?")
        assert chat_requests(url) == 3  # the first try and two retries
    err = info.value
    assert err.url == url and err.status == status and err.retries == 2
    message = str(err)
    assert url in message and f"HTTP {status}" in message and "after 2 retries" in message


@pytest.mark.parametrize("fault", ["empty_choices", "malformed"])
def test_malformed_replies_are_retried_like_server_errors(fault):
    with stub_server(latency=0.0, fault=fault, fault_first=2) as url:
        reply = make_chat_model("openai:stub", base_url=url).invoke("What is the vault code?")
        assert chat_requests(url) == 3
    assert reply.content and reply.usage_metadata["input_tokens"] > 0


def test_answer_raises_the_chat_model_error_too():
    corpus = Corpus.from_texts(["The vault code is 7421."])
    with stub_server(latency=0.0, fault="500") as url:
        with pytest.raises(ChatModelError, match="HTTP 500") as info:
            answer(
                corpus,
                "What is the vault code?",
                strategy="full_context",
                llm=make_chat_model("openai:stub", base_url=url),
            )
    assert url in str(info.value) and not isinstance(info.value.__cause__, ChatModelError)


def test_a_plain_chat_openai_error_is_mapped_with_its_status():
    from langchain_openai import ChatOpenAI

    with stub_server(latency=0.0, fault="429") as url:
        llm = ChatOpenAI(model="stub", base_url=url, api_key="x", max_retries=1)
        with pytest.raises(Exception) as info:
            llm.invoke("hi")
        mapped = as_chat_model_error(info.value, llm)
    assert (
        isinstance(mapped, ChatModelError)
        and mapped.status == 429
        and mapped.retries == 1
        and url in str(mapped)
    )


def test_unrelated_errors_pass_through():
    exc = KeyError("x")
    assert (
        as_chat_model_error(exc, make_chat_model("openai:stub", base_url="http://127.0.0.1:9/v1"))
        is exc
    )


@pytest.mark.parametrize(
    "fault,status", [("500", 500), ("429", 429), ("empty_choices", 200), ("malformed", 200)]
)
def test_async_runs_map_failures_the_same_through_their_own_pool(fault, status):
    """The async path (a run's own aiohttp-backed pool, ``longctx.graphs.calls.llm.run_client``)
    retries and maps every failure like the sync one."""
    import asyncio

    from longctx.graphs.calls.llm import run_client

    async def call(url):
        async with run_client(make_chat_model("openai:stub", base_url=url)) as llm:
            return await llm.ainvoke("What is the vault code?")

    with stub_server(latency=0.0, fault=fault) as url:
        with pytest.raises(ChatModelError) as info:
            asyncio.run(call(url))
        assert chat_requests(url) == 3
    assert info.value.status == status and info.value.retries == 2 and url in str(info.value)


def test_async_timeout_is_a_chat_model_error_naming_no_status():
    import asyncio

    from longctx.graphs.calls.llm import run_client

    async def call(url):
        async with run_client(
            make_chat_model("openai:stub", base_url=url, timeout=0.3, max_retries=0)
        ) as llm:
            return await llm.ainvoke("What is the vault code?")

    with stub_server(latency=0.0, fault="timeout", hang_seconds=3) as url:
        with pytest.raises(ChatModelError, match="did not answer") as info:
            asyncio.run(call(url))
    assert info.value.status is None and info.value.retries == 0


def test_malformed_replies_are_retried_when_the_model_leaves_max_retries_unset():
    # ChatOpenAI's max_retries is Optional; unset, malformed replies get $LONGCTX_MAX_RETRIES
    # retries as the error mapping counts them (comparing with None raised TypeError before).
    from longctx.agents.openai_chat import RetryingChatOpenAI

    with stub_server(latency=0.0, fault="malformed", fault_first=2) as url:
        llm = RetryingChatOpenAI(model="stub", base_url=url, api_key="x", max_retries=None)
        assert llm.max_retries is None
        reply = llm.invoke("What is the vault code?")
        assert chat_requests(url) == 3
    assert reply.content
