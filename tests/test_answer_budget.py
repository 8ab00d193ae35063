"""The answer budget goes out as ``max_tokens``, the field servers honour (issue 25, item 1).

LangChain's ``ChatOpenAI`` sends every budget as ``max_completion_tokens``, which
llama-cpp-python's server (0.3.x) ignores: a budget of 8 generated hundreds of tokens. Our
OpenAI model sends ``max_tokens`` except to OpenAI's reasoning models, which only take
``max_completion_tokens`` (``longctx.agents.chat_models.budget_field``). A ``ChatOpenAI`` the user
built and passed as ``llm=`` gets the same rule per call
(``longctx.graphs.metering.budget_field.budget_kwargs``).

The fast tests check the request bodies against the recording stub; the ones marked ``slow``
run ``rag``, ``full_context``, ``memagent`` (with our model and with a user's ``ChatOpenAI``)
and ``longctx answer`` against a real
``python -m llama_cpp.server`` on the embedded model and read the completion tokens it reports.
"""

from __future__ import annotations

import asyncio
import re

import pytest
from langchain_openai import ChatOpenAI

from longctx import answer
from longctx.agents.chat_models import budget_field, make_chat_model
from longctx.experiments.cli.app import main
from longctx.graphs.pai.calls import KeepContextArgs
from longctx.retrieval import Corpus
from tests.recording_server import RecordingServer

BUDGET = 8
DOCS = {
    "River": (
        "The Long River is the longest river of the region. It runs for six thousand kilometres "
        "through eleven provinces, past three old capitals and many harbours, and flows into the "
        "eastern sea."
    ),
    "Museum": (
        "The city museum keeps its treasures in a vault under the main hall. The vault code is "
        "7421; only the director knows it, and it changes every spring after the annual inventory."
    ),
    "Orchestra": (
        "The city orchestra rehearsed a new symphony for its spring season. All concerts in the "
        "old theatre sold out within a week, and a second series was added in the summer."
    ),
}
#: Asks for a long reply, so that a budget the server ignores shows in the completion tokens.
QUESTION = "Describe in detail, at length and in several paragraphs, everything the documents say."
STRATEGIES = {
    "rag": {"top_k": 3},
    "full_context": {},
    "memagent": {"resume": False},  # one memory update over the tiny corpus, then the final call
}


def corpus() -> Corpus:
    return Corpus.from_texts(list(DOCS.values()), titles=list(DOCS))


@pytest.mark.parametrize(
    "model,field",
    [
        ("smollm2", "max_tokens"),
        ("gpt-4o-mini", "max_tokens"),
        ("gpt-4.1", "max_tokens"),
        ("Qwen/Qwen2.5-7B-Instruct", "max_tokens"),
        ("llama3.1:8b", "max_tokens"),
        ("", "max_tokens"),
        (None, "max_tokens"),
        ("o1", "max_completion_tokens"),
        ("o1-mini", "max_completion_tokens"),
        ("o3-mini", "max_completion_tokens"),
        ("o4-mini", "max_completion_tokens"),
        ("gpt-5", "max_completion_tokens"),
        ("gpt-5-mini", "max_completion_tokens"),
        ("GPT-5.1", "max_completion_tokens"),
    ],
)
def test_budget_field(model, field):
    assert budget_field(model) == field


@pytest.mark.parametrize("strategy", list(STRATEGIES))
def test_every_call_of_a_strategy_sends_max_tokens(strategy):
    with RecordingServer(lambda request: "The vault code is 7421.") as server:
        llm = make_chat_model("openai:smollm2", base_url=server.url, max_retries=0)
        answer(
            corpus(),
            QUESTION,
            strategy=strategy,
            llm=llm,
            max_new_tokens=BUDGET,
            **STRATEGIES[strategy],
        )
    assert server.requests
    assert all(
        r.get("max_tokens") == BUDGET and "max_completion_tokens" not in r for r in server.requests
    )


def test_a_reasoning_model_gets_max_completion_tokens():
    with RecordingServer() as server:
        llm = make_chat_model("openai:o3-mini", base_url=server.url, max_retries=0)
        answer(corpus(), QUESTION, strategy="rag", llm=llm, max_new_tokens=BUDGET, top_k=3)
    assert [r.get("max_completion_tokens") for r in server.requests] == [BUDGET]
    assert not any("max_tokens" in r for r in server.requests)


