"""The embedded model's native tool calling (llama.cpp's ``chatml-function-calling`` chat format,
:mod:`longctx.agents.embedded_tools`): the request the handler builds, read off a scripted
llama.cpp stand-in (the installed handler itself runs; only the completions are scripted), the
output cap over every completion it makes, the fallback where the format is missing, and the
search agent calling its tools natively; at the e2e tier, the real GGUF receiving the schemas."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

import longctx.agents.embedded_chat as embedded_chat
from longctx import answer
from longctx.agents import embedded_tools as fc
from longctx.agents.embedded_chat import EmbeddedChatModel
from longctx.graphs.calls.llm import chat
from longctx.graphs.calls.prefix_lock import PrefixAffinityLock
from longctx.graphs.plugin.api import native_tools_model
from longctx.graphs.search_agent.tools import tool_definitions
from longctx.retrieval.contract import Corpus, Document

CHATML = "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>{% endfor %}"
SEARCH = tool_definitions(5, include_get_document=False)


class ScriptedLlama:
    """A llama.cpp instance whose completions are scripted texts, recording each request."""

    verbose = False

    def __init__(self, texts: list[str], template: str = CHATML) -> None:
        self.texts = list(texts)
        self.requests: list[dict[str, Any]] = []
        self.metadata = {"tokenizer.chat_template": template}

    def create_completion(self, **kwargs: Any) -> dict[str, Any]:
        self.requests.append(kwargs)
        words = self.texts.pop(0).split(" ")  # a word a token, cut at max_tokens
        text = " ".join(words[: kwargs["max_tokens"]])
        used = len(text.split(" "))
        return {
            "id": f"cmpl-{len(self.requests)}",
            "object": "text_completion",
            "created": 0,
            "model": "scripted",
            "choices": [{"text": text, "index": 0, "logprobs": None, "finish_reason": "stop"}],
            "usage": {
                "prompt_tokens": len(kwargs["prompt"].split()),
                "completion_tokens": used,
                "total_tokens": len(kwargs["prompt"].split()) + used,
            },
        }

    def tokenize(self, text: bytes, add_bos: bool = False, special: bool = False) -> list[int]:
        return [1] * len(text.split())

    def detokenize(self, ids: list[int]) -> bytes:
        return b"x " * len(ids)


@pytest.fixture
def scripted(monkeypatch: pytest.MonkeyPatch) -> Any:
    """``scripted(texts)``: every embedded model loads the returned stand-in."""
    pytest.importorskip("llama_cpp")

    def install(texts: list[str], template: str = CHATML) -> ScriptedLlama:
        llama = ScriptedLlama(texts, template)
        lock = PrefixAffinityLock()
        monkeypatch.setattr(embedded_chat, "_load_llama", lambda *a, **k: (llama, lock))
        return llama

    return install


def test_the_tools_reach_the_prompt_and_the_reply_is_a_tool_call(scripted: Any) -> None:
    """The handler's prompt holds each tool's name and parameter schema in the system turn (added
    empty when the conversation has none); the grammar's call comes back as a tool call."""
    llama = scripted(["functions.search", '{"query": "harbour town"}', "<|im_end|>"])
    model = native_tools_model(EmbeddedChatModel())
    assert isinstance(model, EmbeddedChatModel) and model.function_calling
    reply = chat(
        model, [HumanMessage("Which town?")], tools=SEARCH, tool_choice="auto", max_tokens=50
    )
    prompt = llama.requests[0]["prompt"]
    assert prompt.startswith("<|im_start|>system\n\n\nYou have access to the following functions:")
    schema = SEARCH[0]["function"]["parameters"]
    assert f"functions.search:\n{json.dumps(schema, sort_keys=True)}" in prompt
    assert "<|im_start|>user\nWhich town?<|im_end|>" in prompt
    assert [(c["name"], c["args"]) for c in reply.tool_calls] == [
        ("search", {"query": "harbour town"})
    ]
    assert reply.usage_metadata and reply.usage_metadata["output_tokens"] == 1 + 3 + 1
    assert reply.response_metadata["chat_format"] == fc.FORMAT


def test_every_completion_of_a_reply_stays_within_its_max_tokens(scripted: Any) -> None:
    """The handler asks for no limit when it writes arguments: each completion is capped at what
    the request's cap has left, and none runs once it is spent."""
    llama = scripted(["functions.search", '{"query": "a b c d e f g"}', "<|im_end|>"])
    model = EmbeddedChatModel().with_function_calling()
    assert model is not None
    reply = chat(model, [HumanMessage("Q")], tools=SEARCH, tool_choice="auto", max_tokens=4)
    assert [r["max_tokens"] for r in llama.requests] == [4, 3]  # 1 used by the choice
    assert reply.usage_metadata and reply.usage_metadata["output_tokens"] == 4
    assert reply.tool_calls == []  # the arguments cut by the cap: an unreadable call
    assert [c["args"] for c in reply.invalid_tool_calls] == ['{"query": "a b']


def test_a_conversation_is_rendered_with_its_calls_and_results() -> None:
    history = [
        SystemMessage("Be brief."),
        HumanMessage("Q"),
        AIMessage("", tool_calls=[{"name": "search", "args": {"query": "x"}, "id": "c1"}]),
        ToolMessage('[{"docid": "7"}]', tool_call_id="c1", name="search"),
    ]
    assert fc.function_calling_messages(history) == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Q"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {"type": "function", "function": {"name": "search", "arguments": '{"query": "x"}'}}
            ],
        },
        {"role": "user", "content": 'Result of tool search (c1):\n[{"docid": "7"}]'},
    ]
    assert fc.function_calling_messages([HumanMessage("Q")])[0] == {"role": "system", "content": ""}


