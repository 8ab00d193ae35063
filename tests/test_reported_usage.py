"""Usage a server reports is untrusted (issue 46, items 3-5): a count that is negative, huge,
fractional or not a number is checked once, as the reply arrives
(:mod:`longctx.retrieval.reported_usage`), on every path that reads it (chat: whole, async through
the lean transport, streamed, the SDK's parsed reply; rerank). The answer is kept, the call counted
with our own tokenizer (or the field treated as absent), a warning names the server and the field, a
budget stops where it stops for an honest server, and the rows are ones ``longctx report`` counts
and a rerun does not pay for again."""

from __future__ import annotations

import asyncio
import functools
import json
import logging
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import HumanMessage

from longctx import Budget, answer, make_chat_model
from longctx.agents.chat_models import streaming_model
from longctx.experiments.cli.app import main
from longctx.experiments.runner.row_schema import count_problem
from longctx.graphs.calls.llm import reply_usage, run_client, tokenizer_for
from longctx.graphs.metering.budget_guard import BudgetGuard
from longctx.graphs.runtime.run import run_strategy
from longctx.retrieval import reported_usage
from longctx.retrieval.contract import as_question
from longctx.retrieval.reported_usage import as_count, checked_chat_usage, checked_rerank_tokens
from longctx.retrieval.tokens import count_tokens
from tests.recording_server import RecordingServer, counted_text
from tests.rerank_server import RerankServer
from tests.scripted import ScriptedChatModel
from tests.test_async import server_world
from tests.test_pai import CHUNK, company_corpus
from tests.test_rerank import QUESTION as RERANK_QUESTION
from tests.test_rerank import corpus as rerank_corpus
from tests.test_rerank import server_options

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
PROMPT = "In which city is Halvorsen Maritime headquartered?"


@pytest.fixture(autouse=True)
def fresh_warnings(monkeypatch):
    """Each test sees its own warnings (a process warns once per server and field; ports
    are reused)."""
    monkeypatch.setattr(reported_usage, "_warned", set())


class UsageServer(RecordingServer):
    """The recording server whose usage is ``usage(request, text)`` when given (the honest counts
    otherwise), with ``hostile`` fields laid over it: a server that reports what it likes."""

    def __init__(self, reply: Any = None, *, hostile: dict | None = None, usage: Any = None):
        self.hostile, self.usage = hostile or {}, usage
        super().__init__(reply)

    def _chat(self, request: dict[str, Any]) -> dict[str, Any]:
        body = super()._chat(request)
        text = body["choices"][0]["message"]["content"]
        if self.usage is not None:
            body["usage"] = self.usage(request, text)
        body["usage"] = {**body["usage"], **self.hostile}
        return body