def test_replies_cached_under_the_old_field_are_not_replayed(tmp_path):
    """The cache key says which field carried the budget: a reply cached while it went out as
    ``max_completion_tokens`` (which a server may have ignored) is not replayed
    for ``max_tokens``."""
    from langchain_core.load import dumps
    from langchain_core.messages import AIMessage, HumanMessage
    from langchain_core.outputs import ChatGeneration

    from longctx.agents.llm_cache import SQLiteLLMCache

    with RecordingServer(lambda request: "short") as server:
        cache = SQLiteLLMCache(tmp_path / "llm.sqlite")
        llm = make_chat_model("openai:smollm2", base_url=server.url, max_retries=0, temperature=0.0)
        llm.cache = cache
        messages = [HumanMessage(content=QUESTION)]
        prompt = dumps(messages)  # how LangChain keys the messages
        old_key = ChatOpenAI._get_llm_string(
            llm, max_tokens=BUDGET
        )  # the key before the budget field counted
        cache.update(
            prompt, old_key, [ChatGeneration(message=AIMessage(content="an unbounded old reply"))]
        )
        assert cache.lookup(prompt, old_key) is not None
        reply = llm.invoke(messages, max_tokens=BUDGET)
        assert (
            reply.content == "short" and len(server.requests) == 1
        )  # asked the server, not the old entry
        assert (
            llm.invoke(messages, max_tokens=BUDGET).content == "short" and len(server.requests) == 1
        )  # its own entry replays
    reasoning = make_chat_model("openai:o3-mini", base_url="http://127.0.0.1:9/v1", max_retries=0)
    assert reasoning._get_llm_string(max_tokens=BUDGET) == ChatOpenAI._get_llm_string(
        reasoning, max_tokens=BUDGET
    )  # its body is unchanged


# -- a ChatOpenAI the user built (answer(..., llm=ChatOpenAI(...))) gets the same rule -------------
USER_KWARGS = {"model_kwargs": {"user": "analyst"}, "extra_body": {"repeat_penalty": 1.1}}


def user_chat_openai(url: str, model: str = "smollm2", **options) -> ChatOpenAI:
    """What an analyst builds: LangChain's own class, with their own top-level and
    extra-body parameters."""
    return ChatOpenAI(
        model=model, base_url=url, api_key="not-needed", max_retries=0, **{**USER_KWARGS, **options}
    )


def assert_user_parameters_kept(requests: list[dict], llm: ChatOpenAI) -> None:
    assert all(r.get("user") == "analyst" and r.get("repeat_penalty") == 1.1 for r in requests)
    assert llm.extra_body == {"repeat_penalty": 1.1} and llm.model_kwargs == {
        "user": "analyst"
    }  # the user's model is not changed


@pytest.mark.parametrize("strategy", list(STRATEGIES))
def test_a_user_built_chat_openai_sends_max_tokens(strategy):
    with RecordingServer(lambda request: "The vault code is 7421.") as server:
        llm = user_chat_openai(server.url)
        answer(
            corpus(),
            QUESTION,
            strategy=strategy,
            llm=llm,
            max_new_tokens=BUDGET,
            **STRATEGIES[strategy],
        )
    assert server.requests
    assert all(
        r.get("max_tokens") == BUDGET and "max_completion_tokens" not in r for r in server.requests
    )
    assert_user_parameters_kept(server.requests, llm)


def test_a_user_built_reasoning_model_gets_max_completion_tokens():
    with RecordingServer() as server:
        llm = user_chat_openai(server.url, model="o3-mini")
        answer(corpus(), QUESTION, strategy="rag", llm=llm, max_new_tokens=BUDGET, top_k=3)
    assert [r.get("max_completion_tokens") for r in server.requests] == [BUDGET]
    assert not any("max_tokens" in r for r in server.requests)
    assert_user_parameters_kept(server.requests, llm)


def test_a_budget_set_on_the_user_model_is_overridden_by_the_call():
    """``ChatOpenAI(max_tokens=512)`` goes out as ``max_completion_tokens``; the call's budget wins,
    as it would in LangChain."""
    with RecordingServer() as server:
        llm = user_chat_openai(server.url, max_tokens=512)
        answer(corpus(), QUESTION, strategy="rag", llm=llm, max_new_tokens=BUDGET, top_k=3)
    [request] = server.requests
    assert request["max_tokens"] == BUDGET and request.get("max_completion_tokens") is None
    assert llm.max_tokens == 512


def test_structured_calls_and_calibration_send_max_tokens_to_a_user_model():
    from longctx.agents.calibration import _timed
    from longctx.graphs.calls.validated_call import call_validated
    from longctx.graphs.pai.calls import acall_structured, call_structured
    from longctx.graphs.pai.prompts import KEEP_CONTEXT_FUNCTION

    with RecordingServer(lambda request: '{"keep_context": true}') as server:
        llm = user_chat_openai(server.url)
        options = dict(
            item_model=KeepContextArgs,
            mode="json",
            function=KEEP_CONTEXT_FUNCTION,
            max_tokens=BUDGET,
        )
        assert call_structured(llm, "Keep it?", **options).items == [{"keep_context": True}]
        assert asyncio.run(acall_structured(llm, "Keep it?", **options)).items == [
            {"keep_context": True}
        ]
        call_validated(
            llm,
            llm,
            "Rows?",
            lambda arguments: arguments,
            retries=0,
            max_tokens=BUDGET,
            temperature=0.0,
        )
        _timed(llm, "Say hi.", 1)
    assert [r.get("max_tokens") for r in server.requests] == [BUDGET, BUDGET, BUDGET, 1]
    assert not any("max_completion_tokens" in r for r in server.requests)


