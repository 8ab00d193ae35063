"""``longctx.graphs.calls.llm.chat``: an agent's turn sent with its tools and the answer budget, and
the tool schemas and tool-call arguments counted as prompt by the guard and the tracker (issue #47,
item 1)."""

from __future__ import annotations

import json

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.runnables import RunnableConfig

from longctx import make_chat_model
from longctx.graphs.calls.llm import chat
from longctx.graphs.metering.budget import Budget, BudgetReached
from longctx.graphs.metering.budget_guard import BudgetGuard
from longctx.graphs.metering.usage import UsageTracker
from tests.recording_server import RecordingServer, tool_call, tool_reply
from tests.scripted_tools import ToolScriptedChatModel

SEARCH = {
    "type": "function",
    "function": {
        "name": "search",
        "description": "Search the corpus for passages about a query and return the best ones.",
        "parameters": {
            "type": "object",
            "properties": {"query": {"type": "string", "description": "what to look for"}},
            "required": ["query"],
        },
    },
}
SCHEMA_WORDS = len(json.dumps([SEARCH]).split())


def words(text: str) -> int:
    """The stub's token unit: a whitespace word."""
    return len(text.split())


def _history() -> list:
    return [
        SystemMessage(content="Answer from the corpus."),
        HumanMessage(content="What is the capital of France?"),
        AIMessage(
            content="",
            tool_calls=[{"name": "search", "args": {"query": "capital France"}, "id": "c1"}],
        ),
        ToolMessage(content="Paris is the capital of France.", tool_call_id="c1"),
    ]


def _openai(server: RecordingServer):
    return make_chat_model("openai:rec", base_url=server.url, api_key="not-needed", max_retries=0)


def test_chat_sends_tools_choice_and_budget_and_returns_the_tool_calls() -> None:
    with RecordingServer(lambda r: tool_reply(tool_call("search", {"query": "Paris"}))) as server:
        message = chat(
            _openai(server), _history(), tools=[SEARCH], tool_choice="required", max_tokens=64
        )
    sent = server.requests[0]
    assert sent["tools"] == [SEARCH] and sent["tool_choice"] == "required"
    assert sent["max_tokens"] == 64 and "max_completion_tokens" not in sent
    assert [m["role"] for m in sent["messages"]] == ["system", "user", "assistant", "tool"]
    assert sent["messages"][2]["tool_calls"][0]["function"]["name"] == "search"
    assert message.tool_calls == [
        {"name": "search", "args": {"query": "Paris"}, "id": "call_0", "type": "tool_call"}
    ]


def test_a_prompt_budget_only_the_schemas_pass_is_refused_before_sending() -> None:
    history = _history()
    text = "\n".join(str(m.content) for m in history)
    call_words = words('search {"query": "capital France"}')
    limit = words(text) + call_words + SCHEMA_WORDS - 1  # the messages fit; with the schemas, not
    guard = BudgetGuard(Budget(max_prompt_tokens=limit), count=words)
    config = RunnableConfig(callbacks=[guard])
    with RecordingServer() as server:
        chat(_openai(server), history, max_tokens=16, config=config)  # no tools: fits
        assert len(server.requests) == 1
        guard = BudgetGuard(Budget(max_prompt_tokens=limit), count=words)
        with pytest.raises(BudgetReached, match="prompt tokens"):
            chat(
                _openai(server),
                history,
                tools=[SEARCH],
                max_tokens=16,
                config={"callbacks": [guard]},
            )
        assert len(server.requests) == 1  # refused before it was sent


def test_counted_prompt_tokens_are_what_the_stub_read_schemas_and_arguments_included() -> None:
    guard = BudgetGuard(Budget(max_prompt_tokens=10_000), count=words)
    tracker = UsageTracker(count=words)
    with RecordingServer(lambda r: "Paris") as server:
        chat(
            _openai(server),
            _history(),
            tools=[SEARCH],
            max_tokens=16,
            config={"callbacks": [guard, tracker]},
        )
    # the stub counts every word it read: messages, the assistant's call and the schemas
    assert tracker.usage.prompt_tokens == guard.prompt_tokens
    text_only = words("\n".join(str(m.content) for m in _history()))
    assert (
        guard.prompt_tokens
        == text_only + words('search {"query": "capital France"}') + SCHEMA_WORDS
    )


def test_a_model_without_usage_is_estimated_with_the_schemas() -> None:
    llm = ToolScriptedChatModel(reply_fn=lambda prompt, tools: "Paris", report_usage=False)
    tracker = UsageTracker(count=words)
    message = chat(llm, _history(), tools=[SEARCH], max_tokens=16, config={"callbacks": [tracker]})
    assert message.content == "Paris" and llm.calls[0]["max_tokens"] == 16
    text_only = words("\n".join(str(m.content) for m in _history()))
    assert tracker.usage.estimated
    assert (
        tracker.usage.prompt_tokens
        == text_only + words('search {"query": "capital France"}') + SCHEMA_WORDS
    )