def test_tool_choice_is_what_the_handler_takes() -> None:
    two = tool_definitions(5, include_get_document=True)
    forced = {"type": "function", "function": {"name": "search"}}
    assert fc.handler_tool_choice(None, two) == fc.handler_tool_choice("auto", two) == "auto"
    assert fc.handler_tool_choice("search", two) == forced
    assert fc.handler_tool_choice("any", SEARCH) == forced and fc.handler_tool_choice("any", two)
    with pytest.raises(ValueError, match="names no bound tool"):
        fc.handler_tool_choice("browse", two)


def test_without_the_format_the_model_binds_no_tools(scripted: Any, monkeypatch: Any) -> None:
    """No handler in the installed llama-cpp-python, or a GGUF whose template is not ChatML: no
    native tools, and ``bind_tools`` raises as before (the JSON-in-text adapter is used)."""
    scripted([], template="[INST] {{ messages }} [/INST]")
    assert EmbeddedChatModel().with_function_calling() is None
    with pytest.raises(NotImplementedError):
        EmbeddedChatModel().bind_tools(SEARCH)
    scripted([])
    monkeypatch.setattr(fc, "function_calling_handler", lambda: None)
    assert native_tools_model(EmbeddedChatModel()) is None


def test_the_search_agent_calls_its_tools_natively_on_the_embedded_model(
    scripted: Any, tmp_path: Path
) -> None:
    llama = scripted(
        [
            "functions.search",
            '{"query": "Oslo founded"}',
            "<|im_end|>",
            "message",
            "Explanation: it says so [d0].\nExact Answer: Harald Hardrada\nConfidence: 90%",
        ]
    )
    docs = ["Oslo was founded by Harald Hardrada.", "Bergen is a harbour town."]
    corpus = Corpus([Document(doc_id=f"d{i}", text=t) for i, t in enumerate(docs)])
    result = answer(
        corpus,
        "Who founded Oslo?",
        strategy="search_agent",
        llm=EmbeddedChatModel(),
        cache_dir=tmp_path,
        k=2,
        max_iterations=3,
    )
    agents = [s for s in result.steps if s.node == "agent"]
    assert [s["mode"] for s in agents] == ["tools", "tools"]
    (search,) = [s for s in result.steps if s.node == "tools"]
    assert search["args"] == {"query": "Oslo founded"} and search["status"] == "success"
    assert result.answer == "Harald Hardrada"
    second = llama.requests[3]["prompt"]
    assert "functions.search:\n" in second and "Result of tool search (call__0_search_" in second


@pytest.mark.e2e
def test_the_embedded_gguf_receives_the_tool_schemas_natively(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SmolLM2 through llama.cpp: the search agent's first request renders the ``search``
    schema in the prompt, and the reply is the grammar's (a tool call or a text reply)."""
    prompts: list[str] = []
    real = fc.CappedLlama.create_completion

    def spy(self: fc.CappedLlama, **kwargs: Any) -> Any:
        prompts.append(kwargs["prompt"])
        return real(self, **kwargs)

    monkeypatch.setattr(fc.CappedLlama, "create_completion", spy)
    corpus = Corpus([Document(doc_id="d0", text="Oslo was founded by Harald Hardrada.")])
    result = answer(
        corpus,
        "Who founded Oslo?",
        strategy="search_agent",
        llm="embedded",
        cache_dir=tmp_path,
        k=1,
        max_iterations=1,
        max_tokens=48,
    )
    agent = next(s for s in result.steps if s.node == "agent")
    assert agent["mode"] == "tools"
    assert "functions.search:\n" in prompts[0] and "Search query string" in prompts[0]
    assert result.usage.completion_tokens <= 48


def test_the_embedded_models_window_refuses_a_request_a_document_would_overflow(
    scripted: Any, tmp_path: Path
) -> None:
    """The embedded model reports its window (``n_ctx``): the request after a ``get_document``
    of a document longer than it is refused before llama.cpp is asked (it would raise
    "Requested tokens exceed context window")."""
    llama = scripted(["functions.get_document", '{"docid": "ledger"}', "<|im_end|>"])
    corpus = Corpus(
        [Document(doc_id="ledger", text="ship " * 2_000), Document(doc_id="n", text="A note.")]
    )
    result = answer(
        corpus,
        "What does the ledger list?",
        strategy="search_agent",
        preset="get-document",
        llm=EmbeddedChatModel(n_ctx=1_024),
        cache_dir=tmp_path,
    )
    assert len(llama.requests) == 3  # the first reply's choice, arguments and follow-up only
    assert result.stopped == "budget" and "window of 1,024 tokens" in result.steps[-1]["reason"]


def test_tool_results_reach_the_model_unescaped(scripted: Any) -> None:
    """The handler's template escapes HTML: a JSON result's quotes must reach the prompt as
    quotes, not ``&#34;``."""
    llama = scripted(["message", "Done."])
    model = EmbeddedChatModel().with_function_calling()
    assert model is not None
    history = [
        HumanMessage('Find "Oslo" & more'),
        AIMessage("", tool_calls=[{"name": "search", "args": {"query": "a<b"}, "id": "c1"}]),
        ToolMessage('[{"docid": "7", "snippet": "<b>x</b>"}]', tool_call_id="c1", name="search"),
    ]
    reply = chat(model, history, tools=SEARCH, tool_choice="auto", max_tokens=20)
    prompt = llama.requests[0]["prompt"]
    assert 'Find "Oslo" & more' in prompt and '{"query": "a<b"}' in prompt
    assert '[{"docid": "7", "snippet": "<b>x</b>"}]' in prompt and "&#34;" not in prompt
    assert reply.text == "Done." and reply.tool_calls == []