def test_user_model_replies_cached_under_the_old_field_are_not_replayed():
    """Before the fix a user's ``ChatOpenAI`` was called with ``max_tokens=`` (sent as
    ``max_completion_tokens``): a reply cached under that key may be unbounded and is
    not replayed."""
    from langchain_core.caches import InMemoryCache
    from langchain_core.load import dumps
    from langchain_core.messages import AIMessage, HumanMessage
    from langchain_core.outputs import ChatGeneration

    from longctx.graphs.calls.llm import complete

    with RecordingServer(lambda request: "short") as server:
        cache = InMemoryCache()
        llm = user_chat_openai(server.url, cache=cache)
        prompt = dumps([HumanMessage(content=QUESTION)])
        cache.update(
            prompt,
            llm._get_llm_string(stop=None, max_tokens=BUDGET, temperature=0.0),
            [ChatGeneration(message=AIMessage(content="unbounded"))],
        )
        assert complete(llm, QUESTION, max_tokens=BUDGET) == "short" and len(server.requests) == 1
        assert (
            complete(llm, QUESTION, max_tokens=BUDGET) == "short" and len(server.requests) == 1
        )  # its own entry replays


def test_budget_kwargs_leave_other_models_alone():
    from langchain_core.language_models.fake_chat_models import FakeListChatModel
    from langchain_openai import AzureChatOpenAI

    from longctx.graphs.metering.budget_field import budget_kwargs

    url = "http://127.0.0.1:9/v1"
    plain = {"max_tokens": BUDGET}
    assert budget_kwargs(FakeListChatModel(responses=["x"]), BUDGET) == plain  # a scripted model
    assert (
        budget_kwargs(make_chat_model("openai:smollm2", base_url=url), BUDGET) == plain
    )  # ours rewrites its own body
    azure = AzureChatOpenAI(
        azure_endpoint="http://127.0.0.1:9",
        azure_deployment="my-o3",
        api_version="2024-10-21",
        api_key="k",
    )
    assert (
        budget_kwargs(azure, BUDGET) == plain
    )  # sends a per-call max_tokens as it is; its deployment name says no model
    assert (
        budget_kwargs(user_chat_openai(url, use_responses_api=True), BUDGET) == plain
    )  # LangChain sends max_output_tokens
    assert (
        budget_kwargs(user_chat_openai(url, model="gpt-5-mini"), BUDGET) == plain
    )  # LangChain's rename is right for it
    assert budget_kwargs(user_chat_openai(url), BUDGET) == {
        "extra_body": {"repeat_penalty": 1.1, "max_tokens": BUDGET}
    }


@pytest.fixture(scope="module")
def served():
    """``python -m llama_cpp.server`` on the embedded model (alias ``smollm2``), for the module."""
    from tests.servers import llama_server

    with llama_server() as url:
        yield url


@pytest.mark.e2e
@pytest.mark.slow
@pytest.mark.parametrize("strategy", list(STRATEGIES))
def test_a_real_server_generates_at_most_the_budget(served, strategy):
    llm = make_chat_model("openai:smollm2", base_url=served, max_retries=0)
    result = answer(
        corpus(),
        QUESTION,
        strategy=strategy,
        llm=llm,
        max_new_tokens=BUDGET,
        **STRATEGIES[strategy],
    )
    usage = result.usage
    assert usage.llm_calls >= 1 and not usage.estimated
    assert 0 < usage.completion_tokens <= BUDGET * usage.llm_calls
    if strategy != "memagent":
        assert usage.llm_calls == 1


@pytest.mark.e2e
@pytest.mark.slow
@pytest.mark.parametrize("strategy", list(STRATEGIES))
def test_a_user_built_chat_openai_on_a_real_server_generates_at_most_the_budget(served, strategy):
    llm = ChatOpenAI(model="smollm2", base_url=served, api_key="not-needed", max_retries=0)
    result = answer(
        corpus(),
        QUESTION,
        strategy=strategy,
        llm=llm,
        max_new_tokens=BUDGET,
        **STRATEGIES[strategy],
    )
    usage = result.usage
    assert usage.llm_calls >= 1 and not usage.estimated
    assert 0 < usage.completion_tokens <= BUDGET * usage.llm_calls


@pytest.mark.e2e
@pytest.mark.slow
def test_longctx_answer_reports_at_most_the_budget(served, tmp_path, monkeypatch, capsys):
    folder = tmp_path / "docs"
    folder.mkdir()
    for title, text in DOCS.items():
        (folder / f"{title}.txt").write_text(text, encoding="utf-8")
    monkeypatch.setenv("OPENAI_BASE_URL", served)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    code = main(
        [
            "answer",
            "--corpus",
            str(folder),
            "--question",
            QUESTION,
            "--llm",
            "openai:smollm2",
            "--option",
            f"max_new_tokens={BUDGET}",
        ]
    )
    out = capsys.readouterr().out
    assert code == 0, out
    calls, completion = map(
        int,
        re.search(
            r"Usage: (\d+) LLM call\(s\), \d+ prompt \+ (\d+) completion tokens", out
        ).groups(),
    )
    assert calls == 1 and 0 < completion <= BUDGET
