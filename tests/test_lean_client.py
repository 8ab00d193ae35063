"""The OpenAI chat model's lean request path sends and returns exactly what ChatOpenAI's own does.

``RetryingChatOpenAI`` posts the payload ChatOpenAI builds without the SDK's parameter
transform and reads the reply as JSON (the client CPU bound of wide fan-outs). These tests
hold it to the plain ``ChatOpenAI`` on the same server: identical request bodies, identical
messages back (text, tool calls, usage), on the sync and async paths. One difference is
ours on purpose: the answer budget goes out as ``max_tokens`` (ChatOpenAI renames it to
``max_completion_tokens``, which llama-cpp-python's server ignores) except for OpenAI's
reasoning models (``longctx.agents.chat_models.budget_field``).
"""

import asyncio

import pytest
from langchain_core.messages import HumanMessage, SystemMessage
from langchain_openai import ChatOpenAI

from benchmarks.stub_server import stub_server
from longctx.agents.chat_models import make_chat_model
from longctx.graphs.pai.prompts import KEEP_CONTEXT_FUNCTION, PROPERTY_FUNCTION
from tests.recording_server import RecordingServer

CALLS = {
    "plain": ([HumanMessage(content="What is the capital of France?")], {}),
    "system, budget, temperature, stop": (
        [SystemMessage(content="Answer briefly."), HumanMessage(content="Name a city.")],
        {"max_tokens": 32, "temperature": 0.1, "stop": ["\n\n"]},
    ),
    "unicode and parts": (
        [HumanMessage(content=[{"type": "text", "text": "Zürich – 東京?"}])],
        {"max_tokens": 8},
    ),
}


def pair(url: str, model: str = "rec", **options):
    """Our chat model (lean path) and a plain ChatOpenAI on the same server and options."""
    ours = make_chat_model(f"openai:{model}", base_url=url, max_retries=0, **options)
    plain = ChatOpenAI(model=model, base_url=url, api_key="not-needed", max_retries=0, **options)
    return ours, plain


def as_we_send(body: dict) -> dict:
    """ChatOpenAI's body with its budget under ``max_tokens``, the one field ours
    sends differently."""
    body = dict(body)
    if "max_completion_tokens" in body:
        body["max_tokens"] = body.pop("max_completion_tokens")
    return body


def same_message(a, b) -> None:
    assert a.content == b.content
    assert a.tool_calls == b.tool_calls
    assert a.usage_metadata == b.usage_metadata
    assert a.response_metadata.get("finish_reason") == b.response_metadata.get("finish_reason")


@pytest.mark.parametrize("use_async", [False, True], ids=["sync", "async"])
@pytest.mark.parametrize("name", list(CALLS))
def test_lean_path_sends_the_same_body_and_returns_the_same_message(name, use_async):
    messages, kwargs = CALLS[name]
    with RecordingServer(lambda request: "Paris, in France.") as server:
        ours, plain = pair(server.url)
        assert (
            ours._lean_request(
                messages, kwargs.get("stop"), {k: v for k, v in kwargs.items() if k != "stop"}
            )
            is not None
        )
        if use_async:
            mine, theirs = asyncio.run(_both(ours, plain, messages, kwargs))
        else:
            mine, theirs = ours.invoke(messages, **kwargs), plain.invoke(messages, **kwargs)
    assert len(server.requests) == 2
    assert server.requests[0] == as_we_send(server.requests[1])
    assert "max_completion_tokens" not in server.requests[0]
    if "max_tokens" in kwargs:
        assert server.requests[0]["max_tokens"] == kwargs["max_tokens"]
    same_message(mine, theirs)


@pytest.mark.parametrize("model", ["o1", "o3-mini", "o4-mini", "gpt-5", "gpt-5-nano"])
def test_reasoning_models_get_the_sdks_body_budget_included(model):
    messages, kwargs = CALLS["system, budget, temperature, stop"]
    with RecordingServer() as server:
        ours, plain = pair(server.url, model=model)
        ours.invoke(messages, **kwargs)
        plain.invoke(messages, **kwargs)
    assert server.requests[0] == server.requests[1]
    assert (
        server.requests[0]["max_completion_tokens"] == 32 and "max_tokens" not in server.requests[0]
    )


async def _both(ours, plain, messages, kwargs):
    return await ours.ainvoke(messages, **kwargs), await plain.ainvoke(messages, **kwargs)


def test_extra_body_reaches_the_body_as_with_the_sdk():
    with RecordingServer() as server:
        ours, plain = pair(
            server.url, extra_body={"chat_template_kwargs": {"enable_thinking": False}}
        )
        ours.invoke("Hi")
        plain.invoke("Hi")
    assert server.requests[0] == server.requests[1]
    assert server.requests[0]["chat_template_kwargs"] == {"enable_thinking": False}


@pytest.mark.parametrize(
    "function,choice", [(KEEP_CONTEXT_FUNCTION, "Query"), (PROPERTY_FUNCTION, "any")]
)
def test_tool_calls_parse_the_same(function, choice):
    with stub_server(latency=0.0, reply_tokens=5, tools=True, properties=3) as url:
        ours, plain = pair(url)
        prompt = [HumanMessage(content="Is this chunk about revenue?")]
        mine = ours.bind_tools([dict(function)], tool_choice=choice).invoke(prompt, max_tokens=64)
        theirs = plain.bind_tools([dict(function)], tool_choice=choice).invoke(
            prompt, max_tokens=64
        )
        mine_async = asyncio.run(
            ours.bind_tools([dict(function)], tool_choice=choice).ainvoke(prompt, max_tokens=64)
        )
    assert mine.tool_calls and mine.tool_calls == theirs.tool_calls == mine_async.tool_calls
    same_message(mine, theirs)


def test_streaming_keeps_chatopenai_path():
    with RecordingServer(lambda request: "streamed") as server:
        ours, _ = pair(server.url)
        # the request goes out as a stream (ChatOpenAI's own path) and the server's events are
        # read back
        streamed = "".join(str(chunk.content) for chunk in ours.stream("Hi"))
    assert server.requests and server.requests[0].get("stream") is True
    assert streamed == "streamed"