class UsageRerankServer(RerankServer):
    """The rerank stub whose ``usage`` is ``usage`` (anything, as a hostile server sends it)."""

    def __init__(self, usage: Any):
        self.usage = usage
        super().__init__()

    def _reply(self, request: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        status, body = super()._reply(request)
        return status, {**body, "usage": self.usage}


# what each hostile usage becomes: "ours" (the call counted with our tokenizer) or the cached
# tokens kept
ABSURD_COUNTS = [
    ({"prompt_tokens": -1000}, "prompt_tokens", "ours"),
    ({"prompt_tokens": 1e13}, "prompt_tokens", "ours"),
    ({"prompt_tokens": 12.7}, "prompt_tokens", "ours"),
    ({"completion_tokens": -7}, "completion_tokens", "ours"),
    ({"cached_tokens": -5}, "cached_tokens", 0),
    ({"prompt_tokens_details": {"cached_tokens": -3}}, "prompt_tokens_details.cached_tokens", 0),
    ({"total_tokens": 1e30}, "total_tokens", 0),
]
UNPARSABLE = [
    ({"cached_tokens": "lots"}, "cached_tokens", 0),
    ({"prompt_tokens": "many"}, "prompt_tokens", "ours"),
    ({"prompt_tokens_details": [1, 2]}, "prompt_tokens_details", 0),
    ({"completion_tokens_details": "none"}, "completion_tokens_details", 0),
]


def _call(llm: Any, path: str) -> Any:
    """One chat call through ``path``: the sync lean post, the async one (a run's aiohttp session),
    a streamed reply (usage in its last chunk), or the SDK's parsed
    reply (``include_response_headers``)."""
    messages = [HumanMessage(content=PROMPT)]
    if path == "async":

        async def call() -> Any:
            async with run_client(llm) as client:
                return await client.ainvoke(messages)

        return asyncio.run(call())
    if path == "stream":
        return streaming_model(llm, True).invoke(messages)
    if path == "sdk":
        return llm.model_copy(update={"include_response_headers": True}).invoke(messages)
    return llm.invoke(messages)


@pytest.fixture(scope="module")
def usage_server():
    """One chat stub for the hostile usages below (each test sets its own ``hostile`` fields)."""
    with UsageServer() as server:
        yield server


@pytest.mark.parametrize("path", ["sync", "async", "stream", "sdk"])
@pytest.mark.parametrize(("hostile", "field", "becomes"), ABSURD_COUNTS + UNPARSABLE)
def test_a_hostile_usage_count_keeps_the_answer_and_is_counted_as_ours_with_a_warning(
    hostile, field, becomes, path, usage_server, caplog
):
    server = usage_server
    server.hostile = hostile
    server.requests.clear()
    llm = make_chat_model("openai:m", base_url=server.url, max_retries=0)
    with caplog.at_level(logging.WARNING):
        reply = _call(llm, path)
    assert reply.content == "Paris" and len(server.requests) == 1  # kept, asked once
    usage = reply_usage(reply, PROMPT, str(reply.content))
    assert all(
        count_problem(k, usage[k]) is None
        for k in ("prompt_tokens", "completion_tokens", "cached_prompt_tokens")
        if k in usage
    ), usage
    if becomes == "ours":
        assert usage["estimated"] and usage["prompt_tokens"] == count_tokens(PROMPT), usage
    else:  # the server's honest counts stand, the bad field is treated as not reported
        assert not usage["estimated"] and usage["prompt_tokens"] == len(PROMPT.split()), usage
        assert usage.get("cached_prompt_tokens", 0) == becomes
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any(server.url in w and f"usage {field} =" in w for w in warned), warned


@pytest.mark.parametrize(
    ("value", "count"),
    [
        (12, 12),
        (12.0, 12),
        (0, 0),
        (-1, None),
        (12.7, None),
        (10**12, None),
        (float("inf"), None),
        (float("nan"), None),
        ("12", None),
        (True, None),
        (None, None),
        ([1], None),
    ],
)
def test_as_count_takes_whole_numbers_from_0_to_a_trillion(value, count):
    assert as_count(value) == count


def test_a_usage_that_is_not_an_object_is_no_usage_and_an_empty_one_needs_no_warning(caplog):
    with caplog.at_level(logging.WARNING):
        assert checked_chat_usage({}, "S1") is None and checked_chat_usage(None, "S1") is None
        assert not caplog.records
        assert checked_chat_usage([3, 4], "S2") is None and "S2 reported usage usage" in caplog.text
    honest = {"prompt_tokens": 5, "completion_tokens": 2.0, "total_tokens": 7, "cost": 0.1}
    assert checked_chat_usage(honest, "S3") == {**honest, "completion_tokens": 2}


# -- item 3: a budget stops where it stops for an honest server ------------------------------------
def _pai_under_budget(server: RecordingServer, budget: Budget, use_async: bool) -> int:
    """PAI's requests under ``budget`` (one call at a time, so the stop does not depend
    on timing)."""
    from longctx import STRATEGIES

    spec = STRATEGIES.get("pai")
    llm = make_chat_model("openai:rec", base_url=server.url, api_key="not-needed", max_retries=0)
    (result,) = run_strategy(
        spec,
        spec.make_config(None, chunk_size=CHUNK, concurrency=1),
        [as_question(RERANK_QUESTION)],
        llm=llm,
        corpus=company_corpus(),
        budget=budget,
        use_async=use_async,
    )
    assert result.stopped == ("budget" if budget.max_cost_usd else None) and all(
        count_problem(k, getattr(result.usage, k)) is None
        for k in ("prompt_tokens", "completion_tokens", "cached_prompt_tokens")
    )
    return len(server.requests)


@functools.cache
def _guard_count() -> Any:
    """The tokenizer the budget guard counts PAI's prompts with (``openai:rec``'s)."""
    llm = make_chat_model("openai:rec", base_url="http://127.0.0.1:9/v1", api_key="not-needed")
    return tokenizer_for(llm).count


def _honest_counts(request: dict, text: str) -> dict:
    """The usage an honest server reports, counted as our tokenizer counts (the guard's own count:
    the messages, and the tool schemas and tool-call arguments it reads with them)."""
    count = _guard_count()
    prompt, completion = count(counted_text(request)), count(text)
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }


#: A cost limit that stops PAI among its judges: $0.004 at $1 per 1M tokens.
COST_LIMIT = Budget(max_cost_usd=0.004, price=(1.0, 1.0))


@pytest.fixture(scope="module")
def honest_stop() -> dict[bool, int]:
    """Requests PAI sends an honest server under :data:`COST_LIMIT`, threads and async (fewer than
    it needs)."""
    with UsageServer(server_world, usage=_honest_counts) as server:
        everything = _pai_under_budget(server, Budget(max_llm_calls=1000), use_async=False)
    stops = {}
    for use_async in (False, True):
        with UsageServer(server_world, usage=_honest_counts) as server:
            stops[use_async] = _pai_under_budget(server, COST_LIMIT, use_async)
    assert stops[False] == stops[True] < everything
    return stops


@pytest.mark.parametrize(
    ("hostile", "use_async"),
    [
        ({"prompt_tokens": -1000}, False),
        ({"prompt_tokens": -1000}, True),
        ({"prompt_tokens": 1e13}, False),
        ({"prompt_tokens": "many"}, False),
        ({"completion_tokens": -7}, True),
    ],
    ids=["negative-threads", "negative-async", "huge", "text", "negative-completion-async"],
)
def test_a_cost_budget_stops_pai_at_the_same_call_for_a_server_that_reports_absurd_usage(
    hostile, use_async, honest_stop
):
    """The honest server counts as our tokenizer does; a hostile one's calls are counted with that
    tokenizer: both stop at the same request (36 of 41; a count of -1000, settled as reported, let
    all 41 through, 1e13 stopped PAI after 1)."""
    with UsageServer(server_world, usage=_honest_counts, hostile=hostile) as server:
        assert _pai_under_budget(server, COST_LIMIT, use_async) == honest_stop[use_async]


def test_the_guard_settles_an_absurd_usage_metadata_of_any_chat_model_at_its_own_count():
    """A chat model other than ours (no reply check of ours in front of it) reports a negative
    count: the guard settles the call at the prompt tokens it counted before it, never
    below zero."""
    from langchain_core.messages import AIMessage
    from langchain_core.outputs import ChatGeneration, LLMResult

    from longctx.retrieval.reported_usage import metadata_counts

    guard = BudgetGuard(
        Budget(max_cost_usd=10.0, price=(1e6, 0.0)), count=lambda text: len(text.split())
    )
    guard.on_chat_model_start(
        {}, [[HumanMessage(content="one two three")]], run_id=(run := __import__("uuid").uuid4())
    )
    message = AIMessage(
        content="x", usage_metadata={"input_tokens": -1000, "output_tokens": 1, "total_tokens": 0}
    )
    guard.on_llm_end(LLMResult(generations=[[ChatGeneration(message=message)]]), run_id=run)
    assert guard.spent_usd == pytest.approx(3.0) and metadata_counts(message.usage_metadata) is None
    assert (
        reply_usage(message, "one two three", "x", count=lambda t: len(t.split()))["prompt_tokens"]
        == 3
    )


# -- rerank replies --------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "usage",
    [
        {"total_tokens": -1e6},
        {"total_tokens": 1e30},
        {"total_tokens": "lots"},
        {"prompt_tokens": 2.5},
        [1, 2],
    ],
    ids=["negative", "huge", "text", "fraction", "a-list"],
)
def test_a_rerank_reply_with_an_absurd_usage_keeps_its_ranking_and_counts_no_tokens(usage, caplog):
    """The ranking is used on the first request (a malformed-reply retry would pay again); its
    tokens count as not reported: 0 in the usage, and the budget keeps the query-document tokens
    it reserved."""
    llm = ScriptedChatModel(reply_fn=lambda prompt: "the keeper")
    count = lambda text: len(text.split())  # noqa: E731 - the guard's tokenizer
    with UsageRerankServer(usage) as server, caplog.at_level(logging.WARNING):
        options = {
            "strategy": "rag",
            "llm": llm,
            "top_k": 2,
            "rerank": "server",
            "rerank_options": server_options(server),
        }
        guard = BudgetGuard(
            Budget(max_cost_usd=1e4, price=(0.0, 0.0), rerank_price=(1e6, 0.0)), count=count
        )
        result = answer(rerank_corpus(), RERANK_QUESTION, callbacks=[guard], **options)
        (sent,) = server.requests
    assert (
        result.answer == "the keeper"
        and result.usage.rerank_calls == 1
        and result.usage.rerank_tokens == 0
    )
    assert result.usage.rerank_failed_calls == 0
    reserved = sum(count(sent["query"]) + count(d) for d in sent["documents"])
    assert guard.spent_usd == pytest.approx(reserved)
    assert any(server.url in r.getMessage() for r in caplog.records if r.levelno == logging.WARNING)


