"""The test doubles play an agent: the recording stub and the scripted tool model answer with tool
calls in OpenAI's format, whole and streamed, and the real clients parse them (issue #47,
item 5)."""

from __future__ import annotations

import json

import openai
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from longctx import make_chat_model
from tests.recording_server import RecordingServer, counted_words, tool_call, tool_reply
from tests.scripted import ScriptedChatModel
from tests.scripted_tools import ToolScriptedChatModel, named_call

SEARCH = {
    "type": "function",
    "function": {
        "name": "search",
        "description": "Search the corpus.",
        "parameters": {
            "type": "object",
            "properties": {"query": {"type": "string"}, "k": {"type": "integer"}},
            "required": ["query"],
        },
    },
}
ARGS = {"query": "capital of France", "k": 3}


def _two_calls(request: dict) -> dict:
    return tool_reply(
        tool_call("search", ARGS),
        tool_call("get_document", {"doc_id": "d7"}, call_id="call_doc"),
        content="Looking it up.",
    )


def _client(server: RecordingServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.url, api_key="not-needed", max_retries=0)


def test_the_openai_client_parses_the_stubs_tool_calls() -> None:
    with RecordingServer(_two_calls) as server:
        reply = _client(server).chat.completions.create(
            model="rec", messages=[{"role": "user", "content": "Where?"}], tools=[SEARCH]
        )
    choice = reply.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert choice.message.content == "Looking it up."
    calls = choice.message.tool_calls or []
    assert [(c.id, c.function.name, json.loads(c.function.arguments)) for c in calls] == [
        ("call_0", "search", ARGS),
        ("call_doc", "get_document", {"doc_id": "d7"}),
    ]
    assert server.requests[0]["tools"] == [SEARCH]


def test_the_openai_client_streams_the_stubs_tool_call_deltas() -> None:
    with RecordingServer(_two_calls) as server:
        stream = _client(server).chat.completions.create(
            model="rec", messages=[{"role": "user", "content": "Where?"}], stream=True
        )
        calls: dict[int, dict] = {}
        finish, pieces = None, 0
        for chunk in stream:
            for delta_call in chunk.choices[0].delta.tool_calls or []:
                pieces += 1
                entry = calls.setdefault(delta_call.index, {"id": None, "name": "", "args": ""})
                entry["id"] = delta_call.id or entry["id"]
                entry["name"] += (delta_call.function and delta_call.function.name) or ""
                entry["args"] += (delta_call.function and delta_call.function.arguments) or ""
            finish = chunk.choices[0].finish_reason or finish
    assert finish == "tool_calls"
    assert pieces > 4  # the arguments came in pieces, not whole
    assert [(c["id"], c["name"], json.loads(c["args"])) for c in calls.values()] == [
        ("call_0", "search", ARGS),
        ("call_doc", "get_document", {"doc_id": "d7"}),
    ]


def test_our_chat_model_parses_the_stubs_tool_calls_whole_and_streamed() -> None:
    with RecordingServer(_two_calls) as server:
        llm = make_chat_model(
            "openai:rec", base_url=server.url, api_key="not-needed", max_retries=0
        ).bind_tools([SEARCH])
        whole = llm.invoke("Where?")
        streamed = None
        for chunk in llm.stream("Where?"):
            streamed = chunk if streamed is None else streamed + chunk
    expected = [("search", ARGS, "call_0"), ("get_document", {"doc_id": "d7"}, "call_doc")]
    for message in (whole, streamed):
        assert isinstance(message, AIMessage)
        assert [(c["name"], c["args"], c["id"]) for c in message.tool_calls] == expected
        assert message.content == "Looking it up."
    assert [r.get("stream", False) for r in server.requests] == [False, True]


def test_the_stub_counts_schemas_and_tool_call_arguments_as_prompt() -> None:
    turn = {"role": "user", "content": "Where is it?"}
    assistant = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "c", "type": "function", "function": {"name": "search", "arguments": "{}"}}
        ],
    }
    plain = len(counted_words({"messages": [turn]}))
    with_tools = len(counted_words({"messages": [turn], "tools": [SEARCH]}))
    with_call = len(counted_words({"messages": [turn, assistant]}))
    assert plain == 3
    assert with_tools == 3 + len(json.dumps([SEARCH]).split())
    assert with_call == 3 + 2
    with RecordingServer(_two_calls) as server:
        reply = _client(server).chat.completions.create(
            model="rec", messages=[turn], tools=[SEARCH]
        )
    assert reply.usage is not None and reply.usage.prompt_tokens == with_tools


def test_the_scripted_tool_model_calls_any_tool_in_any_format() -> None:
    openai_format = {
        "id": "call_x",
        "type": "function",
        "function": {"name": "get_document", "arguments": '{"doc_id": "d7"}'},
    }
    llm = ToolScriptedChatModel(
        reply_fn=lambda prompt, tools: [named_call("search", **ARGS), openai_format, {"q": 1}],
        tool_name="lookup",
        disable_streaming=False,
    )
    whole = llm.bind_tools([SEARCH]).invoke("Where?")
    chunks = list(llm.bind_tools([SEARCH]).stream("Where?"))
    assert len(chunks) > 6  # names and ids, then the arguments in pieces
    streamed = chunks[0]
    for chunk in chunks[1:]:
        streamed = streamed + chunk
    expected = [
        ("search", ARGS, "call_0"),
        ("get_document", {"doc_id": "d7"}, "call_x"),
        ("lookup", {"q": 1}, "call_2"),
    ]
    for message in (whole, streamed):
        assert isinstance(message, AIMessage)
        assert [(c["name"], c["args"], c["id"]) for c in message.tool_calls] == expected
    assert llm.calls[0]["tools"] == [SEARCH]


def test_the_scripted_model_replays_an_agent_turn() -> None:
    turn = AIMessage(content="", tool_calls=[named_call("search", query="x") | {"id": "1"}])
    llm = ScriptedChatModel(replies=[turn, "Paris"])
    first = llm.invoke([HumanMessage(content="Where?")])
    second = llm.invoke([first, ToolMessage(content="hit", tool_call_id="1")])
    assert first.tool_calls[0]["name"] == "search" and second.content == "Paris"
    assert first.usage_metadata is not None and first.usage_metadata["output_tokens"] > 0