@pytest.mark.parametrize("tokens", [-1_000_000, 10**30, 2.5, "lots"])
def test_the_guard_keeps_a_rerank_reservation_when_a_plug_in_reports_no_token_count(tokens):
    """A rerank plug-in (no server reply to check) ends its call with a figure that is no count."""
    from uuid import uuid4

    from longctx.graphs.metering.budget_guard import RERANK_END_EVENT, RERANK_EVENT

    guard = BudgetGuard(
        Budget(max_cost_usd=1e4, price=(0.0, 0.0), rerank_price=(1e6, 0.0)),
        count=lambda t: len(t.split()),
    )
    guard.on_custom_event(
        RERANK_EVENT,
        {"query": "who keeps it", "documents": ["the keeper", "a bakery"], "call": "c"},
        run_id=uuid4(),
    )
    guard.on_custom_event(RERANK_END_EVENT, {"call": "c", "tokens": tokens}, run_id=uuid4())
    assert guard.spent_usd == pytest.approx(10.0)  # the 3 + 2, 3 + 2 words reserved


def test_rerank_tokens_read_the_first_usable_count():
    assert checked_rerank_tokens({"total_tokens": 40, "prompt_tokens": 30}, "R") == 40
    assert checked_rerank_tokens({"prompt_tokens": 30.0}, "R") == 30
    assert checked_rerank_tokens(None, "R") == checked_rerank_tokens({}, "R") == 0


# -- the command line: the answer is printed, the rows are counted, a rerun pays nothing -----------
def test_longctx_answer_prints_the_answer_of_a_server_with_unparsable_usage(
    capsys, monkeypatch, isolated_cache
):
    with UsageServer(hostile={"prompt_tokens_details": [1, 2], "prompt_tokens": "many"}) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        code = main(
            [
                "answer",
                "--corpus",
                str(EXAMPLES / "corpus"),
                "--question",
                PROMPT,
                "--llm",
                "openai:m",
                "--strategy",
                "full_context",
                "--json",
            ]
        )
    captured = capsys.readouterr()
    assert code == 0 and "Traceback" not in captured.err, captured.err
    assert json.loads(captured.out)["answer"] == "Paris"


def test_rows_of_a_server_with_absurd_usage_are_counted_by_the_report_and_not_paid_again(
    tmp_path, capsys, monkeypatch
):
    monkeypatch.setenv("LONGCTX_CACHE_DIR", str(tmp_path / "cache"))
    questions = tmp_path / "q.csv"
    questions.write_text(
        "id,question,answer\n"
        + "".join(f"q{i},Which city is number {i}?,Paris\n" for i in range(3))
    )
    out = tmp_path / "run"
    argv = [
        "run",
        "--corpus",
        str(EXAMPLES / "corpus"),
        "--questions",
        str(questions),
        "--strategies",
        "rag",
        "--llm",
        "openai:m",
        "--out",
        str(out),
        "--yes",
        "--no-llm-cache",
    ]
    hostile = {"prompt_tokens": -1000, "completion_tokens": 12.7, "cached_tokens": -5}
    with UsageServer(hostile=hostile) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        assert main(argv) == 0
        sent = len(server.requests)
        assert main(argv) == 0  # the rerun finds every pair answered
        assert len(server.requests) == sent == 3
    assert "3 already done, 0 answered now" in capsys.readouterr().out
    assert main(["report", str(out), "--no-plots", "--no-html"]) == 0
    summary = (out / "report" / "summary.md").read_text().splitlines()
    header, row = (
        [c.strip() for c in summary[0].split("|")],
        [c.strip() for c in summary[2].split("|")],
    )
    assert (row[header.index("answers")], row[header.index("missing")]) == ("3", "0"), summary
